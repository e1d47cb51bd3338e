// Scheduler threads.
//
// Each worker owns a FIFO ring (run_queue.hpp) and a one-process "next" slot. A process woken by
// a message sent from a worker, or spawned by one, goes into that worker's next slot, so a
// request/reply pair or a spawn-and-wait keeps running on one core with no cross-thread hand-off
// (the slot is not stealable); the previous occupant moves to the ring. Yielding processes go
// to the back of the ring. Idle
// workers steal half of a victim's ring, and look at the global queue, which receives wake-ups
// from non-worker threads and ring overflow. The next-slot chain is capped so two processes
// ping-ponging cannot starve the ring, and the global queue is polled every 61 runs, and also
// as soon as it has gone unserved for global_max_wait, so it cannot starve either: a process
// spawned or woken from an outside thread waits at most about global_max_wait plus one run of
// whatever process each worker is running (runs are bounded by the reduction budget).
//
// A worker with nothing to do spins briefly, then parks on a futex and uses no CPU, until work
// pushed where it could take it wakes it (at most one wake-up per process run) or until the
// earliest receive timeout in its own timer wheel is due (worker_timers.hpp). Between runs it
// fires the timeouts that are due, reading the clock only while it has any pending (the
// kernel's coarse clock first, a few ns, and the steady clock only when one may be due).
//
// Where a layer installs a scheduler_io (beamlet/core/detail/scheduler_io.hpp: the network
// layer does), each worker also runs its own event loop: it polls it between runs and while it
// spins, and parks in it instead of on the futex.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/scheduler_io.hpp>

#include "epoch.hpp"
#include "run_queue.hpp"
#include "thread_safety.hpp"
#include "worker_timers.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class runtime_core;
class scheduler;
struct proc;

/// Counters of events on one thread (a worker's, or the shared cell for outside threads):
/// exits by class (shutdown, killed, other: a normal exit counts nothing, the total of exits
/// being known from the process table), messages moved into queues.
struct event_counters {
  std::atomic<std::uint64_t> exits[3]{};
  std::atomic<std::uint64_t> delivered{0};
};

class worker {
 public:
  worker(scheduler& s, unsigned i, epoch_domain::record& r) noexcept;

  scheduler& sched;
  const unsigned index;
  epoch_domain::record& rec;
  epoch_domain::bag retired;

  run_queue ring;
  proc* next_slot = nullptr;
  unsigned next_streak = 0;
  bool pushed = false;          // made work stealable during the current run
  bool notified_early = false;  // already woke a sibling during the current run
  bool io_pending = false;      // a process asked for I/O during the current run
  std::uint64_t ticks = 0;
  std::uint64_t rng;
  std::atomic<std::uint32_t> sleep_word{0};
  /// In the idle list and about to sleep (or asleep): wake_worker's check before its lock.
  std::atomic<bool> sleeping{false};
  std::thread thread;
  /// The thread's id for the kernel (gettid), set as it starts: what /proc/self/task lists, so
  /// that an observer can read the thread's CPU time (the console's utilisation).
  std::atomic<int> tid{0};
  /// The receive timeouts armed on this thread (worker_timers.hpp).
  worker_timers timers;
  /// Written by this worker only (load + store); read by stats_of from any thread. On a line
  /// of its own: the fields above are read and written by the other workers (stealing,
  /// waking), and a counter sharing their line would make every bump a false-sharing miss.
  alignas(64) event_counters counters;
  /// Where this worker's thread keeps the process it is running (process_run.cpp), which is
  /// how process_info tells running from runnable without a run paying for a flag of its own.
  std::atomic<const std::atomic<proc*>*> running_slot{nullptr};

  /// Queues `p` behind this worker's other runnable processes.
  void push_back(proc* p);
  /// Makes `p` the next process this worker runs.
  void push_next(proc* p);
};

/// The worker running on this thread, or null (also while the worker is parked in its
/// scheduler_io's wait: its thread then counts as an outside thread).
worker* current_worker() noexcept;

class scheduler {
 public:
  scheduler(runtime_core& rt, unsigned workers);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  void start();
  /// Stops and joins the workers. Processes still queued are not run again.
  void stop() noexcept;

  /// Makes a process runnable after a wake-up (a push replaced the blocked mark).
  void wake(proc* p);
  /// Makes a newly spawned process runnable.
  void spawned(proc* p);
  /// Wakes worker `index` if it sleeps (another thread asked something of its timers).
  void wake_worker(unsigned index);
  /// Installs (null: removes) the workers' I/O loops (detail/scheduler_io.hpp).
  void install_io(scheduler_io* io) noexcept;

  unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()); }
  runtime_core& rt() noexcept { return rt_; }
  /// Processes queued anywhere (approximate; for shutdown bookkeeping and tests).
  std::size_t queued() const noexcept;
  /// Calls f(const worker&) for each worker (for statistics; racy reads only).
  template <class F>
  void for_each_worker(F&& f) const {
    for (const auto& w : workers_) f(*w);
  }
  /// The timers of worker `index` (for cancelling from another thread).
  worker_timers& timers_of(std::uint16_t index) noexcept { return workers_[index]->timers; }
  std::size_t global_queued() const noexcept {
    return global_size_.load(std::memory_order_relaxed);
  }
  /// Drops every queued entry without running it (after stop()).
  void clear_queues() noexcept;

 private:
  friend class worker;

  void run(worker& w);
  proc* next(worker& w);
  proc* steal(worker& w);
  proc* pop_global(worker& w);
  void push_global(proc* const* ps, std::size_t n);
  void park(worker& w);
  bool has_visible_work(const worker& w) const noexcept;
  /// Wakes a parked worker if any (full barrier first: pairs with park()'s announcement).
  void notify_one();
  /// Wakes `w`, taken from the idle list with its sleep word set, wherever it sleeps.
  void rouse(worker& w) noexcept;
  void after_run(worker& w);
  void pin_threads() noexcept;

  runtime_core& rt_;
  std::vector<std::unique_ptr<worker>> workers_;

  // Pointers, not a list threaded through the processes: moving a batch to a ring touches no
  // process memory.
  mutex global_mu_;
  std::deque<proc*> global_ BEAMLET_GUARDED_BY(global_mu_);
  std::atomic<std::size_t> global_size_{0};
  /// Steady-clock nanoseconds since the global queue was last empty or last served: entries
  /// older than global_max_wait are taken before the local queues.
  std::atomic<std::int64_t> global_since_{0};

  mutex idle_mu_;
  std::vector<worker*> idle_ BEAMLET_GUARDED_BY(idle_mu_);
  std::atomic<std::uint32_t> sleepers_{0};
  std::atomic<std::uint32_t> spinning_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<scheduler_io*> io_{nullptr};
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
