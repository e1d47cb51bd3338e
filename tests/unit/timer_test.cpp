// Timers: send_after, cancel_timer, and receive timeouts at scale.
#include <dirent.h>

#include <thread>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct numbered_tick {
  int n;
};

int count_entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}
}  // namespace

TEST(Timers, SendAfterDelivers) {
  runtime rt;
  std::atomic<long> elapsed{0};
  watched p(rt, [&](process& self) -> task<> {
    const auto t0 = std::chrono::steady_clock::now();
    self.send_after(self.self(), numbered_tick{1}, 50ms);
    co_await self.receive(on<numbered_tick>());
    elapsed = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  });
  expect_exit(rt, p);
  EXPECT_GE(elapsed.load(), 50);
}

TEST(Timers, CancelBeforeFiring) {
  runtime rt;
  std::atomic<bool> ok{false};
  run_process(rt, [&](process& self) -> task<> {
    const ref t = self.send_after(self.self(), numbered_tick{1}, 10s);
    auto left = self.cancel_timer(t);
    EXPECT_TRUE(left.has_value());
    EXPECT_GT(*left, 5s);  // what remained: nearly all of it
    EXPECT_LE(*left, 10s);
    EXPECT_FALSE(self.cancel_timer(t).has_value());  // second cancel: unknown
    auto m = co_await self.receive(on<numbered_tick>(), after(300ms));
    ok = m.timed_out();
  });
  EXPECT_TRUE(ok);
}

TEST(Timers, CancelAfterFiringReportsNothing) {
  runtime rt;
  scoped_process me(rt);
  const ref t = rt.send_after(me.self(), numbered_tick{2}, 10ms);
  auto m = me.receive(on<numbered_tick>(), after(5s));
  ASSERT_TRUE(m);
  EXPECT_FALSE(rt.cancel_timer(t).has_value());
}

TEST(Timers, SendAfterToDeadProcessIsDropped) {
  runtime rt;
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  rt.send_after(dead, std::make_unique<int>(1), 5ms);
  std::this_thread::sleep_for(30ms);  // fires into nothing; the message is freed (ASan checks)
}

TEST(Timers, NegativeDelayRejected) {
  runtime rt;
  EXPECT_THROW(rt.send_after(pid(1), numbered_tick{0}, -1ms), timeout_value_error);
}

// Many pending timeouts are heap entries, not OS timers: no thread or descriptor per timer.
TEST(Timers, ManyPendingTimersUseNoOsResources) {
  runtime rt;
  const int threads_before = count_entries("/proc/self/task");
  const int fds_before = count_entries("/proc/self/fd");
  const int n = 1000000 / stress_divisor;
  scoped_process me(rt);
  std::vector<ref> timers;
  timers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) timers.push_back(rt.send_after(me.self(), numbered_tick{i}, 1h));
  // Plus parked processes waiting in receives with a timeout.
  const int waiters = 20000 / stress_divisor;
  std::atomic<int> parked{0};
  std::vector<pid> ps;
  for (int i = 0; i < waiters; ++i)
    ps.push_back(rt.spawn([&](process& self) -> task<> {
      ++parked;
      co_await self.receive(on<numbered_tick>(), after(1h));
    }));
  ASSERT_TRUE(eventually([&] { return parked.load() == waiters; }));
  ASSERT_TRUE(eventually([&] {
    return rt.pending_timers() == static_cast<std::size_t>(n) + static_cast<std::size_t>(waiters);
  }));
  EXPECT_EQ(count_entries("/proc/self/task"), threads_before);
  EXPECT_EQ(count_entries("/proc/self/fd"), fds_before);
  int cancelled = 0;
  for (ref t : timers) cancelled += rt.cancel_timer(t).has_value() ? 1 : 0;
  EXPECT_EQ(cancelled, n);
  for (pid p : ps) rt.exit(p, exit_reason::kill());
}

// A receive that blocks with a timeout and is then satisfied removes its timer at once.
TEST(Timers, CompletedReceivesCancelTheirTimeouts) {
  runtime rt;
  constexpr int n = 5000;
  const pid echo = rt.spawn([](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<pid>());
      self.send(m.get<pid>(), numbered_tick{0});
    }
  });
  std::atomic<bool> done{false};
  std::atomic<int> replies{0};
  watched p(rt, [&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) {
      self.send(echo, self.self());
      auto m = co_await self.receive(on<numbered_tick>(), after(1h));
      if (m) ++replies;
    }
    done = true;
    co_await self.receive(on<numbered_tick>());  // park without a timeout
  });
  ASSERT_TRUE(eventually([&] { return done.load(); }));
  EXPECT_EQ(replies.load(), n);
  EXPECT_EQ(rt.pending_timers(), 0u);
  rt.exit(p, exit_reason::kill());
  rt.exit(echo, exit_reason::kill());
}

// As on BEAM, send_after timers aimed at a pid are cancelled when that process exits, and a
// timer aimed at a pid that is not alive is cancelled at once.
TEST(Timers, CancelledWhenTheTargetExits) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t base = rt.pending_timers();
  std::atomic<bool> armed{false};
  const pid p = me.spawn([&](process& self) -> task<> {
    for (int i = 0; i < 3; ++i) self.send_after(self.self(), numbered_tick{i}, 1h);
    armed = true;
    co_await self.receive(on<int>());
  });
  const ref outside = rt.send_after(p, numbered_tick{9}, 1h);
  ASSERT_TRUE(eventually([&] { return armed.load(); }));
  const ref other = rt.send_after(me.self(), numbered_tick{8}, 1h);  // aimed elsewhere: stays
  EXPECT_EQ(rt.pending_timers(), base + 5);
  me.exit(p, exit_reason::kill());
  EXPECT_TRUE(eventually([&] { return rt.pending_timers() == base + 1; }))
      << rt.pending_timers() - base << " timers left";
  EXPECT_FALSE(rt.cancel_timer(outside).has_value());
  // Aimed at a dead pid: nothing is armed.
  const ref dead = rt.send_after(p, numbered_tick{7}, 1h);
  EXPECT_EQ(rt.pending_timers(), base + 1);
  EXPECT_FALSE(rt.cancel_timer(dead).has_value());
  EXPECT_TRUE(rt.cancel_timer(other).has_value());
  EXPECT_EQ(rt.pending_timers(), base);
}

// Many processes each arming timers at themselves and exiting: no timer outlives its target.
TEST(Timers, NoTimerOutlivesItsTarget) {
  runtime rt;
  const std::size_t base = rt.pending_timers();
  scoped_process me(rt);
  for (int i = 0; i < 200; ++i) {
    (void)me.spawn([](process& self) -> task<> {
      self.send_after(self.self(), numbered_tick{1}, 1h);
      self.send_after(self.self(), numbered_tick{2}, 1h);
      co_return;
    });
  }
  EXPECT_TRUE(eventually([&] { return rt.process_count() == 1 && rt.pending_timers() == base; }))
      << rt.pending_timers() - base << " timers left";
}

}  // namespace beamlet::test
