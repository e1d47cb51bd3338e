// A hierarchical timer wheel owned by one thread.
//
// Time is counted in ticks of 2^16 ns (65.5 µs); a deadline is rounded up to its tick, so an
// entry never fires early and at most one tick late (plus whatever the owner was doing). Seven
// levels of 64 slots cover 2^42 ticks (about nine years): level L holds the entries due within
// the current level-L window, one slot per 64^L ticks. Inserting and removing are O(1) (a list
// per slot, a bitmap per level); when time reaches a slot of a level above 0 its entries move
// down ("cascade"), each at most once per level. Deadlines further away than the wheel's
// range wait in an overflow list that is looked at again when time enters the next top-level
// window; clock_time::max() (no timeout) waits there for good.
//
// Not thread-safe: the owning scheduler thread does everything (worker_timers.hpp settles
// cancellations from other threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "timer_entry.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class timer_wheel {
 public:
  static constexpr unsigned tick_shift = 16;
  static constexpr unsigned slot_bits = 6;
  static constexpr unsigned slots = 1u << slot_bits;
  static constexpr unsigned levels = 7;
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

  /// `now`: where the wheel's time starts.
  explicit timer_wheel(clock_time now) noexcept : elapsed_(tick_floor(now)) {}
  timer_wheel(const timer_wheel&) = delete;
  timer_wheel& operator=(const timer_wheel&) = delete;

  /// The tick `t` falls in (for the current time).
  static std::uint64_t tick_floor(clock_time t) noexcept;
  /// The first tick at or after `t` (for a deadline); never for clock_time::max().
  static std::uint64_t tick_ceil(clock_time t) noexcept;
  /// When tick `tick` begins.
  static clock_time time_of(std::uint64_t tick) noexcept;

  bool empty() const noexcept { return size_ == 0; }
  /// The earliest tick at which expire() may have something to do (never when empty). It may
  /// be early after removals; expire() then finds nothing and computes it again.
  std::uint64_t next_tick() const noexcept { return next_tick_; }

  /// Places `e` (not in this wheel) by its deadline.
  void insert(timer_entry* e) noexcept;
  /// Takes `e` (in this wheel) out.
  void remove(timer_entry* e) noexcept;
  /// Takes out every entry due by tick `now_tick` and returns them chained through `next`
  /// (null-terminated), in deadline order to the tick; their `place` is unplaced.
  timer_entry* expire(std::uint64_t now_tick) noexcept;
  /// Drops every list without touching the entries (their memory may be gone: shutdown).
  void forget() noexcept;

 private:
  static constexpr std::uint16_t due_list = levels * slots;
  static constexpr std::uint16_t overflow_list = due_list + 1;
  static constexpr unsigned lists = overflow_list + 1;

  struct list {
    timer_entry* head = nullptr;
    timer_entry* tail = nullptr;
  };
  /// A chain under construction (expire's result).
  struct chain {
    timer_entry* head = nullptr;
    timer_entry* tail = nullptr;
    void append(timer_entry* e) noexcept;
  };

  static constexpr std::uint64_t slot_span(unsigned level) noexcept {
    return std::uint64_t{1} << (slot_bits * level);
  }
  /// Where `tick` goes, seen from elapsed_; updates next_tick_.
  void place(timer_entry* e, std::uint64_t tick) noexcept;
  void link(timer_entry* e, std::uint16_t where) noexcept;
  /// Moves each entry of the detached list `e` to `out` if it is due by elapsed_, or places it
  /// again.
  void settle(timer_entry* e, chain& out) noexcept;
  /// Detaches the whole list `where` and returns its first entry.
  timer_entry* take(std::uint16_t where) noexcept;
  /// The earliest occupied slot: its level and slot, and when it starts; false if none.
  bool earliest(unsigned& level, unsigned& slot, std::uint64_t& start) const noexcept;
  void recompute_next() noexcept;
  /// Where the next top-level window starts (when the overflow list is looked at again).
  std::uint64_t next_top_window() const noexcept;

  std::uint64_t elapsed_;  ///< every entry due by this tick has been taken out
  std::uint64_t next_tick_ = never;
  std::size_t size_ = 0;
  std::uint64_t occupied_[levels]{};
  list lists_[lists];
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
