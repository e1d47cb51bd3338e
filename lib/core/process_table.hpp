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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE
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
};

}  // namespace detail
BEAMLET_END_NAMESPACE
