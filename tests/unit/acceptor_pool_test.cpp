// The supervised acceptor pool (beamlet/net/acceptor_pool.hpp): a process per connection,
// max_connections, partitions, a bind error, EMFILE backoff, graceful drain.
#include <beamlet/net/acceptor_pool.hpp>

#include <sys/resource.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <beamlet/observe/metrics.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/supervisor.hpp>

#include "net_support.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

/// Echoes lines until the peer closes.
task<> echo_lines(process& self, net::tcp_socket s) {
  for (;;) {
    auto line = co_await net::recv(self, s);
    if (!line) co_return;
    if (!co_await net::send(self, s, *line)) co_return;
  }
}

net::acceptor_pool_options echo_pool(std::string name) {
  net::acceptor_pool_options o;
  o.name = std::move(name);
  o.acceptors = 2;
  o.listen.accepted.framing = net::framing::line;
  o.handler = echo_lines;
  return o;
}

/// Starts the pool under a fresh top supervisor; returns the supervisor.
pid start_under_supervisor(scoped_process& me, net::acceptor_pool_options o) {
  std::vector<child_spec> children;
  children.push_back(
      child_spec("pool", net::acceptor_pool_start(std::move(o))).with_type(child_type::supervisor));
  const start_result r = supervisor::start_link(
      me, {}, [children]() { return supervisor_init(supervisor_flags{}, children); });
  if (!r.is_ok()) throw std::runtime_error("the pool did not start: " + r.to_string());
  return r.pid();
}

/// The pid of the child `id` of the supervisor `sup`.
pid child_pid(scoped_process& me, pid sup, std::string_view id) {
  for (const child_info& c : supervisor::which_children(me, sup))
    if (c.id == id) return c.pid;
  return pid();
}

std::uint16_t port_of(runtime& rt, std::string_view name) {
  const auto s = net::acceptor_pool::stats(rt, name);
  return s ? s->port : 0;
}

TEST(AcceptorPool, EachConnectionIsServedByItsOwnProcess) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t processes_before = rt.process_count();
  const pid sup = start_under_supervisor(me, echo_pool("echo"));
  const std::uint16_t port = port_of(rt, "echo");
  ASSERT_NE(port, 0);
  std::vector<raw_client> clients;
  for (int i = 0; i < 20; ++i) clients.emplace_back(port);
  for (int i = 0; i < 20; ++i) clients[i].send("hello " + std::to_string(i) + "\n");
  for (int i = 0; i < 20; ++i) {
    const std::string want = "hello " + std::to_string(i) + "\n";
    EXPECT_EQ(clients[i].recv_exact(want.size()), want);
  }
  auto st = net::acceptor_pool::stats(rt, "echo");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->accepted, 20u);
  EXPECT_EQ(st->active, 20);
  EXPECT_TRUE(st->accepting);
  clients.clear();
  EXPECT_TRUE(eventually([&] { return net::acceptor_pool::stats(rt, "echo")->active == 0; }));
  supervisor::stop(me, sup);
  EXPECT_FALSE(net::acceptor_pool::stats(rt, "echo"));
  EXPECT_TRUE(eventually([&] { return rt.process_count() == processes_before; }))
      << rt.process_count() << " processes, " << processes_before << " before";
}

TEST(AcceptorPool, OverMaxConnectionsTheNewOnesAreClosed) {
  runtime rt;
  scoped_process me(rt);
  auto o = echo_pool("capped");
  o.max_connections = 2;
  const pid sup = start_under_supervisor(me, o);
  const std::uint16_t port = port_of(rt, "capped");
  raw_client a(port), b(port);
  a.send("a\n");
  b.send("b\n");
  EXPECT_EQ(a.recv_exact(2), "a\n");
  EXPECT_EQ(b.recv_exact(2), "b\n");
  raw_client c(port);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(net::acceptor_pool::stats(rt, "capped")->refused, 1u);
  a.close();  // room again
  // Room is what the connections' supervisor counts: `active` drops as a connection process's
  // body ends, a moment before the supervisor has handled its exit and freed the slot.
  const pid conns = child_pid(me, child_pid(me, sup, "pool"), "connections");
  ASSERT_TRUE(
      eventually([&] { return dynamic_supervisor::count_children(me, conns).active == 1; }));
  raw_client d(port);
  d.send("d\n");
  EXPECT_EQ(d.recv_exact(2), "d\n");
  supervisor::stop(me, sup);
}

