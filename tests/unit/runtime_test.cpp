// Runtime lifecycle: shutdown stops every process, joins threads, leaks nothing.
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct ready {};
struct never_sent {};
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
  scoped_process* observer_ptr = nullptr;
  (void)observer_ptr;
  {
    runtime rt({.shutdown_grace = std::chrono::milliseconds(2000)});
    for (int i = 0; i < 50; ++i) rt.spawn(park_forever);
    std::atomic<bool> trapping{false};
    rt.spawn([&](process& self) -> task<> {
      self.trap_exit(true);
      trapping = true;
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
    // A process not yet run is ended without running: the trapper must have begun.
    ASSERT_TRUE(eventually([&] { return trapping.load(); }));
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

// Shutdown waits (up to shutdown_grace) until only mailboxes are left. A mailbox that was killed
// but is still open is no longer a process: it must not count as one of the mailboxes the wait
// leaves out, or the wait would end while a process is still finishing (here, at once).
TEST(Runtime, ADeadMailboxDoesNotCutTheGracePeriodShort) {
  std::atomic<bool> cleaned{false};
  // The grace period is not what this is about: it is long enough for the 200 ms of cleaning up
  // to end within it however loaded the machine (with the default 1 s, TSan runs beside other
  // work have taken longer), while a wait cut short ends at once.
  runtime rt({.shutdown_grace = std::chrono::seconds(30)});
  scoped_process me(rt);
  rt.spawn([&, to = me.self()](process& self) -> task<> {
    self.trap_exit(true);
    self.send(to, ready{});
    co_await self.receive(on<exit_message>());
    co_await self.receive(on<never_sent>(), after(200ms));  // cleaning up takes a while
    cleaned = true;
  });
  ASSERT_TRUE(me.receive(on<ready>(), after(10s)));
  scoped_process dead(rt);
  rt.exit(dead.self(), exit_reason::kill());
  EXPECT_THROW((void)dead.receive(on<never_sent>(), after(0ms)), exit_exception);
  rt.shutdown();
  EXPECT_TRUE(cleaned.load());
}

TEST(Runtime, SpawnAfterShutdownThrows) {
  runtime rt;
  rt.shutdown();
  EXPECT_THROW(rt.spawn([](process&) -> task<> { co_return; }), system_limit_error);
  rt.send(pid(1), go{});  // harmless
}

// runtime_options::max_processes is exact: that many processes (scoped processes included) and no
// more, whatever the internal table's size.
TEST(Runtime, MaxProcessesIsExact) {
  for (const std::size_t limit : {std::size_t{1}, std::size_t{16}, std::size_t{1000}}) {
    runtime rt({.max_processes = limit});
    std::vector<pid> ps;
    try {
      for (std::size_t i = 0; i < 2000; ++i) ps.push_back(rt.spawn(park_forever));
      ADD_FAILURE() << "no system_limit_error with max_processes " << limit;
    } catch (const system_limit_error&) {
    }
    EXPECT_EQ(ps.size(), limit);
    for (pid p : ps) rt.exit(p, exit_reason::kill());
    // Room again once they are gone.
    EXPECT_TRUE(eventually([&] { return rt.process_count() == 0; }));
    EXPECT_NO_THROW(rt.exit(rt.spawn(park_forever), exit_reason::kill()));
  }
}

TEST(Runtime, InvalidOptionsAreRejected) {
  EXPECT_THROW(runtime({.max_processes = 0}), std::invalid_argument);
  EXPECT_THROW(runtime({.max_processes = max_process_limit + 1}), std::invalid_argument);
  EXPECT_THROW(runtime({.schedulers = max_schedulers + 1}), std::invalid_argument);
  EXPECT_THROW(runtime({.shutdown_grace = -1ms}), std::invalid_argument);
  // An overlong grace is "as long as it takes", not a wrapped negative deadline.
  runtime rt({.shutdown_grace = std::chrono::milliseconds::max()});
  const pid p = rt.spawn(park_forever);
  EXPECT_TRUE(rt.is_alive(p));
  rt.shutdown();
  EXPECT_FALSE(rt.is_alive(p));
}

// Several threads shutting one runtime down at once: one does the work, every call returns
// once it is done, nothing hangs or crashes (run under TSan by scripts/test).
TEST(Runtime, ConcurrentShutdownFromFourThreads) {
  for (int round = 0; round < 100; ++round) {
    runtime rt({.schedulers = 2, .shutdown_grace = std::chrono::milliseconds(200)});
    for (int i = 0; i < 8; ++i) (void)rt.spawn(park_forever);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < 4) std::this_thread::yield();
        rt.shutdown();
        EXPECT_EQ(rt.process_count(), 0u);
      });
    }
    for (auto& t : threads) t.join();
  }
}

TEST(Runtime, ShutdownFromInsideAProcessThrows) {
  runtime rt;
  std::atomic<bool> threw{false};
  const auto r = run_process(rt, [&](process&) -> task<> {
    try {
      rt.shutdown();
    } catch (const std::logic_error&) {
      threw = true;
    }
    co_return;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, exit_reason::normal());
  EXPECT_TRUE(threw);
  // The process left the table before its DOWN went out (run_process's mailbox may still be
  // closing).
  EXPECT_TRUE(eventually([&] { return rt.process_count() == 0; }));
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
    scoped_process me(rt);
    (void)me.monitor(rt.spawn(park_forever));
  }
  EXPECT_EQ(detail::live_blocks(), before);
}

// A mailbox that outlives its runtime's shutdown reports `shutdown` instead of hanging.
TEST(Runtime, MailboxSeesShutdown) {
  runtime rt({.shutdown_grace = std::chrono::milliseconds(50)});
  scoped_process me(rt);
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    rt.shutdown();
  });
  EXPECT_THROW((void)me.receive(on<go>(), after(10s)), exit_exception);
  t.join();
}

// Extensions are destroyed in the order they were created, whatever order std::vector's
// destructor uses: one made on another's first use outlives it, so the first one's destructor
// may still use it (the distribution's node and the network's I/O engine it listens through).
namespace {
std::vector<std::string> extension_deaths;  // written by the extensions below; outlives the runtime

struct io_like final : runtime_extension {
  bool alive = true;
  ~io_like() override {
    alive = false;
    extension_deaths.emplace_back("io");
  }
};
struct node_like final : runtime_extension {
  io_like* io = nullptr;
  void attached(detail::runtime_core& rt) override { io = &extension<io_like>(rt); }
  ~node_like() override {
    extension_deaths.emplace_back(io->alive ? "node, its io alive" : "node, its io gone");
  }
};
struct made_last final : runtime_extension {
  ~made_last() override { extension_deaths.emplace_back("last"); }
};
}  // namespace

TEST(Runtime, ExtensionsAreDestroyedInTheOrderTheyWereMade) {
  extension_deaths.clear();
  {
    runtime rt;
    (void)extension<node_like>(rt);  // makes io_like in its attached()
    (void)extension<made_last>(rt);
  }
  EXPECT_EQ(extension_deaths, (std::vector<std::string>{"node, its io alive", "io", "last"}));
}

}  // namespace beamlet::test
