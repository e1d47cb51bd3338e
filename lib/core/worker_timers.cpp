#include "worker_timers.hpp"

#include <time.h>

#include <chrono>
#include <new>

#include <beamlet/core/detail/allocator.hpp>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {
// The coarse clock (the kernel's last tick: a few ns to read, against 25 or more for the steady
// clock in a VM) trails CLOCK_MONOTONIC, which steady_clock reads, by about one kernel tick
// (more when a tick is late). While it says the earliest timeout is further away than a
// generous bound on that lag, no precise read is needed: a
// call whose 5 s timeout is pending costs its scheduler no clock read between runs.
std::int64_t coarse_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
std::int64_t coarse_lag_ns() noexcept {
  static const std::int64_t lag = [] {
    timespec res{};
    if (::clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return std::int64_t{1'000'000'000};
    return static_cast<std::int64_t>(res.tv_sec) * 1'000'000'000 + res.tv_nsec;
  }();
  return lag;
}

void bump(std::atomic<std::size_t>& c, std::ptrdiff_t n) noexcept {
  c.store(c.load(std::memory_order_relaxed) + static_cast<std::size_t>(n),
          std::memory_order_relaxed);  // one writer
}
}  // namespace

void worker_timers::free_entry(timer_entry* e) noexcept {
  // Receive-timeout entries come from the process allocator (process_run.cpp's arm_timeout).
  e->~timer_entry();
  deallocate(e, sizeof(timer_entry));
}

void worker_timers::free_send_after(void* p) noexcept {
  auto* e = static_cast<send_after_timer*>(p);
  e->~send_after_timer();
  deallocate(e, sizeof(send_after_timer));
}

void worker_timers::arm(timer_entry* e) noexcept {
  e->owner = owner_;
  e->status.store(timer_entry::state::armed, std::memory_order_relaxed);
  wheel_.insert(e);
  bump(owned_, 1);
}

bool worker_timers::cancel(timer_entry* e) noexcept {
  // Nobody else can end an entry of this wheel while its process runs here: the owner is this
  // thread, and the process is the only canceller.
  if (e->place == timer_entry::unplaced) return false;  // fired
  wheel_.remove(e);
  e->status.store(timer_entry::state::cancelled, std::memory_order_relaxed);
  bump(owned_, -1);
  return true;
}

bool worker_timers::cancel_from_elsewhere(timer_entry* e, bool* first) noexcept {
  auto expected = timer_entry::state::armed;
  if (!e->status.compare_exchange_strong(expected, timer_entry::state::cancelled,
                                         std::memory_order_acq_rel, std::memory_order_acquire))
    return false;
  handed_back_count_.fetch_add(1, std::memory_order_relaxed);
  timer_entry* head = handed_back_.load(std::memory_order_relaxed);
  do {
    e->handed_back = head;
  } while (!handed_back_.compare_exchange_weak(head, e, std::memory_order_seq_cst,
                                               std::memory_order_relaxed));
  if (first != nullptr) *first = head == nullptr;
  return true;
}

void worker_timers::free_handed_back(runtime_core& rt) noexcept {
  timer_entry* e = handed_back_.exchange(nullptr, std::memory_order_acquire);
  std::size_t n = 0;
  while (e != nullptr) {
    timer_entry* const after = e->handed_back;
    if (e->place != timer_entry::unplaced) wheel_.remove(e);  // (else expire() took it out)
    if (e->type == timer_entry::kind::send_after)
      finish(rt, static_cast<send_after_timer*>(e));
    else
      free_entry(e);
    ++n;
    e = after;
  }
  if (n != 0) {
    // owned_ first, drained_ released after it: pending() reads drained_ (acquire) before
    // owned_, so a reader in between counts these entries neither as owned nor as drained
    // (it may count too few for a moment, never too many).
    bump(owned_, -static_cast<std::ptrdiff_t>(n));
    drained_.store(drained_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
}

// -- send_after timers
// ------------------------------------------------------------------------------

std::uint64_t worker_timers::send_after(runtime_core& rt, pid target, node_ptr& msg,
                                        clock_time deadline) {
  auto* e = ::new (allocate(sizeof(send_after_timer))) send_after_timer;
  e->type = timer_entry::kind::send_after;
  e->target = target;
  e->deadline = deadline;
  e->ref = timer_ref::make(static_cast<std::uint32_t>(owner_) + 1);
  // Chained, armed and only then published in refs_, the one place other threads look: until
  // that last step nobody else can reach the entry, so a failure frees it directly.
  try {
    send_after_timer** head = by_target_.find(target.serial());
    if (head == nullptr) {
      by_target_.insert(target.serial(), e);
    } else {
      (*head)->prev_same = e;
      e->next_same = *head;
      *head = e;
    }
  } catch (...) {
    free_send_after(e);
    throw;
  }
  arm(e);
  try {
    refs_.insert(rt, e);
  } catch (...) {
    wheel_.remove(e);
    bump(owned_, -1);
    unlink_same(e);
    free_send_after(e);
    throw;
  }
  e->msg = std::move(msg);
  return e->ref;
}

void worker_timers::unlink_same(send_after_timer* e) noexcept {
  if (e->next_same != nullptr) e->next_same->prev_same = e->prev_same;
  if (e->prev_same != nullptr) {
    e->prev_same->next_same = e->next_same;
  } else if (e->next_same != nullptr) {
    *by_target_.find(e->target.serial()) = e->next_same;
  } else {
    by_target_.erase(e->target.serial());
  }
  e->prev_same = e->next_same = nullptr;
}

void worker_timers::finish(runtime_core& rt, send_after_timer* e) noexcept {
  refs_.erase(rt, e);
  unlink_same(e);
  e->msg.reset();
  // Another thread reaches an entry only through refs_, and counts itself in finders_ before
  // it looks (seq_cst, as the tombstone just stored and this load): either it is counted here,
  // and the entry waits out every thread that may hold it, or it finds the tombstone. Most
  // timers end with nobody looking, and go straight back to this thread's cache.
  if (finders_.load(std::memory_order_seq_cst) == 0)
    free_send_after(e);
  else
    rt.retire(e, &free_send_after);
}

std::optional<clock_time> worker_timers::cancel_send_after(runtime_core& rt, std::uint64_t r,
                                                           pid& target) noexcept {
  send_after_timer* e = refs_.find(r);
  if (e == nullptr) return std::nullopt;
  // Another thread may be cancelling it too.
  auto expected = timer_entry::state::armed;
  if (!e->status.compare_exchange_strong(expected, timer_entry::state::cancelled,
                                         std::memory_order_acq_rel, std::memory_order_relaxed))
    return std::nullopt;
  const clock_time deadline = e->deadline;
  target = e->target;
  wheel_.remove(e);  // (armed: expire() has not taken it, which only this thread does)
  finish(rt, e);
  bump(owned_, -1);
  return deadline;
}

std::optional<clock_time> worker_timers::cancel_send_after_from_elsewhere(std::uint64_t r,
                                                                          pid& target,
                                                                          bool& wake) noexcept {
  finders_.fetch_add(1, std::memory_order_seq_cst);
  std::optional<clock_time> deadline;
  if (send_after_timer* e = refs_.find(r)) {
    // (Read before the entry is handed back: the owner may end it at once.)
    const clock_time due = e->deadline;
    const pid to = e->target;
    if (cancel_from_elsewhere(e, &wake)) {
      deadline = due;
      target = to;
    }
  }
  finders_.fetch_sub(1, std::memory_order_release);
  return deadline;
}

void worker_timers::cancel_aimed_at(runtime_core& rt, std::uint64_t serial) noexcept {
  send_after_timer** head = by_target_.find(serial);
  if (head == nullptr) return;
  // Every status first, then the ends: ending one destroys its message, whose destructor may
  // call back in here (cancel_timer on a timer of this chain finds it already cancelled).
  timer_entry* won = nullptr;
  for (send_after_timer* e = *head; e != nullptr; e = e->next_same) {
    auto expected = timer_entry::state::armed;
    if (e->status.compare_exchange_strong(expected, timer_entry::state::cancelled,
                                          std::memory_order_acq_rel, std::memory_order_relaxed)) {
      wheel_.remove(e);
      e->next = won;  // (out of the wheel: its links are free)
      won = e;
    }
    // (else cancelled from elsewhere: it comes back through handed_back_)
  }
  while (won != nullptr) {
    auto* const e = static_cast<send_after_timer*>(won);
    won = won->next;
    finish(rt, e);
    bump(owned_, -1);
  }
}

bool worker_timers::request_cancel_aimed_at(std::uint64_t serial) noexcept {
  purge_request* q = nullptr;
  try {
    q = static_cast<purge_request*>(allocate(sizeof(purge_request)));
  } catch (const std::bad_alloc&) {
    return false;
  }
  q->serial = serial;
  purge_request* head = purges_.load(std::memory_order_relaxed);
  do {
    q->next = head;
  } while (!purges_.compare_exchange_weak(head, q, std::memory_order_seq_cst,
                                          std::memory_order_relaxed));
  return head == nullptr;
}

void worker_timers::run_requests(runtime_core& rt) noexcept {
  purge_request* q = purges_.exchange(nullptr, std::memory_order_acquire);
  while (q != nullptr) {
    purge_request* const after = q->next;
    cancel_aimed_at(rt, q->serial);
    deallocate(q, sizeof(purge_request));
    q = after;
  }
}

std::size_t worker_timers::poll(runtime_core& rt, clock_read how) noexcept {
  if (handed_back_.load(std::memory_order_relaxed) != nullptr) free_handed_back(rt);
  if (purges_.load(std::memory_order_relaxed) != nullptr) run_requests(rt);
  if (wheel_.empty()) return 0;
  const clock_time due = timer_wheel::time_of(wheel_.next_tick());
  // Two ticks of the coarse clock and a millisecond of margin: it can trail by more than its
  // resolution (a late tick). A wrong skip only delays a firing to the next run or the park,
  // which reads precisely.
  if (how == clock_read::coarse &&
      coarse_now_ns() + 2 * coarse_lag_ns() + 1'000'000 < due.time_since_epoch().count())
    return 0;
  const std::uint64_t now = timer_wheel::tick_floor(std::chrono::steady_clock::now());
  if (now < wheel_.next_tick()) return 0;
  std::size_t fired = 0;
  pin guard(rt);
  // Every status first, then the send_after deliveries: delivering may destroy a message (its
  // target gone, its mailbox full), whose destructor may cancel another timer of this batch,
  // which then finds it fired instead of unlinking an entry this loop still walks.
  timer_entry* to_deliver = nullptr;
  timer_entry** to_deliver_tail = &to_deliver;
  for (timer_entry* e = wheel_.expire(now); e != nullptr;) {
    // Read everything first: once the status says fired, a receive timeout's entry is its
    // process's again.
    timer_entry* const after = e->next;
    const pid target = e->target;
    const std::uint32_t seq = e->seq;
    auto expected = timer_entry::state::armed;
    if (e->status.compare_exchange_strong(expected, timer_entry::state::fired,
                                          std::memory_order_acq_rel, std::memory_order_relaxed)) {
      ++fired;
      if (e->type == timer_entry::kind::send_after) {
        e->next = nullptr;  // (fired here: the entry is this thread's alone)
        *to_deliver_tail = e;
        to_deliver_tail = &e->next;
      } else {
        bump(owned_, -1);
        try {
          deliver(rt, target, make_node<timeout_signal>(timeout_tag, timeout_signal{seq}));
        } catch (...) {
          // Out of memory: the receive waits for a message instead (documented OOM limitation).
        }
      }
    }
    // (else it was cancelled from elsewhere and is on its way here through handed_back_)
    e = after;
  }
  while (to_deliver != nullptr) {
    auto* const s = static_cast<send_after_timer*>(to_deliver);
    to_deliver = to_deliver->next;
    const pid target = s->target;
    message_node* const msg = s->msg.release();
    finish(rt, s);
    (void)deliver(rt, target, msg);  // (a target that has exited drops it)
    bump(owned_, -1);                // delivered before it stops counting as pending
  }
  return fired;
}

void worker_timers::discard() noexcept {
  // Every send_after timer not ended yet is in refs_, handed back or not; the handed-back
  // receive timeouts are this wheel's to free.
  timer_entry* e = handed_back_.exchange(nullptr, std::memory_order_acquire);
  while (e != nullptr) {
    timer_entry* const after = e->handed_back;
    if (e->type == timer_entry::kind::receive_timeout) free_entry(e);
    e = after;
  }
  for (purge_request* q = purges_.exchange(nullptr, std::memory_order_acquire); q != nullptr;) {
    purge_request* const after = q->next;
    deallocate(q, sizeof(purge_request));
    q = after;
  }
  refs_.for_each([](send_after_timer* s) { free_send_after(s); });
  refs_.clear();
  by_target_.clear();
  wheel_.forget();
  owned_.store(0, std::memory_order_relaxed);
  drained_.store(0, std::memory_order_relaxed);
  handed_back_count_.store(0, std::memory_order_relaxed);
}

std::size_t worker_timers::pending() const noexcept {
  const std::size_t drained = drained_.load(std::memory_order_acquire);
  const std::size_t owned = owned_.load(std::memory_order_relaxed);
  const std::size_t handed = handed_back_count_.load(std::memory_order_relaxed);
  const std::size_t waiting = handed > drained ? handed - drained : 0;  // cancelled, not freed
  return owned > waiting ? owned - waiting : 0;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
