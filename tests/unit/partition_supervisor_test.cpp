// spec §8 and §11: PartitionSupervisor, with the cases of Elixir 1.14.0's
// elixir-lang/elixir/lib/elixir/test/elixir/partition_supervisor_test.exs ported (each TEST names
// its `test`), the routing vectors of §8.3, and the fix of the 1.14 routing bug (§8.3 rule 12).
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/partition_supervisor.hpp>

#include <algorithm>
#include <climits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {

/// Elixir's Agent, reduced to what the cases use: it holds a value and answers get.
struct get_value {
  using reply_type = std::string;
};
class agent : public gen_server<agent> {
 public:
  explicit agent(std::string v) : v_(std::move(v)) {}
  std::string handle_call(const get_value&, from<std::string>) { return v_; }

 private:
  std::string v_;
};

child_spec agent_spec(std::string value) {
  return child_spec("agent", worker_start<agent>(std::move(value))).with_modules({"agent"});
}

child_spec dynamic_spec() {
  return child_spec("dyn", dynamic_supervisor_start()).with_type(child_type::supervisor);
}

partition_supervisor_options options(std::string name, child_spec child) {
  partition_supervisor_options o;
  o.name = std::move(name);
  o.child = std::move(child);
  return o;
}

task<std::string> agent_get(process& self, server_ref<agent> a) {
  co_return co_await call(self, std::move(a), get_value{});
}

template <class F>
void run_case_with_runtime(F&& body, std::chrono::milliseconds limit = 30s) {
  runtime rt;
  const auto r = run_process(
      rt, [&](process& self) -> task<> { co_await body(self, rt); }, limit);
  EXPECT_EQ(r, exit_reason::normal());
}

task<std::vector<child_info>> sorted_children(process& self, supervisor_ref sup) {
  auto v = co_await partition_supervisor::which_children(self, std::move(sup));
  std::sort(v.begin(), v.end(), [](const child_info& a, const child_info& b) {
    return std::stoi(a.id) < std::stoi(b.id);
  });
  co_return v;
}

}  // namespace

// -- routing (§8.3) ------------------------------------------------------------------------------

TEST(PartitionKey, IntegerKeysAreAbsRem) {
  const std::vector<std::pair<long long, int>> four{{0, 0},  {1, 1},  {5, 1},
                                                    {-5, 1}, {-1, 1}, {7, 3}};
  for (auto [key, p] : four) EXPECT_EQ(partition_key(key).partition(4), p) << key;
  EXPECT_EQ(partition_key(3).partition(3), 0);
  EXPECT_EQ(partition_key(-1).partition(3), 1);
  EXPECT_EQ(partition_key(LLONG_MIN).partition(4), 0);  // |min| = 2^63, no overflow
  EXPECT_EQ(partition_key(LLONG_MIN).partition(3), static_cast<int>((1ULL << 63) % 3));
  EXPECT_EQ(partition_key(ULLONG_MAX).partition(7), static_cast<int>(ULLONG_MAX % 7));
}

// The phash2 vectors of §8.3 rule 9, and more computed with erlang:phash2/2 on OTP 25
// (lengths around the 12-byte block boundary, and N near 2^31 to check all 32 bits).
TEST(PartitionKey, StringKeysArePhash2OfTheBinary) {
  struct vec {
    const char* key;
    int n2, n4, n8, n16;
  };
  const vec table[] = {{"b", 1, 1, 5, 5}, {"user:42", 1, 3, 3, 3}, {"", 1, 1, 5, 5}};
  for (const vec& v : table) {
    const partition_key k(v.key);
    EXPECT_EQ(k.partition(2), v.n2) << v.key;
    EXPECT_EQ(k.partition(4), v.n4) << v.key;
    EXPECT_EQ(k.partition(8), v.n8) << v.key;
    EXPECT_EQ(k.partition(16), v.n16) << v.key;
  }
  EXPECT_EQ(partition_key("b").partition(3), 0);  // not phash2(<<"b">>) rem 3, which is 2
  EXPECT_EQ(partition_key("user:42").partition(3), 1);
  EXPECT_EQ(partition_key("b").partition(5), 3);
  struct wide {
    const char* key;
    int n_max, n_million;
  };
  const wide erl[] = {{"", 147926629, 926188},
                      {"b", 554582006, 57547},
                      {"ab", 261815530, 814747},
                      {"abc", 1306188027, 184109},
                      {"abcd", 1071845900, 319890},
                      {"abcde", 504217779, 216267},
                      {"abcdefgh", 1414404383, 877347},
                      {"abcdefghi", 2087839144, 832883},
                      {"abcdefghijk", 96993671, 993383},
                      {"abcdefghijkl", 686521495, 519437},
                      {"abcdefghijklm", 1353618853, 91997},
                      {"user:42", 677879827, 877796},
                      {"hello world, long binary!!", 1005778676, 775661}};
  for (const wide& w : erl) {
    EXPECT_EQ(partition_key(w.key).partition(INT_MAX), w.n_max) << w.key;
    EXPECT_EQ(partition_key(std::string(w.key)).partition(1000003), w.n_million) << w.key;
  }
  const std::string bytes{'\xff', '\xfe', '\xfd', '\0', '\x01', '\x02', '\x80', '\x81', '\xc8',
                          10,     11,     12,     13,   14,     15,     16,     17,     18,
                          19,     20,     21,     22,   23,     24,     25};
  EXPECT_EQ(partition_key(bytes).partition(3), 1);  // 2831232421 rem 3
  EXPECT_EQ(partition_key(bytes).partition(INT_MAX), static_cast<int>(2831232421ULL % INT_MAX));
}