TEST(AcceptorPool, ItsCountersAreInTheMetrics) {
  runtime rt;
  scoped_process me(rt);
  const pid sup = start_under_supervisor(me, echo_pool("counted"));
  raw_client a(port_of(rt, "counted"));
  a.send("a\n");
  EXPECT_EQ(a.recv_exact(2), "a\n");
  const std::string text = prometheus_metrics(rt);
  EXPECT_NE(text.find("# TYPE beamlet_net_open_sockets gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("beamlet_net_pool_accepted_total{pool=\"counted\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("beamlet_net_pool_active{pool=\"counted\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("beamlet_net_pool_refused_total{pool=\"counted\"} 0"), std::string::npos);
  EXPECT_NE(text.find("beamlet_net_pool_accept_errors_total{pool=\"counted\"} 0"),
            std::string::npos);
  supervisor::stop(me, sup);
}

TEST(AcceptorPool, PartitionsSpreadTheConnections) {
  runtime rt;
  scoped_process me(rt);
  auto o = echo_pool("parts");
  o.partitions = 2;
  o.acceptors = 4;
  const pid sup = start_under_supervisor(me, o);
  const std::uint16_t port = port_of(rt, "parts");
  std::vector<raw_client> clients;
  for (int i = 0; i < 8; ++i) clients.emplace_back(port);
  for (auto& c : clients) c.send("x\n");
  for (auto& c : clients) EXPECT_EQ(c.recv_exact(2), "x\n");
  EXPECT_EQ(partition_supervisor::partitions(rt, "parts.connections"), 2);
  EXPECT_EQ(net::acceptor_pool::stats(rt, "parts")->active, 8);
  clients.clear();
  supervisor::stop(me, sup);
}

TEST(AcceptorPool, ATakenPortIsAStartError) {
  runtime rt;
  scoped_process me(rt);
  auto first = net::listen(rt, net::listen_options{});
  ASSERT_TRUE(first);
  auto o = echo_pool("clash");
  o.listen.port = first->port();
  o.listen.reuse_address = false;
  std::vector<child_spec> children;
  children.push_back(
      child_spec("pool", net::acceptor_pool_start(o)).with_type(child_type::supervisor));
  const start_result r = supervisor::start_link(
      me, {}, [children]() { return supervisor_init(supervisor_flags{}, children); });
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.to_string().find("listen_error"), std::string::npos) << r.to_string();
  EXPECT_THROW(net::acceptor_pool_start(net::acceptor_pool_options{}), std::invalid_argument);
}

TEST(AcceptorPool, DrainStopsAcceptingAndWaitsForTheConnections) {
  runtime rt;
  scoped_process me(rt);
  const pid sup = start_under_supervisor(me, echo_pool("drained"));
  const std::uint16_t port = port_of(rt, "drained");
  raw_client a(port), b(port);
  a.send("1\n");
  b.send("2\n");
  EXPECT_EQ(a.recv_exact(2), "1\n");
  EXPECT_EQ(b.recv_exact(2), "2\n");
  std::atomic<int> drained{-1};
  const pid drainer = rt.spawn([&](process& self) -> task<> {
    drained = (co_await net::acceptor_pool::drain(self, "drained", 10s)) ? 1 : 0;
  });
  ASSERT_TRUE(eventually([&] { return !net::acceptor_pool::stats(rt, "drained")->accepting; }));
  // Refused, or accepted and closed by the acceptor that finds the pool draining. Not "at once":
  // on a loaded machine the acceptor's turn can take a while, so the limit is the default one.
  raw_client late;
  const bool connected = late.connect(port);
  EXPECT_FALSE(connected && !late.closed_by_peer())
      << "connections refused by the pool so far: "
      << net::acceptor_pool::stats(rt, "drained")->refused;
  // The open connections still work, and the drain ends when they do.
  a.send("still\n");
  EXPECT_EQ(a.recv_exact(6), "still\n");
  EXPECT_EQ(drained.load(), -1);
  a.close();
  b.close();
  ASSERT_TRUE(rt.wait(drainer, 10s));
  EXPECT_EQ(drained.load(), 1);
  supervisor::stop(me, sup);
}

TEST(AcceptorPool, ADrainThatTimesOutLeavesTheRestToTheShutdown) {
  runtime rt;
  scoped_process me(rt);
  const pid sup = start_under_supervisor(me, echo_pool("stubborn"));
  raw_client a(port_of(rt, "stubborn"));
  a.send("hi\n");
  EXPECT_EQ(a.recv_exact(3), "hi\n");
  bool drained = true;
  ASSERT_TRUE(run_process(rt, [&](process& self) -> task<> {
    drained = co_await net::acceptor_pool::drain(self, "stubborn", 100ms);
  }));
  EXPECT_FALSE(drained);
  supervisor::stop(me, sup);  // kills the connection that would not end
  EXPECT_TRUE(a.closed_by_peer());
}

// drain() waits on the last connection's end, not on a poll, and its timeout is a receive's: it
// follows the runtime's clock.
TEST(AcceptorPool, ADrainsTimeoutFollowsTheRuntimesClock) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  const pid sup = start_under_supervisor(me, echo_pool("clocked"));
  raw_client a(port_of(rt, "clocked"));
  a.send("hi\n");
  EXPECT_EQ(a.recv_exact(3), "hi\n");
  std::atomic<int> drained{-1};
  const pid drainer = rt.spawn([&](process& self) -> task<> {
    drained = (co_await net::acceptor_pool::drain(self, "clocked", 5s)) ? 1 : 0;
  });
  ASSERT_TRUE(eventually([&] { return !net::acceptor_pool::stats(rt, "clocked")->accepting; }));
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, drainer);
    return d && d->status == process_status::waiting;
  }));
  clock->advance(4s);
  EXPECT_TRUE(rt.is_alive(drainer));  // 4 of its 5 seconds have passed
  clock->advance(1s);
  ASSERT_TRUE(rt.wait(drainer, 10s));
  EXPECT_EQ(drained.load(), 0);
  supervisor::stop(me, sup);
}

