// send_after timers armed by processes live in the wheel of the scheduler that armed them:
// these tests cancel them from other schedulers and other threads, race cancels against
// firings, fire a million of them, and end them with their target's exit.

#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct timer_tick {
  int n;
};
struct due_tick {
  int n;
  std::chrono::steady_clock::time_point due;
};
struct cancel_this {
  ref timer;
  int n;
  std::string armed_on;
};
struct cancelled {
  int n;
  bool won;
};

}  // namespace

// Timers armed on schedulers and cancelled by processes (on whichever scheduler runs them) and
// by a thread outside the runtime: every cancel finds its timer pending and reports nearly all
// of its hour, none of them fires, and nothing is left pending.
TEST(SendAfterWheels, CancelledFromOtherSchedulersAndThreads) {
  runtime rt({.schedulers = 4});
  const std::size_t base = rt.pending_timers();
  constexpr int armers = 8;
  const int per_armer = 2000 / stress_divisor;
  std::atomic<long> won{0};
  std::atomic<long> lost{0};
  std::atomic<long> crossed{0};
  std::atomic<long> short_left{0};
  std::atomic<long> fired{0};
  std::atomic<int> finished{0};
  scoped_process outside(rt);
  scoped_process me(rt);
  const pid canceller = me.spawn([&](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<cancel_this>());
      const auto& c = m.get<cancel_this>();
      const auto left = self.cancel_timer(c.timer);
      if (left.has_value()) {
        ++won;
        if (*left < 50min) ++short_left;
      } else {
        ++lost;
      }
      if (thread_name() != c.armed_on) ++crossed;
    }
  });
  for (int k = 0; k < armers; ++k) {
    (void)me.spawn([&, k](process& self) -> task<> {
      for (int i = 0; i < per_armer; ++i) {
        const ref t = self.send_after(self.self(), timer_tick{i}, 1h);
        // Every other timer goes to the outside thread, whose cancels always cross.
        self.send(i % 2 == 0 ? canceller : outside.self(), cancel_this{t, k, thread_name()});
      }
      ++finished;
      // Park until told to go: a fired timer would show up here.
      auto m = co_await self.receive(on<timer_tick>(), on<int>());
      if (m.is<timer_tick>()) ++fired;
    });
  }
  const long total = static_cast<long>(armers) * per_armer;
  long outside_done = 0;
  while (outside_done < total / 2) {
    auto m = outside.receive(on<cancel_this>(), after(60s));
    ASSERT_TRUE(m) << "the armers stopped sending";
    const auto left = rt.cancel_timer(m.get<cancel_this>().timer);
    if (left.has_value()) {
      ++won;
      if (*left < 50min) ++short_left;
    } else {
      ++lost;
    }
    ++crossed;
    ++outside_done;
  }
  ASSERT_TRUE(eventually([&] { return won.load() + lost.load() == total; }, 60s));
  EXPECT_EQ(won.load(), total);
  EXPECT_EQ(short_left.load(), 0);
  RecordProperty("crossed", std::to_string(crossed.load()));  // half of them at least
  // Cancelled timers stop counting at once; their owners free them when they next look.
  EXPECT_EQ(rt.pending_timers(), base);
  EXPECT_EQ(fired.load(), 0);
  rt.exit(canceller, exit_reason::kill());
}

