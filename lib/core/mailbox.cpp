// Outside-thread mailboxes: a process without a coroutine, whose receive blocks its thread.
#include <beamlet/mailbox.hpp>
#include <beamlet/runtime.hpp>

#include "process_ops.hpp"
#include "runtime_core.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

external_handle open_external(runtime_core& rt) {
  proc* p = allocate_proc_for(rt, 0, 1, true);
  rt.acquire();
  rt.mailboxes.fetch_add(1);
  return {p, &rt, p->id()};
}

void close_external(proc* p) noexcept {
  runtime_core& rt = *p->rt();
  if (p->state != run_state::dead) {
    pin guard(rt);
    exit_process(p, exit_reason::normal());
  }
  rt.mailboxes.fetch_sub(1);
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
bool wait_for_push(proc* p, const receive_op& op) {
  std::unique_lock lock(p->wait_state().mu);
  while (p->inbox.load(std::memory_order_acquire) == blocked_mark) {
    if (!op.has_timeout) {
      p->wait_state().cv.wait(lock);
    } else if (p->wait_state().cv.wait_until(lock, op.deadline) == std::cv_status::timeout) {
      lock.unlock();
      message_node* expected = blocked_mark;
      // Reopen the inbox ourselves; if a push won the race, take what it brought.
      return !p->inbox.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
    }
  }
  return true;
}

}  // namespace

void receive_blocking(proc* p, receive_op& op) {
  if (p->state == run_state::dead) throw exit_exception(p->reason);
  drain(p, drain_mode::until_kill);
  if (p->exiting) die(p);
  op.position = op.since != 0 ? p->queue.marker_position(op.since) : p->queue.head();
  const bool poll = op.has_timeout && op.timeout <= clock::duration::zero();
  if (op.has_timeout && !poll) op.deadline = deadline_after(clock::now(), op.timeout);
  struct end_guard {
    proc* p;
    receive_op& op;
    ~end_guard() {
      if (op.since != 0) p->queue.clear_marker(op.since);
    }
  } guard{p, op};
  if (op.scan(p->queue)) return;
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
    if (op.scan(p->queue)) return;
    if (p->deferred != nullptr) {
      drain(p);
      die(p);
    }
    if (op.has_timeout && clock::now() >= op.deadline) {
      op.timed_out = true;
      return;
    }
  }
}

}  // namespace detail

mailbox::mailbox(runtime& rt) : mailbox(detail::open_external(rt.core())) {}

mailbox::~mailbox() {
  detail::close_external(p_);
}

BEAMLET_END_NAMESPACE
