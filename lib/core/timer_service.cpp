#include "timer_service.hpp"

#include <pthread.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>
#include <utility>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "scheduler.hpp"
#include "signals.hpp"
#include "timer_refs.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct timer_service::send_after_entry : timer_entry {
  send_after_entry() = default;
  send_after_entry(const send_after_entry&) = delete;
  send_after_entry& operator=(const send_after_entry&) = delete;
  // The rest of a chain goes one entry at a time: a million timers aimed at one pid must not
  // be a million nested destructor calls.
  ~send_after_entry() {
    std::unique_ptr<send_after_entry> rest = std::move(next_same);
    while (rest != nullptr) rest = std::move(rest->next_same);
  }

  node_ptr msg;
  std::uint64_t ref = 0;
  // The chain of timers aimed at the same pid: by_target_ owns its first entry, each entry the
  // next one.
  send_after_entry* prev_same = nullptr;
  std::unique_ptr<send_after_entry> next_same;
};

struct timer_service::impl {
  boost::asio::io_context io;
  boost::asio::steady_timer timer{io};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  std::thread thread;
};

timer_service::timer_service(runtime_core& rt) : rt_(rt), impl_(std::make_unique<impl>()) {}

timer_service::~timer_service() {
  stop();
}

void timer_service::start() {
  impl_->thread = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "beamlet-timer");
    impl_->io.run();
  });
  // Virtual time: the clock fires what is due each time it is advanced.
  if (rt_.options.clock != nullptr)
    clock_subscription_ = rt_.options.clock->subscribe([this] { on_wake(); });
}

void timer_service::stop() noexcept {
  if (clock_subscription_ != 0) {
    rt_.options.clock->unsubscribe(clock_subscription_);  // waits for an advance in progress
    clock_subscription_ = 0;
  }
  {
    lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  impl_->guard.reset();
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  lock_guard lock(mu_);
  for (timer_entry* e : heap_) e->heap_index = timer_entry::not_queued;
  heap_.clear();
  by_ref_.clear();
  by_target_.clear();  // the send_after timers, with their messages
}

// -- heap
// ------------------------------------------------------------------------------------------

void timer_service::place(timer_entry* e, std::uint32_t i) noexcept {
  heap_[i] = e;
  e->heap_index = i;
}

void timer_service::sift_up(std::uint32_t i) noexcept {
  timer_entry* e = heap_[i];
  while (i > 0) {
    const std::uint32_t parent = (i - 1) / 2;
    if (heap_[parent]->deadline <= e->deadline) break;
    place(heap_[parent], i);
    i = parent;
  }
  place(e, i);
}

void timer_service::sift_down(std::uint32_t i) noexcept {
  const auto n = static_cast<std::uint32_t>(heap_.size());
  timer_entry* e = heap_[i];
  for (;;) {
    std::uint32_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1]->deadline < heap_[child]->deadline) ++child;
    if (e->deadline <= heap_[child]->deadline) break;
    place(heap_[child], i);
    i = child;
  }
  place(e, i);
}

void timer_service::push_locked(timer_entry* e) {
  heap_.push_back(e);
  sift_up(static_cast<std::uint32_t>(heap_.size() - 1));
}

void timer_service::remove_locked(timer_entry* e) noexcept {
  const std::uint32_t i = e->heap_index;
  timer_entry* last = heap_.back();
  heap_.pop_back();
  e->heap_index = timer_entry::not_queued;
  if (last == e) return;
  place(last, i);
  sift_up(i);
  sift_down(last->heap_index);
}

// -- arming
// ----------------------------------------------------------------------------------------

