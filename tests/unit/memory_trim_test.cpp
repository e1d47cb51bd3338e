// Memory that comes back: the size-class allocator unmaps the chunks a spike left empty (when
// asked, and by itself once the schedulers idle), and a link table that held thousands of links
// shrinks without losing the ones that remain.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include <beamlet/core/detail/allocator.hpp>

#include "test_support.hpp"

namespace beamlet::test {

namespace {

std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

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
