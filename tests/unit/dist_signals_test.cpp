// Links, exit signals and monitors between beamlet and real Erlang processes, with real
// reasons; noproc for dead targets; and what a lost connection does (noconnection, nodedown).
#include <beamlet/core/process_info.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

using dist::term;
using namespace std::chrono_literals;

// A term message the mailbox gets that starts with `tag`.
term expect_tagged(scoped_process& me, const char* tag, std::chrono::milliseconds limit = 5s) {
  auto m = me.receive(on<term>().when([tag](const term& t) {
    return t.is_tuple() && t.size() >= 1 && t[0].is_atom(tag);
  }),
                      after(limit));
  EXPECT_TRUE(m) << "no {" << tag << ", ...} message";
  return m ? m.get<term>() : term();
}

struct dist_fixture : ::testing::Test {
  void SetUp() override {
    if (!erl_available()) GTEST_SKIP() << "erl is not installed: skipped";
    node = start_node(rt, "sig");
    erl = std::make_unique<erl_node>("sig_erl");
    ASSERT_TRUE(erl->wait_up(me));
  }
  runtime rt;
  scoped_process me{rt};
  dist::node_info node;
  std::unique_ptr<erl_node> erl;

  // An Erlang process that waits for `go` and then exits with `reason` (Erlang syntax).
  pid erl_doomed(const std::string& reason) {
    const term p = erl->eval(me, "spawn(fun() -> receive go -> exit(" + reason + ") end end).");
    EXPECT_TRUE(p.is_pid());
    return p.is_pid() ? p.pid() : pid();
  }
};

TEST_F(dist_fixture, AnErlangProcessDyingReachesALinkedBeamletProcess) {
  me.trap_exit(true);
  const pid e = erl_doomed("{boom,1}");
  me.link(e);
  me.send(e, atom("go"));
  auto x = me.receive(on<exit_message>(), after(5s));
  ASSERT_TRUE(x);
  EXPECT_EQ(x.get<exit_message>().from, e);
  EXPECT_EQ(x.get<exit_message>().reason, exit_reason::error("{boom,1}"));
  // A non-trapping linked process dies with the same reason.
  const pid e2 = erl_doomed("{boom,2}");
  const auto victim = me.spawn_monitor([e2](process& self) -> task<> {
    self.link(e2);
    self.send(e2, term::make_atom("go"));
    co_await self.receive(on<int>());
  });
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().pid, victim.pid);
  EXPECT_EQ(d.get<down>().reason, exit_reason::error("{boom,2}"));
}

TEST_F(dist_fixture, ABeamletProcessDyingReachesALinkedErlangProcess) {
  const pid p = me.spawn([](process& self) -> task<> {
    co_await self.receive(on<term>().when([](const term& t) { return t.is_atom("die"); }));
    co_await self.exit(exit_reason::error("{bad,thing}"));
  });
  erl->eval(me,
            "spawn(fun() -> process_flag(trap_exit, true), link(P), Me ! {linked},"
            " receive {'EXIT', P, R} -> Me ! {exit_seen, R} end end), ok.",
            {{"P", term(p)}, {"Me", term(me.self())}});
  expect_tagged(me, "linked");
  me.send(p, atom("die"));
  const term seen = expect_tagged(me, "exit_seen");
  EXPECT_EQ(seen.to_string(), "{exit_seen,{bad,thing}}");
  // Linking to a dead beamlet pid gives noproc (OTP 25: a trapped EXIT).
  erl->eval(me,
            "spawn(fun() -> process_flag(trap_exit, true), link(P),"
            " receive {'EXIT', P, R} -> Me ! {exit_seen, R} end end), ok.",
            {{"P", term(p)}, {"Me", term(me.self())}});
  EXPECT_EQ(expect_tagged(me, "exit_seen").to_string(), "{exit_seen,noproc}");
}

TEST_F(dist_fixture, UnlinkEndsTheLinkOnBothSides) {
  me.trap_exit(true);
  const pid e = erl_doomed("{boom,3}");
  me.link(e);
  // The Erlang side sees the link, then sees it go.
  EXPECT_EQ(erl->eval(me, "{links, L} = process_info(E, links), L.", {{"E", term(e)}}).size(), 1u);
  me.unlink(e);
  ASSERT_TRUE(eventually([&] {
    return erl->eval(me, "{links, L} = process_info(E, links), L.", {{"E", term(e)}}).is_nil();
  }));
  me.send(e, atom("go"));
  EXPECT_FALSE(me.receive(on<exit_message>(), after(300ms)));
  // The other way: an Erlang process links to a beamlet process and unlinks (UNLINK_ID); the
  // beamlet process's death then does not reach it.
  const pid p = me.spawn([](process& self) -> task<> {
    co_await self.receive(on<term>().when([](const term& t) { return t.is_atom("die"); }));
    co_await self.exit(exit_reason::error("late"));
  });
  erl->eval(me,
            "spawn(fun() -> process_flag(trap_exit, true), link(P), unlink(P), Me ! {unlinked},"
            " receive {'EXIT', P, R} -> Me ! {exit_seen, R} after 1000 -> Me ! {exit_seen, none}"
            " end end), ok.",
            {{"P", term(p)}, {"Me", term(me.self())}});
  auto u = me.receive(on<term>().when([](const term& t) {
    return t.is_tuple() && t.size() == 1 && t[0].is_atom("unlinked");
  }),
                      after(5s));
  ASSERT_TRUE(u);
  ASSERT_TRUE(
      eventually([&] { return process_info(rt, p) && process_info(rt, p)->links.empty(); }));
  me.send(p, atom("die"));
  auto seen = me.receive(on<term>().when([](const term& t) {
    return t.is_tuple() && t.size() == 2 && t[0].is_atom("exit_seen");
  }),
                         after(5s));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen.get<term>().to_string(), "{exit_seen,none}");
}

