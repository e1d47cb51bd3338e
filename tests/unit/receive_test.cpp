// spec §1.2: selective receive.
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct a {
  int n;
};
struct b {
  int n;
};
struct m {
  int n;
};
struct other {};
}  // namespace

// Rule 8: the oldest message matching ANY clause wins, not the first clause.
TEST(Receive, S1_2_8_OldestMatchingMessageFirst) {
  runtime rt;
  std::atomic<int> got{0};
  watched p(rt, [&](process& self) -> task<> {
    co_await self.receive(on<go>());
    auto r = co_await self.receive(on<a>(), on<b>());
    got = r.is<b>() ? r.get<b>().n : -1;
  });
  rt.send(p, b{1});
  rt.send(p, a{2});
  rt.send(p, go{});
  expect_exit(rt, p);
  EXPECT_EQ(got.load(), 1);
}

// Rule 8: for one message, clauses are tried top to bottom (guards included).
TEST(Receive, S1_2_8_ClausesTriedInOrder) {
  runtime rt;
  std::atomic<int> clause{-2};
  watched p(rt, [&](process& self) -> task<> {
    auto r =
        co_await self.receive(on<a>().when([](const a& x) { return x.n > 10; }), on<a>(), on_any());
    clause = r.clause();
  });
  rt.send(p, a{5});
  expect_exit(rt, p);
  EXPECT_EQ(clause.load(), 1);
}

// Rule 9: from [m1..m5, other], receiving m3 leaves [m1, m2, m4, m5, other].
TEST(Receive, S1_2_9_UnmatchedMessagesKeepOrder) {
  runtime rt;
  std::vector<std::string> rest;
  watched p(rt, [&](process& self) -> task<> {
    co_await self.receive(on<go>());
    auto r = co_await self.receive(on<m>().when([](const m& x) { return x.n == 3; }));
    EXPECT_EQ(r.get<m>().n, 3);
    for (int i = 0; i < 5; ++i) {
      auto x = co_await self.receive(on<m>(), on<other>());
      rest.push_back(x.is<m>() ? "m" + std::to_string(x.get<m>().n) : "other");
    }
  });
  for (int i = 1; i <= 5; ++i) rt.send(p, m{i});
  rt.send(p, other{});
  rt.send(p, go{});
  expect_exit(rt, p);
  EXPECT_EQ(rest, (std::vector<std::string>{"m1", "m2", "m4", "m5", "other"}));
}

// Rule 10: while blocked in one receive only new arrivals are tested (save position); the next
// receive starts again at the head.
TEST(Receive, S1_2_10_SavePositionAndRestartAtHead) {
  runtime rt;
  std::atomic<std::uint64_t> examined_while_blocked{0};
  std::atomic<int> first_after{0};
  watched p(rt, [&](process& self) -> task<> {
    co_await self.receive(on<go>());
    // 100 queued `m`s; block waiting for an `a` while 50 more `m`s arrive.
    const std::uint64_t before = self.messages_examined();
    co_await self.receive(on<a>());
    examined_while_blocked = self.messages_examined() - before;
    auto r = co_await self.receive(on<m>());  // restarts at the head
    first_after = r.get<m>().n;
  });
  for (int i = 0; i < 100; ++i) rt.send(p, m{i});
  rt.send(p, go{});
  std::this_thread::sleep_for(20ms);  // let it block
  for (int i = 100; i < 150; ++i) rt.send(p, m{i});
  std::this_thread::sleep_for(20ms);
  rt.send(p, a{0});
  expect_exit(rt, p);
  // Each message examined exactly once: 100 + 50 junk + the a.
  EXPECT_EQ(examined_while_blocked.load(), 151u);
  EXPECT_EQ(first_after.load(), 0);
}

// Rule 11: a negative timeout is rejected (Erlang's timeout_value).
TEST(Receive, S1_2_11_NegativeTimeoutRejected) {
  EXPECT_THROW((void)after(std::chrono::milliseconds(-1)), timeout_value_error);
  EXPECT_NO_THROW((void)after(std::chrono::milliseconds(0)));
}

// Rule 11: T is measured from entry into the receive; non-matching arrivals do not extend it.
TEST(Receive, S1_2_11_TimeoutFromEntry) {
  runtime rt;
  std::atomic<long> waited_ms{0};
  std::atomic<bool> timed_out{false};
  watched p(rt, [&](process& self) -> task<> {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = co_await self.receive(on<a>(), after(150ms));
    timed_out = r.timed_out();
    waited_ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  });
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(20ms);
    rt.send(p, m{i});
  }
  expect_exit(rt, p);
  EXPECT_TRUE(timed_out);
  EXPECT_GE(waited_ms.load(), 150);
  EXPECT_LT(waited_ms.load(), 1500);  // not restarted by each of the 10 arrivals
}

// Rule 11: after(0) scans what is queued once and never blocks.
TEST(Receive, S1_2_11_AfterZeroPolls) {
  runtime rt;
  std::atomic<int> result{0};
  EXPECT_EQ(run_process(rt,
                        [&](process& self) -> task<> {
                          auto empty = co_await self.receive(on<a>(), after(0ms));
                          self.send(self.self(), a{9});
                          auto full = co_await self.receive(on<a>(), after(0ms));
                          result = (empty.timed_out() ? 1 : 0) + (full ? full.get<a>().n : 0);
                        }),
            exit_reason::normal());
  EXPECT_EQ(result.load(), 10);
}

