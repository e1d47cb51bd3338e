// spec §9: registered names (and §1.1 rule 5: sending to a name), and the lock-free readers'
// races with writers.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

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

// Many names: every shard's table grows several times over; each name stays found with its
// process, through the growth and after half of them are gone.
TEST(Registry, ManyNamesGrowTheTablesAndStayFound) {
  runtime rt;
  constexpr int n = 5000;
  std::vector<pid> owners;
  for (int i = 0; i < n; ++i) {
    owners.push_back(rt.spawn(park_forever));
    ASSERT_FALSE(rt.register_name("n" + std::to_string(i), owners.back())) << i;
  }
  for (int i = 0; i < n; ++i) ASSERT_EQ(rt.whereis("n" + std::to_string(i)), owners[i]) << i;
  for (int i = 0; i < n; i += 2) ASSERT_FALSE(rt.unregister_name("n" + std::to_string(i))) << i;
  for (int i = 1; i < n; i += 2) rt.exit(owners[i], exit_reason::kill());
  ASSERT_TRUE(eventually([&] { return rt.registered().empty(); }));
  for (int i = 0; i < n; ++i) EXPECT_EQ(rt.whereis("n" + std::to_string(i)), std::nullopt) << i;
  // The even owners, unregistered, may take a name again.
  EXPECT_FALSE(rt.register_name("again", owners[0]));
  EXPECT_EQ(rt.registered_name(owners[0]), "again");
}

// Readers take no lock, so they must never miss a name that stays registered while writers
// add, remove and re-add thousands of others beside it (tables growing under the readers),
// and a churned name is either absent or its own process, never another's.
TEST(Registry, ReadersNeverMissAStableNameWhileWritersChurn) {
  runtime rt;
  const pid stable = rt.spawn(park_forever);
  ASSERT_FALSE(rt.register_name("stable", stable));
  constexpr int churned = 2000;
  std::vector<pid> owners;
  for (int i = 0; i < churned; ++i) owners.push_back(rt.spawn(park_forever));
  std::atomic<bool> stop{false};
  std::atomic<long> misses{0};
  std::atomic<long> wrong{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        if (rt.whereis("stable") != stable) misses.fetch_add(1);
        const int k = (i * 7 + r) % churned;
        const auto got = rt.whereis("c" + std::to_string(k));
        if (got && *got != owners[k]) wrong.fetch_add(1);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < churned; ++i)
      ASSERT_FALSE(rt.register_name("c" + std::to_string(i), owners[i])) << round << " " << i;
    for (int i = 0; i < churned; ++i)
      ASSERT_FALSE(rt.unregister_name("c" + std::to_string(i))) << round << " " << i;
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(misses.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rt.registered(), std::vector<std::string>{"stable"});
}

// One process, two names in two threads at once (names of different shards take different
// locks): exactly one registration wins, the other is told the process is already named.
TEST(Registry, TwoNamesForOneProcessAtOnceOneWins) {
  runtime rt;
  for (int i = 0; i < 200; ++i) {
    const pid p = rt.spawn(park_forever);
    std::error_code ec1;
    std::error_code ec2;
    std::thread t1([&] { ec1 = rt.register_name("first" + std::to_string(i), p); });
    std::thread t2([&] { ec2 = rt.register_name("second" + std::to_string(i), p); });
    t1.join();
    t2.join();
    ASSERT_NE(!ec1, !ec2) << i << ": " << ec1.message() << " / " << ec2.message();
    const std::error_code& lost = ec1 ? ec1 : ec2;
    EXPECT_EQ(lost, errc::already_named) << i;
    const auto name = rt.registered_name(p);
    ASSERT_TRUE(name.has_value());
    EXPECT_EQ(rt.whereis(*name), p);
    rt.exit(p, exit_reason::kill());
    ASSERT_TRUE(eventually([&] { return rt.whereis(*name) == std::nullopt; })) << i;
  }
}

// An unregister, a re-registration and the owner's exit all at once: the name ends free, the
// process's last name goes with it, nothing is left behind.
TEST(Registry, UnregisterRacesTheOwnersExit) {
  runtime rt;
  for (int i = 0; i < 300; ++i) {
    const pid p = rt.spawn(park_forever);
    const std::string name = "racing" + std::to_string(i);
    ASSERT_FALSE(rt.register_name(name, p));
    std::thread unregister([&] {
      (void)rt.unregister_name(name);
      (void)rt.register_name(name + "b", p);
    });
    rt.exit(p, exit_reason::kill());
    unregister.join();
    ASSERT_TRUE(eventually([&] {
      return rt.whereis(name) == std::nullopt && rt.whereis(name + "b") == std::nullopt;
    })) << i;
  }
  EXPECT_TRUE(rt.registered().empty());
}

}  // namespace beamlet::test