void timer_service::arm_asio_locked() {
  // Caller holds mu_ and runs on the timer thread (or advances a manual clock). An infinite
  // timer (deadline max) is never due: with only those left, the timer thread sleeps until
  // something else is armed. In virtual time nothing is armed: advance() fires what is due.
  armed_for_ = clock_time::max();
  if (rt_.options.clock != nullptr) return;
  if (heap_.empty() || heap_.front()->deadline == clock_time::max()) return;
  armed_for_ = heap_.front()->deadline;
  impl_->timer.expires_at(armed_for_);
  impl_->timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) on_wake();
  });
}

void timer_service::request_rearm(clock_time deadline) {
  // Caller holds mu_. Only a deadline earlier than the one the timer sleeps for needs the timer
  // thread; later ones are picked up when it next wakes.
  if (deadline >= armed_for_ || stopped_ || rt_.options.clock != nullptr) return;
  armed_for_ = deadline;
  boost::asio::post(impl_->io, [this] {
    lock_guard lock(mu_);
    arm_asio_locked();
  });
}

void timer_service::arm(timer_entry* e) {
  if (!rt_.uses_manual_clock) {
    worker* w = current_worker();
    if (w != nullptr && &w->sched == &rt_.sched) {
      w->timers.arm(e);
      return;
    }
  }
  e->owner = timer_entry::shared_owner;
  lock_guard lock(mu_);
  push_locked(e);
  if (e->heap_index == 0) request_rearm(e->deadline);
}

bool timer_service::cancel(timer_entry*& e) noexcept {
  if (e->owner == timer_entry::shared_owner) return cancel_shared(e);
  worker* w = current_worker();
  if (w != nullptr && w->index == e->owner && &w->sched == &rt_.sched) return w->timers.cancel(e);
  if (!rt_.sched.timers_of(e->owner).cancel_from_elsewhere(e)) return false;
  e = nullptr;  // the owner frees it
  return true;
}

bool timer_service::cancel_shared(timer_entry* e) noexcept {
  lock_guard lock(mu_);
  if (e->heap_index == timer_entry::not_queued) return false;
  remove_locked(e);
  return true;
}

void timer_service::link_target_locked(std::unique_ptr<send_after_entry> e) {
  std::unique_ptr<send_after_entry>* head = by_target_.find(e->target.serial());
  if (head == nullptr) {
    const std::uint64_t serial = e->target.serial();
    by_target_.insert(serial, std::move(e));
    return;
  }
  (*head)->prev_same = e.get();
  e->next_same = std::move(*head);
  *head = std::move(e);
}

auto timer_service::unlink_target_locked(send_after_entry* e) noexcept
    -> std::unique_ptr<send_after_entry> {
  std::unique_ptr<send_after_entry> owned;
  if (e->next_same != nullptr) e->next_same->prev_same = e->prev_same;
  if (e->prev_same != nullptr) {
    owned = std::move(e->prev_same->next_same);
    e->prev_same->next_same = std::move(e->next_same);
  } else if (e->next_same != nullptr) {
    std::unique_ptr<send_after_entry>* head = by_target_.find(e->target.serial());
    owned = std::move(*head);
    *head = std::move(e->next_same);
  } else {
    by_target_.erase(e->target.serial(), &owned);
  }
  e->prev_same = nullptr;
  return owned;
}

namespace {
// Which bit of a process's timer_owners stands for timer owner `owner` (timer_refs.hpp): the
// shared heap has bit 0 to itself, the wheels share the other 31.
std::uint32_t owner_bit(std::uint32_t owner) noexcept {
  return owner == timer_ref::shared_owner ? 1u : 2u << ((owner - 1) % 31);
}
}  // namespace

