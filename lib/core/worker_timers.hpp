// The timers of one scheduler thread: receive timeouts and send_after timers.
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
// A send_after timer armed on a scheduler thread lives in the same wheel. Its reference names
// this wheel (timer_refs.hpp), and the owner keeps it in a table that other threads read
// without a lock: a cancel from here unlinks it at once, a cancel from elsewhere wins its status
// and hands it back like a receive timeout, and its time left is known to the winner alone.
// The owner also chains its timers by target: the target's exit asks the owner (a lock-free
// stack of requests, and a wake-up if it sleeps) to cancel those aimed at it. Until the owner
// has done so, a cancel of such a timer reports it gone (its target has exited, which cancelled
// it) and a firing delivers to nobody. An ended entry goes back to the allocator at once unless
// another thread is looking one up in this wheel's table at that moment; then it is retired
// through the runtime's epoch.
//
// The owner looks at its timers between runs while any are pending, and sleeps until the
// earliest when it has nothing to run: a due timer fires within one tick (65.5 µs) plus the
// run in progress.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "id_table.hpp"
#include "timer_refs.hpp"
#include "timer_wheel.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
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
  /// True while anything is pending, handed back or asked for (poll() has work).
  bool active() const noexcept {
    return !wheel_.empty() || handed_back_.load(std::memory_order_relaxed) != nullptr ||
           requests_waiting();
  }
  /// Something another thread asked for (a target's exit) or handed back waits for the owner.
  /// (seq_cst: scheduler::park pairs it with the requester's check that the owner sleeps.)
  bool requests_waiting() const noexcept {
    return purges_.load(std::memory_order_seq_cst) != nullptr ||
           handed_back_.load(std::memory_order_seq_cst) != nullptr;
  }
  /// How poll() reads the time: `coarse` looks at the kernel's coarse clock first and skips
  /// the steady clock while nothing can be due (between runs); `precise` always reads the
  /// steady clock (before sleeping, when a deadline may have just passed).
  enum class clock_read : bool { coarse, precise };
  /// Arms a send_after timer delivering `msg` (taken) to `target` at `deadline`; returns its
  /// reference. Throws std::bad_alloc with nothing armed (`msg` is then left alone).
  std::uint64_t send_after(runtime_core& rt, pid target, node_ptr& msg, clock_time deadline);
  /// Cancels send_after timer `r` of this wheel; its deadline and target if it was pending.
  std::optional<clock_time> cancel_send_after(runtime_core& rt, std::uint64_t r,
                                              pid& target) noexcept;
  /// Cancels the send_after timers of this wheel aimed at the pid with serial `serial`.
  void cancel_aimed_at(runtime_core& rt, std::uint64_t serial) noexcept;
  /// Frees what was handed back, does what was asked and fires what is due; returns how many
  /// fired.
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
  /// `first` (if given) is set when nothing else was handed back before it (see
  /// cancel_send_after_from_elsewhere).
  bool cancel_from_elsewhere(timer_entry* e, bool* first = nullptr) noexcept;
  /// cancel_send_after from another thread (pinned): the entry goes back to the owner. `wake`
  /// is set when the owner had nothing handed back before: the caller wakes it if it sleeps,
  /// so that the timer's message does not wait for the owner's next deadline to be freed.
  std::optional<clock_time> cancel_send_after_from_elsewhere(std::uint64_t r, pid& target,
                                                             bool& wake) noexcept;
  /// Asks the owner to cancel its timers aimed at `serial`. True if the owner had nothing else
  /// asked of it (the caller wakes it); false too when the request could not be allocated (the
  /// timers then fire into nothing at their deadlines).
  bool request_cancel_aimed_at(std::uint64_t serial) noexcept;
  /// Entries pending (approximate while they change).
  std::size_t pending() const noexcept;

 private:
  struct purge_request {
    std::uint64_t serial;
    purge_request* next;
  };

  void free_handed_back(runtime_core& rt) noexcept;
  void run_requests(runtime_core& rt) noexcept;
  static void free_entry(timer_entry* e) noexcept;
  static void free_send_after(void* e) noexcept;
  /// Unlinks an ended send_after timer from the table and its chain, destroys its message and
  /// retires it.
  void finish(runtime_core& rt, send_after_timer* e) noexcept;
  void unlink_same(send_after_timer* e) noexcept;

  const std::uint16_t owner_;
  timer_wheel wheel_;
  timer_ref_table refs_;  ///< send_after timers by reference
  /// pid serial -> the first of the send_after timers aimed at it (owner only).
  id_table<send_after_timer*> by_target_;
  // Written by the owner only (a load and a store); read by pending().
  std::atomic<std::size_t> owned_{0};    ///< armed here and not yet ended by the owner
  std::atomic<std::size_t> drained_{0};  ///< handed-back entries freed
  // Written by other threads, on lines of their own.
  alignas(64) std::atomic<timer_entry*> handed_back_{nullptr};
  std::atomic<std::size_t> handed_back_count_{0};
  std::atomic<purge_request*> purges_{nullptr};
  /// Threads looking for an entry in refs_ right now (finish() frees at once when none).
  std::atomic<std::uint32_t> finders_{0};
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
