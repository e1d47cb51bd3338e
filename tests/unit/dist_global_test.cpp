// Visible nodes and Erlang's `global` (dist/global.hpp): a visible beamlet node joins a
// two-node Erlang cluster (all three list each other in nodes(), with no warning logged by
// either Erlang node), global names registered on either side are seen on the other, a name
// goes with its process, and the cluster stays healthy (connected, `global` not locked) when
// the beamlet node leaves and when one is killed. A hidden node stays out of all of it.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace dist_global_cases {

using dist::term;

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The names of an Erlang list of atoms.
std::vector<std::string> atoms(const term& t) {
  std::vector<std::string> out;
  if (t.is_list())
    for (const term& e : t.elements())
      if (e.is_atom()) out.push_back(e.atom_name());
  return out;
}

bool is_registered(const term& t) {
  return t.is_tuple() && t.size() == 2 && t[0].is_atom("registered");
}

// Collects the node's log events of level warning and above; warnings() returns them.
const char* watch_logs =
    "Loop = fun L(Acc) -> receive {log, E} -> L([E | Acc]);"
    "                             {get, From} -> From ! {logs, lists:reverse(Acc)}, L(Acc) end "
    "       end,"
    "register(logs, spawn(fun() -> Loop([]) end)),"
    "logger:add_primary_filter(watch, {fun(#{level := Lv} = E, _) ->"
    "    case logger:compare_levels(Lv, warning) of"
    "      lt -> ok;"
    "      _ -> logs ! {log, maps:with([level, msg, meta], E)}"
    "    end, ignore end, []}).";

std::string warnings(erl_node& erl, scoped_process& me) {
  const term l = erl.eval(me, "logs ! {get, self()}, receive {logs, L} -> L end.");
  return l.is_list() && l.size() == 0 ? std::string() : l.to_string();
}

// Two Erlang nodes connected to each other, each watching its log.
struct erl_cluster {
  erl_cluster(scoped_process& me) : a("glob_a"), b("glob_b") {
    EXPECT_TRUE(a.wait_up(me));
    EXPECT_TRUE(b.wait_up(me));
    EXPECT_TRUE(a.eval(me, "net_kernel:connect_node(B).", {{"B", term::make_atom(b.name())}})
                    .is_atom("true"));
    EXPECT_TRUE(a.eval(me, "global:sync().").is_atom("ok"));
    EXPECT_TRUE(b.eval(me, "global:sync().").is_atom("ok"));
    EXPECT_TRUE(a.eval(me, watch_logs).is_atom("ok"));
    EXPECT_TRUE(b.eval(me, watch_logs).is_atom("ok"));
  }
  // Both still connected to each other, and `global` free on both: a registration goes
  // through (it would wait for ever behind a stuck lock).
  void healthy(scoped_process& me, const std::string& name) {
    EXPECT_TRUE(has(atoms(a.eval(me, "nodes().")), b.name())) << "the Erlang nodes parted";
    const term r = a.try_eval(me,
                              "P = spawn(fun() -> receive stop -> ok end end),"
                              "global:register_name(N, P).",
                              {{"N", term::make_atom(name)}}, std::chrono::milliseconds(15000))
                       .value_or(term::make_atom("no_answer"));
    EXPECT_TRUE(r.is_atom("yes")) << "global:register_name on " << a.name() << ": "
                                  << r.to_string();
    EXPECT_TRUE(eventually(
        [&] {
          return b.eval(me, "global:whereis_name(N).", {{"N", term::make_atom(name)}}).is_pid();
        },
        10s));
  }
  erl_node a, b;
};

dist::node_options visible(const std::string& base) {
  dist::node_options o = loopback_options(base);
  o.hidden = false;
  return o;
}

// register_name run in a process of its own; its result is sent to `to`.
pid register_in_process(scoped_process& me, term name, pid owner) {
  return me.spawn([name, owner, to = me.self()](process& self) -> task<> {
    auto r = co_await dist::global::register_name(self, name, owner);
    self.send(to, r ? term::make_atom(*r ? "yes" : "no") : term::make_atom("error"));
  });
}