// -- start_link/1 --------------------------------------------------------------------------------

// start_link/1 "on success": 100 start_child calls through via(name, ref) all land somewhere
// which_children can see.
TEST(PartitionSupervisorTest, StartLinkOnSuccess) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    const partition_supervisor_options o = options("on_success", dynamic_spec());
    const start_result s = co_await partition_supervisor::start_link(self, o);
    CO_ASSERT_TRUE(s.is_ok());
    EXPECT_EQ(partition_supervisor::partitions(self, "on_success"),
              static_cast<int>(rt.schedulers()));
    std::set<std::string> refs;
    for (int i = 0; i < 100; ++i) {
      const ref r = self.make_ref();
      refs.insert(r.to_string());
      auto started = co_await dynamic_supervisor::start_child(
          self, partition_supervisor::via("on_success", r), agent_spec(r.to_string()));
      EXPECT_TRUE(started.has_value() && started->is_ok());
    }
    std::set<std::string> agents;
    for (const child_info& p : co_await partition_supervisor::which_children(self, "on_success"))
      for (const child_info& a : co_await dynamic_supervisor::which_children(self, p.pid))
        agents.insert(co_await agent_get(self, a.pid));
    EXPECT_EQ(refs, agents);
  });
}

// start_link/1 with a via name "on success". beamlet has no Registry to name the supervisor
// through, so the case runs the via path Elixir takes internally: routing by the supervisor's
// pid, never through its registered name.
TEST(PartitionSupervisorTest, StartLinkOnSuccessWithViaName) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    const partition_supervisor_options o = options("via_named", agent_spec("hello"));
    const start_result s = co_await partition_supervisor::start_link(self, o);
    CO_ASSERT_TRUE(s.is_ok());
    EXPECT_EQ(partition_supervisor::partitions(self, "via_named"),
              static_cast<int>(rt.schedulers()));
    EXPECT_EQ(co_await agent_get(self, partition_supervisor::via(s.pid(), 0)), "hello");
    (void)rt.unregister_name("via_named");  // the pid route does not need the name
    EXPECT_EQ(co_await agent_get(self, partition_supervisor::via(s.pid(), 0)), "hello");
  });
}

// start_link/1 "with_arguments"
TEST(PartitionSupervisorTest, WithArguments) {
  run_case_with_runtime([](process& self, runtime&) -> task<> {
    partition_supervisor_options o = options("with_args", agent_spec("unused"));
    o.partitions = 3;
    o.with_arguments = [](child_spec spec, int partition) {
      spec.start = worker_start<agent>(std::to_string(partition));
      return spec;
    };
    const start_result s = co_await partition_supervisor::start_link(self, o);
    CO_ASSERT_TRUE(s.is_ok());
    EXPECT_EQ(partition_supervisor::partitions(self, "with_args"), 3);
    const std::vector<std::pair<int, std::string>> expected{
        {0, "0"}, {1, "1"}, {2, "2"}, {3, "0"}, {-1, "1"}};
    for (const auto& [key, value] : expected)
      EXPECT_EQ(co_await agent_get(self, partition_supervisor::via("with_args", key)), value)
          << key;
  });
}

