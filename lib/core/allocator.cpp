// Size-class allocator for nodes, frames and processes (see beamlet/core/detail/allocator.hpp).
//
// Per thread: one free list per 16-byte size class, no locks. A list that grows past its limit
// returns one batch to the central list of its class; an empty list takes a batch back, or
// carves fresh blocks from a chunk. The limit starts at two batches and grows by one batch
// (up to max_batches_held) each time a list that gave a batch away has to take one back: a
// thread that allocates and frees in waves (a spawner whose children exit later, a mailbox
// filled then drained) settles where it takes no lock, while a list that only ever frees or
// only ever allocates stays small. Blocks of one class are carved consecutively, which is what
// keeps a freshly filled mailbox cache-friendly to scan.
//
// Memory goes back to the operating system after a spike, off every allocation path: a
// scheduler about to sleep calls trim_when_idle(), which (when enough has come free) hands its
// own cache back and, at most once a second (less often while trims unmap nothing), trims:
// each class's central list is walked once,
// the chunks whose every carved block is free are unmapped, and malloc is asked to trim too (the
// blocks over 1 KiB and the containers live there). Chunks are aligned to their size, so a
// block's chunk is its address rounded down, and a chunk's first bytes count its carved blocks.
#include <beamlet/core/detail/allocator.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "thread_safety.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
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

std::chrono::nanoseconds trim_when_idle() noexcept {
  return std::chrono::nanoseconds::max();
}

std::size_t trim_memory() noexcept {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
  return 0;
}

allocator_stats allocator_statistics() noexcept {
  return {};
}

#else

constexpr std::size_t granule = 16;
constexpr std::size_t max_small = 1024;
constexpr std::size_t class_count = max_small / granule;
constexpr std::size_t chunk_bytes = std::size_t{256} * 1024;

// A chunk starts with its bookkeeping; its blocks follow, all of one class.
struct chunk_meta {
  std::uint32_t carved;     ///< blocks carved from this chunk so far
  std::uint32_t seen_free;  ///< a trim pass's tally of this chunk's free blocks
};
constexpr std::size_t chunk_header = 64;
constexpr std::uint32_t dying_chunk = UINT32_MAX;  // seen_free of a chunk a trim pass releases

chunk_meta* meta_of(const void* block) noexcept {
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(block) & (chunk_bytes - 1);
  return reinterpret_cast<chunk_meta*>(const_cast<char*>(static_cast<const char*>(block)) - offset);
}

// Chunks come with their pages already populated: a process that grows (a supervisor adding
// children, a mailbox filling up) would otherwise take one page fault per 4 KiB it touches,
// which costs more than the allocations themselves. Twice the size is reserved so that an
// aligned chunk fits; the rest is unmapped at once.
chunk_meta* new_chunk() {
  constexpr std::size_t reserve = 2 * chunk_bytes;
  void* p = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  char* const start = static_cast<char*>(p);
  const std::size_t skip =
      (chunk_bytes - (reinterpret_cast<std::uintptr_t>(p) & (chunk_bytes - 1))) & (chunk_bytes - 1);
  char* const chunk = start + skip;
  if (skip > 0) ::munmap(start, skip);
  if (const std::size_t tail = reserve - skip - chunk_bytes; tail > 0)
    ::munmap(chunk + chunk_bytes, tail);
#if defined(MADV_POPULATE_WRITE)
  // Before Linux 5.14 this fails, and the pages come one fault at a time instead.
  (void)::madvise(chunk, chunk_bytes, MADV_POPULATE_WRITE);
#endif
  return ::new (chunk) chunk_meta{0, 0};
}
void free_chunk(chunk_meta* m) noexcept {
  ::munmap(m, chunk_bytes);
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
  std::size_t free_blocks BEAMLET_GUARDED_BY(mu) = 0;      // in batches
  std::vector<chunk_meta*> chunks BEAMLET_GUARDED_BY(mu);  // carved for this class
  char* bump BEAMLET_GUARDED_BY(mu) = nullptr;             // carving position in the current chunk
  char* bump_end BEAMLET_GUARDED_BY(mu) = nullptr;
};

