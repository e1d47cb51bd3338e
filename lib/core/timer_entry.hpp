// One pending timer: a receive timeout or a send_after timer.
//
// An entry lives either in the wheel of the scheduler thread that armed it (worker_timers) or
// in the runtime's shared heap (timer_service: timers armed by threads that are not schedulers,
// and every timer under a manual clock). Only the owner's thread touches the placement fields.
// A wheel entry can still be cancelled from another thread (its process moved to another
// scheduler, or a send_after timer's reference was passed on): the canceller and the owner
// settle who ended it with one compare-and-swap on `status`, and the loser leaves the entry
// alone.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include <beamlet/core/clock.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct timer_entry {
  static constexpr std::uint32_t not_queued = std::numeric_limits<std::uint32_t>::max();
  /// `owner` of an entry in the shared heap.
  static constexpr std::uint16_t shared_owner = std::numeric_limits<std::uint16_t>::max();
  /// `place` of an entry in no wheel list.
  static constexpr std::uint16_t unplaced = std::numeric_limits<std::uint16_t>::max();
  enum class kind : std::uint8_t { receive_timeout, send_after };
  enum class state : std::uint8_t { armed, fired, cancelled };

  timer_entry() = default;
  timer_entry(const timer_entry&) = delete;
  timer_entry& operator=(const timer_entry&) = delete;

  clock_time deadline{};
  pid target;
  std::uint32_t heap_index = not_queued;  ///< the shared heap's position
  std::uint32_t seq = 0;                  ///< receive timeouts: which receive this is for
  kind type = kind::receive_timeout;
  /// Wheel entries: armed until the owner fires it or someone cancels it, whichever is first.
  std::atomic<state> status{state::armed};
  std::uint16_t owner = shared_owner;  ///< the index of the worker whose wheel holds it
  std::uint16_t place = unplaced;      ///< which wheel list (owner's thread only)
  timer_entry* prev = nullptr;         ///< wheel list links (owner's thread only)
  timer_entry* next = nullptr;
  /// The owner's stack of entries cancelled from other threads, which the owner unlinks and
  /// frees.
  timer_entry* handed_back = nullptr;
};

/// A send_after timer in a scheduler's wheel (worker_timers.hpp). Its owner alone links and
/// unlinks it; other threads find it by reference (timer_refs.hpp) and read only `ref`,
/// `target`, `deadline` and `status`.
struct send_after_timer : timer_entry {
  node_ptr msg;
  std::uint64_t ref = 0;
  /// The owner's chain of its timers aimed at the same pid, which the target's exit cancels.
  send_after_timer* prev_same = nullptr;
  send_after_timer* next_same = nullptr;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
