// The operator's console (http_endpoint_options::console): its JSON API, its event stream and its
// actions, driven by a real HTTP client (tests/http/http_check.py, the `console*` cases). The
// page itself is tested in headless Chromium (tests/browser/console_test.py).
#include <beamlet/net/tcp.hpp>
#include <beamlet/observe/http_endpoint.hpp>
#include <beamlet/observe/logger.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/supervisor.hpp>

#include <stdexcept>
#include <string>
#include <thread>

#include "http_client.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

class console_worker : public gen_server<console_worker> {};

struct never_sent {};

// Parks in a receive nothing matches: what is sent to it stays queued.
struct console_hoarder {
  task<> operator()(process& self, const starter& st) {
    (void)self.register_name("hoarder");
    self.set_label("role", "keeps everything");
    st.ack(self, start_result::ok(self.self()));
    co_await self.receive(on<never_sent>());
  }
};

/// app_sup: a gen_server `worker`, a dynamic supervisor `pool` with two children, and `hoarder`
/// holding 300 messages.
struct console_system {
  runtime rt;
  captured_log log{rt};
  scoped_process me{rt};

  console_system() {
    me.trap_exit(true);
    auto sup = supervisor::start_link(me, {"app_sup"}, [] {
      return supervisor_init(
          supervisor_flags{},
          {child_spec("worker", worker_start_named<console_worker>("worker")),
           child_spec("pool", dynamic_supervisor_start({}, {"pool"}))
               .with_type(child_type::supervisor),
           child_spec("hoarder", start_function([](process& s) -> task<start_result> {
                        console_hoarder body;  // a named local: docs/gcc12-coroutines.md
                        co_return co_await start_link(s, std::move(body));
                      }))});
    });
    EXPECT_TRUE(sup.is_ok()) << sup;
    for (int i = 0; i < 2; ++i)
      EXPECT_TRUE(dynamic_supervisor::start_child(me, "pool",
                                                  child_spec("", worker_start<console_worker>()))
                      .has_value());
    for (int i = 0; i < 300; ++i) me.send(pid_of("hoarder"), i);
  }
  ~console_system() { supervisor::stop(me, "app_sup"); }

  pid pid_of(const char* name) { return rt.whereis(name).value_or(pid()); }
};

http_endpoint start_console(runtime& rt, http_endpoint_options o) {
  auto r = http_endpoint::start(rt, std::move(o));
  if (!r) throw std::runtime_error("http_endpoint::start: " + r.error().message());
  return std::move(*r);
}

/// A pid as one shell word.
std::string arg(pid p) {
  return "'" + p.to_string() + "'";
}

/// The console subscribes from the endpoint's process, once it runs: wait for that.
pid wait_for_subscriber(runtime& rt) {
  (void)eventually([&] { return static_cast<bool>(system_monitor(rt).subscriber); });
  return system_monitor(rt).subscriber;
}

http_endpoint_options console_options() {
  http_endpoint_options o;
  o.console = true;
  o.console_token = "s3cret";
  o.console_sample_interval = std::chrono::milliseconds(50);
  o.console_history = 5;
  o.max_page_entries = 100;
  return o;
}

TEST(Console, OffByDefault) {
  console_system sys;
  auto ep = start_console(sys.rt, http_endpoint_options{});
  const auto r = run_client("console_off " + std::to_string(ep.port()));
  EXPECT_EQ(r.status, 0) << r.out;
  // Off, it does not take the system monitor either.
  EXPECT_FALSE(system_monitor(sys.rt).subscriber);
}

TEST(Console, PagesStreamAndActions) {
  console_system sys;
  auto ep = start_console(sys.rt, console_options());
  EXPECT_EQ(wait_for_subscriber(sys.rt), ep.process());
  const pid hoarder = sys.pid_of("hoarder");
  const auto r = run_client("console " + std::to_string(ep.port()) + " " + arg(hoarder) + " " +
                            arg(sys.pid_of("pool")) + " " + arg(sys.pid_of("worker")) + " s3cret");
  EXPECT_EQ(r.status, 0) << r.out;
  // The client killed the hoarder; app_sup restarted it.
  EXPECT_FALSE(sys.rt.is_alive(hoarder));
  // Every action was logged, with the client's address.
  EXPECT_TRUE(sys.log.wait_for([&](const log_event& e) {
    return e.message == "console: kill " + hoarder.to_string() + " (from 127.0.0.1)";
  }));
  EXPECT_TRUE(sys.log.wait_for(
      [](const log_event& e) { return e.message.rfind("console: shed_on ", 0) == 0; }));
  // Ended, the console gives the system monitor back.
  ep.stop();
  EXPECT_FALSE(system_monitor(sys.rt).subscriber);
}

