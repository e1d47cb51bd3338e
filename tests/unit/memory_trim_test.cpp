// Memory that comes back: the size-class allocator unmaps the chunks a spike left empty (when
// asked, and by itself once the schedulers idle), the process table returns the pages of slots
// its pid sweep has passed, and a link table that held thousands of links shrinks without losing
// the ones that remain.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <beamlet/core/detail/allocator.hpp>

#include "test_support.hpp"

namespace beamlet::test {

namespace {

// Builds with the system allocator (the sanitizer presets) have no chunks to give back.
bool size_class_allocator() {
  void* p = detail::allocate(64);
  const bool mapped = detail::allocator_statistics().mapped_bytes > 0;
  detail::deallocate(p, 64);
  return mapped;
}

constexpr std::int64_t mib = std::int64_t{1} << 20;

struct wake {};

}  // namespace

TEST(MemoryTrim, FreedChunksGoBackAndLiveBlocksStay) {
  if (!size_class_allocator()) GTEST_SKIP() << "built with the system allocator";
  // A thread of its own, so that the cache trim_memory hands back is the one that freed.
  std::thread([] {
    constexpr std::size_t size = 464;  // a class of its own in this test binary's use
    constexpr std::size_t count = 200000;
    const std::int64_t mapped_before = detail::allocator_statistics().mapped_bytes;
    std::vector<unsigned char*> blocks(count);
    for (std::size_t i = 0; i < count; ++i) {
      blocks[i] = static_cast<unsigned char*>(detail::allocate(size));
      std::memset(blocks[i], static_cast<int>(i & 0xff), size);
    }
    const std::int64_t mapped_peak = detail::allocator_statistics().mapped_bytes;
    ASSERT_GE(mapped_peak - mapped_before, 80 * mib);
    // The first and the last hundred stay (two chunks at most); the rest is freed.
    for (std::size_t i = 100; i + 100 < count; ++i) detail::deallocate(blocks[i], size);
    const std::int64_t rss_full = resident_bytes();
    const std::size_t released = detail::trim_memory();
    const std::int64_t mapped_after = detail::allocator_statistics().mapped_bytes;
    EXPECT_GE(static_cast<std::int64_t>(released), mapped_peak - mapped_before - 2 * mib);
    EXPECT_LE(mapped_after, mapped_before + 2 * mib);
    EXPECT_LE(resident_bytes(), rss_full - 60 * mib) << "the chunks are unmapped";
    // The blocks that stayed were not touched.
    for (std::size_t i = 0; i < count; i = (i == 99 ? count - 100 : i + 1)) {
      const unsigned char want = static_cast<unsigned char>(i & 0xff);
      ASSERT_EQ(blocks[i][0], want) << i;
      ASSERT_EQ(blocks[i][size - 1], want) << i;
    }
    // The allocator carries on: fresh blocks, then everything freed and trimmed again.
    std::vector<void*> again;
    for (int i = 0; i < 10000; ++i) again.push_back(detail::allocate(size));
    for (void* p : again) detail::deallocate(p, size);
    for (std::size_t i = 0; i < count; i = (i == 99 ? count - 100 : i + 1))
      detail::deallocate(blocks[i], size);
    (void)detail::trim_memory();
    EXPECT_LE(detail::allocator_statistics().mapped_bytes, mapped_before + mib);
  }).join();
}

// Nobody calls trim_memory here: the schedulers give the spike back once they have nothing to
// run (within the trim interval, a second, of the last exit).
TEST(MemoryTrim, IdleSchedulersGiveASpikeBack) {
  if (!size_class_allocator()) GTEST_SKIP() << "built with the system allocator";
  runtime rt({.schedulers = 2});
  // Each size class keeps the chunk it carves from: the level to come back to is the one after
  // a first, small wave has given every class the process path uses its chunk.
  for (int i = 0; i < 1000; ++i)
    rt.spawn([](process& self) -> task<> { co_await self.receive(on<wake>(), after(0ms)); });
  ASSERT_TRUE(eventually([&] { return rt.process_count() == 0; }));
  const std::int64_t before = detail::allocator_statistics().mapped_bytes;
  constexpr int count = 100000;
  std::vector<pid> ps;
  ps.reserve(count);
  std::atomic<int> waiting{0};
  for (int i = 0; i < count; ++i) {
    ps.push_back(rt.spawn([&waiting](process& self) -> task<> {
      waiting.fetch_add(1, std::memory_order_relaxed);
      co_await self.receive(on<wake>());
    }));
  }
  ASSERT_TRUE(eventually([&] { return waiting.load() == count; }));
  const std::int64_t peak = detail::allocator_statistics().mapped_bytes;
  ASSERT_GE(peak - before, 30 * mib) << "100k processes fill many chunks";
  for (pid p : ps) (void)rt.send(p, wake{});
  ASSERT_TRUE(eventually([&] { return rt.process_count() == 0; }));
  EXPECT_TRUE(eventually([&] {
    return detail::allocator_statistics().mapped_bytes <= before + (peak - before) / 10;
  })) << "mapped: before "
      << before / mib << " MiB, peak " << peak / mib << " MiB, now "
      << detail::allocator_statistics().mapped_bytes / mib << " MiB";
}

// Resident bytes of the anonymous mappings of exactly `size` bytes, or -1 if there is none.
std::int64_t resident_of_mappings_sized(std::size_t size) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool match = false, found = false;
  std::int64_t kib = 0;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      match = hi - lo == size;
      continue;
    }
    if (match && line.rfind("Rss:", 0) == 0) {
      kib += std::stol(line.substr(4));
      found = true;
    }
  }
  return found ? kib * 1024 : -1;
}