term register_result(scoped_process& me) {
  auto m = me.receive(on<term>().when([](const term& t) {
    return t.is_atom("yes") || t.is_atom("no") || t.is_atom("error");
  }),
                      after(20s));
  return m ? m.get<term>() : term::make_atom("no_answer");
}

TEST(DistGlobal, AVisibleNodeJoinsAnErlangClusterAndSharesGlobalNames) {
  REQUIRE_ERL();
  // The test drives the Erlang nodes from a hidden node of its own (a second runtime), so that
  // the visible node joins only when it is told to.
  runtime ctl_rt;
  start_node(ctl_rt, "glob_ctl");
  scoped_process ctl(ctl_rt);
  erl_cluster c(ctl);
  const term erl_pid = c.a.eval(ctl,
                                "P = spawn(fun() -> receive stop -> ok end end),"
                                "yes = global:register_name(erl_name, P), P.");
  ASSERT_TRUE(erl_pid.is_pid()) << erl_pid.to_string();

  runtime rt;
  scoped_process me(rt);
  auto n = dist::start(rt, visible("glob_cpp"));
  ASSERT_TRUE(n) << n.error().message();
  const std::string me_name = n->name;
  const auto where = [&](erl_node& e, const char* name) {
    return e.eval(ctl, "case global:whereis_name(N) of undefined -> undefined; P -> node(P) end.",
                  {{"N", term::make_atom(name)}});
  };
  // Joining A is joining the cluster: B connects too (global keeps it fully connected).
  EXPECT_TRUE(c.a.eval(ctl, "net_kernel:connect_node(N).", {{"N", term::make_atom(me_name)}})
                  .is_atom("true"));
  EXPECT_TRUE(eventually(
      [&] {
        const auto v = dist::nodes(rt, dist::node_kind::visible);
        return has(v, c.a.name()) && has(v, c.b.name());
      },
      20s))
      << "visible here: " << dist::nodes(rt, dist::node_kind::visible).size();
  EXPECT_TRUE(has(atoms(c.a.eval(ctl, "nodes().")), me_name));
  EXPECT_TRUE(eventually([&] { return has(atoms(c.b.eval(ctl, "nodes().")), me_name); }, 20s))
      << c.b.name() << " does not list the beamlet node in nodes()";
  EXPECT_TRUE(dist::nodes(rt, dist::node_kind::hidden).empty());
  // Both Erlang global servers count it among their known nodes: the sync went through.
  for (erl_node* e : {&c.a, &c.b})
    EXPECT_TRUE(eventually(
        [&] {
          return e
              ->eval(ctl, "lists:member(N, gen_server:call(global_name_server, get_known)).",
                     {{"N", term::make_atom(me_name)}})
              .is_atom("true");
        },
        20s))
        << e->name() << "'s global does not know the beamlet node";
  // The name registered before the join was exchanged.
  EXPECT_TRUE(eventually(
      [&] {
        auto p = dist::global::whereis_name(rt, term::make_atom("erl_name"));
        return p && *p == erl_pid.pid();
      },
      20s));
  // global:sync() on both Erlang nodes finishes (it waits for the sync with every node).
  EXPECT_TRUE(c.a.eval(ctl, "global:sync().", {}, 20s).is_atom("ok"));
  EXPECT_TRUE(c.b.eval(ctl, "global:sync().", {}, 20s).is_atom("ok"));

  // A C++ registration is seen on both Erlang nodes.
  const pid cpp_owner = rt.spawn(park_forever);
  register_in_process(me, term::make_atom("cpp_name"), cpp_owner);
  EXPECT_TRUE(register_result(me).is_atom("yes"));
  for (erl_node* e : {&c.a, &c.b})
    EXPECT_TRUE(eventually([&] { return where(*e, "cpp_name").is_atom(me_name); }, 10s))
        << e->name() << " does not see the C++ name";
  // Taken names and named pids are refused, as OTP refuses them.
  register_in_process(me, term::make_atom("erl_name"), rt.spawn(park_forever));
  EXPECT_TRUE(register_result(me).is_atom("no"));
  register_in_process(me, term::make_atom("second_name"), cpp_owner);
  EXPECT_TRUE(register_result(me).is_atom("no"));
  // A registration made in Erlang after the join is seen here: the locks went round.
  const term b_pid = c.b.eval(ctl,
                              "P = spawn(fun() -> receive stop -> ok end end),"
                              "yes = global:register_name(b_name, P), P.",
                              {}, 20s);
  ASSERT_TRUE(b_pid.is_pid()) << b_pid.to_string();
  EXPECT_TRUE(eventually(
      [&] { return dist::global::whereis_name(rt, term::make_atom("b_name")) == b_pid.pid(); },
      10s));
  EXPECT_TRUE(dist::global::send(me, term::make_atom("b_name"), term::make_atom("stop")));
  EXPECT_TRUE(
      eventually([&] { return !dist::global::whereis_name(rt, term::make_atom("b_name")); }, 10s))
      << "the name of a process that ended stays";
  // A C++ name goes with its process, everywhere.
  rt.exit(cpp_owner, exit_reason::kill());
  EXPECT_TRUE(eventually([&] { return where(c.a, "cpp_name").is_atom("undefined"); }, 10s));
  const auto names = dist::global::registered_names(rt);
  EXPECT_NE(std::find(names.begin(), names.end(), term::make_atom("erl_name")), names.end());

  EXPECT_EQ(warnings(c.a, ctl), "") << "on " << c.a.name();
  EXPECT_EQ(warnings(c.b, ctl), "") << "on " << c.b.name();

  // Leaving: both Erlang nodes drop it and stay healthy.
  ASSERT_TRUE(dist::stop(rt));
  for (erl_node* e : {&c.a, &c.b})
    EXPECT_TRUE(eventually([&] { return !has(atoms(e->eval(ctl, "nodes().")), me_name); }, 20s));
  c.healthy(ctl, "after_leave");
}

