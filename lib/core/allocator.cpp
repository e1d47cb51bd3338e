// Size-class allocator for nodes, frames and processes (see beamlet/core/detail/allocator.hpp).
//
// Per thread: one free list per 16-byte size class, no locks. A list that grows past its limit
// returns one batch to the central list of its class; an empty list takes a batch back, or
// carves fresh blocks from a chunk. The limit starts at two batches and grows by one batch
// (up to max_batches_held) each time a list that gave a batch away has to take one back: a
// thread that allocates and frees in waves (a spawner whose children exit later, a mailbox
// filled then drained) settles where it takes no lock, while a list that only ever frees or
// only ever allocates stays small. Blocks of one class are carved consecutively, which is what
// keeps a freshly filled mailbox cache-friendly to scan. Memory is kept for reuse, never returned
// to the operating system.
#include <beamlet/core/detail/allocator.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include <sys/mman.h>

#include "thread_safety.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {
namespace {

// Sized delete where the compiler offers it (Clang needs -fsized-deallocation for that).
void free_large(void* p, [[maybe_unused]] std::size_t size) noexcept {
#if defined(__cpp_sized_deallocation)
  ::operator delete(p, size);
#else
  ::operator delete(p);
#endif
}

#if defined(BEAMLET_SYSTEM_ALLOCATOR)

std::atomic<std::int64_t> g_live{0};

}  // namespace