ref timer_service::send_after(pid to, message_node* msg, timeout_value delay) {
  node_ptr owned_msg(msg);
  pin guard(rt_);
  proc* target = to ? rt_.table.lookup(to) : nullptr;
  if (target == nullptr || target->inbox.load(std::memory_order_seq_cst) == inbox_word::closed) {
    // BEAM cancels a timer aimed at a pid that is not alive at once.
    return ref(rt_.new_ref());
  }
  const clock_time deadline = deadline_after(rt_.now(), delay);
  worker* w = rt_.uses_manual_clock ? nullptr : current_worker();
  if (w != nullptr && &w->sched != &rt_.sched) w = nullptr;
  const std::uint32_t owner =
      w != nullptr ? static_cast<std::uint32_t>(w->index) + 1 : timer_ref::shared_owner;
  // Announce the owner before arming; exit_process closes the inbox before reading these
  // bits, so either the exit sees the bit and has the owner cancel, or we see the closed inbox
  // below (both seq_cst; a bit already set was set by a seq_cst read-modify-write, which the
  // acquire load orders before our inbox check).
  const std::uint32_t bit = owner_bit(owner);
  if ((target->timer_owners.load(std::memory_order_acquire) & bit) == 0)
    target->timer_owners.fetch_or(bit, std::memory_order_seq_cst);
  if (w != nullptr) {
    const std::uint64_t r = w->timers.send_after(rt_, to, owned_msg, deadline);
    if (target->inbox.load(std::memory_order_seq_cst) == inbox_word::closed) {
      pid ignored;
      (void)w->timers.cancel_send_after(rt_, r, ignored);
    }
    return ref(r);
  }

  auto owned = std::make_unique<send_after_entry>();
  send_after_entry* const e = owned.get();
  e->type = timer_entry::kind::send_after;
  e->target = to;
  e->msg = std::move(owned_msg);
  e->ref = timer_ref::make(timer_ref::shared_owner);
  e->deadline = deadline;
  const std::uint64_t r = e->ref;
  {
    lock_guard lock(mu_);
    if (stopped_) return ref(r);  // (the entry goes with its message, after the lock)
    // In an order where each failure has only the earlier steps to undo; the entry and its
    // message go with whichever step owns them when it throws.
    link_target_locked(std::move(owned));
    try {
      by_ref_.insert(r, e);
      try {
        push_locked(e);
      } catch (...) {
        by_ref_.erase(r);
        throw;
      }
    } catch (...) {
      unlink_target_locked(e);
      throw;
    }
    if (e->heap_index == 0) request_rearm(e->deadline);
  }
  if (target->inbox.load(std::memory_order_seq_cst) == inbox_word::closed)
    (void)cancel_send_after(ref(r));
  return ref(r);
}

std::optional<clock_time::duration> timer_service::cancel_send_after(ref r) noexcept {
  if (!timer_ref::is_timer(r.value())) return std::nullopt;
  const std::uint32_t owner = timer_ref::owner_of(r.value());
  if (owner == timer_ref::shared_owner) return cancel_shared_send_after(r);
  if (owner > rt_.sched.size()) return std::nullopt;  // (another runtime's)
  const auto index = static_cast<std::uint16_t>(owner - 1);
  pin guard(rt_);
  pid target;
  std::optional<clock_time> deadline;
  worker* w = current_worker();
  if (w != nullptr && w->index == index && &w->sched == &rt_.sched)
    deadline = w->timers.cancel_send_after(rt_, r.value(), target);
  else {
    bool wake = false;
    deadline = rt_.sched.timers_of(index).cancel_send_after_from_elsewhere(r.value(), target, wake);
    // (An owner asleep until its deadline, an hour away perhaps, would keep the message.)
    if (wake) rt_.sched.wake_worker(index);
  }
  if (!deadline) return std::nullopt;
  // A timer whose target has exited was cancelled by that exit, as far as anyone can tell
  // (its owner may not have got round to it yet).
  if (!alive(target)) return std::nullopt;
  return time_left(*deadline);
}

clock_time::duration timer_service::time_left(clock_time deadline) const noexcept {
  if (deadline == clock_time::max()) return clock_time::duration::max();
  const clock_time::duration left = deadline - rt_.now();
  return left > clock_time::duration::zero() ? left : clock_time::duration::zero();
}