constexpr std::int64_t min_trim_interval_ns = 1'000'000'000;
constexpr std::int64_t max_trim_interval_ns = 64 * min_trim_interval_ns;

struct central_state {
  central_class classes[class_count];
  // What trimming goes by: chunks mapped and blocks free in the central lists (bytes), large
  // blocks freed to malloc since the last trim (bytes), batches given back to the central lists
  // (ever, and when the last trim began: a trim is worth another walk only if some came back
  // since, as the last live blocks of a chunk it had to keep), and the trims so far.
  std::atomic<std::int64_t> mapped{0};
  std::atomic<std::int64_t> central_free{0};
  std::atomic<std::int64_t> large_freed{0};
  std::atomic<std::uint64_t> releases{0};
  std::atomic<std::uint64_t> releases_at_trim{0};
  std::atomic<std::uint64_t> trims{1};
  std::atomic<std::int64_t> last_trim_ns{INT64_MIN / 2};
  // A second, doubled (up to a minute) after each trim that unmapped nothing: a busy service
  // whose free blocks are scattered over its chunks does not pay a fruitless walk every second.
  std::atomic<std::int64_t> trim_interval_ns{min_trim_interval_ns};
  mutex trim_mu;  // one trim at a time; others skip
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
  std::int64_t large_freed;        // bytes of large blocks freed, not yet added to the total
  std::uint64_t flushed_at;        // central_state::trims when this cache was last handed back
  bool registered;
};

constinit thread_local thread_cache tls_cache{};

// False if the central list could not take the batch (no memory to grow it): the blocks stay.
[[gnu::noinline]] bool release_batch(std::size_t c, thread_cache::bin& b,
                                     std::uint32_t n) noexcept {
  free_block* head = b.head;
  free_block* last = head;
  for (std::uint32_t i = 1; i < n; ++i) last = last->next;
  b.head = last->next;
  b.count -= n;
  b.gave_back = true;
  last->next = nullptr;
  central_state& cs = central();
  central_class& cc = cs.classes[c];
  lock_guard lock(cc.mu);
  try {
    cc.batches.push_back({head, n});
    cc.free_blocks += n;
    cs.releases.fetch_add(1, std::memory_order_relaxed);
    cs.central_free.fetch_add(static_cast<std::int64_t>(n * class_size(c)),
                              std::memory_order_relaxed);
    return true;
  } catch (...) {
    // Could not grow the vector: keep the blocks in the thread cache instead.
    last->next = b.head;
    b.head = head;
    b.count += n;
    return false;
  }
}

