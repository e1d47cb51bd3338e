// The runtime's shared state. One per beamlet::runtime; mailboxes hold a reference too, so it
// outlives a runtime object destroyed before a mailbox (the mailbox then reports `shutdown`).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <beamlet/runtime.hpp>

#include <beamlet/extension.hpp>

#include "epoch.hpp"
#include "process_table.hpp"
#include "registry.hpp"
#include "scheduler.hpp"
#include "timer_service.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

class runtime_core {
 public:
  explicit runtime_core(const runtime_options& options);
  ~runtime_core();

  void start();
  void shutdown();

  /// Retires a dead process's memory from whatever thread ended it.
  void retire(proc* p) noexcept;

  /// The runtime's time: the steady clock unless runtime_options::clock says otherwise.
  clock::time_point now() const noexcept {
    return manual_clock_ ? options.clock->now() : clock::now();
  }

  /// A reference unique in this program (not just this runtime).
  static std::uint64_t new_ref() noexcept;

  // Shared ownership by the runtime object and by mailboxes.
  void acquire() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  const runtime_options options;
  const bool manual_clock_;
  epoch_domain epoch;
  process_table table;
  registry names;
  timer_service timers;
  scheduler sched;

  /// No new processes once the grace period of shutdown is over.
  std::atomic<bool> closed{false};
  /// Open mailboxes (outside-thread processes), so shutdown knows how many processes it need
  /// not wait for without scanning the table.
  std::atomic<std::size_t> mailboxes{0};

 private:
  friend runtime_extension& extension_slot(runtime_core&, const void*, extension_factory);
  std::mutex extensions_mu_;
  std::vector<std::pair<const void*, std::unique_ptr<runtime_extension>>> extensions_;
  std::atomic<std::uint32_t> refs_{1};
  std::mutex shutdown_mu_;  // one shutdown runs; concurrent callers wait for it
  bool shut_down_ = false;
  bool started_ = false;
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

}  // namespace detail
BEAMLET_END_NAMESPACE