std::optional<clock_time::duration> timer_service::cancel_shared_send_after(ref r) noexcept {
  std::unique_ptr<send_after_entry> e;  // its message is destroyed without the lock
  {
    lock_guard lock(mu_);
    send_after_entry* found = nullptr;
    if (!by_ref_.erase(r.value(), &found)) return std::nullopt;
    remove_locked(found);
    e = unlink_target_locked(found);
  }
  if (!alive(e->target)) return std::nullopt;  // (as in a wheel: see cancel_send_after)
  return time_left(e->deadline);
}

bool timer_service::alive(pid target) const noexcept {
  pin guard(rt_);
  proc* p = rt_.table.lookup(target);
  return p != nullptr && p->inbox.load(std::memory_order_seq_cst) != inbox_word::closed;
}

void timer_service::cancel_aimed_at(pid target, std::uint32_t owners) noexcept {
  if ((owners & 1u) != 0) cancel_shared_aimed_at(target);
  if ((owners & ~1u) == 0) return;
  worker* self = current_worker();
  if (self != nullptr && &self->sched != &rt_.sched) self = nullptr;
  const unsigned n = rt_.sched.size();
  for (unsigned i = 0; i < n; ++i) {
    if ((owners & owner_bit(i + 1)) == 0) continue;
    if (self != nullptr && self->index == i) {
      self->timers.cancel_aimed_at(rt_, target.serial());
    } else if (rt_.sched.timers_of(static_cast<std::uint16_t>(i))
                   .request_cancel_aimed_at(target.serial())) {
      rt_.sched.wake_worker(i);  // (a worker asleep until its deadline would keep the memory)
    }
  }
}

void timer_service::cancel_shared_aimed_at(pid target) noexcept {
  // Declared before the lock, so the chain and its messages go after it is released.
  std::unique_ptr<send_after_entry> chain;
  lock_guard lock(mu_);
  if (!by_target_.erase(target.serial(), &chain)) return;
  for (send_after_entry* e = chain.get(); e != nullptr; e = e->next_same.get()) {
    by_ref_.erase(e->ref);
    remove_locked(e);
  }
}

std::size_t timer_service::pending() const noexcept {
  std::size_t n = 0;
  rt_.sched.for_each_worker([&](const worker& w) { n += w.timers.pending(); });
  lock_guard lock(mu_);
  return n + heap_.size();
}

// -- firing (timer thread)
// -------------------------------------------------------------------------

// Re-arming the timer can throw only for want of memory (Asio allocates the wait). A timer thread
// that cannot arm would leave every later timeout unfired, a silent hang, so the program stops.
void timer_service::on_wake() noexcept {  // NOLINT(bugprone-exception-escape)
  struct fired {
    pid target;
    std::uint32_t seq;
    std::unique_ptr<send_after_entry> entry;  // null for a receive timeout
  };
  std::vector<fired> due;
  {
    lock_guard lock(mu_);
    const clock_time now = rt_.now();
    while (!heap_.empty() && heap_.front()->deadline <= now) {
      timer_entry* e = heap_.front();
      remove_locked(e);
      // Copy what delivery needs: once mu_ is released a receive-timeout entry may be re-armed
      // by its process, or freed with it.
      if (e->type == timer_entry::kind::send_after) {
        auto* s = static_cast<send_after_entry*>(e);
        by_ref_.erase(s->ref);
        due.push_back({s->target, 0, unlink_target_locked(s)});
      } else {
        due.push_back({e->target, e->seq, nullptr});
      }
    }
    arm_asio_locked();
  }
  pin guard(rt_);
  for (const fired& f : due) {
    if (f.entry != nullptr) {
      deliver(rt_, f.target, f.entry->msg.release());
    } else {
      try {
        deliver(rt_, f.target, make_node<timeout_signal>(timeout_tag, timeout_signal{f.seq}));
      } catch (...) {
        // Out of memory: the receive waits for a message instead (documented OOM limitation).
      }
    }
  }
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
