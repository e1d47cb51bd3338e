#include "process_table.hpp"

#include <sys/mman.h>

#include <bit>
#include <new>
#include <thread>

#include <beamlet/core/error.hpp>

#include "process_state.hpp"
#include "spinlock.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {
namespace {
constexpr std::size_t page_bytes = 4096;
constexpr std::size_t per_page = page_bytes / sizeof(std::atomic<proc*>);
}  // namespace

process_table::process_table(std::size_t limit) : limit_(limit) {
  const std::size_t wanted = limit + limit / 7 + 1;
  const std::size_t cap = std::bit_ceil(wanted < 1024 ? std::size_t{1024} : wanted);
  mask_ = cap - 1;
  bytes_ = cap * sizeof(std::atomic<proc*>);
  void* mem = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) throw std::bad_alloc();
  // Anonymous pages read as zero: every slot starts as a null pointer.
  slots_ = static_cast<std::atomic<proc*>*>(mem);
  swept_words_ = (cap / per_page + 63) / 64;
  try {
    swept_ = std::make_unique<std::uint64_t[]>(swept_words_);
  } catch (...) {
    ::munmap(mem, bytes_);
    throw;
  }
}

process_table::~process_table() {
  ::munmap(slots_, bytes_);
}

void process_table::insert(proc* p, pid& out) {
  if (count_.fetch_add(1, std::memory_order_relaxed) >= limit_) {
    count_.fetch_sub(1, std::memory_order_relaxed);
    throw system_limit_error("beamlet: process table full (raise runtime_options::max_processes)");
  }
  for (;;) {
    const std::uint64_t serial = next_serial_.fetch_add(1, std::memory_order_relaxed);
    std::atomic<proc*>& slot = slots_[serial & mask_];
    if (slot.load(std::memory_order_relaxed) != nullptr) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    out = pid(serial);
    std::uint64_t seq = trim_seq_.load(std::memory_order_seq_cst);
    proc* expected = nullptr;
    if (!slot.compare_exchange_strong(expected, p, std::memory_order_seq_cst)) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    for (;;) {
      if ((seq & 1) == 0 && trim_seq_.load(std::memory_order_seq_cst) == seq) return;
      // A trim ran meanwhile and may have returned this slot's page (see the header). Once it
      // is over, the slot holds p, or null if the page went: then p goes back into the same
      // slot, so the pid a table walk may have read meanwhile stays true.
      for (int spins = 0; ((seq = trim_seq_.load(std::memory_order_acquire)) & 1) != 0; ++spins) {
        if (spins < 64)
          cpu_relax();
        else
          std::this_thread::yield();
      }
      if (slot.load(std::memory_order_seq_cst) == p) return;
      expected = nullptr;
      if (!slot.compare_exchange_strong(expected, p, std::memory_order_seq_cst)) break;
    }
    // Taken by a serial a whole table later (a wrap during the trim): the next serial.
    skipped_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::size_t process_table::trim() noexcept {
  std::uint64_t seq = trim_seq_.load(std::memory_order_relaxed);
  if ((seq & 1) != 0 || !trim_seq_.compare_exchange_strong(seq, seq + 1, std::memory_order_seq_cst))
    return 0;
  const std::uint64_t next = next_serial_.load(std::memory_order_seq_cst);
  const std::size_t pages = (mask_ + 1) / per_page;
  // The pages swept since the last trim join those kept then.
  std::uint64_t from = trimmed_to_.load(std::memory_order_relaxed) & ~(per_page - 1);
  const std::uint64_t to = next & ~(per_page - 1);     // the sweep's page: not yet passed
  if (to > from + mask_ + 1) from = to - (mask_ + 1);  // swept the whole table since
  for (std::uint64_t s = from; s < to; s += per_page) {
    const std::size_t pi = static_cast<std::size_t>((s & mask_) / per_page);
    swept_[pi / 64] |= std::uint64_t{1} << (pi % 64);
  }
  trimmed_to_.store(std::max(to, from), std::memory_order_relaxed);
  // The page the sweep is on and the next will be written again soon: they stay.
  const std::size_t here = static_cast<std::size_t>((next & mask_) / per_page);
  const std::size_t after = (here + 1) % pages;
  std::size_t released = 0;
  std::size_t kept = 0;
  // Runs of empty pages go in one madvise each (each call interrupts the other cores).
  std::size_t run_first = 0, run_pages = 0;
  auto release_run = [&]() noexcept {
    if (run_pages == 0) return;
    if (::madvise(&slots_[run_first * per_page], run_pages * page_bytes, MADV_DONTNEED) == 0) {
      for (std::size_t pi = run_first; pi < run_first + run_pages; ++pi)
        swept_[pi / 64] &= ~(std::uint64_t{1} << (pi % 64));
      released += run_pages * page_bytes;
    } else {
      kept += run_pages;
    }
    run_pages = 0;
  };
  for (std::size_t w = 0; w < swept_words_; ++w) {
    for (std::uint64_t bits = swept_[w]; bits != 0; bits &= bits - 1) {
      const std::size_t pi = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      std::atomic<proc*>* page = &slots_[pi * per_page];
      if (pi == here || pi == after) continue;  // looked at again next time
      bool empty = true;
      for (std::size_t i = 0; i < per_page && empty; ++i)
        empty = page[i].load(std::memory_order_seq_cst) == nullptr;
      if (!empty) {
        ++kept;
        continue;
      }
      if (run_pages > 0 && run_first + run_pages != pi) release_run();
      if (run_pages == 0) run_first = pi;
      ++run_pages;
    }
  }
  release_run();
  kept_pages_.store(kept, std::memory_order_relaxed);
  count_at_trim_.store(count_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  trim_seq_.store(seq + 2, std::memory_order_seq_cst);
  return released;
}

proc* process_table::lookup(pid id) const noexcept {
  proc* p = slots_[id.serial() & mask_].load(std::memory_order_seq_cst);
  return (p != nullptr && p->id() == id) ? p : nullptr;
}

void process_table::remove(pid id) noexcept {
  slots_[id.serial() & mask_].store(nullptr, std::memory_order_seq_cst);
  count_.fetch_sub(1, std::memory_order_seq_cst);  // (a lock-prefixed sub on x86 either way)
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
