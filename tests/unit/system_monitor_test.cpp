// The system monitor (beamlet/core/system_monitor.hpp): long_message_queue with OTP 26's enable and
// disable marks, long_schedule, and its settings.
#include <beamlet/core/system_monitor.hpp>

#include <atomic>
#include <stdexcept>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

struct drain_now {};

TEST(SystemMonitor, OffByDefault) {
  runtime rt;
  const auto s = system_monitor(rt);
  EXPECT_FALSE(s.subscriber);
  EXPECT_EQ(s.long_queue_enable, 0u);
  EXPECT_EQ(s.long_schedule.count(), 0);
}

TEST(SystemMonitor, InvalidSettingsAreRejectedAndChangeNothing) {
  runtime rt;
  scoped_process me(rt);
  system_monitor_settings bad;
  bad.subscriber = me.self();
  bad.long_queue_enable = 100;
  bad.long_queue_disable = 100;  // must be below enable
  EXPECT_THROW(set_system_monitor(rt, bad), std::invalid_argument);
  bad.long_queue_disable = 10;
  bad.long_schedule = std::chrono::milliseconds(-1);
  EXPECT_THROW(set_system_monitor(rt, bad), std::invalid_argument);
  EXPECT_FALSE(system_monitor(rt).subscriber);
}

// One alarm when the queue reaches the enable mark, one when it falls to the disable mark,
// nothing in between however the queue moves.
TEST(SystemMonitor, LongMessageQueueOnceUpAndOnceDown) {
  runtime rt;
  scoped_process me(rt);
  system_monitor_settings s;
  s.subscriber = me.self();
  s.long_queue_enable = 1000;
  s.long_queue_disable = 100;
  set_system_monitor(rt, s);
  EXPECT_EQ(system_monitor(rt).long_queue_enable, 1000u);

  // A process that only takes messages when told to, and then takes that many.
  const pid p = rt.spawn([](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<drain_now>(), on<go>());
      if (m.get_if<go>() != nullptr) co_return;
      for (int i = 0; i < 300; ++i) {
        auto x = co_await self.receive(on<int>(), after(0ms));
        if (!x) break;
      }
    }
  });
  for (int i = 0; i < 999; ++i) me.send(p, i);
  refute_receive<monitor_alarm>(me, 100ms);
  for (int i = 0; i < 500; ++i) me.send(p, i);  // crosses 1000 once, then keeps growing
  const auto up = assert_receive<monitor_alarm>(me, 5s);
  EXPECT_EQ(up.which, monitor_alarm::kind::long_message_queue);
  EXPECT_EQ(up.pid, p);
  EXPECT_TRUE(up.on);
  EXPECT_GE(up.queue_len, 1000u);
  refute_receive<monitor_alarm>(me, 100ms);
  // 1499 queued; three drains of 300 leave 599 (above the disable mark: nothing).
  for (int i = 0; i < 3; ++i) me.send(p, drain_now{});
  refute_receive<monitor_alarm>(me, 200ms);
  for (int i = 0; i < 2; ++i) me.send(p, drain_now{});  // down to 0, through 100: off
  const auto down = assert_receive<monitor_alarm>(me, 5s);
  EXPECT_EQ(down.pid, p);
  EXPECT_FALSE(down.on);
  EXPECT_LE(down.queue_len, 100u);
  refute_receive<monitor_alarm>(me, 100ms);
  me.send(p, go{});
  ASSERT_TRUE(rt.wait(p, 10s));
}

TEST(SystemMonitor, AnAlarmedProcessThatEndsLowersItsAlarm) {
  runtime rt;
  scoped_process me(rt);
  system_monitor_settings s;
  s.subscriber = me.self();
  s.long_queue_enable = 50;
  s.long_queue_disable = 10;
  set_system_monitor(rt, s);
  const pid p = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  for (int i = 0; i < 60; ++i) me.send(p, i);
  EXPECT_TRUE(assert_receive<monitor_alarm>(me, 5s).on);
  rt.exit(p, exit_reason::kill());
  const auto off = assert_receive<monitor_alarm>(me, 5s);
  EXPECT_EQ(off.pid, p);
  EXPECT_FALSE(off.on);
}

TEST(SystemMonitor, LongSchedule) {
  runtime rt;
  scoped_process me(rt);
  system_monitor_settings s;
  s.subscriber = me.self();
  // Far above what a preempted thread loses on a loaded machine (the polite process's
  // microsecond runs must never reach it).
  s.long_schedule = std::chrono::milliseconds(100);
  set_system_monitor(rt, s);
  const pid polite = rt.spawn([](process& self) -> task<> { co_await self.sleep(50ms); });
  const pid hog = rt.spawn([](process&) -> task<> {
    // Busy without suspending: a blocking call would look the same to the scheduler.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
    while (std::chrono::steady_clock::now() < until) {
    }
    co_return;
  });
  const auto a = assert_receive<monitor_alarm>(me, 5s);
  EXPECT_EQ(a.which, monitor_alarm::kind::long_schedule);
  EXPECT_EQ(a.pid, hog);
  EXPECT_GE(a.ran, std::chrono::milliseconds(100));
  ASSERT_TRUE(rt.wait(polite, 10s));
  refute_receive<monitor_alarm>(me, 100ms, [&](const monitor_alarm& x) { return x.pid == polite; });
}

TEST(SystemMonitor, TurningItOffStopsAlarms) {
  runtime rt;
  scoped_process me(rt);
  system_monitor_settings s;
  s.subscriber = me.self();
  s.long_queue_enable = 10;
  s.long_queue_disable = 5;
  set_system_monitor(rt, s);
  set_system_monitor(rt, system_monitor_settings{});
  const pid p = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  for (int i = 0; i < 100; ++i) me.send(p, i);
  refute_receive<monitor_alarm>(me, 200ms);
  me.send(p, go{});
}

TEST(SystemMonitor, ADeadSubscriberIsHarmless) {
  runtime rt;
  system_monitor_settings s;
  s.subscriber = rt.spawn([](process&) -> task<> { co_return; });
  ASSERT_TRUE(rt.wait(s.subscriber, 10s));
  s.long_queue_enable = 10;
  s.long_queue_disable = 5;
  set_system_monitor(rt, s);
  scoped_process me(rt);
  const pid p = rt.spawn([](process& self) -> task<> { co_await self.receive(on<go>()); });
  for (int i = 0; i < 100; ++i) me.send(p, i);
  me.send(p, go{});
  EXPECT_TRUE(rt.wait(p, 10s));
}

}  // namespace
}  // namespace beamlet::test