void* allocate(std::size_t size) {
  void* p = ::operator new(size);
  g_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void deallocate(void* p, std::size_t size) noexcept {
  g_live.fetch_sub(1, std::memory_order_relaxed);
  free_large(p, size);
}

std::int64_t live_blocks() noexcept {
  return g_live.load(std::memory_order_relaxed);
}

#else

constexpr std::size_t granule = 16;
constexpr std::size_t max_small = 1024;
constexpr std::size_t class_count = max_small / granule;
constexpr std::size_t chunk_bytes = std::size_t{256} * 1024;

// Chunks are mapped with their pages already populated: a process that grows (a supervisor
// adding children, a mailbox filling up) would otherwise take one page fault per 4 KiB it
// touches, which costs more than the allocations themselves. One mmap call populates the
// whole chunk.
void* new_chunk() {
  void* p = ::mmap(nullptr, chunk_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}
void free_chunk(void* p) noexcept {
  ::munmap(p, chunk_bytes);
}

constexpr std::size_t class_of(std::size_t size) noexcept {
  return (size + granule - 1) / granule - 1;
}
constexpr std::size_t class_size(std::size_t c) noexcept {
  return (c + 1) * granule;
}
constexpr std::uint32_t batch_of(std::size_t c) noexcept {
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(8192 / class_size(c), 8, 128));
}
constexpr std::uint32_t max_batches_held = 32;

struct free_block {
  free_block* next;
};

// A central free list per class holds whole batches, so a refill or a release is one lock and a
// pointer swap, however many blocks move.
struct batch {
  free_block* head;
  std::uint32_t count;
};

struct central_class {
  mutex mu;
  std::vector<batch> batches BEAMLET_GUARDED_BY(mu);
  char* bump BEAMLET_GUARDED_BY(mu) = nullptr;  // carving position in the current chunk
  char* bump_end BEAMLET_GUARDED_BY(mu) = nullptr;
};

struct central_state {
  central_class classes[class_count];
  mutex chunks_mu;
  // Kept reachable for leak checkers; freed never.
  std::vector<void*> chunks BEAMLET_GUARDED_BY(chunks_mu);
  std::atomic<std::int64_t> exited_live{0};
  mutex caches_mu;
  std::vector<struct thread_cache*> caches BEAMLET_GUARDED_BY(caches_mu);
};

central_state& central() {
  // Never destroyed: threads may free blocks during static destruction.
  static central_state* s = new central_state;
  return *s;
}

struct thread_cache {
  struct bin {
    free_block* head;
    std::uint32_t count;
    std::uint32_t limit;  ///< more blocks than this and one batch goes back (0 until registered)
    bool gave_back;       ///< a batch went back since the last refill
  };
  bin bins[class_count];
  std::atomic<std::int64_t> live;  // written by the owner only; read by live_blocks()
  bool registered;
};

constinit thread_local thread_cache tls_cache{};

[[gnu::noinline]] void release_batch(std::size_t c, thread_cache::bin& b,
                                     std::uint32_t n) noexcept {
  free_block* head = b.head;
  free_block* last = head;
  for (std::uint32_t i = 1; i < n; ++i) last = last->next;
  b.head = last->next;
  b.count -= n;
  b.gave_back = true;
  last->next = nullptr;
  central_class& cc = central().classes[c];
  lock_guard lock(cc.mu);
  try {
    cc.batches.push_back({head, n});
  } catch (...) {
    // Could not grow the vector: keep the blocks in the thread cache instead.
    last->next = b.head;
    b.head = head;
    b.count += n;
  }
}

// Flushes a thread's cache when the thread ends.
struct cache_cleaner {
  ~cache_cleaner() {
    thread_cache& tc = tls_cache;
    for (std::size_t c = 0; c < class_count; ++c) {
      auto& b = tc.bins[c];
      if (b.count > 0) release_batch(c, b, b.count);
    }
    central_state& cs = central();
    lock_guard lock(cs.caches_mu);
    cs.exited_live.fetch_add(tc.live.load(std::memory_order_relaxed), std::memory_order_relaxed);
    tc.live.store(0, std::memory_order_relaxed);
    std::erase(cs.caches, &tc);
    tc.registered = false;
  }
};

[[gnu::noinline]] void register_cache(thread_cache& tc) {
  thread_local cache_cleaner cleaner;
  (void)cleaner;
  central_state& cs = central();
  lock_guard lock(cs.caches_mu);
  cs.caches.push_back(&tc);
  for (std::size_t c = 0; c < class_count; ++c) tc.bins[c].limit = 2 * batch_of(c);
  tc.registered = true;
}

// Slow path: refill the bin of class c with a batch. Out of line, so that allocate()'s fast
// path is a few instructions with no registers to save.
[[gnu::noinline]] void refill(std::size_t c, thread_cache::bin& b) {
  central_class& cc = central().classes[c];
  const std::uint32_t want = batch_of(c);
  if (b.gave_back) {  // a wave: hold one batch more before giving back again
    b.gave_back = false;
    b.limit = std::min(b.limit + want, max_batches_held * want);
  }
  {
    lock_guard lock(cc.mu);
    if (!cc.batches.empty()) {
      batch bt = cc.batches.back();
      cc.batches.pop_back();
      b.head = bt.head;
      b.count = bt.count;
      return;
    }
    const std::size_t sz = class_size(c);
    if (cc.bump == nullptr || static_cast<std::size_t>(cc.bump_end - cc.bump) < sz * want) {
      void* chunk = new_chunk();
      {
        central_state& cs = central();
        lock_guard chunks_lock(cs.chunks_mu);
        try {
          cs.chunks.push_back(chunk);
        } catch (...) {
          free_chunk(chunk);
          throw;
        }
      }
      cc.bump = static_cast<char*>(chunk);
      cc.bump_end = cc.bump + chunk_bytes;
    }
    // Carve in address order, so consecutive allocations are adjacent in memory.
    char* p = cc.bump;
    cc.bump += sz * want;
    free_block* head = nullptr;
    for (std::uint32_t i = want; i-- > 0;) {
      auto* fb = reinterpret_cast<free_block*>(p + i * sz);
      fb->next = head;
      head = fb;
    }
    b.head = head;
    b.count = want;
  }
}

// The slow paths: the thread's first block, large blocks, an empty bin.
[[gnu::noinline]] void* allocate_slow(std::size_t size) {
  thread_cache& tc = tls_cache;
  if (!tc.registered) register_cache(tc);
  if (size > max_small) {
    void* p = ::operator new(size);
    tc.live.store(tc.live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return p;
  }
  const std::size_t c = class_of(size);
  auto& b = tc.bins[c];
  if (b.head == nullptr) refill(c, b);
  free_block* fb = b.head;
  b.head = fb->next;
  --b.count;
  tc.live.store(tc.live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return fb;
}

[[gnu::noinline]] void deallocate_slow(void* p, std::size_t size) noexcept {
  thread_cache& tc = tls_cache;
  if (!tc.registered) {
    try {
      register_cache(tc);
    } catch (...) {
      // Registration only feeds statistics; the block is still freed below.
    }
  }
  tc.live.store(tc.live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  if (size > max_small) {
    free_large(p, size);
    return;
  }
  const std::size_t c = class_of(size);
  auto& b = tc.bins[c];
  auto* fb = static_cast<free_block*>(p);
  fb->next = b.head;
  b.head = fb;
  if (++b.count > b.limit) release_batch(c, b, batch_of(c));
}

}  // namespace

// The fast paths touch only this thread's bin: no call, no register to save.
void* allocate(std::size_t size) {
  thread_cache& tc = tls_cache;
  if (size <= max_small && tc.registered) [[likely]] {
    auto& b = tc.bins[class_of(size)];
    if (free_block* fb = b.head) [[likely]] {
      b.head = fb->next;
      --b.count;
      tc.live.store(tc.live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return fb;
    }
  }
  return allocate_slow(size);
}

void deallocate(void* p, std::size_t size) noexcept {
  thread_cache& tc = tls_cache;
  if (size <= max_small && tc.registered) [[likely]] {
    const std::size_t c = class_of(size);
    auto& b = tc.bins[c];
    auto* fb = static_cast<free_block*>(p);
    fb->next = b.head;
    b.head = fb;
    tc.live.store(tc.live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    if (++b.count > b.limit) [[unlikely]]
      release_batch(c, b, batch_of(c));
    return;
  }
  deallocate_slow(p, size);
}

std::int64_t live_blocks() noexcept {
  central_state& cs = central();
  lock_guard lock(cs.caches_mu);
  std::int64_t total = cs.exited_live.load(std::memory_order_relaxed);
  for (thread_cache* tc : cs.caches) total += tc->live.load(std::memory_order_relaxed);
  return total;
}

#endif

}  // namespace detail
BEAMLET_END_NAMESPACE
