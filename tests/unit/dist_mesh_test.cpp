// beamlet to beamlet across two OS processes, and a three-node mesh of two beamlet nodes and
// one Erlang node: every pair talks directly (the nodes are hidden), messages keep their order
// per pair, and killing one node is noconnection/nodedown for the others.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>
#include <beamlet/net/tcp.hpp>

#include <gtest/gtest.h>

#include <thread>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

using dist::term;
using namespace std::chrono_literals;

TEST(DistBeamlet, MessagesLinksAndMonitorsBetweenTwoBeamletNodes) {
  runtime rt;
  start_node(rt, "bb");
  beamlet_peer peer("bb_peer");
  scoped_process me(rt);
  const pid echo = peer.wait_up(me);
  ASSERT_TRUE(echo);
  ASSERT_TRUE(echo.is_remote());
  // 20,000 messages by pid (about 2.5 MB: batches beyond what one socket write takes) come
  // back in order.
  const term pad = term::make_binary(std::string(100, 'p'));
  for (int i = 0; i < 20000; ++i)
    me.send(echo, term::make_tuple({term(me.self()), term::make_tuple({term(i), pad})}));
  for (int i = 0; i < 20000; ++i) {
    auto m = me.receive(on<term>().when([](const term& t) {
      return t.is_tuple() && t.size() == 3 && t[1].is_tuple();
    }),
                        after(5s));
    ASSERT_TRUE(m) << "message " << i;
    ASSERT_EQ(m.get<term>()[1][0].integer(), i);
  }
  // A monitor and a link to the echo; it dies with a reason we choose.
  me.trap_exit(true);
  const ref m = me.monitor(echo);
  me.link(echo);
  me.send(echo,
          term::make_tuple({atom("die"), term::make_tuple({atom("shutdown"), atom("asked")})}));
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().reason, exit_reason::shutdown("asked"));
  auto x = me.receive(on<exit_message>(), after(5s));
  ASSERT_TRUE(x);
  EXPECT_EQ(x.get<exit_message>().from, echo);
  EXPECT_EQ(x.get<exit_message>().reason, exit_reason::shutdown("asked"));
}

TEST(DistBeamlet, KillingTheOtherBeamletNodeIsNoconnection) {
  runtime rt;
  start_node(rt, "bk");
  beamlet_peer peer("bk_peer");
  scoped_process me(rt);
  const pid echo = peer.wait_up(me);
  ASSERT_TRUE(echo);
  me.trap_exit(true);
  me.link(echo);
  const ref m = me.monitor(echo);
  dist::monitor_node(me, peer.name());
  // The peer links to us too.
  me.send(echo, term::make_tuple({atom("relay"), term(echo),
                                  term::make_tuple({atom("link"), term(me.self())})}));
  peer.kill();
  auto x = me.receive(on<exit_message>(), after(10s));
  ASSERT_TRUE(x);
  EXPECT_EQ(x.get<exit_message>().reason, exit_reason::error("noconnection"));
  auto d = me.receive(on<down>(), after(10s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().reason, exit_reason::error("noconnection"));
  auto nd = me.receive(on<dist::nodedown>(), after(10s));
  ASSERT_TRUE(nd);
  EXPECT_EQ(nd.get<dist::nodedown>().node, peer.name());
}

TEST(DistMesh, TwoBeamletNodesAndAnErlangNode) {
  if (!erl_available()) GTEST_SKIP() << "erl is not installed: skipped";
  runtime rt;
  const auto a = start_node(rt, "mesh_a");
  beamlet_peer b("mesh_b");
  erl_node c("mesh_c");
  scoped_process me(rt);
  const pid echo = b.wait_up(me);
  ASSERT_TRUE(echo);
  ASSERT_TRUE(c.wait_up(me));
  // C sends to B's echo (C connects to B itself) and B answers A.
  c.eval(me, "P ! {Me, via_erl}, ok.", {{"P", term(echo)}, {"Me", term(me.self())}});
  auto m = me.receive(on<term>().when([](const term& t) {
    return t.is_tuple() && t.size() == 3 && t[1].is_atom("via_erl");
  }),
                      after(10s));
  ASSERT_TRUE(m);
  // B relays an eval request to C's agent; C answers A.
  const term agent = c.eval(me, "whereis(agent).");
  const term tag = term::make_tuple({atom("mesh"), term(1)});
  me.send(echo, term::make_tuple({atom("relay"), agent,
                                  term::make_tuple({atom("eval"), term(me.self()), tag,
                                                    term::make_binary("lists:sort(nodes(hidden))."),
                                                    term::make_list({})})}));
  auto r = me.receive(
      on<term>().when([&](const term& t) { return t.is_tuple() && t.size() == 2 && t[0] == tag; }),
      after(10s));
  ASSERT_TRUE(r);
  const term seen = r.get<term>()[1];
  ASSERT_TRUE(seen.is_list());
  std::vector<std::string> names;
  for (const term& t : seen.elements()) names.push_back(t.atom_name());
  std::vector<std::string> want{a.name, b.name()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);
  // Every node is connected to both others.
  EXPECT_EQ(dist::nodes(rt).size(), 2u);
  // B dies: A and C both lose it.
  dist::monitor_node(me, b.name());
  b.kill();
  auto nd = me.receive(on<dist::nodedown>(), after(10s));
  ASSERT_TRUE(nd);
  ASSERT_TRUE(eventually([&] { return c.eval(me, "length(nodes(hidden)).") == term(1); }));
}

}  // namespace
}  // namespace beamlet::test

namespace beamlet::test {
namespace {

// Two nodes that connect to each other at the same moment end up with one connection, and
// nothing either side sent is lost (OTP's rule: the attempt of the greater name wins, the other
// side takes over its socket).
TEST(DistBeamlet, SimultaneousConnectsSettleOnOneConnection) {
  for (int round = 0; round < 5; ++round) {
    runtime a, b;
    const auto na = start_node(a, "sim_a" + std::to_string(round));
    const auto nb = start_node(b, "sim_b" + std::to_string(round));
    scoped_process ma(a), mb(b);
    ASSERT_FALSE(ma.register_name("inbox"));
    ASSERT_FALSE(mb.register_name("inbox"));
    std::thread t([&] { mb.send("inbox", na.name, term::make_atom("from_b")); });
    ma.send("inbox", nb.name, term::make_atom("from_a"));
    t.join();
    auto at_a = ma.receive(on<term>(), after(10s));
    auto at_b = mb.receive(on<term>(), after(10s));
    ASSERT_TRUE(at_a) << "round " << round;
    ASSERT_TRUE(at_b) << "round " << round;
    EXPECT_TRUE(at_a.get<term>().is_atom("from_b"));
    EXPECT_TRUE(at_b.get<term>().is_atom("from_a"));
    EXPECT_EQ(dist::nodes(a), std::vector<std::string>{nb.name});
    EXPECT_EQ(dist::nodes(b), std::vector<std::string>{na.name});
    // One connection each: the listener, the epmd registration and that connection.
    EXPECT_TRUE(eventually([&] { return net::open_sockets(a) == 3 && net::open_sockets(b) == 3; }))
        << net::open_sockets(a) << " and " << net::open_sockets(b) << " sockets";
  }
}

}  // namespace
}  // namespace beamlet::test