TEST_F(dist_fixture, ExitSignalsBothWays) {
  const pid e = erl_doomed("normal");
  const ref m = me.monitor(e);
  me.exit(e, exit_reason::error("{stop,now}"));
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().reason, exit_reason::error("{stop,now}"));
  // exit(P, kill) from Erlang kills a trapping beamlet process (killed).
  const auto target = me.spawn_monitor([](process& self) -> task<> {
    self.trap_exit(true);
    co_await self.receive(on<int>());
  });
  ASSERT_TRUE(eventually([&] { return process_info(rt, target.pid)->trap_exit; }));
  erl->eval(me, "exit(P, kill), ok.", {{"P", term(target.pid)}});
  auto killed = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed.get<down>().reason, exit_reason::killed());
}

TEST_F(dist_fixture, MonitorsBothWaysWithRealReasons) {
  const pid e = erl_doomed("{reason,x}");
  const ref m = me.monitor(e);
  me.send(e, atom("go"));
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().pid, e);
  EXPECT_EQ(d.get<down>().reason, exit_reason::error("{reason,x}"));
  // Monitoring it again: it is dead, noproc at once.
  const ref again = me.monitor(e);
  auto d2 = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2.get<down>().ref, again);
  EXPECT_EQ(d2.get<down>().reason, exit_reason::noproc());

  // Erlang monitors a beamlet process.
  const pid p = me.spawn([](process& self) -> task<> {
    co_await self.receive(on<term>());
    co_await self.exit(exit_reason::error("{cpp,died}"));
  });
  erl->eval(me,
            "spawn(fun() -> R = monitor(process, P), Me ! {monitoring},"
            " receive {'DOWN', R, process, P, Why} -> Me ! {down_seen, Why} end end), ok.",
            {{"P", term(p)}, {"Me", term(me.self())}});
  expect_tagged(me, "monitoring");
  me.send(p, atom("go"));
  EXPECT_EQ(expect_tagged(me, "down_seen").to_string(), "{down_seen,{cpp,died}}");
  // ... and a dead one: noproc.
  erl->eval(me,
            "spawn(fun() -> R = monitor(process, P),"
            " receive {'DOWN', R, process, P, Why} -> Me ! {down_seen, Why} end end), ok.",
            {{"P", term(p)}, {"Me", term(me.self())}});
  EXPECT_EQ(expect_tagged(me, "down_seen").to_string(), "{down_seen,noproc}");
}

TEST_F(dist_fixture, MonitorsByName) {
  // beamlet monitors {Name, Node} on the Erlang side.
  erl->eval(me, "register(doomed, spawn(fun() -> receive go -> exit(by_name) end end)), ok.");
  const ref m = me.monitor("doomed", erl->name());
  me.send("doomed", erl->name(), atom("go"));
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().name, "doomed");
  EXPECT_EQ(d.get<down>().reason, exit_reason::error("by_name"));
  // Nobody holds the name: noproc.
  (void)me.monitor("nobody", erl->name());
  auto none = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(none);
  EXPECT_EQ(none.get<down>().reason, exit_reason::noproc());
  // Erlang monitors {cpp_named, OurNode}: the DOWN names it.
  const pid p = me.spawn([](process& self) -> task<> {
    (void)self.register_name("cpp_named");
    co_await self.receive(on<term>());
  });
  ASSERT_TRUE(eventually([&] { return rt.whereis("cpp_named") == p; }));
  erl->eval(me,
            "spawn(fun() -> R = monitor(process, {cpp_named, N}), Me ! {monitoring},"
            " receive {'DOWN', R, process, Who, Why} -> Me ! {down_seen, Who, Why} end end), ok.",
            {{"N", term::make_atom(node.name)}, {"Me", term(me.self())}});
  expect_tagged(me, "monitoring");
  me.send(p, atom("go"));
  EXPECT_EQ(expect_tagged(me, "down_seen").to_string(),
            "{down_seen,{cpp_named,'" + node.name + "'},normal}");
}

