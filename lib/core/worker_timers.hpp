// The receive timeouts of one scheduler thread.
//
// A process's receive timeout is armed in the wheel of the scheduler running it and cancelled
// there when the receive completes, with no lock and no atomic read-modify-write. A process
// that moved to another scheduler in between cancels across: it wins the entry's status with
// one compare-and-swap against the owner firing it and, if it won, pushes the entry onto the
// owner's lock-free stack of handed-back entries; the owner unlinks and frees those the next
// time it looks at its timers (after a run, or when its wait for work times out at its earliest
// deadline), so a cancelled timeout costs memory until then at most. Exactly one side ends each
// entry: fired (the owner delivers the timeout signal), cancelled here, or handed back.
//
// The owner looks at its timers between runs while any are pending, and sleeps until the
// earliest when it has nothing to run: a due timeout fires within one tick (65.5 µs) plus the
// run in progress.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "timer_wheel.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

class runtime_core;

class worker_timers {
 public:
  worker_timers(std::uint16_t owner, clock_time now) noexcept : owner_(owner), wheel_(now) {}
  worker_timers(const worker_timers&) = delete;
  worker_timers& operator=(const worker_timers&) = delete;

  // -- the owner's thread
  /// Arms `e` (its deadline, target and seq set).
  void arm(timer_entry* e) noexcept;
  /// Cancels `e`, armed here; true if it was still pending (false: it fired).
  bool cancel(timer_entry* e) noexcept;
  /// True while anything is pending or handed back (poll() has work).
  bool active() const noexcept {
    return !wheel_.empty() || handed_back_.load(std::memory_order_relaxed) != nullptr;
  }
  /// How poll() reads the time: `coarse` looks at the kernel's coarse clock first and skips
  /// the steady clock while nothing can be due (between runs); `precise` always reads the
  /// steady clock (before sleeping, when a deadline may have just passed).
  enum class clock_read : bool { coarse, precise };
  /// Frees what was handed back and fires what is due; returns how many fired.
  std::size_t poll(runtime_core& rt, clock_read how = clock_read::coarse) noexcept;
  /// When the earliest pending entry may be due (clock_time::max() if none).
  clock_time next_due() const noexcept {
    return wheel_.empty() ? clock_time::max() : timer_wheel::time_of(wheel_.next_tick());
  }
  /// Shutdown, with the owner stopped: frees what was handed back and forgets the rest (those
  /// entries belong to their processes).
  void discard() noexcept;

  // -- any thread
  /// Cancels `e`, armed in this wheel, from another thread. True if it was still pending: the
  /// entry is then this wheel's to free, and the caller must forget it. False: it fired, and
  /// stays the caller's.
  bool cancel_from_elsewhere(timer_entry* e) noexcept;
  /// Entries pending (approximate while they change).
  std::size_t pending() const noexcept;

 private:
  void free_handed_back() noexcept;
  static void free_entry(timer_entry* e) noexcept;

  const std::uint16_t owner_;
  timer_wheel wheel_;
  // Written by the owner only (a load and a store); read by pending().
  std::atomic<std::size_t> owned_{0};    ///< armed here and not yet ended by the owner
  std::atomic<std::size_t> drained_{0};  ///< handed-back entries freed
  // Written by other threads, on lines of their own.
  alignas(64) std::atomic<timer_entry*> handed_back_{nullptr};
  std::atomic<std::size_t> handed_back_count_{0};
};

}  // namespace detail
BEAMLET_END_NAMESPACE
