// spec §9: registered names (and §1.1 rule 5: sending to a name).
#include <thread>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct hello {
  int n;
};
}  // namespace

// Rule 1: a name maps to one process, a process has one name; taken, dead, already named and
// the reserved `undefined` are refused.
TEST(Registry, S9_1_RegisterRules) {
  runtime rt;
  watched a(rt, park_forever);
  const pid b = rt.spawn(park_forever);
  EXPECT_FALSE(rt.register_name("alpha", a));
  EXPECT_EQ(rt.register_name("alpha", b), errc::name_taken);
  EXPECT_EQ(rt.register_name("beta", a), errc::already_named);
  EXPECT_EQ(rt.register_name("undefined", b), errc::invalid_name);
  EXPECT_EQ(rt.register_name("", b), errc::invalid_name);
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  EXPECT_EQ(rt.register_name("gamma", dead), errc::not_alive);
  // A process can register itself.
  std::error_code self_ec = make_error_code(errc::not_alive);
  const pid c = rt.spawn([&](process& self) -> task<> {
    self_ec = self.register_name("delta");
    co_await self.receive(on<hello>());
  });
  ASSERT_TRUE(eventually([&] { return !self_ec; }));
  EXPECT_EQ(rt.whereis("delta"), c);
  EXPECT_EQ(make_error_code(errc::name_taken).message(), "the name is already registered");
  for (pid p : std::initializer_list<pid>{a, b, c}) rt.exit(p, exit_reason::kill());
}

// Rule 2: whereis returns the pid or nothing.
TEST(Registry, S9_2_Whereis) {
  runtime rt;
  watched a(rt, park_forever);
  EXPECT_EQ(rt.whereis("w"), std::nullopt);
  ASSERT_FALSE(rt.register_name("w", a));
  EXPECT_EQ(rt.whereis("w"), a);
  rt.exit(a, exit_reason::kill());
}

// Rule 3: unregister succeeds for a registered name and fails for an unknown one.
TEST(Registry, S9_3_Unregister) {
  runtime rt;
  watched a(rt, park_forever);
  ASSERT_FALSE(rt.register_name("u", a));
  EXPECT_FALSE(rt.unregister_name("u"));
  EXPECT_EQ(rt.whereis("u"), std::nullopt);
  EXPECT_EQ(rt.unregister_name("u"), errc::not_registered);
  // The process may take a name again once unregistered.
  EXPECT_FALSE(rt.register_name("u2", a));
  rt.exit(a, exit_reason::kill());
}

// Rule 4: a name is released when its process exits, so it can be taken again.
TEST(Registry, S9_4_ReleasedOnExit) {
  runtime rt;
  watched a(rt, wait_for_any);
  ASSERT_FALSE(rt.register_name("r", a));
  rt.send(a, hello{1});
  expect_exit(rt, a);
  EXPECT_EQ(rt.whereis("r"), std::nullopt);
  const pid b = rt.spawn(park_forever);
  EXPECT_FALSE(rt.register_name("r", b));
  rt.exit(b, exit_reason::kill());
}

// Rule 5 (and §1.1 rule 5): sending to an unregistered name is an error the caller sees;
// sending to a registered one delivers.
TEST(Registry, S9_5_SendToName) {
  runtime rt;
  std::atomic<int> got{0};
  watched a(rt, [&](process& self) -> task<> {
    auto m = co_await self.receive(on<hello>());
    got = m.get<hello>().n;
  });
  ASSERT_FALSE(rt.register_name("inbox", a));
  EXPECT_EQ(rt.send("nobody", hello{1}), errc::not_registered);
  EXPECT_FALSE(rt.send("inbox", hello{5}));
  expect_exit(rt, a);
  EXPECT_EQ(got.load(), 5);
  std::error_code from_process;
  run_process(rt, [&](process& self) -> task<> {
    from_process = self.send("inbox", hello{6});  // its holder is gone
    co_return;
  });
  EXPECT_EQ(from_process, errc::not_registered);
}

// Rule 6: registered_name of a process; nothing for an unnamed one.
TEST(Registry, S9_6_RegisteredName) {
  runtime rt;
  watched a(rt, park_forever);
  EXPECT_EQ(rt.registered_name(a), std::nullopt);
  ASSERT_FALSE(rt.register_name("named", a));
  EXPECT_EQ(rt.registered_name(a), "named");
  const auto all = rt.registered();
  EXPECT_EQ(std::count(all.begin(), all.end(), "named"), 1);
  rt.exit(a, exit_reason::kill());
}

// Registration races with exit: a name never outlives its process.
TEST(Registry, NameNeverOutlivesProcess) {
  runtime rt;
  for (int i = 0; i < 200; ++i) {
    watched a(rt, [](process&) -> task<> { co_return; });
    (void)rt.register_name("racy", a);
    expect_exit(rt, a);
    EXPECT_EQ(rt.whereis("racy"), std::nullopt) << "iteration " << i;
  }
}

}  // namespace beamlet::test
