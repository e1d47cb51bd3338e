// One scheduling slot of a coroutine process, and the receive entry points it pairs with.
//
// A process is resumed only when it can make progress: it is fresh, it yielded, or a receive it
// is parked in has been satisfied. A parked process woken by a push first drains its inbox and
// re-tests only the messages that arrived since it parked (the save position of spec §1.2
// rule 10), on the scheduler thread, without resuming the coroutine; if nothing matches it parks
// again. Exit signals that kill it are acted on right there.
#include <exception>
#include <limits>

#include <algorithm>
#include <chrono>

#include "observation.hpp"
#include "process_ops.hpp"
#include "run_context.hpp"
#include "runtime_core.hpp"
#include "scheduler.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

void disarm_timer(proc* p) noexcept {
  if (p->timer_armed) {
    p->rt()->timers.cancel(p->timer);
    p->timer_armed = false;
  }
  p->timeout_fired = false;
}

// The accounting of one run: reductions spent, and the system monitor's checks, made where the
// process is scheduled out rather than on every send (only while the monitor is on): the run's
// length for long_schedule, and the queue's length for long_message_queue (a queue's growth is
// seen when its owner runs; a push to a parked process wakes it). hand_off() settles the run
// just before the process is parked or queued, after which another thread may own it: nothing
// of p but atomics is touched after that. It keeps no state of its own (a run starts with the
// runtime's full budget): stores are what a message round trip is most sensitive to.
class run_meter {
 public:
  explicit run_meter(proc* p) noexcept : p_(p) {
    if ((p->rt()->monitor.active.load(std::memory_order_relaxed) & monitor_schedule) != 0)
        [[unlikely]]
      run_started_ns = now_ns();
  }
  void hand_off() noexcept {
    settle();
    if ((p_->rt()->monitor.active.load(std::memory_order_relaxed) & monitor_queue) != 0)
        [[unlikely]]
      check_queue_alarm(p_);
  }
  /// The run ends with the process: its reductions and its length still count (a process that
  /// hogs a scheduler and then exits is exactly what long_schedule is for).
  void settle() noexcept {
    add(p_->reductions_done, spent());
    if (const std::int32_t frames = this_run.frame_bytes; frames != 0) [[unlikely]] {
      p_->frame_bytes.store(p_->frame_bytes.load(std::memory_order_relaxed) + frames,
                            std::memory_order_relaxed);
      this_run.frame_bytes = 0;
    }
    if (run_started_ns != 0) [[unlikely]] {
      check_long_schedule(p_, now_ns() - run_started_ns);
      run_started_ns = 0;
    }
  }
  /// A hand-off that did not happen (the park failed: a message came): the run goes on, and
  /// will count what it spent so far again when it ends.
  void resume() noexcept {
    add(p_->reductions_done, -spent());
    if ((p_->rt()->monitor.active.load(std::memory_order_relaxed) & monitor_schedule) != 0)
        [[unlikely]]
      run_started_ns = now_ns();
  }

 private:
  std::int64_t spent() const noexcept {
    // (Never negative, unless something raised the budget mid-run.)
    return std::max(0, p_->rt()->options.reductions - this_run.budget);
  }
  static void add(std::atomic<std::uint64_t>& c, std::int64_t n) noexcept {
    c.store(c.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(n),
            std::memory_order_relaxed);  // one writer
  }
  static std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  /// When the current run started, only while long_schedule is on (else 0).
  static inline thread_local std::int64_t run_started_ns = 0;
  proc* p_;
};

/// Parks p; true when parked (p is no longer ours).
[[gnu::always_inline]] inline bool park(proc* p, run_meter& m) noexcept {
  m.hand_off();
  if (try_block(p)) return true;
  m.resume();
  return false;
}

