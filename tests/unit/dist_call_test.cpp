// gen_server calls across nodes with a real Elixir node: beamlet calling an Elixir GenServer,
// Elixir calling a beamlet server, servers that die mid-call on either side, and an Elixir
// Supervisor keeping a beamlet process as its linked child.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <atomic>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace {

using dist::term;
using namespace std::chrono_literals;

constexpr const char* elixir_code = R"(
defmodule Counter do
  use GenServer
  def init(n), do: {:ok, n}
  def handle_call(:get, _from, n), do: {:reply, n, n}
  def handle_call({:add, k}, _from, n), do: {:reply, n + k, n + k}
  def handle_call(:die, _from, _n), do: exit(:died_mid_call)
  def handle_cast({:set, k}, _n), do: {:noreply, k}
end
defmodule CppChild do
  def start_link(node), do: GenServer.call({:spawner, node}, {:start_link, self()})
end
{:ok, _} = GenServer.start(Counter, 0, name: :counter)
)";

struct call_fixture : ::testing::Test {
  void SetUp() override {
    if (!elixir_available()) GTEST_SKIP() << "elixir is not installed: skipped";
    node = start_node(rt, "call");
    ex = std::make_unique<erl_node>("call_ex", test_cookie(), true, elixir_code);
    ASSERT_TRUE(ex->wait_up(me));
  }
  runtime rt;
  scoped_process me{rt};
  dist::node_info node;
  std::unique_ptr<erl_node> ex;
};

// A process that runs one call and reports its result to `to`.
template <class F>
pid run_call(scoped_process& me, F f) {
  return me.spawn([f, to = me.self()](process& self) -> task<> {
    expected<term, exit_reason> r = co_await f(self);
    self.send(to, std::move(r));
  });
}

expected<term, exit_reason> result(scoped_process& me) {
  auto m = me.receive(on<expected<term, exit_reason>>(), after(10s));
  EXPECT_TRUE(m);
  return m ? m.get<expected<term, exit_reason>>()
           : expected<term, exit_reason>(unexpected(exit_reason::error("no_result")));
}

TEST_F(call_fixture, BeamletCallsAnElixirGenServer) {
  const std::string en = ex->name();
  run_call(me, [en](process& self) {
    return dist::call(self, "counter", en, term::make_tuple({term::make_atom("add"), term(5)}));
  });
  auto r = result(me);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, term(5));
  // By pid, and a cast in between.
  const term counter = ex->eval(me, "whereis(counter).");
  dist::cast(me, counter.pid(), term::make_tuple({term::make_atom("set"), term(40)}));
  run_call(me, [p = counter.pid()](process& self) {
    return dist::call(self, p, term::make_tuple({term::make_atom("add"), term(2)}));
  });
  auto r2 = result(me);
  ASSERT_TRUE(r2);
  EXPECT_EQ(*r2, term(42));
}

TEST_F(call_fixture, AnElixirServerDyingMidCallEndsTheCallAtOnce) {
  const std::string en = ex->name();
  const auto started = std::chrono::steady_clock::now();
  run_call(me, [en](process& self) {
    return dist::call(self, "counter", en, term::make_atom("die"), 30s);
  });
  auto r = result(me);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), exit_reason::error("died_mid_call"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);  // not the 30 s timeout
  // Now nobody holds the name: noproc.
  run_call(me,
           [en](process& self) { return dist::call(self, "counter", en, term::make_atom("get")); });
  auto r2 = result(me);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error(), exit_reason::noproc());
}

// A beamlet server for Elixir callers: `ping` answers pong, `die` ends the server mid-call.
pid spawn_term_server(scoped_process& me) {
  return me.spawn([](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<term>());
      auto c = dist::as_gen_call(m.get<term>());
      if (!c) continue;
      if (c->request.is_atom("die")) co_await self.exit(exit_reason::error("{cpp,died}"));
      dist::reply(self, *c, term::make_tuple({term::make_atom("pong"), c->request}));
    }
  });
}

TEST_F(call_fixture, ElixirCallsABeamletServer) {
  const pid server = spawn_term_server(me);
  const term r = ex->eval(me, "'Elixir.GenServer':call(P, ping).", {{"P", term(server)}});
  EXPECT_EQ(r.to_string(), "{pong,ping}");
  // The server dies mid-call: the Elixir caller exits at once with its reason.
  const term died = ex->eval(me,
                             "T0 = erlang:monotonic_time(millisecond),"
                             "R = try 'Elixir.GenServer':call(P, die, 30000) catch exit:E -> E end,"
                             "{R, erlang:monotonic_time(millisecond) - T0}.",
                             {{"P", term(server)}});
  ASSERT_TRUE(died.is_tuple() && died.size() == 2) << died;
  EXPECT_EQ(died[0][0].to_string(), "{cpp,died}");
  EXPECT_LT(died[1].integer(), 5000);
}

TEST_F(call_fixture, AnElixirSupervisorKeepsABeamletChild) {
  // The beamlet side: `spawner` starts children linked to the caller (the supervisor).
  auto starts = std::make_shared<std::atomic<int>>(0);
  me.spawn([starts](process& self) -> task<> {
    (void)self.register_name("spawner");
    for (;;) {
      auto m = co_await self.receive(on<term>());
      auto c = dist::as_gen_call(m.get<term>());
      if (!c || !c->request.is_tuple() || c->request.size() != 2) continue;
      const pid sup = c->request[1].pid();
      // Linked before the reply: a child that had not run yet when the test kills it would
      // die unlinked, and the supervisor would never hear of it.
      const pid child = self.spawn([sup, parent = self.self()](process& ch) -> task<> {
        ch.link(sup);
        ch.send(parent, std::string("linked"));
        co_await ch.receive(on<int>());
      });
      (void)co_await self.receive(
          on<std::string>().when([](const std::string& s) { return s == "linked"; }));
      starts->fetch_add(1);
      dist::reply(self, *c, term::make_tuple({term::make_atom("ok"), term(child)}));
    }
  });
  ASSERT_TRUE(eventually([&] { return static_cast<bool>(rt.whereis("spawner")); }));
  const term sup = ex->eval(
      me,
      "{ok, S} = 'Elixir.Supervisor':start_link([#{id => cpp, start => {'Elixir.CppChild', "
      "start_link, [N]}}], [{strategy, one_for_one}]), unlink(S), S.",
      {{"N", term::make_atom(node.name)}});
  ASSERT_TRUE(sup.is_pid()) << sup;
  const auto child_of = [&] {
    const term kids = ex->eval(me, "'Elixir.Supervisor':which_children(S).", {{"S", sup}});
    return kids.size() == 1 && kids[0][1].is_pid() ? kids[0][1].pid() : pid();
  };
  const pid first = child_of();
  ASSERT_TRUE(first);
  EXPECT_FALSE(first.is_remote());  // one of ours
  EXPECT_EQ(starts->load(), 1);
  // The child dies: the Elixir supervisor restarts it through the beamlet node.
  me.exit(first, exit_reason::error("crashed"));
  ASSERT_TRUE(eventually([&] { return starts->load() == 2; }));
  ASSERT_TRUE(eventually([&] { return child_of() && child_of() != first; }));
  EXPECT_TRUE(rt.is_alive(child_of()));
  // Stopping the supervisor stops the beamlet child (shutdown through the link).
  const pid second = child_of();
  ex->eval(me, "'Elixir.Supervisor':stop(S), ok.", {{"S", sup}});
  ASSERT_TRUE(eventually([&] { return !rt.is_alive(second); }));
}

}  // namespace
}  // namespace beamlet::test
