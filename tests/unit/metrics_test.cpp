// Metrics (beamlet/observe/metrics.hpp), the per-supervisor counters behind them
// (beamlet/otp/supervisor_stats.hpp), and the top views (beamlet/observe/top.hpp).
#include <beamlet/observe/metrics.hpp>
#include <beamlet/observe/top.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/supervisor_stats.hpp>

#include <map>
#include <sstream>
#include <string>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

// Hand-written rather than std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized under
// ASan, and the grammar is small.
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || c == '_';
}

/// Reads `beamlet_[a-z_]+` at `i`; false if absent.
bool read_metric_name(const std::string& s, std::size_t& i) {
  if (s.compare(i, 8, "beamlet_") != 0) return false;
  i += 8;
  const std::size_t start = i;
  while (i < s.size() && is_name_char(s[i])) ++i;
  return i > start;
}

/// Reads `{label="value",...}` at `i` (values may hold \-escapes); false if malformed.
bool read_labels(const std::string& s, std::size_t& i) {
  if (s[i] != '{') return true;  // no labels
  ++i;
  for (;;) {
    const std::size_t start = i;
    while (i < s.size() && is_name_char(s[i])) ++i;
    if (i == start || s.compare(i, 2, "=\"") != 0) return false;
    i += 2;
    while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
    if (i >= s.size()) return false;
    ++i;  // the closing quote
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') {
      ++i;
      return true;
    }
    return false;
  }
}

/// name{labels} -> value, from a Prometheus text document; fails the test on a malformed line.
std::map<std::string, double> parse_prometheus(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t i = 0;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      i = 7;
      if (read_metric_name(line, i) && i + 1 < line.size() && line[i] == ' ') continue;
      ADD_FAILURE() << "bad comment: " << line;
      continue;
    }
    if (!read_metric_name(line, i) || i >= line.size() || !read_labels(line, i) ||
        i >= line.size() || line[i] != ' ') {
      ADD_FAILURE() << "not Prometheus text: " << line;
      continue;
    }
    const std::string key = line.substr(0, i);
    const std::string value = line.substr(i + 1);
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size()) {
      ADD_FAILURE() << "bad value: " << line;
      continue;
    }
    out[key] = v;
  }
  return out;
}

TEST(Metrics, RuntimeCountersMove) {
  runtime rt;
  captured_log quiet(rt);  // the crash below is expected
  const auto before = parse_prometheus(prometheus_metrics(rt));
  EXPECT_TRUE(before.count("beamlet_processes"));
  EXPECT_TRUE(before.count("beamlet_run_queue_length{scheduler=\"0\"}"));
  scoped_process me(rt);
  constexpr int n = 100;
  for (int i = 0; i < n; ++i) {
    watched w(rt, [](process& self) -> task<> {
      self.send(self.self(), 1);
      co_await self.receive(on<int>());
    });
    (void)w.reason();
  }
  watched crash(rt, [](process& self) -> task<> { co_await self.exit(exit_reason::error("x")); });
  (void)crash.reason();
  watched killed(rt, park_forever);
  rt.exit(killed, exit_reason::kill());
  (void)killed.reason();
  auto after = parse_prometheus(prometheus_metrics(rt));
  // Messages are published by each scheduler between runs: a moment behind.
  EXPECT_TRUE(eventually([&] {
    after = parse_prometheus(prometheus_metrics(rt));
    return after.at("beamlet_messages_total") - before.at("beamlet_messages_total") >= n;
  }));
  EXPECT_GE(after.at("beamlet_spawns_total") - before.at("beamlet_spawns_total"), n + 2);
  EXPECT_GE(after.at("beamlet_exits_total{reason=\"normal\"}") -
                before.at("beamlet_exits_total{reason=\"normal\"}"),
            n);
  EXPECT_EQ(after.at("beamlet_exits_total{reason=\"error\"}") -
                before.at("beamlet_exits_total{reason=\"error\"}"),
            1);
  EXPECT_EQ(after.at("beamlet_exits_total{reason=\"killed\"}") -
                before.at("beamlet_exits_total{reason=\"killed\"}"),
            1);
  EXPECT_GE(after.at("beamlet_messages_total") - before.at("beamlet_messages_total"), n);
  EXPECT_GE(after.at("beamlet_scoped_processes"), 1);
}

