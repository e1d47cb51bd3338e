// One scheduling slot of a coroutine process, and the receive entry points it pairs with.
//
// A process is resumed only when it can make progress: it is fresh, it yielded, or a receive it
// is parked in has been satisfied. A parked process woken by a push first drains its inbox and
// re-tests only the messages that arrived since it parked (the save position of spec §1.2
// rule 10), on the scheduler thread, without resuming the coroutine; if nothing matches it parks
// again. Exit signals that kill it are acted on right there.
#include <exception>
#include <limits>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "scheduler.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

namespace {

void disarm_timer(proc* p) noexcept {
  if (p->timer_armed) {
    p->rt()->timers.cancel(&p->timer);
    p->timer_armed = false;
  }
  p->timeout_fired = false;
}

// Tests the newly arrived messages against the receive p is parked in. True when the receive
// completed (p is ready to resume); false when p exited or parked again.
bool retry_receive(proc* p) {
  for (;;) {
    drain(p, drain_mode::until_kill);
    if (p->exiting) {
      exit_process(p, p->reason);
      return false;
    }
    receive_op* op = p->op;
    bool done;
    try {
      done = op->scan(p->queue);
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
    if (try_block(p)) return false;
  }
}

void arm_timeout(proc* p) {
  receive_op* op = p->op;
  p->timer.deadline = op->deadline;
  p->timer.target = p->id();
  p->timer.seq = ++p->receive_seq;
  p->timer.type = timer_entry::kind::receive_timeout;
  p->timeout_fired = false;
  p->rt()->timers.arm(&p->timer);
  p->timer_armed = true;
}

exit_reason reason_of_finished(proc* p) {
  const std::exception_ptr& e = p->body.promise().exception();
  return e ? exit_reason::from_exception(e) : exit_reason::normal();
}

}  // namespace

namespace {
thread_local proc* tls_running = nullptr;

/// Marks the running process for the task-transfer stack bound (beamlet/task.hpp).
class running_scope {
 public:
  explicit running_scope(proc* p) noexcept {
    tls_running = p;
    const auto base = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    this_run.stack_floor = base > stack_budget ? base - stack_budget : 0;
  }
  ~running_scope() {
    tls_running = nullptr;
    this_run.stack_floor = 0;
  }
  running_scope(const running_scope&) = delete;
  running_scope& operator=(const running_scope&) = delete;
};
}  // namespace

std::coroutine_handle<> continue_from_scheduler(std::coroutine_handle<> h) noexcept {
  proc* p = tls_running;
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
  if (p->state == run_state::waiting) {
    if (!retry_receive(p)) return;
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
    p->suspend = suspend_kind::none;
    p->resume_point.resume();

    if (p->body.done()) {
      exit_process(p, reason_of_finished(p));
      return;
    }
    switch (p->suspend) {
      case suspend_kind::exit:
        exit_process(p, p->reason);
        return;
      case suspend_kind::yield:
        p->state = run_state::ready;
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
          w.push_back(p);
          return;
        }
        p->state = run_state::waiting;
        if (op->has_timeout) {
          try {
            arm_timeout(p);
          } catch (...) {
            exit_process(p, exit_reason::from_exception(std::current_exception()));
            return;
          }
        }
        if (try_block(p)) return;
        if (!retry_receive(p)) return;
        if (this_run.budget <= 0) {
          w.push_back(p);
          return;
        }
        continue;
      }
      case suspend_kind::none:
        // The body awaited something that is not beamlet's: nothing would ever resume it.
        exit_process(p, exit_reason::error("{bad_await,\"a process may only co_await beamlet "
                                           "operations and tasks\"}"));
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
  const bool poll = op.has_timeout && op.timeout <= clock::duration::zero();
  if (op.has_timeout && !poll) op.deadline = deadline_after(p->rt()->now(), op.timeout);
  bool done = op.scan(p->queue);
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
  if (op.since != 0) p->queue.clear_marker(op.since);
  p->op = nullptr;
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
BEAMLET_END_NAMESPACE