// Tests the newly arrived messages against the receive p is parked in. True when the receive
// completed (p is ready to resume); false when p exited or parked again.
[[gnu::always_inline]] inline bool retry_receive(proc* p, run_meter& m) {
  for (;;) {
    drain(p, drain_mode::until_kill);
    if (p->exiting) {
      exit_process(p, p->reason);
      return false;
    }
    receive_op* op = p->op;
    bool done;
    try {
      done = scan_mailbox(p, *op);
    } catch (...) {
      op->error = std::current_exception();  // a guard threw: rethrown at the co_await
      done = true;
    }
    if (!done && p->timeout_fired) {
      op->timed_out = true;
      done = true;
    }
    if (!done && p->deferred != nullptr) {
      // Nothing that came before the killing signal completes the receive: die now.
      drain(p);
      exit_process(p, p->reason);
      return false;
    }
    if (done) {
      disarm_timer(p);
      p->state = run_state::ready;
      return true;
    }
    if (park(p, m)) return false;
  }
}

// A process that a busy connection paused (remote_pause_running) resumes no more of its body
// until every pause is lifted: it parks in the ready state, and any push (the resume signal,
// a message) runs it again only to drain its inbox and look once more. Its signals are acted
// on meanwhile, so an exit signal still ends it. True: go on; false: it parked or exited (p is
// no longer ours).
[[gnu::noinline]] bool wait_out_pauses(proc* p, run_meter& m) {
  for (;;) {
    drain(p);
    if (p->exiting) {
      exit_process(p, p->reason);
      return false;
    }
    if (p->pauses.load(std::memory_order_relaxed) == 0) return true;
    if (park(p, m)) return false;
  }
}

void arm_timeout(proc* p) {
  receive_op* op = p->op;
  if (p->timer == nullptr) p->timer = ::new (allocate(sizeof(timer_entry))) timer_entry;
  timer_entry& t = *p->timer;
  t.deadline = op->deadline;
  t.target = p->id();
  t.seq = ++p->receive_seq;
  t.type = timer_entry::kind::receive_timeout;
  p->timeout_fired = false;
  p->rt()->timers.arm(&t);
  p->timer_armed = true;
}

exit_reason reason_of_finished(proc* p) {
  const std::exception_ptr& e = p->body.promise().exception();
  return e ? exit_reason::from_exception(e) : exit_reason::normal();
}

}  // namespace

namespace {
// Atomic (relaxed: plain loads and stores) because process_info reads it from other threads.
thread_local std::atomic<proc*> tls_running{nullptr};

/// Marks the running process for the task-transfer stack bound (beamlet/core/task.hpp).
class running_scope {
 public:
  explicit running_scope(proc* p) noexcept {
    tls_running.store(p, std::memory_order_relaxed);
    const auto base = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    this_run.stack_floor = base > stack_budget ? base - stack_budget : 0;
  }
  ~running_scope() {
    tls_running.store(nullptr, std::memory_order_relaxed);
    // What an exit freed (or a run that ended without a hand-off made) belongs to no one now.
    if (this_run.frame_bytes != 0) [[unlikely]]
      this_run.frame_bytes = 0;
    this_run.stack_floor = 0;
  }
  running_scope(const running_scope&) = delete;
  running_scope& operator=(const running_scope&) = delete;
};
}  // namespace

proc* running_proc() noexcept {
  return tls_running.load(std::memory_order_relaxed);
}

const std::atomic<proc*>* running_slot() noexcept {
  return &tls_running;
}

void count_exit(runtime_core& rt, const exit_reason& reason) noexcept {
  std::size_t cls = 2;
  switch (reason.which()) {
    case exit_reason::kind::normal:
      return;  // the rest of all exits (stats_of)
    case exit_reason::kind::shutdown:
      cls = 0;
      break;
    case exit_reason::kind::kill:
    case exit_reason::kind::killed:
      cls = 1;
      break;
    default:
      break;
  }
  count(
      rt, [cls](event_counters & c) -> auto& { return c.exits[cls]; });
}

std::coroutine_handle<> continue_from_scheduler(std::coroutine_handle<> h) noexcept {
  proc* p = tls_running.load(std::memory_order_relaxed);
  if (p == nullptr) {
    // Not in a process (a task driven by hand): nothing to yield to; keep the count sane.
    this_run.budget = std::numeric_limits<int>::max();
    return h;
  }
  p->resume_point = h;
  p->suspend = suspend_kind::yield;
  return std::noop_coroutine();
}