// Timers due within microseconds, each cancelled from a thread outside the runtime at about
// the time it is due, while the scheduler that armed it fires it: every timer ends exactly one
// way (delivered, or cancelled with its time left reported), never both, never neither.
TEST(SendAfterWheels, FiringRacesCancelling) {
  runtime rt({.schedulers = 2});
  const std::size_t base = rt.pending_timers();
  constexpr int pairs = 2;
  const int rounds = 3000 / stress_divisor;
  std::atomic<long> both{0};
  std::atomic<long> neither{0};
  std::atomic<long> cancels_won{0};
  std::atomic<long> delivered{0};
  std::atomic<int> finished{0};
  std::atomic<int> checked{0};
  std::vector<std::unique_ptr<scoped_process>> cancellers;
  std::vector<std::thread> threads;
  for (int k = 0; k < pairs; ++k) {
    cancellers.push_back(std::make_unique<scoped_process>(rt));
    threads.emplace_back([&rt, c = cancellers.back().get(), k] {
      std::minstd_rand rng(static_cast<unsigned>(k) + 5);
      for (;;) {
        auto m = c->receive(on<std::pair<pid, cancel_this>>(), on<int>());
        if (m.is<int>()) return;
        const auto& [from, what] = m.get<std::pair<pid, cancel_this>>();
        // Cancel at about the time the timer is due (its scheduler fires it within a tick).
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::microseconds(rng() % 300);
        while (std::chrono::steady_clock::now() < until) {
        }
        c->send(from, cancelled{what.n, rt.cancel_timer(what.timer).has_value()});
      }
    });
  }
  scoped_process me(rt);
  std::vector<pid> racers;
  for (int k = 0; k < pairs; ++k) {
    racers.push_back(me.spawn(
        [&, to = cancellers[static_cast<std::size_t>(k)]->self(), k](process& self) -> task<> {
          std::minstd_rand rng(static_cast<unsigned>(k) + 3);
          for (int r = 0; r < rounds; ++r) {
            const auto delay = std::chrono::microseconds(rng() % 150);
            const ref t = self.send_after(self.self(), timer_tick{r}, delay);
            self.send(to, std::pair{self.self(), cancel_this{t, r, {}}});
            auto answer = co_await self.receive(on<cancelled>());
            if (answer.get<cancelled>().won) {
              ++cancels_won;  // (a tick of this round would be found below)
              continue;
            }
            auto m = co_await self.receive(
                on<timer_tick>().when([r](const timer_tick& x) { return x.n == r; }), after(10s));
            if (m)
              ++delivered;
            else
              ++neither;
          }
          ++finished;
          // Once every timer has ended (delivered first, then no longer pending), a tick still
          // queued is one whose cancel had won as well.
          co_await self.receive(on<int>());
          for (;;) {
            auto m = co_await self.receive(on<timer_tick>(), after(0ms));
            if (!m) break;
            ++both;
          }
          ++checked;
        }));
  }
  const bool done = eventually([&] { return finished.load() == pairs; }, 120s);
  for (auto& c : cancellers) me.send(c->self(), 0);
  for (auto& t : threads) t.join();
  ASSERT_TRUE(done);
  ASSERT_TRUE(eventually([&] { return rt.pending_timers() == base; }));
  for (pid p : racers) me.send(p, 0);
  ASSERT_TRUE(eventually([&] { return checked.load() == pairs; }));
  EXPECT_EQ(both.load(), 0);
  EXPECT_EQ(neither.load(), 0);
  EXPECT_EQ(cancels_won.load() + delivered.load(), static_cast<long>(pairs) * rounds);
  RecordProperty("cancels_won", std::to_string(cancels_won.load()));
  RecordProperty("delivered", std::to_string(delivered.load()));
}

// A million timers pending at once in the wheels of four schedulers, due over half a second:
// each is delivered exactly once, none before its deadline.
TEST(SendAfterWheels, AMillionPendingFireExactly) {
  runtime rt({.schedulers = 4});
  const std::size_t base = rt.pending_timers();
  constexpr int armers = 4;
  const int per_armer = 250000 / stress_divisor;
  const int total = armers * per_armer;
  std::atomic<int> armed{0};
  std::atomic<long> early{0};
  std::atomic<long> duplicates{0};
  std::atomic<int> received{0};
  scoped_process me(rt);
  const pid sink = me.spawn([&](process& self) -> task<> {
    std::vector<char> seen(static_cast<std::size_t>(total), 0);
    for (;;) {
      auto m = co_await self.receive(on<due_tick>());
      const auto& t = m.get<due_tick>();
      if (std::chrono::steady_clock::now() < t.due) ++early;
      if (seen[static_cast<std::size_t>(t.n)]++ != 0) ++duplicates;
      received.fetch_add(1, std::memory_order_release);
    }
  });
  for (int k = 0; k < armers; ++k) {
    (void)me.spawn([&, k](process& self) -> task<> {
      std::minstd_rand rng(static_cast<unsigned>(k) + 11);
      for (int i = 0; i < per_armer; ++i) {
        const auto delay = std::chrono::microseconds(200000 + rng() % 500000);
        const auto due = std::chrono::steady_clock::now() + delay;
        self.send_after(sink, due_tick{k * per_armer + i, due}, delay);
      }
      armed += per_armer;
      co_await self.receive(on<int>());
    });
  }
  ASSERT_TRUE(eventually([&] { return armed.load() == total; }, 60s));
  ASSERT_TRUE(eventually([&] { return received.load() == total; }, 120s))
      << received.load() << " of " << total << " delivered";
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(duplicates.load(), 0);
  EXPECT_TRUE(eventually([&] { return rt.pending_timers() == base; }));
  rt.exit(sink, exit_reason::kill());
}

