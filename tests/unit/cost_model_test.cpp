// spec §1.3: the cost model of selective receive, and receive markers.
#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct tagged {
  ref tag;
  int n;
};
}  // namespace

// Rule 13: a receive that matches a message behind N non-matching ones examines N + 1
// messages, and every receive starts again at the head: k receives cost k(N + 1).
TEST(CostModel, S1_3_13_EveryReceiveRescansFromHead) {
  runtime rt;
  constexpr int n = 10000;
  constexpr int k = 20;
  std::atomic<std::uint64_t> examined{0};
  EXPECT_EQ(run_process(rt,
                        [&](process& self) -> task<> {
                          for (int i = 0; i < n; ++i) self.send(self.self(), junk{i});
                          const std::uint64_t before = self.messages_examined();
                          for (int i = 0; i < k; ++i) {
                            self.send(self.self(), tagged{ref(), i});
                            co_await self.receive(on<tagged>());
                          }
                          examined = self.messages_examined() - before;
                        }),
            exit_reason::normal());
  EXPECT_EQ(examined.load(), static_cast<std::uint64_t>(k) * (n + 1));
}

// Rule 13: a receive that matches nothing has examined every queued message.
TEST(CostModel, S1_3_13_NoMatchScansEverything) {
  runtime rt;
  constexpr int n = 5000;
  std::atomic<std::uint64_t> examined{0};
  run_process(rt, [&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) self.send(self.self(), junk{i});
    const std::uint64_t before = self.messages_examined();
    auto r = co_await self.receive(on<tagged>(), after(0ms));
    EXPECT_TRUE(r.timed_out());
    examined = self.messages_examined() - before;
  });
  EXPECT_EQ(examined.load(), static_cast<std::uint64_t>(n));
}

// Rules 14 and 16: a receive keyed on a marked ref skips everything queued before the ref.
TEST(CostModel, S1_3_14_16_MarkerSkipsOlderMessages) {
  runtime rt;
  constexpr int n = 10000;
  std::atomic<std::uint64_t> examined{0};
  std::atomic<int> got{0};
  run_process(rt, [&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) self.send(self.self(), junk{i});
    const std::uint64_t before = self.messages_examined();
    for (int i = 0; i < 10; ++i) {
      const ref r = self.make_ref(marked);
      self.send(self.self(), tagged{r, i});
      auto m = co_await self.receive(
          since(r), on<tagged>().when([r](const tagged& t) { return t.tag == r; }));
      got += m.get<tagged>().n;
    }
    examined = self.messages_examined() - before;
  });
  EXPECT_EQ(examined.load(), 10u);  // one message examined per receive, not n + 1
  EXPECT_EQ(got.load(), 45);
}

// Rule 16: the marker also works while blocked: the reply arrives later, from another process.
TEST(CostModel, S1_3_16_MarkerWithBlockingReceive) {
  runtime rt;
  constexpr int n = 20000;
  std::atomic<std::uint64_t> examined{0};
  const pid echo = rt.spawn([](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<std::pair<pid, ref>>());
      auto [from, r] = m.get<std::pair<pid, ref>>();
      self.send(from, tagged{r, 1});
    }
  });
  run_process(rt, [&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) self.send(self.self(), junk{i});
    const std::uint64_t before = self.messages_examined();
    for (int i = 0; i < 50; ++i) {
      const ref r = self.make_ref(marked);
      self.send(echo, std::pair{self.self(), r});
      co_await self.receive(
          since(r), on<tagged>().when([r](const tagged& t) { return t.tag == r; }), after(5s));
    }
    examined = self.messages_examined() - before;
  });
  EXPECT_EQ(examined.load(), 50u);
  rt.exit(echo, exit_reason::kill());
}

// Rule 16: a monitor ref can carry the marker (gen:call's pattern): the DOWN of a dead target
// is found without scanning the backlog, even when it is delivered at once (noproc).
TEST(CostModel, S1_3_16_MarkedMonitor) {
  runtime rt;
  constexpr int n = 10000;
  std::atomic<std::uint64_t> examined{0};
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  run_process(rt, [&](process& self) -> task<> {
    for (int i = 0; i < n; ++i) self.send(self.self(), junk{i});
    const std::uint64_t before = self.messages_examined();
    const ref r = self.monitor(dead, marked);
    auto m = co_await self.receive(
        since(r), on<down>().when([r](const down& d) { return d.ref == r; }), after(5s));
    EXPECT_EQ(m.get<down>().reason, exit_reason::noproc());
    examined = self.messages_examined() - before;
  });
  EXPECT_EQ(examined.load(), 1u);
}

// Rule 16: correctness never depends on the optimisation. With more live markers than slots
// the oldest are evicted; receives on them scan from the head and find the same messages.
TEST(CostModel, S1_3_16_EvictedMarkersStillCorrect) {
  runtime rt;
  std::atomic<int> found{0};
  std::atomic<std::uint64_t> examined{0};
  run_process(rt, [&](process& self) -> task<> {
    for (int i = 0; i < 100; ++i) self.send(self.self(), junk{i});
    std::vector<ref> refs;
    for (int i = 0; i < 12; ++i) {  // 12 markers, 8 slots
      refs.push_back(self.make_ref(marked));
      self.send(self.self(), tagged{refs.back(), i});
    }
    const std::uint64_t before = self.messages_examined();
    for (int i = 0; i < 12; ++i) {
      const ref r = refs[static_cast<std::size_t>(i)];
      auto m = co_await self.receive(
          since(r), on<tagged>().when([r](const tagged& t) { return t.tag == r; }), after(0ms));
      if (m && m.get<tagged>().n == i) ++found;
    }
    examined = self.messages_examined() - before;
  });
  EXPECT_EQ(found.load(), 12);
  // The 4 evicted markers scanned the backlog; the 8 live ones did not.
  EXPECT_GE(examined.load(), 4u * 100u);
  EXPECT_LT(examined.load(), 12u * 100u);
}

// Rule 16: a marker survives the removal of the message it points at (taken by another
// receive before the marked receive runs).
TEST(CostModel, S1_3_16_MarkerSurvivesRemovalOfItsNode) {
  runtime rt;
  std::atomic<bool> ok{false};
  run_process(rt, [&](process& self) -> task<> {
    self.send(self.self(), junk{1});
    self.send(self.self(), junk{2});
    const ref r = self.make_ref(marked);  // marker after junk{2}
    self.send(self.self(), tagged{r, 7});
    co_await self.receive(on<junk>().when([](const junk& j) { return j.n == 2; }));
    auto m = co_await self.receive(since(r), on<tagged>(), after(0ms));
    auto rest = co_await self.receive(on<junk>(), after(0ms));
    ok = m && m.get<tagged>().n == 7 && rest && rest.get<junk>().n == 1;
  });
  EXPECT_TRUE(ok);
}

// Rule 15: a marked receive with a catch-all clause does not compile (see the static_assert
// in receive.hpp); an `after` clause is allowed (exercised above).

}  // namespace beamlet::test
