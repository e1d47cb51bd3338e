// The HTTP endpoint (beamlet/observe/http_endpoint.hpp), exercised by a real HTTP client: Python's
// http.client and raw sockets (tests/http/http_check.py), on loopback.
#include <beamlet/net/tcp.hpp>
#include <beamlet/observe/http_endpoint.hpp>
#include <beamlet/observe/logger.hpp>
#include <beamlet/observe/metrics.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/supervisor.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "http_client.hpp"
#include "test_support.hpp"

extern char** environ;

namespace beamlet::test {
namespace {

class worker : public gen_server<worker> {};

/// A small system to look at: app_sup with a worker and a pool of three, and a process with a
/// backlog of 500 messages.
struct system_under_test {
  runtime rt;
  captured_log quiet{rt};
  scoped_process me{rt};
  pid backlog;

  system_under_test() {
    me.trap_exit(true);
    auto sup = supervisor::start_link(me, {"app_sup"}, [] {
      return supervisor_init(supervisor_flags{},
                             {child_spec("worker", worker_start<worker>()),
                              child_spec("pool", dynamic_supervisor_start({}, {"pool"}))
                                  .with_type(child_type::supervisor)});
    });
    EXPECT_TRUE(sup.is_ok()) << sup;
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(
          dynamic_supervisor::start_child(me, "pool", child_spec("", worker_start<worker>()))
              .has_value());
    backlog = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
    EXPECT_FALSE(rt.register_name("backlog", backlog));
    for (int i = 0; i < 500; ++i) me.send(backlog, i);
  }
  ~system_under_test() { me.send(backlog, go{}); }
};

/// Starts an endpoint, or fails the test with the reason.
http_endpoint must_start(runtime& rt, http_endpoint_options o) {
  auto r = http_endpoint::start(rt, std::move(o));
  if (!r) throw std::runtime_error("http_endpoint::start: " + r.error().message());
  return std::move(*r);
}

http_endpoint_options test_options() {
  http_endpoint_options o;
  o.request_timeout = std::chrono::milliseconds(500);
  o.header_timeout = std::chrono::milliseconds(500);
  o.tree_max_children = 2;
  // The concurrency tests come from one address, 127.0.0.1.
  o.max_connections_per_peer = o.max_connections;
  return o;
}

TEST(HttpEndpoint, AnswersEveryPage) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  ASSERT_NE(ep.port(), 0);
  EXPECT_TRUE(sys.rt.is_alive(ep.process()));
  const auto r = run_client("pages " + std::to_string(ep.port()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_GE(ep.stats().requests, 10u);
}

TEST(HttpEndpoint, MalformedAndOversizedRequests) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  const auto r = run_client("malformed " + std::to_string(ep.port()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_GE(ep.stats().bad_requests, 2u);
  // Still serving.
  EXPECT_EQ(run_client("pages " + std::to_string(ep.port())).status, 0);
}

TEST(HttpEndpoint, AClientThatNeverFinishesIsCutOff) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  const auto r = run_client("slow " + std::to_string(ep.port()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ep.stats().timeouts, 1u);
  // Nothing leaks: the connection is gone.
  EXPECT_TRUE(eventually([&] { return ep.stats().open_connections == 0; }));
}

TEST(HttpEndpoint, AThousandConcurrentRequests) {
  system_under_test sys;
  auto o = test_options();
  // The thousand clients are threads of one Python process, which take turns holding its
  // interpreter lock: on a loaded machine a client can send its request seconds after it
  // connected, or close its kept-alive connection seconds after it read the answer. The
  // endpoint cuts a connection silent for header_timeout before its first request (without an
  // answer) or for request_timeout after an answer (500 ms each in test_options), and counts
  // both as timeouts. This test is about concurrency; the timeouts have tests of their own, so
  // here they are longer than the test, and no connection may be cut: neither by a timeout nor
  // as one of the slowest readers past max_queued_bytes (16 MiB).
  o.header_timeout = std::chrono::minutes(1);
  o.request_timeout = std::chrono::minutes(1);
  auto ep = must_start(sys.rt, o);
  const auto cuts = [&] {
    const auto s = ep.stats();
    return "timeouts " + std::to_string(s.timeouts) + ", slow_closed " +
           std::to_string(s.slow_closed);
  };
  const std::string port = std::to_string(ep.port());
  auto first = run_client("concurrent " + port + " 1000");
  ASSERT_EQ(first.status, 0) << first.out << cuts();
  const std::int64_t after_first = resident_bytes();
  for (int round = 0; round < 2; ++round) {
    const auto r = run_client("concurrent " + port + " 1000");
    ASSERT_EQ(r.status, 0) << r.out << cuts();
  }
  EXPECT_EQ(cuts(), "timeouts 0, slow_closed 0");
  // Memory stays bounded: more rounds do not keep growing the process. (Not under ASan, whose
  // quarantine keeps freed memory resident on purpose.)
  if (!under_asan) {
    EXPECT_LT(resident_bytes(), after_first + 32 * 1024 * 1024);
  }
  EXPECT_TRUE(eventually([&] { return ep.stats().open_connections == 0; }));
  EXPECT_EQ(ep.stats().connections, 3000u);
  EXPECT_EQ(run_client("pages " + port).status, 0);
}

TEST(HttpEndpoint, OverTheConnectionLimitAnswers503) {
  system_under_test sys;
  auto opts = test_options();
  opts.max_connections = 4;
  auto ep = must_start(sys.rt, opts);
  const auto r = run_client("concurrent " + std::to_string(ep.port()) + " 200");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(eventually([&] { return ep.stats().open_connections == 0; }));
}

TEST(HttpEndpoint, StopClosesTheListener) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  const std::string port = std::to_string(ep.port());
  const pid p = ep.process();
  ep.stop();
  EXPECT_FALSE(sys.rt.is_alive(p));
  EXPECT_EQ(run_client("refused " + port).status, 0);
  ep.stop();  // idempotent
}

TEST(HttpEndpoint, KillingTheProcessClosesTheListener) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  const std::string port = std::to_string(ep.port());
  sys.rt.exit(ep.process(), exit_reason::kill());
  ASSERT_TRUE(sys.rt.wait(ep.process(), 10s));
  EXPECT_EQ(run_client("refused " + port).status, 0);
}

// A child process the service starts while the endpoint listens and serves (a helper, an erl
// node) must not hold the endpoint's sockets: after stop() the port is closed, not a backlog
// that the child's copy of the listener keeps filling.
TEST(HttpEndpoint, AChildProcessInheritsNoSocket) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  const std::string port = std::to_string(ep.port());
  ASSERT_EQ(run_client("pages " + port).status, 0);
  char sleep_cmd[] = "sleep";
  char thirty[] = "30";
  char* argv[] = {sleep_cmd, thirty, nullptr};
  pid_t child = 0;
  ASSERT_EQ(::posix_spawnp(&child, "sleep", nullptr, nullptr, argv, environ), 0);
  ep.stop();
  const auto r = run_client("refused " + port);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(r.status, 0) << "the stopped endpoint's listener lived on in the child: " << r.out;
}

TEST(HttpEndpoint, UnderASupervisor) {
  system_under_test sys;
  auto opts = test_options();
  auto sup = supervisor::start_link(sys.me, {"ops_sup"}, [opts] {
    return supervisor_init(supervisor_flags{}, {child_spec("http", http_endpoint_start(opts))});
  });
  ASSERT_TRUE(sup.is_ok()) << sup;
  const auto kids = supervisor::which_children(sys.me, "ops_sup");
  ASSERT_EQ(kids.size(), 1u);
  // Found through its process: the port it took (0 was asked for) and its counters.
  const auto found = http_endpoint::find(sys.rt, kids[0].pid);
  ASSERT_TRUE(found);
  EXPECT_NE(found->port, 0);
  EXPECT_EQ(run_client("pages " + std::to_string(found->port)).status, 0);
  EXPECT_GE(http_endpoint::find(sys.rt, kids[0].pid)->stats.requests, 10u);
  EXPECT_FALSE(http_endpoint::find(sys.rt, sys.backlog));
  EXPECT_TRUE(sys.rt.is_alive(kids[0].pid));
  supervisor::stop(sys.me, "ops_sup");
  EXPECT_FALSE(sys.rt.is_alive(kids[0].pid));
}

TEST(HttpEndpoint, ApplicationPagesAreServedFirst) {
  system_under_test sys;
  http_endpoint_options o = test_options();
  o.pages.push_back({.path = "/app/echo",
                     .content_type = "text/plain",
                     .render = [](std::string_view q) { return "query=" + std::string(q); }});
  o.pages.push_back({.path = "/app/throws",
                     .content_type = "text/plain",
                     .render = [](std::string_view) -> std::string {
                       throw std::runtime_error("render failed");
                     }});
  o.pages.push_back({.path = "/",
                     .content_type = "text/html; charset=utf-8",
                     .render = [](std::string_view) { return std::string("<p>replaced</p>"); }});
  o.pages.push_back({.path = "/app/secret", .respond = [](std::string_view q) {
                       if (q != "token=yes") return http_response{403, "text/plain", "forbidden"};
                       return http_response{200, "text/plain", "the secret"};
                     }});
  o.builtin.tree = false;
  auto ep = must_start(sys.rt, o);
  const auto r = run_client("app_pages " + std::to_string(ep.port()));
  EXPECT_EQ(r.status, 0) << r.out;
  // A page without a path, or without exactly one of render and respond, is refused before
  // anything starts.
  http_endpoint_options bad;
  bad.pages.push_back({.path = "app", .render = [](std::string_view) { return std::string(); }});
  EXPECT_THROW((void)http_endpoint::start(sys.rt, bad), std::invalid_argument);
  bad.pages = {{.path = "/app"}};
  EXPECT_THROW((void)http_endpoint::start(sys.rt, bad), std::invalid_argument);
  bad.pages = {{.path = "/app",
                .render = [](std::string_view) { return std::string(); },
                .respond = [](std::string_view) { return http_response{}; }}};
  EXPECT_THROW((void)http_endpoint::start(sys.rt, bad), std::invalid_argument);
}

TEST(HttpEndpoint, ANamedEndpointIsFoundByItsName) {
  system_under_test sys;
  auto opts = test_options();
  opts.name = "ops_http";
  auto sup = supervisor::start_link(sys.me, {"ops_sup"}, [opts] {
    return supervisor_init(supervisor_flags{}, {child_spec("http", http_endpoint_start(opts))});
  });
  ASSERT_TRUE(sup.is_ok()) << sup;
  const auto ep = sys.rt.whereis("ops_http");
  ASSERT_TRUE(ep);
  const auto found = http_endpoint::find(sys.rt, *ep);
  ASSERT_TRUE(found);
  EXPECT_EQ(run_client("pages " + std::to_string(found->port)).status, 0);
  // Its counters are in the metrics, next to the runtime's.
  const std::string text = prometheus_metrics(sys.rt);
  EXPECT_NE(text.find("beamlet_http_requests_total{port=\"" + std::to_string(found->port) + "\"}"),
            std::string::npos)
      << text;
  supervisor::stop(sys.me, "ops_sup");
  EXPECT_FALSE(http_endpoint::find(sys.rt, *ep));
}

TEST(HttpEndpoint, PagesAreBoundedAndPaged) {
  system_under_test sys;
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(
        dynamic_supervisor::start_child(sys.me, "pool", child_spec("", worker_start<worker>()))
            .has_value());
  auto opts = test_options();
  opts.max_page_entries = 3;
  auto ep = must_start(sys.rt, opts);
  const auto pool = sys.rt.whereis("pool");
  ASSERT_TRUE(pool);
  const auto r = run_client("paging " + std::to_string(ep.port()) + " '" + pool->to_string() + "'");
  EXPECT_EQ(r.status, 0) << r.out;
}

// top -H and perf tell the runtime's threads apart by their names.
TEST(HttpEndpoint, TheRuntimesThreadsAreNamed) {
  system_under_test sys;
  auto ep = must_start(sys.rt, test_options());
  logger::of(sys.rt).log(log_level::notice, "wake the logger's thread");
  std::set<std::string> names;
  ASSERT_TRUE(eventually([&] {
    names.clear();
    for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(t.path() / "comm");
      std::string name;
      std::getline(comm, name);
      names.insert(name);
    }
    // Each thread names itself as it starts.
    return names.count("beamlet-log") == 1 && names.count("beamlet-http") == 1 &&
           names.count("beamlet-sched-0") == 1 && names.count("beamlet-timer") == 1;
  })) << "thread names: "
      << ::testing::PrintToString(names);
  // The network layer runs on the schedulers: using it starts no thread.
  const auto threads = [] {
    std::multiset<std::string> now;
    for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(t.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name.rfind("beamlet", 0) == 0) now.insert(name);
    }
    return now;
  };
  const auto before = threads();
  auto l = net::listen(sys.rt, net::listen_options{});
  ASSERT_TRUE(l);
  EXPECT_EQ(threads(), before);
}

TEST(HttpEndpoint, BadOptionsAndATakenPort) {
  runtime rt;
  http_endpoint_options bad;
  bad.address = "localhost";  // not numeric
  EXPECT_THROW((void)http_endpoint::start(rt, bad), std::invalid_argument);
  bad.address = "127.0.0.1";
  bad.max_connections = 0;
  EXPECT_THROW((void)http_endpoint::start(rt, bad), std::invalid_argument);
  auto first = must_start(rt, {});
  http_endpoint_options same;
  same.port = first.port();
  auto taken = http_endpoint::start(rt, same);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error(), std::errc::address_in_use) << taken.error().message();
  // Under a supervisor the same failure is a start error.
  scoped_process me(rt);
  me.trap_exit(true);
  captured_log quiet(rt);
  auto sup = supervisor::start_link(me, {}, [same] {
    return supervisor_init(supervisor_flags{}, {child_spec("http", http_endpoint_start(same))});
  });
  ASSERT_FALSE(sup.is_ok());
  EXPECT_NE(sup.reason().to_string().find("listen_error"), std::string::npos) << sup;
}

}  // namespace
}  // namespace beamlet::test