// Timers aimed at one process from processes on every scheduler: its exit cancels them all,
// wherever they wait (schedulers that sleep are woken to free them), and a cancel afterwards
// finds each gone.
TEST(SendAfterWheels, TheTargetsExitCancelsThemOnEveryScheduler) {
  runtime rt({.schedulers = 4});
  const std::size_t base = rt.pending_timers();
  constexpr int armers = 16;
  constexpr int per_armer = 50;
  scoped_process me(rt);
  const pid target = me.spawn([](process& self) -> task<> { co_await self.receive(on<int>()); });
  std::vector<pid> armer_pids;
  for (int k = 0; k < armers; ++k)
    armer_pids.push_back(me.spawn([&, target](process& self) -> task<> {
      std::vector<ref> refs;
      for (int i = 0; i < per_armer; ++i)
        refs.push_back(self.send_after(target, timer_tick{i}, 1h));
      self.send(me.self(), std::pair{self.self(), std::move(refs)});
      co_await self.receive(on<int>());
    }));
  std::vector<ref> refs;
  for (int k = 0; k < armers; ++k) {
    auto m = me.receive(on<std::pair<pid, std::vector<ref>>>(), after(30s));
    ASSERT_TRUE(m);
    const auto& got = m.get<std::pair<pid, std::vector<ref>>>().second;
    refs.insert(refs.end(), got.begin(), got.end());
  }
  EXPECT_EQ(rt.pending_timers(), base + armers * per_armer);
  me.exit(target, exit_reason::kill());
  // The proof that the exit cancelled them: none is pending any more (a cancel would report
  // each gone in any case, its target having exited).
  EXPECT_TRUE(eventually([&] { return rt.pending_timers() == base; }))
      << rt.pending_timers() - base << " timers left";
  int found = 0;
  for (ref r : refs) found += rt.cancel_timer(r).has_value() ? 1 : 0;
  EXPECT_EQ(found, 0);
  for (pid p : armer_pids) rt.exit(p, exit_reason::kill());
}

namespace {
// A message whose destructor cancels another timer: user code that runs while the timers'
// owner is in the middle of ending a batch of them.
struct cancels_on_destruction {
  runtime* rt = nullptr;
  std::shared_ptr<ref> other;
  std::shared_ptr<std::atomic<int>> destroyed;
  cancels_on_destruction(runtime* r, std::shared_ptr<ref> o, std::shared_ptr<std::atomic<int>> d)
      : rt(r), other(std::move(o)), destroyed(std::move(d)) {}
  cancels_on_destruction(cancels_on_destruction&& x) noexcept
      : rt(std::exchange(x.rt, nullptr)),
        other(std::move(x.other)),
        destroyed(std::move(x.destroyed)) {}
  cancels_on_destruction(const cancels_on_destruction&) = delete;
  cancels_on_destruction& operator=(const cancels_on_destruction&) = delete;
  cancels_on_destruction& operator=(cancels_on_destruction&&) = delete;
  ~cancels_on_destruction() {
    if (rt == nullptr) return;  // (moved from)
    (void)rt->cancel_timer(*other);
    ++*destroyed;
  }
};
}  // namespace