// Spawns and exits are not counted as they happen but derived from the process table; the
// totals must still be exact, with mailboxes and failed spawns left out.
TEST(Metrics, SpawnAndExitTotalsAreExact) {
  runtime rt;
  scoped_process me(rt);
  struct copy_throws {
    copy_throws() = default;
    copy_throws(const copy_throws&) { throw std::runtime_error("no copy"); }
    task<> operator()(process&) const { co_return; }
  };
  const copy_throws bad;
  EXPECT_THROW(me.spawn(bad), std::runtime_error);
  constexpr int n = 50;
  for (int i = 0; i < n; ++i) (void)me.spawn_monitor([](process&) -> task<> { co_return; });
  for (int i = 0; i < n; ++i) ASSERT_TRUE(me.receive(on<down>(), after(5s)));
  // A process leaves the table before its DOWN goes out: no waiting for the totals.
  const auto m = parse_prometheus(prometheus_metrics(rt));
  EXPECT_EQ(m.at("beamlet_spawns_total"), n);
  EXPECT_EQ(m.at("beamlet_exits_total{reason=\"normal\"}"), n);
  EXPECT_EQ(m.at("beamlet_processes"), 1);  // the mailbox
}

TEST(Metrics, TimersAndQueueLengthsOfRegisteredProcesses) {
  runtime rt;
  scoped_process me(rt);
  const pid busy = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  ASSERT_FALSE(rt.register_name("busy_one", busy));
  const pid idle = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  ASSERT_FALSE(rt.register_name("idle_one", idle));
  for (int i = 0; i < 250; ++i) me.send(busy, i);
  const ref t = me.send_after(me.self(), 1, 10s);
  // (Read again until busy_one has taken its inbox in: see Top.ByQueueLengthMemoryAndReductions.)
  std::map<std::string, double> m;
  EXPECT_TRUE(eventually([&] {
    m = parse_prometheus(prometheus_metrics(rt, metrics_options{.top_k = 1}));
    return m.count("beamlet_message_queue_len{name=\"busy_one\"}") &&
           m.at("beamlet_message_queue_len{name=\"busy_one\"}") == 250;
  }));
  EXPECT_EQ(m.at("beamlet_message_queue_len{name=\"busy_one\"}"), 250);
  EXPECT_FALSE(m.count("beamlet_message_queue_len{name=\"idle_one\"}"));  // top_k = 1
  EXPECT_GE(m.at("beamlet_timers"), 1);
  (void)rt.cancel_timer(t);
  me.send(busy, go{});
  me.send(idle, go{});
}

class dying_child : public gen_server<dying_child> {
 public:
  gen::action handle_cast(const die&) { return gen::stop(exit_reason::error("boom")); }
};

TEST(Metrics, SupervisorCounters) {
  runtime rt;
  captured_log quiet(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  ASSERT_TRUE(dynamic_supervisor::start_link(me, {"pool"}, dynamic_supervisor_flags{}).is_ok());
  pid first;
  for (int i = 0; i < 3; ++i) {
    auto c =
        dynamic_supervisor::start_child(me, "pool", child_spec("", worker_start<dying_child>()));
    ASSERT_TRUE(c.has_value());
    first = c->pid();
  }
  start_function failing = [](process&) -> task<start_result> {
    co_return start_result::error(exit_reason::error("nope"));
  };
  EXPECT_FALSE(dynamic_supervisor::start_child(me, "pool", child_spec("", failing)).has_value());
  cast(me, server_ref<dying_child>(first), die{});  // restarted: one restart
  ASSERT_TRUE(eventually([&] {
    for (const auto& s : supervisor_stats(rt))
      if (s.registered_name == "pool") return s.restarts == 1;
    return false;
  }));
  const auto all = supervisor_stats(rt);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kind, "dynamic_supervisor");
  EXPECT_EQ(all[0].start_child_calls, 4u);
  EXPECT_EQ(all[0].start_child_errors, 1u);
  EXPECT_EQ(all[0].children, 3u);
  const auto m = parse_prometheus(prometheus_metrics(rt));
  const std::string labels = "{supervisor=\"pool\",kind=\"dynamic_supervisor\"}";
  EXPECT_EQ(m.at("beamlet_supervisor_restarts_total" + labels), 1);
  EXPECT_EQ(m.at("beamlet_supervisor_start_child_total" + labels), 4);
  EXPECT_EQ(m.at("beamlet_supervisor_start_child_errors_total" + labels), 1);
  EXPECT_EQ(m.at("beamlet_supervisor_children" + labels), 3);
  dynamic_supervisor::stop(me, "pool");
  EXPECT_TRUE(supervisor_stats(rt).empty());  // gone with its process
}