// A drain that begins after the last connection ended returns at once.
TEST(AcceptorPool, ADrainWithNoConnectionsReturnsAtOnce) {
  runtime rt;
  scoped_process me(rt);
  const pid sup = start_under_supervisor(me, echo_pool("empty"));
  bool drained = false;
  ASSERT_TRUE(run_process(rt, [&](process& self) -> task<> {
    drained = co_await net::acceptor_pool::drain(self, "empty", infinity);
  }));
  EXPECT_TRUE(drained);
  supervisor::stop(me, sup);
}

// The sanitizers' runtimes need descriptors of their own at the worst moment (UBSan opens a
// pipe to check a pointer it is about to report on), so running out of them is only tested in
// the uninstrumented and TSan builds.
TEST(AcceptorPool, OutOfDescriptorsTheAcceptorsBackOffAndCarryOn) {
  if (under_asan)
    GTEST_SKIP() << "descriptor exhaustion is not testable under ASan+UBSan (see above)";
  runtime rt;
  scoped_process me(rt);
  const pid sup = start_under_supervisor(me, echo_pool("emfile"));
  const std::uint16_t port = port_of(rt, "emfile");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  // Take every descriptor left under a lowered limit, then connect: the kernel completes the
  // handshake, but accept fails with EMFILE.
  raw_client waiting;
  std::vector<int> hogs;
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(::dup(0) + 8);  // a few above what is open now
  ::close(static_cast<int>(low.rlim_cur) - 8);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  waiting.open();
  for (int fd; (fd = ::dup(0)) >= 0;) hogs.push_back(fd);
  ASSERT_TRUE(waiting.connect_open(port));
  ASSERT_TRUE(
      eventually([&] { return net::acceptor_pool::stats(rt, "emfile")->accept_errors > 0; }));
  for (int fd : hogs) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  // Backed off, not dead: the waiting connection is served.
  waiting.send("served\n");
  EXPECT_EQ(waiting.recv_exact(7), "served\n");
  raw_client another(port);
  another.send("too\n");
  EXPECT_EQ(another.recv_exact(4), "too\n");
  supervisor::stop(me, sup);
}

TEST(AcceptorPool, ACrashingConnectionDisturbsNoOther) {
  runtime rt;
  logger::of(rt).set_reports(false);
  scoped_process me(rt);
  auto o = echo_pool("crashy");
  o.handler = [](process& self, net::tcp_socket s) -> task<> {
    auto line = co_await net::recv(self, s);
    if (line && *line == "crash\n") throw std::runtime_error("asked to");
    co_await echo_lines(self, std::move(s));
  };
  const pid sup = start_under_supervisor(me, o);
  const std::uint16_t port = port_of(rt, "crashy");
  raw_client good(port), bad(port);
  good.send("first\n");
  bad.send("crash\n");
  EXPECT_TRUE(bad.closed_by_peer());
  good.send("second\n");
  EXPECT_EQ(good.recv_exact(7), "second\n");
  // The crashed process is gone a moment after its socket closed.
  EXPECT_TRUE(eventually([&] { return net::acceptor_pool::stats(rt, "crashy")->active == 1; }));
  supervisor::stop(me, sup);
}

}  // namespace
}  // namespace beamlet::test