std::string large_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line, out;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && hi - lo >= (std::size_t{8} << 20))
      out += std::to_string((hi - lo) >> 20) + " MiB: " + line + "\n";
  }
  return out;
}

// A million short-lived processes sweep 8 MiB of process-table slots; the idle schedulers give
// the pages back as they go. The table is found in /proc/self/smaps by its size: room for 3M
// processes makes it 4Mi slots, a 32 MiB mapping.
TEST(MemoryTrim, TheProcessTableReturnsThePagesItsSweepPassed) {
  constexpr std::size_t table_bytes = std::size_t{32} << 20;
  runtime rt({.schedulers = 2, .max_processes = 3000000});
  // ctest runs each test in a process of its own, where the table is a mapping of its own; run
  // after other tests in one process, it may have merged with a neighbour.
  if (resident_of_mappings_sized(table_bytes) < 0)
    GTEST_SKIP() << "no 32 MiB mapping to look at (merged with another?):\n" << large_mappings();
  std::atomic<int> ran{0};
  for (int w = 0; w < 100; ++w) {
    const int target = ran.load() + 10000;
    for (int i = 0; i < 10000; ++i)
      rt.spawn([&ran](process&) -> task<> {
        ran.fetch_add(1, std::memory_order_relaxed);
        co_return;
      });
    ASSERT_TRUE(eventually([&] { return ran.load() >= target && rt.process_count() == 0; }));
  }
  // The last trim comes with the schedulers' next sleep once the last processes have gone.
  EXPECT_TRUE(eventually([&] { return resident_of_mappings_sized(table_bytes) <= 64 * 1024; }))
      << "a million spawns swept 8 MiB of slots; " << resident_of_mappings_sized(table_bytes) / 1024
      << " KiB of the table resident";
}

// Spawns from several threads while the schedulers trim the table behind them: no process is
// lost (each one is found by its pid and answers), including those spawned long before.
TEST(MemoryTrim, SpawnsRacingTableTrimsLoseNoProcess) {
  runtime rt({.schedulers = 2});
  std::atomic<int> woken{0};
  auto waiter = [&woken](process& self) -> task<> {
    co_await self.receive(on<wake>());
    woken.fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<pid> elders;
  for (int i = 0; i < 100; ++i) elders.push_back(rt.spawn(waiter));
  constexpr int threads = 4, waves = 40, per_wave = 2000;
  std::vector<std::thread> spawners;
  for (int t = 0; t < threads; ++t) {
    spawners.emplace_back([&] {
      for (int w = 0; w < waves; ++w) {
        std::vector<pid> ps;
        ps.reserve(per_wave);
        for (int i = 0; i < per_wave; ++i) ps.push_back(rt.spawn(waiter));
        // A pause of 0 to 0.8 ms lets the workers go idle (and trim) while these wait, so trims
        // meet spawns at varying points. It cannot flake: no assertion depends on whether a
        // trim ran, only on every process being found and answering.
        std::this_thread::sleep_for(std::chrono::microseconds(200 * (w % 5)));
        for (pid p : ps) {
          EXPECT_TRUE(rt.is_alive(p)) << p;
          rt.send(p, wake{});
        }
      }
    });
  }
  for (auto& t : spawners) t.join();
  for (pid p : elders) {
    EXPECT_TRUE(rt.is_alive(p)) << p;
    rt.send(p, wake{});
  }
  EXPECT_TRUE(eventually([&] { return woken.load() == threads * waves * per_wave + 100; }))
      << woken.load();
}

// A process linked to thousands has a large link table; as the links end it shrinks, and the
// links that remain still carry exit signals.
TEST(MemoryTrim, ALinkTableThatShrinksKeepsItsLinks) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  constexpr int count = 5000;
  std::vector<pid> ps;
  for (int i = 0; i < count; ++i) {
    ps.push_back(me.spawn_link([](process& self) -> task<> { co_await self.receive(on<wake>()); }));
  }
  // All but the last ten end normally, one EXIT each.
  for (int i = 0; i < count - 10; ++i) (void)rt.send(ps[static_cast<std::size_t>(i)], wake{});
  for (int i = 0; i < count - 10; ++i) {
    auto m = me.receive(on<exit_message>(), after(10s));
    ASSERT_FALSE(m.timed_out()) << i;
  }
  // The ten that remain are still linked both ways.
  for (int i = count - 10; i < count; ++i) {
    const pid p = ps[static_cast<std::size_t>(i)];
    me.exit(p, exit_reason::error("boom"));
    auto m = me.receive(on<exit_message>(), after(10s));
    ASSERT_FALSE(m.timed_out()) << i;
    EXPECT_EQ(m.get<exit_message>().from, p);
    EXPECT_EQ(m.get<exit_message>().reason, exit_reason::error("boom"));
  }
}

}  // namespace beamlet::test