TEST(Metrics, LabelValuesAreEscaped) {
  runtime rt;
  scoped_process me(rt);
  const pid p = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  ASSERT_FALSE(rt.register_name("we\"ird\\name", p));
  me.send(p, 1);
  const std::string text = prometheus_metrics(rt);
  EXPECT_NE(text.find("beamlet_message_queue_len{name=\"we\\\"ird\\\\name\"} 1"), std::string::npos)
      << text;
  me.send(p, go{});
}

// -- top -----------------------------------------------------------------------------------------

TEST(Top, ByQueueLengthMemoryAndReductions) {
  runtime rt;
  scoped_process me(rt);
  std::vector<pid> ps;
  for (int i = 0; i < 5; ++i)
    ps.push_back(rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); }));
  ASSERT_FALSE(rt.register_name("the_big_one", ps[3]));
  for (int i = 0; i < 500; ++i) me.send(ps[3], i);
  for (int i = 0; i < 100; ++i) me.send(ps[1], i);
  // A length read while its process moves a batch from inbox to queue can miss that batch
  // (process_info.hpp): the two settle once both are parked again.
  std::vector<top_entry> q;
  EXPECT_TRUE(eventually([&] {
    q = top(rt, 2, top_by::message_queue_len);
    return q.size() == 2 && q[0].value == 500 && q[1].value == 100;
  }));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].pid, ps[3]);
  EXPECT_EQ(q[0].value, 500);
  EXPECT_EQ(q[0].registered_name, "the_big_one");
  EXPECT_EQ(q[1].pid, ps[1]);
  EXPECT_EQ(q[1].value, 100);
  // Queued messages count towards memory once the process has moved them out of its inbox.
  EXPECT_TRUE(eventually([&] {
    const auto mem = top(rt, 1, top_by::memory);
    return mem.size() == 1 && mem[0].pid == ps[3];
  }));
  EXPECT_EQ(top(rt, 1000, top_by::reductions).size(), processes(rt).size());
  const std::string table = format_top(q, top_by::message_queue_len);
  EXPECT_EQ(table.rfind("pid", 0), 0u);
  EXPECT_NE(table.find("message_queue_len"), std::string::npos);
  EXPECT_NE(table.find(ps[3].to_string()), std::string::npos);
  EXPECT_NE(table.find("the_big_one"), std::string::npos);
  EXPECT_NE(table.find("waiting"), std::string::npos);
  for (pid p : ps) me.send(p, go{});
}

TEST(Top, WindowRanksIncreases) {
  runtime rt;
  scoped_process me(rt);
  const pid steady = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  const pid growing = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  for (int i = 0; i < 1000; ++i) me.send(steady, i);  // large but not growing
  // The window runs in a process: once it waits, its first snapshot is taken, and the 300
  // messages arrive within the window however loaded the machine.
  std::vector<top_entry> w;
  watched window(rt, [&](process& self) -> task<> {
    w = co_await top_window(self, 1, top_by::message_queue_len, 1s);
  });
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, window.id());
    return d && d->status == process_status::waiting;
  }));
  for (int i = 0; i < 300; ++i) rt.send(growing, i);
  ASSERT_TRUE(window.wait(10s));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].pid, growing);
  EXPECT_EQ(w[0].value, 300);
  me.send(steady, go{});
  me.send(growing, go{});
}

TEST(Top, WindowFromAProcess) {
  runtime rt;
  std::vector<top_entry> seen;
  auto r = run_process(rt, [&](process& self) -> task<> {
    seen = co_await top_window(self, 3, top_by::reductions, 50ms);
  });
  ASSERT_TRUE(r);
  EXPECT_LE(seen.size(), 3u);
}

}  // namespace
}  // namespace beamlet::test
