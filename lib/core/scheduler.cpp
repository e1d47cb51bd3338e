#include "scheduler.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include <beamlet/core/detail/allocator.hpp>

#include "futex.hpp"
#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "spinlock.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

thread_local worker* tls_worker = nullptr;
// Set while this worker is parked in its scheduler_io's wait: the handlers run there treat the
// thread as an outside thread (it has left the epoch), but wake processes onto this worker.
thread_local bool tls_io_parked = false;

// How many processes a worker may run from its next slot in a row before it takes the oldest
// process of its ring instead (fairness against a ping-pong pair).
constexpr unsigned next_slot_limit = 16;
// A worker polls the global queue first every this many runs (a prime, as in Tokio/Go)...
constexpr std::uint64_t global_poll_interval = 61;
// ...and whenever it has gone unserved this long, however long the runs are.
constexpr std::int64_t global_max_wait_ns = 1'000'000;

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// Quiescent-state announcement interval (runs), for epoch reclamation.
constexpr std::uint64_t quiescent_interval = 16;
// How soon a worker that goes to sleep with objects retired but not yet freed looks again.
constexpr std::chrono::milliseconds retired_recheck{50};
// Spin rounds before parking; each round looks for work everywhere.
constexpr int spin_rounds = 64;
// A busy worker polls its I/O loop every this many runs (and after any run that asked for
// I/O): readiness waits at most that many runs, and a poll (a system call once the loop has
// had a descriptor) costs a fraction of them.
constexpr std::uint64_t io_poll_interval = 31;

// Makes this worker's thread-local tallies visible to stats_of (between runs, before parking
// and when the worker stops): a runs's counting stays a plain thread-local add.
void publish_counters(worker& w) noexcept {
  w.counters.delivered.store(messages_moved, std::memory_order_relaxed);
}

std::uint64_t xorshift(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

}  // namespace

worker* current_worker() noexcept {
  return tls_io_parked ? nullptr : tls_worker;
}

worker::worker(scheduler& s, unsigned i, epoch_domain::record& r) noexcept
    : sched(s),
      index(i),
      rec(r),
      timers(static_cast<std::uint16_t>(i), std::chrono::steady_clock::now()) {}

void worker::push_back(proc* p) {
  if (!ring.push(p)) {
    // Ring full: move its older half, then p, to the global queue in one lock.
    proc* batch[run_queue::capacity / 2 + 1];
    std::size_t n = 0;
    while (n < run_queue::capacity / 2) {
      proc* q = ring.pop();
      if (q == nullptr) break;
      batch[n++] = q;
    }
    batch[n++] = p;
    sched.push_global(batch, n);
  }
  pushed = true;
  // A run that makes a lot of work (a DOWN fan-out, a burst of spawns) shares it while it is
  // still going, instead of only when it ends.
  if (!notified_early && ring.size() >= run_queue::capacity / 8) {
    notified_early = true;
    sched.notify_one();
  }
}

void worker::push_next(proc* p) {
  if (next_slot != nullptr) push_back(next_slot);
  next_slot = p;
}

scheduler::scheduler(runtime_core& rt, unsigned workers) : rt_(rt) {
  workers_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) {
    auto w = std::make_unique<worker>(*this, i, rt.epoch.worker_record(i));
    w->rng = 0x9E3779B97F4A7C15ull * (i + 1);
    workers_.push_back(std::move(w));
  }
}

scheduler::~scheduler() {
  stop();
  for (auto& w : workers_) w->timers.discard();
  // Destroyed with the runtime core: no thread can reach a retired process any more.
  for (auto& w : workers_) rt_.epoch.free_all(w->retired);
}

void scheduler::start() {
  for (auto& w : workers_) {
    worker* wp = w.get();
    wp->thread = std::thread([this, wp] {
      // Named for top -H and perf: "beamlet-sched-N", or "beamlet-sch-N" from N = 10 on (a
      // thread's name holds 15 characters; a longer one is refused).
      std::string name = "beamlet-sched-" + std::to_string(wp->index);
      if (name.size() > 15) name = "beamlet-sch-" + std::to_string(wp->index);
      ::pthread_setname_np(::pthread_self(), name.c_str());
      wp->tid.store(static_cast<int>(::syscall(SYS_gettid)), std::memory_order_release);
      run(*wp);
    });
  }
  if (rt_.options.pin_schedulers) pin_threads();
}

void scheduler::pin_threads() noexcept {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.empty()) return;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[i % cpus.size()], &one);
    (void)pthread_setaffinity_np(workers_[i]->thread.native_handle(), sizeof one, &one);
  }
}

