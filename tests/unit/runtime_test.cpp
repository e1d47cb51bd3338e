// Runtime lifecycle: shutdown stops every process, joins threads, leaks nothing.
#include <thread>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct go {};
}  // namespace

TEST(Runtime, DefaultsToOneSchedulerPerCore) {
  runtime rt;
  EXPECT_EQ(rt.schedulers(), std::max(1u, std::thread::hardware_concurrency()));
}

// Shutdown ends every process with `shutdown`; a trapping one gets the signal as a message
// first and may finish on its own.
TEST(Runtime, ShutdownStopsEveryProcess) {
  std::atomic<int> plain_reason_ok{0};
  std::atomic<bool> trapped{false};
  mailbox* observer_ptr = nullptr;
  (void)observer_ptr;
  {
    runtime rt({.shutdown_grace = std::chrono::milliseconds(2000)});
    for (int i = 0; i < 50; ++i) rt.spawn(park_forever);
    rt.spawn([&](process& self) -> task<> {
      self.trap_exit(true);
      auto m = co_await self.receive(on<exit_message>());
      trapped = m.get<exit_message>().reason == exit_reason::shutdown();
    });
    // A watcher whose DOWNs tell us the reasons (it is stopped last or concurrently).
    rt.spawn([&](process& self) -> task<> {
      self.trap_exit(true);
      for (int i = 0; i < 5; ++i) (void)self.monitor(self.spawn(park_forever));
      for (;;) {
        auto m = co_await self.receive(on<down>(), on<exit_message>());
        if (auto* d = m.get_if<down>(); d && d->reason == exit_reason::shutdown())
          ++plain_reason_ok;
      }
    });
    std::this_thread::sleep_for(50ms);
    rt.shutdown();
    EXPECT_EQ(rt.process_count(), 0u);
    rt.shutdown();  // idempotent
  }
  EXPECT_TRUE(trapped);
}

// A trapping process that ignores the shutdown signal is ended after the grace period.
TEST(Runtime, ShutdownEndsStubbornProcesses) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    runtime rt({.shutdown_grace = std::chrono::milliseconds(100)});
    rt.spawn([](process& self) -> task<> {
      self.trap_exit(true);
      for (;;) co_await self.receive(on_any());
    });
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(Runtime, SpawnAfterShutdownThrows) {
  runtime rt;
  rt.shutdown();
  EXPECT_THROW(rt.spawn([](process&) -> task<> { co_return; }), system_limit_error);
  rt.send(pid(1), go{});  // harmless
}

TEST(Runtime, FullProcessTableThrows) {
  runtime rt({.max_processes = 1024});
  std::vector<pid> ps;
  EXPECT_THROW(
      {
        for (int i = 0; i < 2000; ++i) ps.push_back(rt.spawn(park_forever));
      },
      system_limit_error);
  EXPECT_GT(ps.size(), 800u);
  for (pid p : ps) rt.exit(p, exit_reason::kill());
}

// Everything is freed: after the runtime is gone, no block of beamlet's allocator is live.
TEST(Runtime, ShutdownLeaksNothing) {
  const std::int64_t before = detail::live_blocks();
  {
    runtime rt;
    for (int i = 0; i < 1000; ++i) {
      const pid p = rt.spawn([](process& self) -> task<> {
        self.send(self.self(), go{});
        for (;;) co_await self.receive(on<int>(), after(1h));
      });
      rt.send(p, go{});
      rt.send_after(p, go{}, 1h);
    }
    mailbox me(rt);
    (void)me.monitor(rt.spawn(park_forever));
  }
  EXPECT_EQ(detail::live_blocks(), before);
}

// A mailbox that outlives its runtime's shutdown reports `shutdown` instead of hanging.
TEST(Runtime, MailboxSeesShutdown) {
  runtime rt({.shutdown_grace = std::chrono::milliseconds(50)});
  mailbox me(rt);
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    rt.shutdown();
  });
  EXPECT_THROW((void)me.receive(on<go>(), after(10s)), exit_exception);
  t.join();
}

}  // namespace beamlet::test