TEST(Console, ShedSwitchReachesTheSupervisor) {
  console_system sys;
  auto ep = start_console(sys.rt, console_options());
  const auto r = run_client("console_shed " + std::to_string(ep.port()) + " " +
                            arg(sys.pid_of("pool")) + " s3cret");
  EXPECT_EQ(r.status, 0) << r.out;
  // Shedding on: the pool refuses new children until it is switched back.
  const auto refused = dynamic_supervisor::start_child(
      sys.me, "pool", child_spec("", worker_start<console_worker>()));
  EXPECT_FALSE(refused.has_value());
  EXPECT_TRUE(dynamic_supervisor::set_shedding(sys.rt, sys.pid_of("pool"), shedding::automatic));
  EXPECT_TRUE(dynamic_supervisor::start_child(sys.me, "pool",
                                              child_spec("", worker_start<console_worker>()))
                  .has_value());
}

TEST(Console, ActionsNeedAConfiguredToken) {
  console_system sys;
  http_endpoint_options o = console_options();
  o.console_token.clear();
  auto ep = start_console(sys.rt, o);
  const pid hoarder = sys.pid_of("hoarder");
  const auto r = run_client("console_no_token " + std::to_string(ep.port()) + " " + arg(hoarder));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(sys.rt.is_alive(hoarder));
}

TEST(Console, LeavesAnotherSubscriberAlone) {
  console_system sys;
  system_monitor_settings mine;
  mine.subscriber = sys.me.self();
  mine.long_schedule = std::chrono::seconds(1);
  set_system_monitor(sys.rt, mine);
  {
    auto ep = start_console(sys.rt, console_options());
    // Once it serves (a request answered), it has made its choice.
    EXPECT_EQ(run_client("console_up " + std::to_string(ep.port())).status, 0);
    EXPECT_EQ(system_monitor(sys.rt).subscriber, sys.me.self());
  }
  EXPECT_EQ(system_monitor(sys.rt).subscriber, sys.me.self());
  set_system_monitor(sys.rt, system_monitor_settings{});
}

TEST(Console, BadOptions) {
  runtime rt;
  http_endpoint_options o = console_options();
  o.console_sample_interval = std::chrono::milliseconds(0);
  EXPECT_THROW((void)http_endpoint::start(rt, o), std::invalid_argument);
  o = console_options();
  o.console_history = 0;
  EXPECT_THROW((void)http_endpoint::start(rt, o), std::invalid_argument);
  o = console_options();
  o.console_long_queue = 1;
  EXPECT_THROW((void)http_endpoint::start(rt, o), std::invalid_argument);
  // Without the console, its options are not looked at.
  o.console = false;
  EXPECT_NO_THROW((void)http_endpoint::start(rt, o));
}

TEST(Console, TokensCompareWhole) {
  // The comparison is the library's (detail::token_matches); through the endpoint: a prefix, a
  // longer token and a token differing in its last byte are all refused.
  console_system sys;
  auto ep = start_console(sys.rt, console_options());
  const auto r = run_client("console_tokens " + std::to_string(ep.port()) + " " +
                            arg(sys.pid_of("hoarder")) + " s3cret");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST(Console, SourcesAreCheckedAndReplaced) {
  runtime rt;
  const auto answer = [](std::string body) {
    return [body](process&, std::string) -> task<http_response> {
      co_return http_response{200, "text/plain", body};
    };
  };
  EXPECT_THROW(add_console_source(rt, "processes", answer("x")), std::invalid_argument);
  EXPECT_THROW(add_console_source(rt, "a/b", answer("x")), std::invalid_argument);
  EXPECT_THROW(add_console_source(rt, "", answer("x")), std::invalid_argument);
  EXPECT_THROW(add_console_source(rt, "empty", console_source()), std::invalid_argument);
  add_console_source(rt, "mine", answer("first"));
  add_console_source(rt, "mine", answer("second"));
  http_endpoint_options o;
  o.console = true;
  auto ep = http_endpoint::start(rt, o);
  ASSERT_TRUE(ep);
  EXPECT_EQ(run_client("console_source " + std::to_string(ep->port()) + " mine second").status, 0);
  remove_console_source(rt, "mine");
  remove_console_source(rt, "never_added");
  EXPECT_EQ(run_client("console_source " + std::to_string(ep->port()) + " mine -").status, 0);
}

TEST(Console, GaugesAreSampled) {
  runtime rt;
  EXPECT_THROW(add_console_gauge(rt, "broken", nullptr), std::invalid_argument);
  EXPECT_THROW(add_console_gauge(rt, "", [] { return std::int64_t{1}; }), std::invalid_argument);
  EXPECT_THROW(add_console_gauge(rt, "a b", [] { return std::int64_t{1}; }), std::invalid_argument);
  add_console_gauge(rt, "widgets", [] { return std::int64_t{41}; });
  add_console_gauge(rt, "widgets", [] { return std::int64_t{42}; });  // replaced
  add_console_gauge(rt, "failing", []() -> std::int64_t { throw std::runtime_error("no"); });
  // The network layer counts its sockets: a listener is one.
  auto l = net::listen(rt, {.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(l);
  auto ep = start_console(rt, console_options());
  EXPECT_EQ(run_client("console_gauges " + std::to_string(ep.port()) + " widgets=42").status, 0);
  remove_console_gauge(rt, "widgets");
  remove_console_gauge(rt, "never_added");
  EXPECT_EQ(run_client("console_gauges " + std::to_string(ep.port()) + " widgets=-").status, 0);
  l->close();
}

}  // namespace
}  // namespace beamlet::test
