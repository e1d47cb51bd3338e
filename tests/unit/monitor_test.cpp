// spec §3: monitors.
#include <algorithm>
#include <thread>

#include "test_support.hpp"

namespace beamlet::test {

namespace {}  // namespace

// Rule 1: a new unique ref per call; one-way; unaffected by trap_exit; never kills the watcher.
TEST(Monitors, S3_1_UniqueRefsOneWayNeverKills) {
  runtime rt;
  watched target(rt, [](process& self) -> task<> {
    co_await self.receive(on<go>());
    co_await self.exit(exit_reason::error("crash"));
  });
  std::atomic<bool> ok{false};
  watched watcher(rt, [&](process& self) -> task<> {
    const ref r1 = self.monitor(target);
    const ref r2 = self.monitor(target);
    self.send(target, go{});
    auto d = co_await self.receive(on<down>());
    auto d2 = co_await self.receive(on<down>());
    ok = r1 != r2 && d.get<down>().reason == exit_reason::error("crash") &&
         d2.get<down>().reason == exit_reason::error("crash");
    co_await self.receive(on<go>());  // still alive after its target crashed
  });
  EXPECT_EQ(expect_exit(rt, target), exit_reason::error("crash"));
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(rt.is_alive(watcher));
  // One-way: the watcher's death does not touch a (new) target.
  const pid other = rt.spawn(park_forever);
  watched w2(rt, [&](process& self) -> task<> {
    (void)self.monitor(other);
    co_await self.exit(exit_reason::error("watcher_died"));
  });
  expect_exit(rt, w2);
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(rt.is_alive(other));
  rt.send(watcher, go{});
  expect_exit(rt, watcher);
  EXPECT_TRUE(ok);
  rt.exit(other, exit_reason::kill());
}

// Rule 2: exactly one DOWN per monitor, carrying ref, pid and reason.
TEST(Monitors, S3_2_ExactlyOneDown) {
  runtime rt;
  std::atomic<int> downs{0};
  std::atomic<bool> fields_ok{false};
  run_process(rt, [&](process& self) -> task<> {
    auto [child, r] = self.spawn_monitor(
        [](process& c) -> task<> { co_await c.exit(exit_reason::shutdown("bye")); });
    auto d = co_await self.receive(on<down>());
    ++downs;
    fields_ok = d.get<down>().ref == r && d.get<down>().pid == child &&
                d.get<down>().reason == exit_reason::shutdown("bye") && d.get<down>().name.empty();
    auto more = co_await self.receive(on<down>(), after(50ms));
    if (more) ++downs;
  });
  EXPECT_EQ(downs.load(), 1);
  EXPECT_TRUE(fields_ok);
}

// Rule 2: a monitor set by name reports the name.
TEST(Monitors, S3_2_MonitorByNameCarriesName) {
  runtime rt;
  watched target(rt, wait_for_any);
  ASSERT_FALSE(rt.register_name("named_target", target));
  std::atomic<bool> ok{false};
  run_process(rt, [&](process& self) -> task<> {
    (void)self.monitor(std::string_view("named_target"));
    self.send(target, go{});
    auto d = co_await self.receive(on<down>());
    ok = d.get<down>().name == "named_target" && d.get<down>().pid == target &&
         d.get<down>().reason == exit_reason::normal();
  });
  EXPECT_TRUE(ok);
}

// Rule 3: dead pid, never-existing pid, unregistered name: a ref and an immediate noproc DOWN.
TEST(Monitors, S3_3_NoprocForDeadTargets) {
  runtime rt;
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  std::atomic<int> noprocs{0};
  run_process(rt, [&](process& self) -> task<> {
    const ref r1 = self.monitor(dead);
    const ref r2 = self.monitor(pid(987654321));
    const ref r3 = self.monitor(std::string_view("nobody_has_this_name"));
    for (const ref r : {r1, r2, r3}) {
      auto d = co_await self.receive(on<down>().when([r](const down& x) { return x.ref == r; }),
                                     after(0ms));
      if (d && d.get<down>().reason == exit_reason::noproc()) ++noprocs;
      if (r == r3) {
        EXPECT_EQ(d.get<down>().name, "nobody_has_this_name");
      }
    }
  });
  EXPECT_EQ(noprocs.load(), 3);
}

// Rule 4: two monitors are independent; demonitor of one leaves the other.
TEST(Monitors, S3_4_IndependentMonitors) {
  runtime rt;
  std::atomic<bool> ok{false};
  run_process(rt, [&](process& self) -> task<> {
    const pid t = self.spawn(wait_for_any);
    const ref r1 = self.monitor(t);
    const ref r2 = self.monitor(t);
    EXPECT_TRUE(self.demonitor(r1));
    self.send(t, go{});
    auto d = co_await self.receive(on<down>());
    auto extra = co_await self.receive(on<down>(), after(50ms));
    ok = d.get<down>().ref == r2 && extra.timed_out();
  });
  EXPECT_TRUE(ok);
}

// Rule 5: demonitor returns; afterwards no DOWN is delivered; info semantics.
TEST(Monitors, S3_5_DemonitorStopsDelivery) {
  runtime rt;
  std::atomic<bool> ok{false};
  run_process(rt, [&](process& self) -> task<> {
    const pid t = self.spawn(wait_for_any);
    const ref r = self.monitor(t);
    EXPECT_TRUE(self.demonitor(r));             // active monitor removed
    EXPECT_FALSE(self.demonitor(r));            // already gone
    EXPECT_FALSE(self.demonitor(ref(123456)));  // never existed
    self.send(t, go{});
    auto d = co_await self.receive(on<down>(), after(100ms));
    ok = d.timed_out();
  });
  EXPECT_TRUE(ok);
}

// Rule 5: a DOWN already in the mailbox stays after demonitor; demonitor(flush) removes it.
TEST(Monitors, S3_5_FlushRemovesQueuedDown) {
  runtime rt;
  std::atomic<int> result{0};
  run_process(rt, [&](process& self) -> task<> {
    const pid t1 = self.spawn(wait_for_any);
    const pid t2 = self.spawn(wait_for_any);
    const ref r1 = self.monitor(t1);
    const ref r2 = self.monitor(t2);
    self.send(t1, go{});
    self.send(t2, go{});
    // Both DOWNs queued.
    CO_ASSERT_TRUE(co_await eventually_in(self, [&] { return self.message_queue_len() >= 2; }));
    EXPECT_FALSE(self.demonitor(r1));         // fired already: not active
    EXPECT_FALSE(self.demonitor(r2, flush));  // fired already, and flushed
    auto d1 = co_await self.receive(on<down>().when([r1](const down& d) { return d.ref == r1; }),
                                    after(0ms));
    auto d2 = co_await self.receive(on<down>().when([r2](const down& d) { return d.ref == r2; }),
                                    after(0ms));
    result = (d1 ? 1 : 0) + (d2 ? 10 : 0);
  });
  EXPECT_EQ(result.load(), 1);  // r1's DOWN stayed, r2's was flushed
}

// Rule 6: N watchers of one process each get one DOWN, all with the same reason.
TEST(Monitors, S3_6_FanOut) {
  runtime rt;
  const int n = 2000 / stress_divisor + 10;
  watched target(rt, wait_for_any);
  std::atomic<int> downs{0};
  std::atomic<int> ready{0};
  std::vector<pid> watchers;
  for (int i = 0; i < n; ++i) {
    watchers.push_back(rt.spawn([&](process& self) -> task<> {
      (void)self.monitor(target);
      ++ready;
      auto d = co_await self.receive(on<down>());
      if (d.get<down>().reason == exit_reason::error("fanout")) ++downs;
      auto extra = co_await self.receive(on<down>(), after(20ms));
      if (extra) ++downs;
    }));
  }
  ASSERT_TRUE(eventually([&] { return ready.load() == n; }));
  rt.exit(target, exit_reason::error("fanout"));
  for (pid w : watchers) expect_gone(rt, w);
  EXPECT_EQ(downs.load(), n);
}

// Rule 7: monitors / monitored_by; monitoring oneself creates no entry.
TEST(Monitors, S3_7_Introspection) {
  runtime rt;
  const pid target = rt.spawn(park_forever);
  std::atomic<bool> ok{false};
  const pid w = rt.spawn([&](process& self) -> task<> {
    const ref self_ref = self.monitor(self.self());
    const ref r = self.monitor(target);
    const auto mine = self.monitors();
    ok = mine.size() == 1 && mine[0] == target && !self.demonitor(self_ref);
    co_await self.receive(on<go>());
    (void)r;
  });
  ASSERT_TRUE(eventually([&] { return rt.monitored_by(target).size() == 1; }));
  EXPECT_EQ(rt.monitored_by(target)[0], w);
  EXPECT_TRUE(rt.monitored_by(w).empty());
  rt.send(w, go{});
  expect_gone(rt, w);
  EXPECT_TRUE(ok);
  // The watcher's monitors go away with it.
  EXPECT_TRUE(eventually([&] { return rt.monitored_by(target).empty(); }));
  rt.exit(target, exit_reason::kill());
}

// Monitors from a mailbox (an outside thread) work the same way.
TEST(Monitors, FromOutsideThread) {
  runtime rt;
  scoped_process me(rt);
  const pid t = rt.spawn(wait_for_any);
  const ref r = me.monitor(t);
  rt.send(t, go{});
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, r);
  EXPECT_EQ(d.get<down>().reason, exit_reason::normal());
}

}  // namespace beamlet::test