// Flushes a thread's cache when the thread ends.
struct cache_cleaner {
  ~cache_cleaner() {
    thread_cache& tc = tls_cache;
    for (std::size_t c = 0; c < class_count; ++c) {
      auto& b = tc.bins[c];
      if (b.count > 0) (void)release_batch(c, b, b.count);
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
  central_state& cs = central();
  central_class& cc = cs.classes[c];
  const std::uint32_t want = batch_of(c);
  const std::size_t sz = class_size(c);
  if (b.gave_back) {  // a wave: hold one batch more before giving back again
    b.gave_back = false;
    b.limit = std::min(b.limit + want, max_batches_held * want);
  }
  {
    lock_guard lock(cc.mu);
    if (!cc.batches.empty()) {
      batch bt = cc.batches.back();
      cc.batches.pop_back();
      cc.free_blocks -= bt.count;
      cs.central_free.fetch_sub(static_cast<std::int64_t>(bt.count * sz),
                                std::memory_order_relaxed);
      b.head = bt.head;
      b.count = bt.count;
      return;
    }
    if (cc.bump == nullptr || static_cast<std::size_t>(cc.bump_end - cc.bump) < sz) {
      if (cc.chunks.size() == cc.chunks.capacity())  // may throw: before the chunk exists
        cc.chunks.reserve(std::max<std::size_t>(16, 2 * cc.chunks.capacity()));
      chunk_meta* chunk = new_chunk();
      cc.chunks.push_back(chunk);
      cs.mapped.fetch_add(static_cast<std::int64_t>(chunk_bytes), std::memory_order_relaxed);
      cc.bump = reinterpret_cast<char*>(chunk) + chunk_header;
      cc.bump_end = reinterpret_cast<char*>(chunk) + chunk_bytes;
    }
    // Carve in address order, so consecutive allocations are adjacent in memory. The last
    // batch of a chunk may be short: the chunk's header leaves less than whole batches.
    char* p = cc.bump;
    const auto n = static_cast<std::uint32_t>(
        std::min<std::size_t>(want, static_cast<std::size_t>(cc.bump_end - cc.bump) / sz));
    cc.bump += sz * n;
    meta_of(p)->carved += n;
    free_block* head = nullptr;
    for (std::uint32_t i = n; i-- > 0;) {
      auto* fb = reinterpret_cast<free_block*>(p + i * sz);
      fb->next = head;
      head = fb;
    }
    b.head = head;
    b.count = n;
  }
}

// Hands every block of this thread's cache to the central lists, and lets the bins start small
// again (a wave that has ended should not keep its reserve).
void flush_cache(thread_cache& tc) noexcept {
  if (!tc.registered) return;
  for (std::size_t c = 0; c < class_count; ++c) {
    auto& b = tc.bins[c];
    while (b.count > 0 && release_batch(c, b, std::min(b.count, batch_of(c)))) {
    }
    b.limit = 2 * batch_of(c);
    b.gave_back = false;
  }
}

// Unmaps the chunks of class c whose every carved block sits in the central list, and keeps the
// other blocks there, in batches again. Returns the bytes unmapped.
std::size_t trim_class(std::size_t c) noexcept {
  central_state& cs = central();
  central_class& cc = cs.classes[c];
  const std::size_t sz = class_size(c);
  const std::uint32_t want = batch_of(c);
  std::vector<chunk_meta*> dying;
  {
    lock_guard lock(cc.mu);
    if (cc.free_blocks < want) return 0;  // not even a batch: no whole chunk
    for (chunk_meta* m : cc.chunks) m->seen_free = 0;
    for (const batch& bt : cc.batches)
      for (free_block* f = bt.head; f != nullptr; f = f->next) ++meta_of(f)->seen_free;
    std::vector<batch> kept;
    try {
      std::size_t n = 0;
      for (chunk_meta* m : cc.chunks) n += m->seen_free == m->carved ? 1 : 0;
      if (n == 0) return 0;
      dying.reserve(n);
      kept.reserve(cc.free_blocks / want + cc.batches.size() + 1);
    } catch (...) {
      return 0;  // no memory to trim with: the blocks stay as they are
    }
    for (chunk_meta* m : cc.chunks) {
      if (m->seen_free != m->carved) continue;
      m->seen_free = dying_chunk;
      dying.push_back(m);
    }
    std::size_t released_blocks = 0;
    batch cur{nullptr, 0};
    for (const batch& bt : cc.batches) {
      for (free_block* f = bt.head; f != nullptr;) {
        free_block* next = f->next;
        if (meta_of(f)->seen_free == dying_chunk) {
          ++released_blocks;
        } else {
          f->next = cur.head;
          cur.head = f;
          if (++cur.count == want) {
            kept.push_back(cur);
            cur = {nullptr, 0};
          }
        }
        f = next;
      }
    }
    if (cur.count > 0) kept.push_back(cur);
    cc.batches.swap(kept);
    cc.free_blocks -= released_blocks;
    cs.central_free.fetch_sub(static_cast<std::int64_t>(released_blocks * sz),
                              std::memory_order_relaxed);
    std::erase_if(cc.chunks, [](const chunk_meta* m) { return m->seen_free == dying_chunk; });
    if (cc.bump != nullptr && meta_of(cc.bump - 1)->seen_free == dying_chunk) {
      cc.bump = nullptr;
      cc.bump_end = nullptr;
    }
  }
  for (chunk_meta* m : dying) free_chunk(m);
  const std::size_t bytes = dying.size() * chunk_bytes;
  cs.mapped.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  return bytes;
}

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Free memory worth a trim: at least 4 MiB, and a quarter of what is in use, with blocks come
// back since the last trim (or as much freed to malloc).
bool trim_wanted(const central_state& cs) noexcept {
  const std::int64_t free_now = cs.central_free.load(std::memory_order_relaxed);
  const std::int64_t in_use = cs.mapped.load(std::memory_order_relaxed) - free_now;
  const std::int64_t enough = std::max<std::int64_t>(std::int64_t{4} << 20, in_use / 4);
  if (cs.large_freed.load(std::memory_order_relaxed) >= enough) return true;
  return free_now >= enough && cs.releases.load(std::memory_order_relaxed) !=
                                   cs.releases_at_trim.load(std::memory_order_relaxed);
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
    // Told to the trimmer a mebibyte at a time: one shared write per frame freed would cost
    // every exiting process with a large frame a contended cache line.
    tc.large_freed += static_cast<std::int64_t>(size);
    if (tc.large_freed >= (std::int64_t{1} << 20)) {
      central().large_freed.fetch_add(tc.large_freed, std::memory_order_relaxed);
      tc.large_freed = 0;
    }
    free_large(p, size);
    return;
  }
  const std::size_t c = class_of(size);
  auto& b = tc.bins[c];
  auto* fb = static_cast<free_block*>(p);
  fb->next = b.head;
  b.head = fb;
  if (++b.count > b.limit) (void)release_batch(c, b, batch_of(c));
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
      (void)release_batch(c, b, batch_of(c));
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

namespace {

// Every class, then malloc. With trim_mu held.
std::size_t trim_all(central_state& cs) noexcept BEAMLET_REQUIRES(cs.trim_mu) {
  std::size_t released = 0;
  cs.releases_at_trim.store(cs.releases.load(std::memory_order_relaxed), std::memory_order_relaxed);
  cs.large_freed.store(0, std::memory_order_relaxed);
  for (std::size_t c = 0; c < class_count; ++c) released += trim_class(c);
  cs.trims.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t interval = cs.trim_interval_ns.load(std::memory_order_relaxed);
  cs.trim_interval_ns.store(
      released > 0 ? min_trim_interval_ns : std::min(2 * interval, max_trim_interval_ns),
      std::memory_order_relaxed);
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
  cs.last_trim_ns.store(steady_ns(), std::memory_order_relaxed);
  return released;
}

}  // namespace

std::size_t trim_memory() noexcept {
  central_state& cs = central();
  flush_cache(tls_cache);
  lock_guard lock(cs.trim_mu);
  return trim_all(cs);
}

std::chrono::nanoseconds trim_when_idle() noexcept {
  central_state& cs = central();
  if (!trim_wanted(cs)) return std::chrono::nanoseconds::max();
  // This thread's reserve would keep chunks alive: the whole cache goes back, once per trim.
  thread_cache& tc = tls_cache;
  if (const std::uint64_t t = cs.trims.load(std::memory_order_relaxed); tc.flushed_at != t) {
    flush_cache(tc);
    tc.flushed_at = t;
  }
  const std::int64_t due = cs.last_trim_ns.load(std::memory_order_relaxed) +
                           cs.trim_interval_ns.load(std::memory_order_relaxed);
  if (const std::int64_t now = steady_ns(); now < due) return std::chrono::nanoseconds(due - now);
  if (!cs.trim_mu.try_lock()) return std::chrono::nanoseconds(min_trim_interval_ns);  // one is on
  (void)trim_all(cs);
  cs.trim_mu.unlock();
  return std::chrono::nanoseconds::max();
}

allocator_stats allocator_statistics() noexcept {
  const central_state& cs = central();
  return {cs.mapped.load(std::memory_order_relaxed),
          cs.central_free.load(std::memory_order_relaxed)};
}

#endif

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
