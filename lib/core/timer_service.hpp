// Receive timeouts and send_after timers: where each is armed, and the shared heap for the rest.
//
// A timer armed on one of this runtime's scheduler threads lives in that scheduler's timer
// wheel (worker_timers.hpp): a receive timeout, and a send_after timer, whose reference names
// the wheel (timer_refs.hpp). Arming and cancelling there take no lock; a cancel from another
// thread wins the entry's status and hands it back to its owner without one. Everything else
// lives here, in one binary min-heap guarded by a mutex, with a single Boost.Asio steady_timer
// on a dedicated thread sleeping until the earliest deadline: send_after timers armed by
// threads that are not schedulers, and under a manual clock every timer, so that advancing the
// clock fires them all before it returns. Millions of pending timers are millions of entries,
// not OS timers; each heap entry knows its position, so a timer cancelled before it fires is
// removed at once instead of being left behind.
//
// A fired receive timeout is delivered as a signal into the process's inbox carrying the
// receive's sequence number, so it races with messages exactly like any other signal and a
// stale timeout (the receive already completed) is recognised and dropped.
//
// A process's exit cancels every send_after timer aimed at it (as BEAM does for
// erlang:send_after/start_timer to a pid): a timer's owner marks the target's timer_owners
// before arming, and the exit asks each owner marked there to cancel (the heap chains its
// timers per target pid; each wheel keeps its own chains).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/receive_op.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/timeout.hpp>

#include "id_table.hpp"
#include "thread_safety.hpp"
#include "timer_entry.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class runtime_core;

class timer_service {
 public:
  explicit timer_service(runtime_core& rt);
  ~timer_service();
  timer_service(const timer_service&) = delete;
  timer_service& operator=(const timer_service&) = delete;

  void start();
  /// Stops the timer thread and frees pending send_after messages. Pending receive timeouts
  /// belong to their processes and are simply forgotten.
  void stop() noexcept;

  /// Arms a receive timeout: in the calling scheduler's wheel, or here (a manual clock, or a
  /// thread that is not one of this runtime's schedulers). `e` stays its process's, and valid
  /// until it fires or is cancelled.
  void arm(timer_entry* e);
  /// Cancels the receive timeout `e` if it is still pending; true if it was. Where another
  /// scheduler's wheel holds it, that wheel takes it over and `e` becomes null: the process
  /// makes a new entry for its next timeout.
  bool cancel(timer_entry*& e) noexcept;

  /// Arms a timer delivering `msg` to `to` after `delay`: in the calling scheduler's wheel, or
  /// here (a manual clock, or a thread that is not one of this runtime's schedulers). A target
  /// that is not alive (or the null pid) gets no timer: the message is dropped and the ref
  /// cancels nothing.
  ref send_after(pid to, message_node* msg, timeout_value delay);
  /// Time left on a send_after timer, which is cancelled; nullopt if it fired, its target has
  /// exited, or it is unknown.
  std::optional<clock_time::duration> cancel_send_after(ref r) noexcept;
  /// Cancels every send_after timer aimed at `target` (it is exiting); `owners` is its
  /// proc::timer_owners, which says where such timers may be.
  void cancel_aimed_at(pid target, std::uint32_t owners) noexcept;

  /// Timers pending, here and in every scheduler's wheel.
  std::size_t pending() const noexcept;

 private:
  struct send_after_entry;
  struct impl;

  bool cancel_shared(timer_entry* e) noexcept;
  std::optional<clock_time::duration> cancel_shared_send_after(ref r) noexcept;
  void cancel_shared_aimed_at(pid target) noexcept;
  clock_time::duration time_left(clock_time deadline) const noexcept;
  /// `target` has not exited (its inbox is open).
  bool alive(pid target) const noexcept;
  void push_locked(timer_entry* e) BEAMLET_REQUIRES(mu_);
  void remove_locked(timer_entry* e) noexcept BEAMLET_REQUIRES(mu_);
  void sift_up(std::uint32_t i) noexcept BEAMLET_REQUIRES(mu_);
  void sift_down(std::uint32_t i) noexcept BEAMLET_REQUIRES(mu_);
  void place(timer_entry* e, std::uint32_t i) noexcept BEAMLET_REQUIRES(mu_);
  void on_wake() noexcept BEAMLET_EXCLUDES(mu_);  // NOLINT(bugprone-exception-escape)
  void request_rearm(clock_time deadline) BEAMLET_REQUIRES(mu_);
  void arm_asio_locked() BEAMLET_REQUIRES(mu_);
  void link_target_locked(std::unique_ptr<send_after_entry> e) BEAMLET_REQUIRES(mu_);
  std::unique_ptr<send_after_entry> unlink_target_locked(send_after_entry* e) noexcept
      BEAMLET_REQUIRES(mu_);

  runtime_core& rt_;
  mutable mutex mu_;
  std::vector<timer_entry*> heap_ BEAMLET_GUARDED_BY(mu_);
  id_table<send_after_entry*> by_ref_ BEAMLET_GUARDED_BY(mu_);
  // pid serial -> the chain of timers aimed at it. A pending send_after timer is owned by its
  // chain (each entry owns the next), so it has one owner however it ends: fired, cancelled,
  // its target gone, or the service stopped; the heap and by_ref_ only point at it.
  id_table<std::unique_ptr<send_after_entry>> by_target_ BEAMLET_GUARDED_BY(mu_);
  clock_time armed_for_ BEAMLET_GUARDED_BY(mu_) = clock_time::max();
  bool stopped_ BEAMLET_GUARDED_BY(mu_) = false;
  std::uint64_t clock_subscription_ = 0;  // with a manual clock
  std::unique_ptr<impl> impl_;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