void run_process(worker& w, proc* p) {
  const running_scope scope(p);
  this_run.budget = p->rt()->options.reductions;
  run_meter meter(p);
  if (p->state == run_state::waiting) {
    if (!retry_receive(p, meter)) return;
  } else {
    // A fresh or yielded process looks at its signals before running: an exit signal must
    // reach a process that never receives (one that only yields, or has not started yet).
    drain(p);
    if (p->exiting) {
      exit_process(p, p->reason);
      return;
    }
  }

  for (;;) {
    if (p->pauses.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      if (!wait_out_pauses(p, meter)) return;
    }
    p->suspend = suspend_kind::none;
    p->resume_point.resume();

    if (p->body.done()) {
      meter.settle();
      exit_process(p, reason_of_finished(p), exit_cause::own);
      return;
    }
    switch (p->suspend) {
      case suspend_kind::exit:
        meter.settle();
        exit_process(p, p->reason, exit_cause::own);
        return;
      case suspend_kind::yield:
        p->state = run_state::ready;
        meter.hand_off();
        w.push_back(p);
        return;
      case suspend_kind::receive: {
        if (p->exiting) {  // killed by a signal found while starting the receive
          exit_process(p, p->reason);
          return;
        }
        receive_op* op = p->op;
        if (op->matched != nullptr || op->timed_out || op->error) {
          // Completed, but the reduction budget is spent: run the others first.
          p->state = run_state::ready;
          meter.hand_off();
          w.push_back(p);
          return;
        }
        p->state = run_state::waiting;
        if (op->has_timeout) {
          try {
            arm_timeout(p);
          } catch (...) {
            exit_process(p, exit_reason::from_exception(std::current_exception()), exit_cause::own);
            return;
          }
        }
        if (park(p, meter)) return;
        if (!retry_receive(p, meter)) return;
        if (this_run.budget <= 0) {
          meter.hand_off();
          w.push_back(p);
          return;
        }
        continue;
      }
      case suspend_kind::none:
        // The body awaited something that is not beamlet's: nothing would ever resume it.
        exit_process(p,
                     exit_reason::error_tuple(
                         "bad_await", "a process may only co_await beamlet operations and tasks"),
                     exit_cause::own);
        return;
    }
  }
}

bool receive_begin(proc* p, receive_op& op) {
  // Every receive is a reduction, charged up front so that one whose guard throws counts too.
  const bool spent = --this_run.budget <= 0;
  drain(p, drain_mode::until_kill);
  if (p->exiting) return false;
  op.position = op.since != 0 ? p->queue.marker_position(op.since) : p->queue.head();
  const bool poll = op.has_timeout && op.timeout <= clock_time::duration::zero();
  if (op.has_timeout && !poll) op.deadline = deadline_after(p->rt()->now(), op.timeout);
  bool done = scan_mailbox(p, op);
  if (!done && p->deferred != nullptr) {
    drain(p);  // the killing signal applies: suspend, and the scheduler ends the process
    return false;
  }
  if (!done && poll) {
    op.timed_out = true;
    done = true;
  }
  if (!done) return false;
  // Completed at once. Still suspend when the budget is spent, so a process that always has
  // messages cannot keep its scheduler thread (fairness).
  return !spent;
}

void receive_suspend(proc* p, receive_op& op, std::coroutine_handle<> h) noexcept {
  p->resume_point = h;
  p->op = &op;
  p->suspend = suspend_kind::receive;
}

void receive_end(proc* p, receive_op& op) noexcept {
  release_matched(p, op);
  if (op.since != 0) p->queue.clear_marker(op.since);
  p->op = nullptr;
  // Tested first: an unconditional store here measurably slows a ping-pong, and most receives
  // have no label.
  if (p->wait_what != nullptr) [[unlikely]]
    p->wait_what = nullptr;
}

void yield_suspend(proc* p, std::coroutine_handle<> h) noexcept {
  p->resume_point = h;
  p->suspend = suspend_kind::yield;
}

void exit_suspend(proc* p, std::coroutine_handle<> h, const exit_reason& reason) noexcept {
  p->resume_point = h;
  p->reason = reason;
  p->exiting = true;
  p->suspend = suspend_kind::exit;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