// Timers aimed at a process that exits, whose messages' destructors cancel the other timers of
// the same chain while the exit is cancelling them; and timers that fire into a full mailbox
// (the message is destroyed at delivery) whose destructors cancel timers of the same batch.
// Every message is destroyed once and nothing is left pending (ASan checks the rest).
TEST(SendAfterWheels, MessageDestructorsThatCancelTimers) {
  runtime rt({.schedulers = 2});
  const std::size_t base = rt.pending_timers();
  constexpr int timers = 64;
  auto destroyed = std::make_shared<std::atomic<int>>(0);
  scoped_process me(rt);
  // 1. The exit's cancels: each destructor cancels the timer armed before its own, which the
  //    chain (newest first) comes to next.
  const pid target = me.spawn([](process& self) -> task<> { co_await self.receive(on<int>()); });
  const pid armer = me.spawn([&, target](process& self) -> task<> {
    auto previous = std::make_shared<ref>();
    for (int i = 0; i < timers; ++i) {
      auto mine = std::make_shared<ref>();
      *mine = self.send_after(target, cancels_on_destruction{&rt, previous, destroyed}, 1h);
      previous = mine;
    }
    self.send(me.self(), 1);
    co_await self.receive(on<std::string>());
  });
  ASSERT_TRUE(me.receive(on<int>(), after(30s)));
  me.exit(target, exit_reason::kill());
  EXPECT_TRUE(eventually([&] { return destroyed->load() == timers; })) << destroyed->load();
  EXPECT_TRUE(eventually([&] { return rt.pending_timers() == base; }));
  // 2. Firing into a full mailbox: timers due at one instant, each destructor cancelling the
  //    timer armed after its own (due in the same tick, and fired in the same batch).
  destroyed->store(0);
  spawn_options bounded;
  bounded.mailbox = mailbox_limit{.capacity = 1};
  const pid full =
      me.spawn_opt([](process& self) -> task<> { co_await self.receive(on<std::string>()); },
                   bounded)
          .pid;
  me.send(full, 0);  // fills it: the process never takes an int
  const pid firer = me.spawn([&, full](process& self) -> task<> {
    std::vector<std::shared_ptr<ref>> refs;
    for (int i = 0; i <= timers; ++i) refs.push_back(std::make_shared<ref>());
    const auto due = std::chrono::steady_clock::now() + 20ms;
    for (std::size_t i = 0; i < timers; ++i) {
      const auto delay = due - std::chrono::steady_clock::now();
      *refs[i] = self.send_after(full, cancels_on_destruction{&rt, refs[i + 1], destroyed}, delay);
    }
    self.send(me.self(), 2);
    co_await self.receive(on<std::string>());
  });
  ASSERT_TRUE(me.receive(on<int>(), after(30s)));
  EXPECT_TRUE(eventually([&] { return destroyed->load() == timers; })) << destroyed->load();
  EXPECT_TRUE(eventually([&] { return rt.pending_timers() == base; }));
  for (pid p : {armer, full, firer}) rt.exit(p, exit_reason::kill());
}

// A reference that is not a timer's, or a timer of another runtime, cancels nothing here.
TEST(SendAfterWheels, ForeignReferencesCancelNothing) {
  runtime wide({.schedulers = 4});
  runtime narrow({.schedulers = 1});
  std::vector<ref> timers;
  scoped_process me(wide);
  for (int k = 0; k < 8; ++k)
    (void)me.spawn([&](process& self) -> task<> {
      self.send(me.self(), self.send_after(self.self(), timer_tick{1}, 1h));
      co_await self.receive(on<int>());
    });
  for (int k = 0; k < 8; ++k) {
    auto m = me.receive(on<ref>(), after(30s));
    ASSERT_TRUE(m);
    timers.push_back(m.get<ref>());
  }
  const std::size_t pending = wide.pending_timers();
  for (ref t : timers) EXPECT_FALSE(narrow.cancel_timer(t).has_value());
  EXPECT_FALSE(wide.cancel_timer(me.make_ref()).has_value());
  EXPECT_FALSE(wide.cancel_timer(ref()).has_value());
  EXPECT_EQ(wide.pending_timers(), pending);
  for (ref t : timers) EXPECT_TRUE(wide.cancel_timer(t).has_value());
}

}  // namespace beamlet::test
