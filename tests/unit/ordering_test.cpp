// spec §1.1: delivery and ordering.
#include <memory>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct seq {
  int n;
};
struct done {};
}  // namespace

// Rule 1 (messages) and rule 7: one sender's messages arrive in send order, FIFO.
TEST(Ordering, S1_1_1_and_7_PerPairMessageOrder) {
  runtime rt;
  constexpr int n = 10000;
  std::atomic<bool> ordered{true};
  watched receiver(rt, [&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) {
      auto m = co_await self.receive(on<seq>());
      if (m.get<seq>().n != i) ordered = false;
    }
  });
  rt.spawn([&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) self.send(receiver, seq{i});
    co_return;
  });
  EXPECT_EQ(expect_exit(rt, receiver), exit_reason::normal());
  EXPECT_TRUE(ordered);
}

// Rule 1 (all signal kinds): a message and then an exit signal from the same sender reach a
// trapping receiver in that order.
TEST(Ordering, S1_1_1_MessageThenExitSignal) {
  runtime rt;
  std::atomic<int> first_kind{0};  // 1: message first, 2: exit first
  watched receiver(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    // The sender starts only once we trap exits.
    const pid me = self.self();
    self.spawn([me](process& sender) -> task<> {
      sender.send(me, seq{1});
      sender.exit(me, exit_reason::error("after_message"));
      sender.send(me, done{});
      co_return;
    });
    co_await self.receive(on<done>());  // wait until the sender is done
    auto m = co_await self.receive(on<seq>(), on<exit_message>());
    first_kind = m.is<seq>() ? 1 : 2;
  });
  expect_exit(rt, receiver);
  EXPECT_EQ(first_kind.load(), 1);
}

// Rule 1 (link/unlink order): link then unlink from the same sender leaves no link behind, so
// the sender's later crash does not reach the receiver.
TEST(Ordering, S1_1_1_LinkThenUnlinkInOrder) {
  runtime rt;
  watched receiver(rt, park_forever);
  watched sender(rt, [&](process& self) -> task<> {
    for (int i = 0; i < 100; ++i) {
      self.link(receiver);
      self.unlink(receiver);
    }
    co_await self.receive(on<done>());
    co_await self.exit(exit_reason::error("crash"));
  });
  rt.send(sender, done{});
  EXPECT_EQ(expect_exit(rt, sender), exit_reason::error("crash"));
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(rt.is_alive(receiver));
  rt.exit(receiver, exit_reason::kill());
}

// Rule 3: everything a process sent before dying reaches the watcher before its DOWN; likewise
// before the EXIT of a link.
TEST(Ordering, S1_1_3_MessagesBeforeDownAndExit) {
  runtime rt;
  constexpr int n = 5000;
  std::atomic<bool> ok{false};
  watched watcher(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    const pid me = self.self();
    auto [child, mref] = self.spawn_monitor([me](process& c) -> task<> {
      for (int i = 0; i < n; ++i) c.send(me, seq{i});
      c.link(me);
      co_await c.exit(exit_reason::error("crash"));
    });
    int got = 0;
    bool down_seen = false;
    bool exit_seen = false;
    bool order_ok = true;
    while (!(down_seen && exit_seen)) {
      auto m = co_await self.receive(on<seq>(), on<down>(), on<exit_message>());
      if (auto* s = m.get_if<seq>()) {
        if (down_seen || exit_seen || s->n != got) order_ok = false;
        ++got;
      } else if (m.is<down>()) {
        down_seen = true;
      } else {
        exit_seen = m.get<exit_message>().from == child;
      }
    }
    (void)mref;
    ok = order_ok && got == n;
  });
  expect_exit(rt, watcher);
  EXPECT_TRUE(ok);
}

// Rule 4: sending to a dead or never-existing pid is a silent no-op.
TEST(Ordering, S1_1_4_SendToDeadPidIsNoop) {
  runtime rt;
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  rt.send(dead, seq{1});
  rt.send(pid(0xFFFFFFFFFFull), seq{2});
  rt.send(pid(), seq{3});
  EXPECT_EQ(run_process(rt,
                        [&](process& self) -> task<> {
                          self.send(dead, seq{4});
                          self.send(pid(123456789), std::make_unique<int>(5));  // freed, not leaked
                          co_return;
                        }),
            exit_reason::normal());
}

// Messages are any movable type, including move-only ones.
TEST(Ordering, MoveOnlyMessages) {
  runtime rt;
  std::atomic<int> got{0};
  watched p(rt, [&](process& self) -> task<> {
    auto m = co_await self.receive(on<std::unique_ptr<int>>());
    got = *m.get<std::unique_ptr<int>>();
  });
  rt.send(p, std::make_unique<int>(17));
  expect_exit(rt, p);
  EXPECT_EQ(got.load(), 17);
}

// send() is thread-safe from threads that are not processes, and keeps per-thread order.
TEST(Ordering, S1_1_1_OutsideThreadsKeepTheirOrder) {
  runtime rt;
  constexpr int threads = 4;
  const int per = 20000 / stress_divisor;
  struct tagged {
    int thread;
    int n;
  };
  std::atomic<bool> ok{true};
  watched p(rt, [&](process& self) -> task<> {
    std::vector<int> next(threads, 0);
    for (int i = 0; i < threads * per; ++i) {
      auto m = co_await self.receive(on<tagged>());
      auto& t = m.get<tagged>();
      if (t.n != next[t.thread]++) ok = false;
    }
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t)
    senders.emplace_back([&, t] {
      for (int i = 0; i < per; ++i) rt.send(p, tagged{t, i});
    });
  for (auto& s : senders) s.join();
  EXPECT_EQ(expect_exit(rt, p), exit_reason::normal());
  EXPECT_TRUE(ok);
}

}  // namespace beamlet::test