// "raises without name" / "raises without child_spec" / "raises on bad partitions" / "raises
// on bad with_arguments": checked in the caller, before anything is spawned. beamlet reports
// them as start errors, like every bad supervisor flag (docs/errors.md), where Elixir raises.
TEST(PartitionSupervisorTest, BadOptionsAreStartErrors) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    const std::size_t before = rt.process_count();
    std::vector<partition_supervisor_options> bad;
    bad.push_back(options("", dynamic_spec()));
    bad.push_back(options("foo", child_spec()));
    bad.push_back(options("foo", dynamic_spec()));
    bad.back().partitions = 0;
    bad.push_back(options("foo", dynamic_spec()));
    bad.back().with_arguments = [](child_spec s, int) {
      s.start = nullptr;
      return s;
    };
    bad.push_back(options("foo", dynamic_spec()));
    bad.back().intensity = -1;  // a supervisor flag: reported the same way
    std::vector<std::string> got;
    for (const auto& o : bad)
      got.push_back((co_await partition_supervisor::start_link(self, o)).to_string());
    EXPECT_EQ(got, (std::vector<std::string>{"{error,{supervisor_data,missing_name}}",
                                             "{error,{supervisor_data,missing_child}}",
                                             "{error,{supervisor_data,{invalid_partitions,0}}}",
                                             "{error,{start_spec,{missing_start,0}}}",
                                             "{error,{supervisor_data,{invalid_intensity,-1}}}"}));
    EXPECT_TRUE(eventually([&] { return rt.process_count() == before; }));
    EXPECT_FALSE(rt.whereis("foo").has_value());
  });
}

// "stop/1 is synchronous"
TEST(PartitionSupervisorTest, StopIsSynchronous) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    const partition_supervisor_options o = options("stopped", agent_spec("x"));
    (void)co_await partition_supervisor::start_link(self, o);
    co_await partition_supervisor::stop(self, "stopped");
    EXPECT_FALSE(rt.whereis("stopped").has_value());
    bool noproc = false;
    try {
      (void)partition_supervisor::partitions(self, "stopped");
    } catch (const exit_exception&) {
      noproc = true;
    }
    EXPECT_TRUE(noproc);
  });
}

// partitions/1 "raises noproc for unknown atom partition supervisor" / "... unknown via
// partition supervisor"; routing through either exits the caller the same way, unwrapped.
TEST(PartitionSupervisorTest, PartitionsRaisesNoprocForUnknown) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    std::string atom_error, via_error, call_error_text;
    try {
      (void)partition_supervisor::partitions(rt, "unknown");
    } catch (const exit_exception& e) {
      atom_error = e.reason().to_string();
    }
    try {
      (void)partition_supervisor::via("unknown", 1).whereis(rt);
    } catch (const exit_exception& e) {
      via_error = e.reason().to_string();
    }
    try {
      (void)co_await agent_get(self, partition_supervisor::via("unknown", 1));
    } catch (const exit_exception& e) {
      call_error_text = e.reason().to_string();
    }
    const std::string expected = "{noproc,{partition_supervisor,partitions,[unknown]}}";
    EXPECT_EQ(atom_error, expected);
    EXPECT_EQ(via_error, expected);
    EXPECT_EQ(call_error_text, expected);  // not wrapped in {_, {gen_server, call, _}}
  });
}

// which_children/1 "returns all partitions"
TEST(PartitionSupervisorTest, WhichChildrenReturnsAllPartitions) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    const partition_supervisor_options o = options("which", agent_spec("{}"));
    (void)co_await partition_supervisor::start_link(self, o);
    const int n = static_cast<int>(rt.schedulers());
    EXPECT_EQ(partition_supervisor::partitions(self, "which"), n);
    const auto children = co_await sorted_children(self, "which");
    CO_ASSERT_EQ(children.size(), static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) {
      const child_info& c = children[static_cast<std::size_t>(p)];
      EXPECT_EQ(c.id, std::to_string(p));
      EXPECT_EQ(c.pid, partition_supervisor::via("which", p).whereis(rt));
      EXPECT_EQ(c.type, child_type::worker);
      EXPECT_EQ(c.modules, std::vector<std::string>{"agent"});
    }
    // Reverse partition order before sorting, as every static supervisor lists its children.
    const auto raw = co_await partition_supervisor::which_children(self, "which");
    EXPECT_EQ(raw.front().id, std::to_string(n - 1));
  });
}

