// The runtime's shared state. One per beamlet::runtime; scoped processes hold a reference too, so
// it outlives a runtime object destroyed before a mailbox (the mailbox then reports `shutdown`).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <beamlet/core/runtime.hpp>

#include <beamlet/core/detail/remote.hpp>
#include <beamlet/core/extension.hpp>

#include "epoch.hpp"
#include "process_table.hpp"
#include "registry.hpp"
#include "scheduler.hpp"
#include "thread_safety.hpp"
#include "timer_service.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class runtime_core {
 public:
  explicit runtime_core(const runtime_options& options);
  ~runtime_core();  // NOLINT(bugprone-exception-escape): see its definition

  void start();
  void shutdown();

  /// Retires a dead process's memory from whatever thread ended it.
  void retire(proc* p) noexcept;
  /// Retires any object some thread may still read without a lock (a registry table, say):
  /// `free` runs once every pinned thread has moved on.
  void retire(void* object, void (*free)(void*) noexcept) noexcept;

  /// The runtime's time: the steady clock unless runtime_options::clock says otherwise.
  clock_time now() const noexcept {
    return uses_manual_clock ? options.clock->now() : std::chrono::steady_clock::now();
  }

  /// A reference unique in this program (not just this runtime).
  static std::uint64_t new_ref() noexcept;

  // Shared ownership by the runtime object and by scoped processes.
  void acquire() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  const runtime_options options;
  const bool uses_manual_clock;
  epoch_domain epoch;
  process_table table;
  registry names{*this};
  /// Processes' labels (basic_process::set_label), by pid serial: set rarely, read by
  /// process_info, so one lock for all; an exit takes it only if the process has labels.
  struct label_table {
    mutex mu;
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::string, std::string>>> by_serial
        BEAMLET_GUARDED_BY(mu);
  } labels;
  timer_service timers;
  scheduler sched;

  /// No new processes once the grace period of shutdown is over.
  std::atomic<bool> closed{false};
  /// The layers' hooks (detail/layer_hooks.hpp): null where none is installed. Emptied
  /// before the extensions that own them are destroyed. Read with one acquire load and no
  /// lock; installing a hook or setting the event levels takes hooks_mu, so that a slot and
  /// the levels that go with it change together.
  struct hook_table {
    std::atomic<event_sink*> events{nullptr};    ///< the logger
    std::atomic<remote_hooks*> remote{nullptr};  ///< a running dist node
  } hooks;
  mutex hooks_mu;

  // -- observation (lib/core/observation.cpp)
  // ------------------------------------------------------
  /// The least severe level the event sink takes, -1 with no sink: the one load that decides
  /// whether an event is built at all.
  std::atomic<int> event_level{-1};
  /// The same for reports: -1 when reports are off.
  std::atomic<int> report_level{-1};
  /// The system monitor's thresholds; 0 means off. `active` says which alarms are on
  /// (monitor_queue, monitor_schedule): a run loads it once, so an unused monitor costs a run
  /// one relaxed load and a send nothing.
  struct monitor_state {
    std::atomic<std::uint8_t> active{0};
    std::atomic<std::size_t> long_queue_enable{0};
    std::atomic<std::size_t> long_queue_disable{0};
    std::atomic<std::int64_t> long_schedule_ns{0};
    std::atomic<std::uint64_t> subscriber{0};
  } monitor;
  /// Live scoped processes (outside threads in the table), so shutdown knows how many
  /// processes it need not wait for without scanning the table.
  std::atomic<std::size_t> scoped_processes{0};
  /// Set while shutdown waits for the processes to end: each exit then notifies drain_cv
  /// (otherwise an exit pays one load for it). The exit's table removal and this load, and
  /// shutdown's store and its load of the count, are sequentially consistent, so either the
  /// exit sees the flag or shutdown sees the exit.
  std::atomic<bool> draining{false};
  mutex drain_mu;
  std::condition_variable drain_cv;
  /// Mailboxes ever opened, and processes allocated but never started (their body's copy
  /// threw): with the table's insert count they give the spawn and exit totals.
  std::atomic<std::uint64_t> scoped_processes_opened{0};
  std::atomic<std::uint64_t> discarded{0};
  /// Messages bounded mailboxes refused or dropped (an atomic add: only overload pays it).
  std::atomic<std::uint64_t> messages_dropped{0};
  /// Events counted on threads that are not this runtime's workers (atomic adds).
  event_counters outside_counters;

 private:
  friend runtime_extension& extension_slot(runtime_core&, const void*, extension_factory);
  void stop_extensions() noexcept;
  recursive_mutex extensions_mu_;
  std::vector<std::pair<const void*, std::unique_ptr<runtime_extension>>> extensions_
      BEAMLET_GUARDED_BY(extensions_mu_);
  bool destroying_extensions_ BEAMLET_GUARDED_BY(extensions_mu_) = false;
  std::atomic<std::uint32_t> refs_{1};
  mutex shutdown_mu_;  // one shutdown runs; concurrent callers wait for it
  bool shut_down_ BEAMLET_GUARDED_BY(shutdown_mu_) = false;
  bool started_ BEAMLET_GUARDED_BY(shutdown_mu_) = false;
};

/// Pins the calling thread for one operation unless it is one of `rt`'s workers (which are
/// pinned whenever they run processes).
class pin {
 public:
  explicit pin(runtime_core& rt) noexcept;
  pin(const pin&) = delete;
  pin& operator=(const pin&) = delete;

 private:
  std::optional<epoch_domain::outside_guard> guard_;
};

/// The counter cell of the worker thread running now (null elsewhere), set by scheduler::run.
struct thread_counters {
  const runtime_core* rt = nullptr;
  event_counters* cell = nullptr;
};
inline thread_local thread_counters this_thread_counters{};

/// Adds to the counter `pick` selects (a callable: event_counters& -> the counter) of runtime
/// `rt` in this thread's cell: the worker's own, bumped without a read-modify-write, or the
/// runtime's shared cell on other threads.
template <class Pick>
inline void count(runtime_core& rt, Pick pick, std::uint64_t n = 1) noexcept {
  const thread_counters& t = this_thread_counters;
  if (t.rt == &rt) {
    std::atomic<std::uint64_t>& c = pick(*t.cell);  // only this worker writes its cell
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  } else {
    pick(rt.outside_counters).fetch_add(n, std::memory_order_relaxed);
  }
}

/// Messages this thread has moved from inboxes into queues (drain), ever. A plain thread-local
/// add per batch is all a receive pays for the runtime's delivered counter: each worker
/// publishes its own total into its counter cell between runs (scheduler.cpp), and a mailbox
/// adds what its receive moved (scoped_process.cpp).
inline thread_local std::uint64_t messages_moved = 0;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
