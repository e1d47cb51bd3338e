// Distribution against real Erlang nodes: the handshake, messages by pid and by name in both
// directions, and node bookkeeping. Each test starts its own `erl` (see erl_node.hpp).
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <utility>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

using dist::term;

TEST(Dist, HandshakeWithAnErlangNode) {
  REQUIRE_ERL();
  runtime rt;
  const auto me_node = start_node(rt, "hs");
  scoped_process watcher(rt);
  dist::monitor_nodes(watcher);
  erl_node erl("hs_erl");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  // monitor_nodes: one nodeup, and no nodedown for the attempts made before erl was up.
  auto up =
      watcher.receive(on<dist::nodeup>(), on<dist::nodedown>(), after(std::chrono::seconds(5)));
  ASSERT_TRUE(up);
  ASSERT_TRUE(up.is<dist::nodeup>());
  EXPECT_EQ(up.get<dist::nodeup>().node, erl.name());
  EXPECT_EQ(erl.eval(me, "node().").to_string(), "'" + erl.name() + "'");
  // The Erlang side sees us as a hidden node, with the creation epmd gave us.
  const term hidden = erl.eval(me, "nodes(hidden).");
  ASSERT_TRUE(hidden.is_list());
  ASSERT_EQ(hidden.size(), 1u);
  EXPECT_EQ(hidden[0].atom_name(), me_node.name);
  EXPECT_EQ(erl.eval(me, "nodes().").size(), 0u);
  EXPECT_EQ(dist::nodes(rt), std::vector<std::string>{erl.name()});
  // net_adm:ping from the Erlang side goes through our net_kernel stand-in.
  EXPECT_EQ(erl.eval(me, "net_adm:ping(N).", {{"N", term::make_atom(me_node.name)}}).to_string(),
            "pong");
}

TEST(Dist, MessagesByPidAndByNameBothWays) {
  REQUIRE_ERL();
  runtime rt;
  const auto me_node = start_node(rt, "msg");
  erl_node erl("msg_erl");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  // Erlang -> beamlet, by pid.
  erl.eval(me, "P ! {hello, [1,2,3], <<\"bin\">>, 1.5}, ok.", {{"P", term(me.self())}});
  auto m = me.receive(on<term>().when([](const term& t) { return t.is_tuple() && t.size() == 4; }),
                      after(std::chrono::seconds(5)));
  ASSERT_TRUE(m);
  EXPECT_EQ(m.get<term>().to_string(), "{hello,[1,2,3],<<\"bin\">>,1.5}");
  // Erlang -> beamlet, by registered name.
  ASSERT_FALSE(me.register_name("cpp_inbox"));
  erl.eval(me, "{cpp_inbox, N} ! by_name, ok.", {{"N", term::make_atom(me_node.name)}});
  auto byname = me.receive(on<term>().when([](const term& t) { return t.is_atom("by_name"); }),
                           after(std::chrono::seconds(5)));
  EXPECT_TRUE(byname);
  // beamlet -> Erlang, by pid: an echo process sends back what it gets.
  const term echo =
      erl.eval(me, "spawn(fun() -> receive {From, X} -> From ! {echoed, X} end end).");
  ASSERT_TRUE(echo.is_pid());
  ASSERT_TRUE(echo.pid().is_remote());
  EXPECT_EQ(dist::node_name(rt, echo.pid()), erl.name());
  me.send(echo.pid(), term::make_tuple({term(me.self()), term::make_atom("ping")}));
  auto back = me.receive(
      on<term>().when([](const term& t) { return t.is_tuple() && t[0].is_atom("echoed"); }),
      after(std::chrono::seconds(5)));
  ASSERT_TRUE(back);
  EXPECT_EQ(back.get<term>()[1].to_string(), "ping");
  // Registered standard types go as their terms.
  const term echo2 =
      erl.eval(me, "spawn(fun() -> receive X -> P ! {got, X} end end).", {{"P", term(me.self())}});
  me.send(echo2.pid(), std::string("text"));
  auto got =
      me.receive(on<term>().when([](const term& t) { return t.is_tuple() && t[0].is_atom("got"); }),
                 after(std::chrono::seconds(5)));
  ASSERT_TRUE(got);
  EXPECT_EQ(got.get<term>()[1].to_string(), "<<\"text\">>");
}

}  // namespace
}  // namespace beamlet::test