// count_children/1 "with workers" / "with supervisors" / "raises noproc for unknown partition
// supervisor"
TEST(PartitionSupervisorTest, CountChildren) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    const std::size_t n = rt.schedulers();
    const partition_supervisor_options w = options("count_w", agent_spec("{}"));
    const partition_supervisor_options s = options("count_s", dynamic_spec());
    (void)co_await partition_supervisor::start_link(self, w);
    (void)co_await partition_supervisor::start_link(self, s);
    const child_counts cw = co_await partition_supervisor::count_children(self, "count_w");
    const child_counts cs = co_await partition_supervisor::count_children(self, "count_s");
    EXPECT_EQ(cw, (child_counts{n, n, 0, n}));
    EXPECT_EQ(cs, (child_counts{n, n, n, 0}));
    bool noproc = false;
    try {
      (void)co_await partition_supervisor::count_children(self, "count_unknown");
    } catch (const call_error& e) {
      noproc = e.which() == call_error::kind::noproc;
    }
    EXPECT_TRUE(noproc);
  });
}

// §8.3 rule 12: Elixir 1.14 keeps routing a via-named supervisor's key to the dead pid after a
// partition restarts. beamlet routes to the live child, by name and by pid, and reapplies
// with_arguments on the restart (§8.2 rule 6).
TEST(PartitionSupervisorTest, RoutingFollowsRestarts) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    partition_supervisor_options o = options("restarts", agent_spec("unused"));
    o.partitions = 4;
    o.with_arguments = [](child_spec spec, int partition) {
      std::string value = "p";
      value += std::to_string(partition);  // not "p" + ...: GCC 12 -Wrestrict false positive
      spec.start = worker_start<agent>(std::move(value));
      return spec;
    };
    const start_result s = co_await partition_supervisor::start_link(self, o);
    CO_ASSERT_TRUE(s.is_ok());
    for (int p : {0, 2}) {
      const pid old = partition_supervisor::whereis(self, "restarts", p);
      const ref m = self.monitor(old);
      self.exit(old, exit_reason::kill());
      co_await self.receive(on<down>().when([m](const down& d) { return d.ref == m; }));
      // The restart is done once the supervisor answers (it handles the EXIT first).
      (void)co_await partition_supervisor::count_children(self, "restarts");
      const pid fresh = partition_supervisor::whereis(rt, "restarts", p);
      EXPECT_NE(fresh, old);
      EXPECT_TRUE(rt.is_alive(fresh));
      EXPECT_EQ(partition_supervisor::via(s.pid(), p).whereis(rt), fresh);
      std::string expected = "p";
      expected += std::to_string(p);
      EXPECT_EQ(co_await agent_get(self, partition_supervisor::via("restarts", p)), expected);
    }
  });
}

// §8.4 rule 18: crashing more often than the intensity allows takes the whole supervisor down,
// and its routing with it.
TEST(PartitionSupervisorTest, MaxRestartsZeroRemovesTheTable) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    self.trap_exit(true);
    partition_supervisor_options o = options("fragile", agent_spec("x"));
    o.intensity = 0;
    const start_result s = co_await partition_supervisor::start_link(self, o);
    self.exit(partition_supervisor::whereis(self, "fragile", 0), exit_reason::kill());
    auto e = co_await self.receive(
        on<exit_message>().when([&](const exit_message& m) { return m.from == s.pid(); }),
        after(10s));
    CO_ASSERT_TRUE(e);
    EXPECT_EQ(e.get<exit_message>().reason, exit_reason::shutdown());
    EXPECT_FALSE(rt.whereis("fragile").has_value());
    bool noproc = false;
    try {
      (void)partition_supervisor::via(s.pid(), 0).whereis(rt);
    } catch (const exit_exception&) {
      noproc = true;
    }
    EXPECT_TRUE(noproc);
  });
}

// A partition whose child returned ignore routes to nobody: call fails with noproc.
TEST(PartitionSupervisorTest, IgnoredPartitionRoutesToNobody) {
  run_case_with_runtime([](process& self, runtime& rt) -> task<> {
    partition_supervisor_options o = options("ignoring", agent_spec("x"));
    o.partitions = 2;
    o.with_arguments = [](child_spec spec, int partition) {
      if (partition == 1)
        spec.start = [](process&) -> task<start_result> { co_return start_result::ignore(); };
      return spec;
    };
    (void)co_await partition_supervisor::start_link(self, o);
    EXPECT_TRUE(partition_supervisor::whereis(rt, "ignoring", 0));
    EXPECT_FALSE(partition_supervisor::whereis(rt, "ignoring", 1));
    bool noproc = false;
    try {
      (void)co_await agent_get(self, partition_supervisor::via("ignoring", 1));
    } catch (const call_error& e) {
      noproc = e.which() == call_error::kind::noproc;
    }
    EXPECT_TRUE(noproc);
    const auto children = co_await sorted_children(self, "ignoring");
    EXPECT_EQ(children.at(1).status, child_info::state::undefined);
  });
}

}  // namespace beamlet::test