#ifdef BEAMLET_DIST_PEER
TEST(DistGlobal, AKilledVisibleNodeLeavesTheClusterHealthy) {
  REQUIRE_ERL();
  runtime rt;
  start_node(rt, "glob_watch");  // hidden: it drives the Erlang nodes and the peer
  scoped_process me(rt);
  erl_cluster c(me);
  beamlet_peer peer("glob_peer", test_cookie(), 120, 60000, true);
  const pid echo = peer.wait_up(me);
  ASSERT_TRUE(echo);
  // The peer joins through B and registers its echo process.
  EXPECT_TRUE(c.b.eval(me, "net_kernel:connect_node(N).", {{"N", term::make_atom(peer.name())}})
                  .is_atom("true"));
  EXPECT_TRUE(eventually([&] { return has(atoms(c.a.eval(me, "nodes().")), peer.name()); }, 20s));
  me.send(echo, term::make_tuple({term::make_atom("global_register"), term(me.self()),
                                  term::make_atom("peer_echo")}));
  auto r = me.receive(on<term>().when([](const term& t) { return is_registered(t); }), after(20s));
  ASSERT_TRUE(r) << "the peer did not answer";
  EXPECT_TRUE(r.get<term>()[1].is_atom("yes")) << r.get<term>().to_string();
  EXPECT_TRUE(
      eventually([&] { return c.a.eval(me, "global:whereis_name(peer_echo).").is_pid(); }, 10s));
  EXPECT_EQ(warnings(c.a, me), "");
  EXPECT_EQ(warnings(c.b, me), "");

  peer.kill();
  for (erl_node* e : {&c.a, &c.b}) {
    EXPECT_TRUE(eventually([&] { return !has(atoms(e->eval(me, "nodes().")), peer.name()); }, 20s));
    EXPECT_TRUE(eventually(
        [&] { return e->eval(me, "global:whereis_name(peer_echo).").is_atom("undefined"); }, 10s))
        << "the killed node's name stays on " << e->name();
  }
  c.healthy(me, "after_kill");
}
#endif

