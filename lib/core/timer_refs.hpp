// The references of send_after timers, and the table that finds a scheduler's timers by them.
//
// A timer reference says where its timer lives: bit 63 marks it as a timer's, bits 52-62 hold
// its owner (0: the runtime's shared heap; n: the wheel of scheduler n - 1), bits 0-51 a count
// taken from one program-wide counter in thread-local blocks (so they stay unique across
// runtimes). A cancel therefore goes straight to the one table that can hold the timer.
// Ordinary references come from another counter that never reaches bit 63. The count wraps
// after 2^52 timers (at ten million timers a second, after fourteen years).
//
// timer_ref_table is an open-addressing table from reference to entry with one writer, the
// owning scheduler, and readers on any thread that are pinned in the runtime's epoch. Readers
// take no lock: a slot is written once with an entry, then perhaps with a tombstone, and a
// resized array is published whole and retired through the epoch, so a reader always probes a
// consistent array and reaches an empty slot. A reader may find an entry that has just ended;
// the entry's status (one compare-and-swap) decides which of firing, cancelling and the
// target's exit ends it, and the owner frees an ended entry only when no reader can still hold
// it (worker_timers::finish). Tombstones and published arrays are stored, and probed, seq_cst
// for that reason.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <beamlet/core/config.hpp>

#include "timer_entry.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class runtime_core;

namespace timer_ref {
inline constexpr std::uint64_t tag = std::uint64_t{1} << 63;
inline constexpr unsigned owner_shift = 52;
inline constexpr std::uint64_t count_mask = (std::uint64_t{1} << owner_shift) - 1;
/// Owner 0 is the shared heap; scheduler i's wheel is owner i + 1.
inline constexpr std::uint32_t shared_owner = 0;

/// A new timer reference for `owner`.
std::uint64_t make(std::uint32_t owner) noexcept;
inline bool is_timer(std::uint64_t r) noexcept {
  return (r & tag) != 0;
}
inline std::uint32_t owner_of(std::uint64_t r) noexcept {
  return static_cast<std::uint32_t>((r & ~tag) >> owner_shift);
}
}  // namespace timer_ref

class timer_ref_table {
 public:
  timer_ref_table() = default;
  ~timer_ref_table();
  timer_ref_table(const timer_ref_table&) = delete;
  timer_ref_table& operator=(const timer_ref_table&) = delete;

  // -- the owner's thread
  /// Adds `e` (its ref set). Throws std::bad_alloc when the table must grow and cannot; `e`
  /// is then not in it. A replaced array goes to `rt`'s epoch.
  void insert(runtime_core& rt, send_after_timer* e);
  /// Takes `e` (in the table) out; may shrink the table.
  void erase(runtime_core& rt, send_after_timer* e) noexcept;
  std::size_t size() const noexcept { return live_; }
  /// Calls f(send_after_timer*) for each entry (the owner, or nobody else left).
  template <class F>
  void for_each(F&& f) const {
    const array* a = current_.load(std::memory_order_relaxed);
    if (a == nullptr) return;
    for (std::size_t i = 0; i <= a->mask; ++i) {
      send_after_timer* e = a->slots[i].load(std::memory_order_relaxed);
      if (e != nullptr && e != tombstone()) f(e);
    }
  }
  /// Empties the table without touching the entries (shutdown, nobody else left).
  void clear() noexcept;

  // -- any thread, pinned
  /// The entry with reference `r`, or null. It may have ended already (see its status).
  send_after_timer* find(std::uint64_t r) const noexcept;

 private:
  struct array {
    std::size_t mask;
    std::atomic<send_after_timer*> slots[1];  // mask + 1 of them
  };
  /// A slot whose entry was erased: the address of a static object, never an entry's.
  static send_after_timer* tombstone() noexcept;
  static std::size_t hash(std::uint64_t r) noexcept {
    return static_cast<std::size_t>((r * 0x9E3779B97F4A7C15ull) >> 32);
  }
  static array* make_array(std::size_t capacity);
  static void free_array(void* a) noexcept;
  static std::size_t bytes_of(std::size_t capacity) noexcept;
  /// Copies the live entries into a new array of `capacity` slots and publishes it.
  void rebuild(runtime_core& rt, std::size_t capacity);
  static void place(array* a, send_after_timer* e) noexcept;

  std::atomic<array*> current_{nullptr};
  std::size_t live_ = 0;
  std::size_t used_ = 0;  ///< live entries and tombstones
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
