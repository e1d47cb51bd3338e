// Outside threads as processes (scoped_process): no coroutine; their receive blocks the thread.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>

#include "observation.hpp"
#include "process_ops.hpp"
#include "runtime_core.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

external_handle open_external(runtime_core& rt) {
  proc* p = allocate_proc_for(rt, 0, 1, true);
  rt.acquire();
  rt.scoped_processes.fetch_add(1);
  rt.scoped_processes_opened.fetch_add(1, std::memory_order_relaxed);
  return {p, &rt, p->id()};
}

void close_external(proc* p) noexcept {
  runtime_core& rt = *p->rt();
  if (p->state != run_state::dead) {
    pin guard(rt);
    exit_process(p, exit_reason::normal());
  }
  try {
    rt.epoch.retire_shared(p, &free_proc);
  } catch (...) {
    // Out of memory recording the retirement: leak rather than free memory others may read.
  }
  rt.release();
}

namespace {

[[noreturn]] void die(proc* p) {
  if (p->state != run_state::dead) {
    pin guard(*p->rt());
    exit_process(p, p->reason);
  }
  throw exit_exception(p->reason);
}

// Waits until something is pushed or the deadline passes. False on timeout (inbox reopened).
// Every way out of the wait is decided under the mutex, which is what lets process_info read a
// waiting mailbox's lists while holding it.
bool wait_for_push(proc* p, const receive_op& op) {
  unique_lock lock(p->wait_state().mu);
  while (p->inbox.load(std::memory_order_acquire) == inbox_word::blocked) {
    if (!op.has_timeout) {
      lock.wait(p->wait_state().cv);
    } else if (lock.wait_until(p->wait_state().cv, op.deadline) == std::cv_status::timeout) {
      std::uintptr_t expected = inbox_word::blocked;
      // Reopen the inbox ourselves; if a push won the race, take what it brought.
      return !p->inbox.compare_exchange_strong(expected, inbox_word::empty,
                                               std::memory_order_acq_rel);
    }
  }
  return true;
}

}  // namespace

void receive_blocking(proc* p, receive_op& op) {
  if (p->state == run_state::dead) throw exit_exception(p->reason);
  struct count_guard {
    proc* p;
    std::uint64_t before = messages_moved;
    // The messages this receive moved into the queue, for the runtime's delivered counter
    // (workers publish theirs between runs; see runtime_core.hpp).
    ~count_guard() {
      if (const std::uint64_t n = messages_moved - before; n != 0)
        count(
            *p->rt(), [](event_counters & c) -> auto& { return c.delivered; }, n);
    }
  } counted{p};
  drain(p, drain_mode::until_kill);
  if (p->exiting) die(p);
  op.position = op.since != 0 ? p->queue.marker_position(op.since) : p->queue.head();
  const bool poll = op.has_timeout && op.timeout <= clock_time::duration::zero();
  if (op.has_timeout && !poll)
    op.deadline = deadline_after(std::chrono::steady_clock::now(), op.timeout);
  struct end_guard {
    proc* p;
    receive_op& op;
    ~end_guard() {
      release_matched(p, op);
      if (op.since != 0) p->queue.clear_marker(op.since);
      {
        // p->op is what process_info reads (under the mutex) while the mailbox waits.
        lock_guard lock(p->wait_state().mu);
        p->op = nullptr;
        p->wait_what = nullptr;
      }
      if ((p->rt()->monitor.active.load(std::memory_order_relaxed) & monitor_queue) != 0)
        check_queue_alarm(p);
    }
  } guard{p, op};
  {
    lock_guard lock(p->wait_state().mu);
    p->op = &op;
  }
  if (scan_mailbox(p, op)) return;
  if (p->deferred != nullptr) {
    drain(p);
    die(p);
  }
  if (poll) {
    op.timed_out = true;
    return;
  }
  for (;;) {
    if (try_block(p) && !wait_for_push(p, op)) {
      op.timed_out = true;
      return;
    }
    drain(p, drain_mode::until_kill);
    if (p->exiting) die(p);
    if (scan_mailbox(p, op)) return;
    if (p->deferred != nullptr) {
      drain(p);
      die(p);
    }
    if (op.has_timeout && std::chrono::steady_clock::now() >= op.deadline) {
      op.timed_out = true;
      return;
    }
  }
}

}  // namespace detail

scoped_process::scoped_process(runtime& rt) : scoped_process(detail::open_external(rt.core())) {}

scoped_process::~scoped_process() {
  detail::close_external(p_);
}

BEAMLET_END_PRIVATE_NAMESPACE