TEST(DistGlobal, TwoVisibleBeamletNodesShareNames) {
  // Both lockers and both servers are beamlet's here.
  runtime rt1, rt2;
  auto n1 = dist::start(rt1, visible("glob_one"));
  auto n2 = dist::start(rt2, visible("glob_two"));
  ASSERT_TRUE(n1 && n2);
  scoped_process me1(rt1), me2(rt2);
  const pid owner1 = rt1.spawn(park_forever);
  register_in_process(me1, term::make_atom("one"), owner1);  // before they meet
  EXPECT_TRUE(register_result(me1).is_atom("yes"));
  me1.send("nobody", n2->name, term::make_atom("hello"));  // connects
  EXPECT_TRUE(eventually(
      [&] { return dist::nodes(rt2, dist::node_kind::visible) == std::vector{n1->name}; }, 10s));
  const auto node_of_name = [](runtime& rt, const char* name) {
    auto p = dist::global::whereis_name(rt, term::make_atom(name));
    return p ? dist::node_name(rt, *p) : std::string("undefined");
  };
  EXPECT_TRUE(eventually([&] { return node_of_name(rt2, "one") == n1->name; }, 10s));
  const pid owner2 = rt2.spawn(park_forever);
  register_in_process(me2, term::make_atom("two"), owner2);
  EXPECT_TRUE(register_result(me2).is_atom("yes"));
  EXPECT_TRUE(eventually([&] { return node_of_name(rt1, "two") == n2->name; }, 10s));
  register_in_process(me1, term::make_atom("two"), rt1.spawn(park_forever));
  EXPECT_TRUE(register_result(me1).is_atom("no"));
  // Names go with their node.
  ASSERT_TRUE(dist::stop(rt2));
  EXPECT_TRUE(eventually([&] { return node_of_name(rt1, "two") == "undefined"; }, 10s));
  EXPECT_EQ(node_of_name(rt1, "one"), n1->name);
}

TEST(DistGlobal, ANameHeldOnBothSidesIsResolvedAsOtpResolvesIt) {
  REQUIRE_ERL();
  // The beamlet node's name sorts first, so it resolves the conflict (the smaller node does):
  // with global:random_exit_name/3, the pid on the node that sorts first keeps the name and
  // the other is killed.
  runtime rt;
  auto n = dist::start(rt, visible("glob_a"));
  ASSERT_TRUE(n);
  scoped_process me(rt);
  const pid ours = rt.spawn(park_forever);
  register_in_process(me, term::make_atom("contested"), ours);
  EXPECT_TRUE(register_result(me).is_atom("yes"));
  erl_node erl("glob_z", std::vector<std::string>{
                             "-eval",
                             "P = spawn(fun() -> receive _ -> ok end end), register(theirs, P),"
                             "yes = global:register_name(contested, P)."});
  ASSERT_TRUE(erl.wait_up(me));  // connects: the two sync
  EXPECT_TRUE(
      eventually([&] { return erl.eval(me, "whereis(theirs).").is_atom("undefined"); }, 20s))
      << "the Erlang holder was not killed";
  EXPECT_TRUE(eventually(
      [&] {
        const term p = erl.eval(me, "global:whereis_name(contested).");
        return p.is_pid() && p.pid() == ours;
      },
      20s));
  EXPECT_EQ(dist::global::whereis_name(rt, term::make_atom("contested")), ours);
  EXPECT_TRUE(rt.is_alive(ours));
}

TEST(DistGlobal, AHiddenNodeStaysOutOfGlobal) {
  REQUIRE_ERL();
  runtime rt;
  scoped_process me(rt);
  const auto n = start_node(rt, "glob_hidden");
  erl_node erl("glob_hidden_peer");
  ASSERT_TRUE(erl.wait_up(me));
  EXPECT_TRUE(erl.eval(me, "net_kernel:connect_node(N).", {{"N", term::make_atom(n.name)}})
                  .is_atom("true"));
  EXPECT_FALSE(has(atoms(erl.eval(me, "nodes().")), n.name));
  EXPECT_TRUE(has(atoms(erl.eval(me, "nodes(hidden).")), n.name));
  EXPECT_EQ(dist::nodes(rt, dist::node_kind::hidden), std::vector<std::string>{erl.name()});
  EXPECT_TRUE(dist::nodes(rt, dist::node_kind::visible).empty());
  register_in_process(me, term::make_atom("x"), rt.spawn(park_forever));
  EXPECT_TRUE(register_result(me).is_atom("error"));
  EXPECT_FALSE(dist::global::whereis_name(rt, term::make_atom("x")));
}

}  // namespace dist_global_cases
}  // namespace beamlet::test