// Rule 11: after(infinity) is the same as no after clause.
TEST(Receive, S1_2_11_AfterInfinityWaits) {
  runtime rt;
  std::atomic<int> got{0};
  watched p(rt, [&](process& self) -> task<> {
    auto r = co_await self.receive(on<a>(), after(infinity));
    got = r.get<a>().n;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_TRUE(rt.is_alive(p));
  rt.send(p, a{4});
  expect_exit(rt, p);
  EXPECT_EQ(got.load(), 4);
}

// Rule 12: a receive with only `after` is a sleep, and messages do not cut it short.
TEST(Receive, S1_2_12_AfterOnlyIsSleep) {
  runtime rt;
  std::atomic<long> slept{0};
  watched p(rt, [&](process& self) -> task<> {
    const auto t0 = std::chrono::steady_clock::now();
    co_await self.sleep(100ms);
    slept = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  });
  rt.send(p, a{1});
  expect_exit(rt, p);
  EXPECT_GE(slept.load(), 100);
}

// Handler style: the matched clause's handler runs; all return one type.
TEST(Receive, HandlerStyle) {
  runtime rt;
  std::atomic<int> sum{0};
  watched p(rt, [&](process& self) -> task<> {
    for (int i = 0; i < 3; ++i) {
      sum += co_await self.receive(on<a>([](a x) { return x.n; }),
                                   on<b>([](b&& x) { return 100 * x.n; }),
                                   after(1s, [] { return -1000; }));
    }
    sum += co_await self.receive(on<a>([](a x) { return x.n; }), after(0ms, [] { return 7; }));
  });
  rt.send(p, a{1});
  rt.send(p, b{2});
  rt.send(p, a{3});
  expect_exit(rt, p);
  EXPECT_EQ(sum.load(), 1 + 200 + 3 + 7);
}

// on_any takes any message; the result reports its type.
TEST(Receive, CatchAll) {
  runtime rt;
  std::string name;
  watched p(rt, [&](process& self) -> task<> {
    auto r = co_await self.receive(on_any());
    any_message msg = r.take();
    name = msg.type_name();
    EXPECT_TRUE(msg.is<b>());
    EXPECT_EQ(msg.get_if<b>()->n, 5);
  });
  rt.send(p, b{5});
  expect_exit(rt, p);
  EXPECT_NE(name.find("b"), std::string::npos);
}

// A guard that throws makes the receive throw, whether it ran at once or after blocking.
TEST(Receive, ThrowingGuardPropagates) {
  runtime rt;
  std::atomic<int> caught{0};
  watched p(rt, [&](process& self) -> task<> {
    auto bad = [](const a&) -> bool { throw std::logic_error("guard"); };
    for (int i = 0; i < 2; ++i) {
      try {
        co_await self.receive(on<a>().when(bad));
      } catch (const std::logic_error&) {
        ++caught;
      }
    }
  });
  rt.send(p, a{1});  // probably matched at once
  std::this_thread::sleep_for(30ms);
  rt.send(p, a{2});  // tested after blocking
  expect_exit(rt, p);
  EXPECT_EQ(caught.load(), 2);
}

// received::get<T> on the wrong type throws a clear error.
TEST(Receive, BadAccessThrows) {
  runtime rt;
  std::atomic<bool> threw{false};
  watched p(rt, [&](process& self) -> task<> {
    auto r = co_await self.receive(on<a>(), on<b>());
    try {
      (void)r.get<b>();
    } catch (const bad_message_access&) {
      threw = true;
    }
  });
  rt.send(p, a{1});
  expect_exit(rt, p);
  EXPECT_TRUE(threw);
}

namespace {
// Copyable only (the declared copy constructor suppresses the move): "moving" it copies, and
// the copy of the message whose id is `fail_id` throws.
struct fragile {
  explicit fragile(int i) : id(i) {}
  fragile(const fragile& o) : id(o.id) {
    if (o.id == fail_id.load()) throw std::runtime_error("copy failed");
  }
  fragile& operator=(const fragile&) = default;
  ~fragile() {}
  int id;
  static inline std::atomic<int> fail_id{-1};
};
}  // namespace

// A handler-style receive whose message cannot be moved out keeps the message where it was
// (strong guarantee); the next receive finds it again.
TEST(Receive, HandlerStyleKeepsTheMessageWhenItsMoveThrows) {
  runtime rt;
  scoped_process me(rt);
  for (int i = 1; i <= 3; ++i) {
    const fragile f(i);
    me.send(me.self(), f);
  }
  auto take = [&] { return me.receive(on<fragile>([](fragile f) { return f.id; })); };
  fragile::fail_id = 2;
  EXPECT_EQ(take(), 1);
  EXPECT_THROW(take(), std::runtime_error);
  EXPECT_EQ(me.message_queue_len(), 2u);
  fragile::fail_id = -1;
  EXPECT_EQ(take(), 2);  // still first, in its place
  EXPECT_EQ(take(), 3);
  // The same from a coroutine process, with a guard that selects the middle message.
  const auto r = run_process(rt, [](process& self) -> task<> {
    for (int i = 1; i <= 3; ++i) {
      const fragile f(i);
      self.send(self.self(), f);
    }
    fragile::fail_id = 2;
    auto second = [](const fragile& f) { return f.id == 2; };
    bool threw = false;
    try {
      (void)co_await self.receive(on<fragile>([](fragile f) { return f.id; }).when(second));
    } catch (const std::runtime_error&) {
      threw = true;
    }
    EXPECT_TRUE(threw);
    fragile::fail_id = -1;
    std::vector<int> order;
    for (int i = 0; i < 3; ++i)
      order.push_back(co_await self.receive(on<fragile>([](fragile f) { return f.id; })));
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  });
  EXPECT_EQ(r, exit_reason::normal());
}

}  // namespace beamlet::test
