// Distribution against real Erlang nodes: the handshake, messages by pid and by name in both
// directions, and node bookkeeping. Each test starts its own `erl` (see erl_node.hpp).
#include <beamlet/dist.hpp>
#include <beamlet/mailbox.hpp>
#include <beamlet/runtime.hpp>

#include <gtest/gtest.h>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

using dist::term;

#define REQUIRE_ERL()                                                    \
  if (!erl_available()) GTEST_SKIP() << "erl is not installed: skipped"; \
  static_assert(true)

TEST(Dist, HandshakeWithAnErlangNode) {
  REQUIRE_ERL();
  runtime rt;
  const auto me_node = start_node(rt, "hs");
  erl_node erl("hs_erl");
  mailbox me(rt);
  ASSERT_TRUE(erl.wait_up(me));
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
  mailbox me(rt);
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