TEST_F(dist_fixture, DemonitorStopsTheDown) {
  const pid e = erl_doomed("late");
  const ref m = me.monitor(e);
  EXPECT_TRUE(me.demonitor(m));
  me.send(e, atom("go"));
  EXPECT_FALSE(me.receive(on<down>(), after(300ms)));
  // The Erlang side forgot the monitor too.
  const pid e2 = erl_doomed("normal");
  const ref m2 = me.monitor(e2);
  ASSERT_TRUE(eventually([&] {
    return erl->eval(me, "{monitored_by, L} = process_info(E, monitored_by), length(L).",
                     {{"E", term(e2)}}) == term(1);
  }));
  me.demonitor(m2);
  ASSERT_TRUE(eventually([&] {
    return erl->eval(me, "{monitored_by, L} = process_info(E, monitored_by), length(L).",
                     {{"E", term(e2)}}) == term(0);
  }));
}

TEST_F(dist_fixture, ALostConnectionIsNoconnectionForEveryLinkAndMonitor) {
  me.trap_exit(true);
  const pid e1 = erl_doomed("normal");
  const pid e2 = erl_doomed("normal");
  me.link(e1);
  const ref m = me.monitor(e2);
  const auto linked_child = me.spawn_monitor([e1](process& self) -> task<> {
    self.link(e1);
    co_await self.receive(on<int>());
  });
  dist::monitor_node(me, erl->name());
  scoped_process watcher(rt);
  dist::monitor_nodes(watcher);
  ASSERT_TRUE(eventually([&] {
    return erl->eval(me, "{links, L} = process_info(E, links), length(L).", {{"E", term(e1)}}) ==
           term(2);
  }));
  erl->kill();  // SIGKILL: no goodbye
  auto x = me.receive(on<exit_message>(), after(10s));
  ASSERT_TRUE(x);
  EXPECT_EQ(x.get<exit_message>().from, e1);
  EXPECT_EQ(x.get<exit_message>().reason, exit_reason::error("noconnection"));
  auto d = me.receive(on<down>().when([m](const down& v) { return v.ref == m; }), after(10s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().reason, exit_reason::error("noconnection"));
  auto child = me.receive(
      on<down>().when([&](const down& v) { return v.ref == linked_child.monitor; }), after(10s));
  ASSERT_TRUE(child);
  EXPECT_EQ(child.get<down>().reason, exit_reason::error("noconnection"));
  auto nd = me.receive(on<dist::nodedown>(), after(10s));
  ASSERT_TRUE(nd);
  EXPECT_EQ(nd.get<dist::nodedown>().node, erl->name());
  auto nd2 = watcher.receive(on<dist::nodedown>(), after(10s));
  ASSERT_TRUE(nd2);
  EXPECT_TRUE(dist::nodes(rt).empty());
  // Links and monitors toward the lost node now get noconnection at once (it cannot be reached).
  const ref late = me.monitor(e2);
  auto d3 =
      me.receive(on<down>().when([late](const down& v) { return v.ref == late; }), after(10s));
  ASSERT_TRUE(d3);
  EXPECT_EQ(d3.get<down>().reason, exit_reason::error("noconnection"));
}

TEST(DistCookie, AWrongCookieIsRefusedAndNothingCrashes) {
  REQUIRE_ERL();
  runtime rt;
  const auto n = start_node(rt, "cookie", "right_cookie");
  erl_node erl("cookie_erl", "wrong_cookie");
  scoped_process me(rt);
  // Our connection attempts fail (the digest is wrong either way) ...
  EXPECT_FALSE(erl.wait_up(me, std::chrono::seconds(5)));
  EXPECT_TRUE(dist::nodes(rt).empty());
  // ... the node keeps working: a correct peer still connects.
  erl_node good("cookie_good", "right_cookie");
  EXPECT_TRUE(good.wait_up(me));
  (void)n;
}

TEST(DistIdentity, ARestartedNodesOldPidsAreDead) {
  REQUIRE_ERL();
  runtime rt;
  start_node(rt, "ident");
  scoped_process me(rt);
  pid old;
  {
    erl_node erl("ident_erl");
    ASSERT_TRUE(erl.wait_up(me));
    old = erl.eval(me, "whereis(agent).").pid();
  }
  erl_node again("ident_erl");  // same name, new creation
  ASSERT_TRUE(again.wait_up(me));
  const pid now = again.eval(me, "whereis(agent).").pid();
  EXPECT_NE(now, old);
  EXPECT_EQ(dist::node_name(rt, now), dist::node_name(rt, old));
  // The old agent is dead: monitoring it is noproc, a message to it goes nowhere.
  const ref m = me.monitor(old);
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().reason, exit_reason::noproc());
  me.send(old, atom("lost"));
}

}  // namespace
}  // namespace beamlet::test
