#include "worker_timers.hpp"

#include <time.h>

#include <chrono>
#include <new>

#include <beamlet/core/detail/allocator.hpp>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_NAMESPACE
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

bool worker_timers::cancel_from_elsewhere(timer_entry* e) noexcept {
  auto expected = timer_entry::state::armed;
  if (!e->status.compare_exchange_strong(expected, timer_entry::state::cancelled,
                                         std::memory_order_acq_rel, std::memory_order_acquire))
    return false;
  handed_back_count_.fetch_add(1, std::memory_order_relaxed);
  timer_entry* head = handed_back_.load(std::memory_order_relaxed);
  do {
    e->handed_back = head;
  } while (!handed_back_.compare_exchange_weak(head, e, std::memory_order_release,
                                               std::memory_order_relaxed));
  return true;
}

void worker_timers::free_handed_back() noexcept {
  timer_entry* e = handed_back_.exchange(nullptr, std::memory_order_acquire);
  std::size_t n = 0;
  while (e != nullptr) {
    timer_entry* const after = e->handed_back;
    if (e->place != timer_entry::unplaced) wheel_.remove(e);  // (else expire() took it out)
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

std::size_t worker_timers::poll(runtime_core& rt, clock_read how) noexcept {
  if (handed_back_.load(std::memory_order_relaxed) != nullptr) free_handed_back();
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
  for (timer_entry* e = wheel_.expire(now); e != nullptr;) {
    // Read everything first: once the status says fired, the entry is its process's again.
    timer_entry* const after = e->next;
    const pid target = e->target;
    const std::uint32_t seq = e->seq;
    auto expected = timer_entry::state::armed;
    if (e->status.compare_exchange_strong(expected, timer_entry::state::fired,
                                          std::memory_order_acq_rel, std::memory_order_relaxed)) {
      bump(owned_, -1);
      ++fired;
      try {
        deliver(rt, target, make_node<timeout_signal>(timeout_tag, timeout_signal{seq}));
      } catch (...) {
        // Out of memory: the receive waits for a message instead (documented OOM limitation).
      }
    }
    // (else it was cancelled from elsewhere and is on its way here through handed_back_)
    e = after;
  }
  return fired;
}

void worker_timers::discard() noexcept {
  timer_entry* e = handed_back_.exchange(nullptr, std::memory_order_acquire);
  while (e != nullptr) {
    timer_entry* const after = e->handed_back;
    free_entry(e);
    e = after;
  }
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
BEAMLET_END_NAMESPACE
