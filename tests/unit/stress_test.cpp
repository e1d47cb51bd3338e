// Stress: the three scale checks of the runtime core (sizes shrink under TSan).
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct numbered {
  std::uint32_t sender;
  std::uint32_t n;
};
}  // namespace

// 4 sender threads x 1M messages to one process: none lost, each sender's order kept
// (spec §1.1 rules 1 and 7 under contention).
TEST(Stress, FourThreadsMillionMessagesEach) {
  runtime rt;
  constexpr std::uint32_t senders = 4;
  const std::uint32_t per = 1000000 / stress_divisor;
  std::atomic<std::uint64_t> received{0};
  std::atomic<bool> ordered{true};
  watched sink(rt, [&](process& self) -> task<> {
    std::vector<std::uint32_t> next(senders, 0);
    for (std::uint64_t i = 0; i < std::uint64_t{senders} * per; ++i) {
      auto m = co_await self.receive(on<numbered>());
      const numbered& t = m.get<numbered>();
      if (t.n != next[t.sender]++) ordered = false;
      received.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::vector<std::thread> ts;
  for (std::uint32_t s = 0; s < senders; ++s)
    ts.emplace_back([&, s] {
      for (std::uint32_t i = 0; i < per; ++i) rt.send(sink, numbered{s, i});
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(expect_exit(rt, sink, 120s), exit_reason::normal());
  EXPECT_EQ(received.load(), std::uint64_t{senders} * per);
  EXPECT_TRUE(ordered);
}

// 1M processes spawned and exited, none leaked: the table empties and every block of the
// allocator comes back when the runtime goes.
TEST(Stress, MillionProcessesNoLeak) {
  const std::int64_t before = detail::live_blocks();
  {
    runtime rt;
    const int total = 1000000 / stress_divisor;
    std::atomic<int> exited{0};
    const auto r = run_process(
        rt,
        [&](process& self) -> task<> {
          // Spawn in waves of 10k monitored children and wait for their DOWNs, so the live
          // population stays bounded while 1M processes come and go.
          constexpr int wave = 10000;
          for (int done = 0; done < total; done += wave) {
            const int n = std::min(wave, total - done);
            for (int i = 0; i < n; ++i)
              (void)self.spawn_monitor([](process&) -> task<> { co_return; });
            for (int i = 0; i < n; ++i) {
              co_await self.receive(on<down>());
              ++exited;
            }
          }
        },
        300s);
    EXPECT_EQ(r, exit_reason::normal());
    EXPECT_EQ(exited.load(), total);
    EXPECT_TRUE(eventually([&] { return rt.process_count() == 0; }));
  }
  EXPECT_EQ(detail::live_blocks(), before);
}

// 100k watchers of one process each get exactly one DOWN.
TEST(Stress, HundredThousandWatchersOneDownEach) {
  runtime rt;
  const int n = 100000 / stress_divisor;
  const pid target = rt.spawn(wait_for_any);
  std::atomic<int> monitoring{0};
  std::atomic<int> downs{0};
  std::atomic<int> wrong{0};
  std::vector<pid> watchers;
  watchers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    watchers.push_back(rt.spawn([&](process& self) -> task<> {
      const ref r = self.monitor(target);
      ++monitoring;
      auto d = co_await self.receive(on<down>());
      if (d.get<down>().ref != r || d.get<down>().reason != exit_reason::normal()) ++wrong;
      ++downs;
      auto extra = co_await self.receive(on<down>(), after(10ms));
      if (extra) ++wrong;
    }));
  }
  ASSERT_TRUE(eventually([&] { return monitoring.load() == n; }, 60s));
  EXPECT_EQ(rt.monitored_by(target).size(), static_cast<std::size_t>(n));
  rt.send(target, go{});
  ASSERT_TRUE(eventually([&] { return downs.load() == n; }, 60s));
  EXPECT_TRUE(eventually([&] { return rt.process_count() == 0; }, 60s));
  EXPECT_EQ(downs.load(), n);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace beamlet::test