void scheduler::stop() noexcept {
  if (stopping_.exchange(true)) {
    // Second call (destructor after shutdown): threads are already joined.
  }
  {
    lock_guard lock(idle_mu_);
    for (worker* w : idle_) {
      w->sleep_word.store(1, std::memory_order_release);
      rouse(*w);
    }
    idle_.clear();
    sleepers_.store(0);
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void scheduler::install_io(scheduler_io* io) noexcept {
  scheduler_io* const old = io_.exchange(io, std::memory_order_seq_cst);
  // Every parked worker wakes and parks again where it should. One that parks after this lock
  // section reads io_ after it. One already in the idle list may have read io_ before the
  // exchange (it sleeps on its futex, or in the old loop) or after it (it sleeps in the new
  // loop): each of those wakes it.
  std::vector<worker*> woken;
  {
    lock_guard lock(idle_mu_);
    for (worker* w : idle_) w->sleep_word.store(1, std::memory_order_release);
    woken.swap(idle_);
    sleepers_.fetch_sub(static_cast<std::uint32_t>(woken.size()), std::memory_order_relaxed);
  }
  for (worker* w : woken) {
    futex_wake_one(w->sleep_word);
    if (old != nullptr) old->interrupt(w->index);
    if (io != nullptr) io->interrupt(w->index);
  }
}

void scheduler::rouse(worker& w) noexcept {
  futex_wake_one(w.sleep_word);
  // Read after the idle list's lock that took w out of it: a worker that parked in the loop
  // pushed itself to that list after the loop was installed, so this load sees the loop.
  if (scheduler_io* io = io_.load(std::memory_order_acquire)) io->interrupt(w.index);
}

void scheduler::wake(proc* p) {
  // Like Go's runnext: a process woken (or spawned) by a worker runs as soon as the current
  // one suspends, on the same core, and is not stolen meanwhile. A burst of wake-ups or spawns
  // pushes the earlier ones to the ring, where idle workers take them. From other threads it
  // goes through the global queue. A worker parked in its I/O loop (tls_io_parked) still
  // takes what its handlers wake: it is its own thread, and it leaves the park to run them.
  worker* w = tls_worker;
  if (w != nullptr && &w->sched == this) {
    w->push_next(p);
  } else {
    push_global(&p, 1);
    notify_one();
  }
}

void scheduler::spawned(proc* p) {
  wake(p);
}

void scheduler::push_global(proc* const* ps, std::size_t n) {
  lock_guard lock(global_mu_);
  if (global_.empty()) global_since_.store(now_ns(), std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i) global_.push_back(ps[i]);
  global_size_.fetch_add(n, std::memory_order_release);
}

proc* scheduler::pop_global(worker& w) {
  if (global_size_.load(std::memory_order_acquire) == 0) return nullptr;
  lock_guard lock(global_mu_);
  if (global_.empty()) return nullptr;
  // Take a share of the queue into the ring, so the next runs need no lock.
  const std::size_t share =
      std::min<std::size_t>(global_.size() / workers_.size() + 1, run_queue::capacity / 2);
  proc* p = global_.front();
  global_.pop_front();
  std::size_t taken = 1;
  while (taken < share && !global_.empty() && w.ring.push(global_.front())) {
    global_.pop_front();
    ++taken;
  }
  global_size_.fetch_sub(taken, std::memory_order_release);
  if (!global_.empty()) global_since_.store(now_ns(), std::memory_order_relaxed);
  if (taken > 1) w.pushed = true;
  return p;
}

proc* scheduler::steal(worker& w) {
  const std::size_t n = workers_.size();
  if (n < 2) return nullptr;
  const std::size_t start = static_cast<std::size_t>(xorshift(w.rng) % n);
  for (std::size_t i = 0; i < n; ++i) {
    worker& victim = *workers_[(start + i) % n];
    if (&victim == &w) continue;
    if (proc* p = victim.ring.steal_into(w.ring)) {
      if (!w.ring.empty()) w.pushed = true;
      return p;
    }
  }
  return nullptr;
}

proc* scheduler::next(worker& w) {
  ++w.ticks;
  // The clock is read only while the global queue holds something: a worker busy with its own
  // processes pays one relaxed load per run otherwise.
  if (global_size_.load(std::memory_order_relaxed) != 0 &&
      (w.ticks % global_poll_interval == 0 ||
       now_ns() - global_since_.load(std::memory_order_relaxed) > global_max_wait_ns)) {
    if (proc* p = pop_global(w)) return p;
  }
  if (w.next_slot != nullptr) {
    if (w.next_streak < next_slot_limit) {
      ++w.next_streak;
      return std::exchange(w.next_slot, nullptr);
    }
    w.push_back(std::exchange(w.next_slot, nullptr));
  }
  w.next_streak = 0;
  if (proc* p = w.ring.pop()) return p;
  if (proc* p = pop_global(w)) return p;
  return steal(w);
}

bool scheduler::has_visible_work(const worker& w) const noexcept {
  if (global_size_.load(std::memory_order_seq_cst) != 0) return true;
  for (auto& other : workers_)
    if (other.get() != &w && other->ring.size() > 1) return true;
  return false;
}

void scheduler::notify_one() {
  // The RMW is a full barrier: the work we just published is visible to a worker that
  // announced itself in sleepers_ before this point, and we see any announcement made before
  // it (the Dekker pattern with park()).
  if (sleepers_.fetch_add(0, std::memory_order_seq_cst) == 0) return;
  if (spinning_.load(std::memory_order_relaxed) != 0) return;  // a spinner will find it
  worker* w = nullptr;
  {
    lock_guard lock(idle_mu_);
    if (idle_.empty()) return;
    w = idle_.back();
    idle_.pop_back();
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    w->sleep_word.store(1, std::memory_order_release);
  }
  rouse(*w);
}

void scheduler::wake_worker(unsigned index) {
  worker& w = *workers_[index];
  // The requester pushed its request (seq_cst) before this load; park sets `sleeping` before
  // it looks for requests. So either it sees the request, or we see it sleeping: the idle
  // list's lock is taken only for a worker that sleeps.
  if (!w.sleeping.load(std::memory_order_seq_cst)) return;
  {
    lock_guard lock(idle_mu_);
    const auto it = std::find(idle_.begin(), idle_.end(), &w);
    if (it == idle_.end()) return;  // awake: it looks at its timers after its next run or park
    idle_.erase(it);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    w.sleep_word.store(1, std::memory_order_release);
  }
  rouse(w);
}

void scheduler::after_run(worker& w) {
  w.notified_early = false;
  // The clock is read only while this thread has timers pending.
  if (w.timers.active()) w.timers.poll(rt_);
  // The I/O the run asked for (a recv's request, a close), and readiness now and then: the
  // handlers wake processes into this worker's next slot and ring.
  const bool poll_due = w.ticks % io_poll_interval == 0;
  if (w.io_pending || poll_due) {
    w.io_pending = false;
    if (scheduler_io* io = io_.load(std::memory_order_acquire)) {
      if (poll_due)
        io->poll(w.index);
      else
        io->flush(w.index);
    }
  }
  if (w.pushed) {
    w.pushed = false;
    if (w.ring.size() > 0) notify_one();
  }
  if (w.ticks % quiescent_interval == 0) {
    publish_counters(w);
    rt_.epoch.enter(w.rec);  // quiescent state: holds no process pointer between runs
    if (!w.retired.empty()) {
      rt_.epoch.try_advance();
      rt_.epoch.collect(w.retired);
    }
    rt_.epoch.collect_shared();
  }
}

void scheduler::park(worker& w) {
  publish_counters(w);
  // Spin first: a reply or a wake-up often comes within microseconds, and a futex round trip
  // costs more than that.
  spinning_.fetch_add(1, std::memory_order_relaxed);
  scheduler_io* const spin_io = io_.load(std::memory_order_acquire);
  for (int i = 0; i < spin_rounds; ++i) {
    // A packet often comes within the spin (the reply to what a process just sent): its
    // handler wakes the waiting process here, with no futex and no lock.
    if (spin_io != nullptr && spin_io->poll(w.index) != 0 &&
        (w.next_slot != nullptr || !w.ring.empty())) {
      spinning_.fetch_sub(1, std::memory_order_relaxed);
      // A notify skipped because we spun ("a spinner will find it") is passed on.
      if (global_size_.load(std::memory_order_relaxed) != 0) notify_one();
      return;
    }
    if (global_size_.load(std::memory_order_relaxed) != 0 || has_visible_work(w) ||
        stopping_.load(std::memory_order_relaxed)) {
      spinning_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    for (int k = 0; k < 32; ++k) cpu_relax();
  }
  spinning_.fetch_sub(1, std::memory_order_relaxed);

  // A timeout due now is work; one due later bounds the sleep.
  if (w.timers.active() && w.timers.poll(rt_, worker_timers::clock_read::precise) != 0) return;
  clock_time wake_by = w.timers.next_due();

  // Nothing to free may wait on us while we sleep: reclaim what we can, then go inactive.
  rt_.epoch.try_advance();
  rt_.epoch.collect(w.retired);
  // Memory that came free (a spike of processes has ended) goes back to the system while we
  // idle; a trim not due yet bounds the sleep like a timer.
  if (const auto trim_in = trim_when_idle(); trim_in != std::chrono::nanoseconds::max())
    wake_by = std::min(wake_by, std::chrono::steady_clock::now() + trim_in);
  // What we retired and could not free yet (the other workers had not passed a quiescent state)
  // would otherwise wait for our next wake-up, however far, and keep its memory till then.
  if (!w.retired.empty())
    wake_by = std::min(wake_by, std::chrono::steady_clock::now() + retired_recheck);
  if (rt_.table.trim_wanted()) (void)rt_.table.trim();
  rt_.epoch.leave(w.rec);
  {
    lock_guard lock(idle_mu_);
    w.sleep_word.store(0, std::memory_order_relaxed);
    idle_.push_back(&w);
  }
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  // Read after the idle list's lock: see install_io and rouse.
  scheduler_io* const io = io_.load(std::memory_order_acquire);
  bool woken = false;
  // A request to the timers made before `sleeping` is set is seen here; one made after finds
  // us sleeping, and in the idle list, and wakes us (scheduler::wake_worker).
  w.sleeping.store(true, std::memory_order_seq_cst);
  if (!stopping_.load(std::memory_order_seq_cst) && !has_visible_work(w) && w.ring.empty() &&
      !w.timers.requests_waiting()) {
    for (;;) {
      if (w.sleep_word.load(std::memory_order_acquire) != 0) {
        woken = true;
        break;
      }
      if (io != nullptr) {
        if (wake_by != clock_time::max() && std::chrono::steady_clock::now() >= wake_by) break;
        tls_io_parked = true;
        io->wait(w.index, wake_by);
        tls_io_parked = false;
        // A handler woke one of our processes (into our own queues: see wake()).
        if (w.next_slot != nullptr || !w.ring.empty()) break;
        continue;
      }
      if (wake_by == clock_time::max()) {
        futex_wait(w.sleep_word, 0, std::chrono::nanoseconds(-1));
        continue;
      }
      const auto left = wake_by - std::chrono::steady_clock::now();
      if (left <= clock_time::duration::zero()) break;  // a timer is due
      futex_wait(w.sleep_word, 0, left);
    }
  }
  w.sleeping.store(false, std::memory_order_relaxed);
  if (!woken) {
    lock_guard lock(idle_mu_);
    if (auto it = std::find(idle_.begin(), idle_.end(), &w); it != idle_.end()) {
      idle_.erase(it);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  rt_.epoch.enter(w.rec);
}

void scheduler::run(worker& w) {
  tls_worker = &w;
  w.running_slot.store(running_slot(), std::memory_order_release);
  this_thread_counters = thread_counters{&rt_, &w.counters};
  rt_.epoch.enter(w.rec);
  while (!stopping_.load(std::memory_order_relaxed)) {
    proc* p = next(w);
    if (p == nullptr) {
      park(w);
      continue;
    }
    // The next process is most likely in the ring: start loading it while this one runs.
    if (proc* q = w.ring.peek()) {
      __builtin_prefetch(q);
      __builtin_prefetch(reinterpret_cast<char*>(q) + 64);
    }
    run_process(w, p);
    after_run(w);
  }
  publish_counters(w);
  rt_.epoch.leave(w.rec);
  tls_worker = nullptr;
  this_thread_counters = thread_counters{};
}

std::size_t scheduler::queued() const noexcept {
  std::size_t n = global_size_.load(std::memory_order_relaxed);
  for (auto& w : workers_) n += w->ring.size() + (w->next_slot != nullptr ? 1 : 0);
  return n;
}

void scheduler::clear_queues() noexcept {
  for (auto& w : workers_) {
    while (w->ring.pop() != nullptr) {
    }
    w->next_slot = nullptr;
  }
  lock_guard lock(global_mu_);
  global_.clear();
  global_size_.store(0);
}

void install_hook(runtime_core& rt, scheduler_io* io) noexcept {
  rt.sched.install_io(io);
}

int current_scheduler(const runtime_core& rt) noexcept {
  const worker* w = current_worker();
  return w != nullptr && &w->sched.rt() == &rt ? static_cast<int>(w->index) : -1;
}

void request_poll() noexcept {
  if (worker* w = current_worker()) w->io_pending = true;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