namespace beamlet::test {
namespace {

bool epmd_lists(const std::string& alive) {
  FILE* p = ::popen("epmd -names 2>/dev/null", "r");
  if (p == nullptr) return false;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  return out.find("name " + alive + " ") != std::string::npos;
}

TEST(Dist, ConnectNodeAndDisconnectNode) {
  REQUIRE_ERL();
  runtime rt;
  start_node(rt, "cn");
  erl_node erl("cn_erl");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  ASSERT_TRUE(dist::disconnect_node(rt, erl.name()));
  ASSERT_TRUE(eventually([&] { return dist::nodes(rt).empty(); }));
  // connect_node makes the connection again and waits for it; an unknown node is false.
  me.spawn([peer = erl.name(), to = me.self()](process& self) -> task<> {
    const bool up = co_await dist::connect_node(self, peer);
    const bool nowhere = co_await dist::connect_node(self, "nobody_here@127.0.0.1");
    self.send(to, std::make_pair(up, nowhere));
  });
  auto r = me.receive(on<std::pair<bool, bool>>(), after(std::chrono::seconds(20)));
  ASSERT_TRUE(r);
  const auto both = r.get<std::pair<bool, bool>>();
  EXPECT_TRUE(both.first);
  EXPECT_FALSE(both.second);
  EXPECT_EQ(dist::nodes(rt), std::vector<std::string>{erl.name()});
}

TEST(Dist, StopClosesConnectionsAndUnregistersFromEpmd) {
  REQUIRE_ERL();
  runtime rt;
  const auto first = start_node(rt, "stop1");
  erl_node erl("stop_erl");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  const std::string alive = first.name.substr(0, first.name.find('@'));
  EXPECT_TRUE(epmd_lists(alive));
  // An Erlang process watches our node and records the nodedown it gets.
  erl.eval(me,
           "spawn(fun() -> monitor_node(A, true), Me ! {watching},"
           " receive {nodedown, A} -> register(saw_nodedown, self()),"
           " receive stop -> ok end end end), ok.",
           {{"A", term::make_atom(first.name)}, {"Me", term(me.self())}});
  auto w = me.receive(on<term>().when([](const term& t) { return t.is_tuple() && t.size() == 1; }),
                      after(std::chrono::seconds(5)));
  ASSERT_TRUE(w);
  ASSERT_TRUE(dist::stop(rt));
  EXPECT_TRUE(eventually([&] { return !epmd_lists(alive); }));
  EXPECT_TRUE(dist::nodes(rt).empty());
  // The same runtime starts again under another name and asks what the Erlang side saw.
  start_node(rt, "stop2");
  ASSERT_TRUE(erl.wait_up(me));
  EXPECT_TRUE(erl.eval(me, "is_pid(whereis(saw_nodedown)).").is_atom("true"));
}

}  // namespace
}  // namespace beamlet::test

namespace beamlet::test {
namespace {

TEST(Dist, RpcCallsFromErlangReachRegisteredFunctions) {
  REQUIRE_ERL();
  runtime rt;
  const auto n = start_node(rt, "rpc");
  dist::register_rpc(rt, "calc", "add", [](const dist::term_list& a) {
    return term(a.at(0).integer() + a.at(1).integer());
  });
  dist::register_rpc(rt, "calc", "fail",
                     [](const dist::term_list&) -> term { throw std::runtime_error("boom"); });
  erl_node erl("rpc_erl");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  const std::vector<std::pair<std::string, term>> node = {{"N", term::make_atom(n.name)}};
  EXPECT_EQ(erl.eval(me, "rpc:call(N, calc, add, [2, 3]).", node), term(5));
  EXPECT_EQ(erl.eval(me, "erpc:call(N, calc, add, [40, 2]).", node), term(42));
  const std::string undef = erl.eval(me, "rpc:call(N, calc, nope, []).", node).to_string();
  EXPECT_EQ(undef.rfind("{badrpc,{'EXIT',{undef,", 0), 0u) << undef;
  const std::string failed = erl.eval(me, "rpc:call(N, calc, fail, []).", node).to_string();
  EXPECT_NE(failed.find("{cpp_exception,<<\"boom\">>}"), std::string::npos) << failed;
  // Erlang's own functions are not there (no code runs on a C++ node but what it registers).
  const std::string spawned =
      erl.eval(me, "catch erpc:call(N, erlang, node, []).", node).to_string();
  EXPECT_NE(spawned.find("undef"), std::string::npos) << spawned;
}

}  // namespace
}  // namespace beamlet::test
