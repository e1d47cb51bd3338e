// The table of live processes, indexed by pid.
//
// A pid is a 64-bit serial drawn from one counter, so pids are never reused; the process lives
// in slot `serial & mask`. Spawning skips serials whose slot is still taken, which keeps lookups
// a single load plus a comparison (BEAM uses the same scheme). Lookups are lock-free and must run
// pinned (epoch.hpp): the pointer they return stays valid until the caller unpins.
//
// The slot array is reserved with mmap and touched lazily, so capacity costs address space, not
// resident memory. It has at least 8/7 as many slots as the limit of live processes, so the
// table is never more than 7/8 full and the probe for a free serial stays short; the limit
// itself is exactly what the user asked for (runtime_options::max_processes).
//
// Serials sweep the slots in order, so the pages behind the sweep hold only the processes that
// outlived it. trim() (an idle scheduler's) returns to the system the pages the sweep has passed
// since the last trim that hold no process: without it the resident part of the table would
// grow with every process ever spawned, up to the whole table. A spawn that took its slot while
// a trim ran waits for the trim to end and looks again: its slot still holds it, or its page
// went and it takes the same slot again (so a pid a table walk read meanwhile stays true). The
// trimmer announces itself before it looks at the slots, and a spawner looks at the announcement
// after taking its slot, so one of them sees the other.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct proc;

class process_table {
 public:
  /// A table for at most `limit` live processes (limit >= 1).
  explicit process_table(std::size_t limit);
  ~process_table();
  process_table(const process_table&) = delete;
  process_table& operator=(const process_table&) = delete;

  /// Assigns `p` a fresh pid (written to `out`) and publishes it. Throws system_limit_error
  /// when the table is too full.
  void insert(proc* p, pid& out);
  /// The live process with this pid, or null. Caller must be pinned.
  proc* lookup(pid id) const noexcept;
  void remove(pid id) noexcept;

  /// The slot's occupant without the pid check (for prefetching only), or null.
  proc* peek(pid id) const noexcept {
    return slots_[id.serial() & mask_].load(std::memory_order_relaxed);
  }
  void prefetch_slot(pid id) const noexcept { __builtin_prefetch(&slots_[id.serial() & mask_]); }

  std::size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }
  /// size(), ordered with remove() for a waiter that must not miss one (see runtime_core).
  std::size_t size_seq_cst() const noexcept { return count_.load(std::memory_order_seq_cst); }
  /// Processes ever inserted (serials handed out, less those skipped): what the spawn and exit
  /// counters are derived from, so that a spawn counts nothing itself.
  std::uint64_t inserted() const noexcept {
    return next_serial_.load(std::memory_order_relaxed) - 1 -
           skipped_.load(std::memory_order_relaxed);
  }
  std::size_t capacity() const noexcept { return mask_ + 1; }

  /// Whether trim() is worth its scan: the sweep has passed a mebibyte of slots since the last
  /// one; or the processes alive have halved since (or there were none and are none), and
  /// there are pages it kept (they held processes then) or the sweep has passed a few pages.
  bool trim_wanted() const noexcept {
    const std::uint64_t swept =
        next_serial_.load(std::memory_order_relaxed) - trimmed_to_.load(std::memory_order_relaxed);
    if (swept >= trim_step) return true;
    return (kept_pages_.load(std::memory_order_relaxed) != 0 || swept >= trim_step / 64) &&
           count_.load(std::memory_order_relaxed) * 2 <=
               count_at_trim_.load(std::memory_order_relaxed);
  }
  /// Returns to the system the pages of slots behind the sweep that hold no process: those it
  /// passed since the last trim, and those an earlier trim kept. The page the sweep is on and
  /// the next stay. Returns the bytes released. One trim at a time (a second one returns 0);
  /// spawns and exits may run meanwhile.
  std::size_t trim() noexcept;
  std::size_t limit() const noexcept { return limit_; }

  /// Calls f(proc*) for every published process; the caller must be pinned. Processes created
  /// or ended meanwhile may or may not be seen. Serials are handed out in order, so until they
  /// wrap around the array only the slots below the next serial were ever used: a pass costs
  /// in proportion to the processes spawned so far, not to the capacity.
  template <class F>
  void for_each(F&& f) const {
    const std::uint64_t next = next_serial_.load(std::memory_order_acquire);
    const std::size_t end = next > mask_ ? mask_ + 1 : static_cast<std::size_t>(next);
    for (std::size_t i = 0; i < end; ++i)
      if (proc* p = slots_[i].load(std::memory_order_acquire)) f(p);
  }

 private:
  std::atomic<proc*>* slots_;
  std::size_t limit_;
  std::size_t mask_;
  std::size_t bytes_;
  std::atomic<std::uint64_t> next_serial_{1};
  std::atomic<std::size_t> count_{0};
  std::atomic<std::uint64_t> skipped_{0};  ///< serials passed over (their slot was taken)
  /// Even, odd while a trim releases pages.
  std::atomic<std::uint64_t> trim_seq_{0};
  /// The sweep's serial at the last trim: the slots behind it were looked at.
  std::atomic<std::uint64_t> trimmed_to_{1};
  static constexpr std::uint64_t trim_step = (std::uint64_t{1} << 20) / sizeof(void*);
  /// One bit per page of slots: swept, and not returned yet. The trimmer's alone.
  std::unique_ptr<std::uint64_t[]> swept_;
  std::size_t swept_words_ = 0;
  std::atomic<std::size_t> kept_pages_{0};     ///< bits set in swept_ after the last trim
  std::atomic<std::size_t> count_at_trim_{0};  ///< processes alive at the last trim
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
