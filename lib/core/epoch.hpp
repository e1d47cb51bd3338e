// Epoch-based reclamation for process objects.
//
// Senders find a process by pid in the process table and push into its inbox without taking a
// lock or a reference count. That is safe because a process's memory is freed only after every
// thread that might still hold a pointer to it has passed through a quiescent state:
//  * a scheduler thread is "pinned" while it runs processes and announces a quiescent state
//    every few runs (and unpins while parked);
//  * any other thread pins one of a fixed set of shared slots for the duration of one call
//    (send, monitor, exit...) with outside_guard.
// An object retired at global epoch e is freed once the global epoch reaches e + 2, which needs
// every pinned thread to have observed e + 1 after the object became unreachable.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <beamlet/core/config.hpp>

#include "thread_safety.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class epoch_domain {
 public:
  static constexpr std::uint64_t inactive = 0;
  static constexpr unsigned outside_slots = 64;

  struct alignas(64) record {
    std::atomic<std::uint64_t> epoch{inactive};
  };

  struct retired {
    void* object;
    void (*free)(void*) noexcept;
    std::uint64_t epoch;
  };

  /// Objects retired by one thread, in retirement order (so in epoch order).
  class bag {
   public:
    bool empty() const noexcept { return items_.size() == head_; }
    std::size_t size() const noexcept { return items_.size() - head_; }

   private:
    friend class epoch_domain;
    std::vector<retired> items_;
    std::size_t head_ = 0;
  };

  explicit epoch_domain(unsigned worker_count);
  ~epoch_domain();
  epoch_domain(const epoch_domain&) = delete;
  epoch_domain& operator=(const epoch_domain&) = delete;

  record& worker_record(unsigned i) noexcept { return workers_[i]; }

  /// Pins a worker record at the current epoch; also its quiescent-state announcement.
  void enter(record& r) noexcept { r.epoch.exchange(global_.load(), std::memory_order_seq_cst); }
  void leave(record& r) noexcept { r.epoch.store(inactive, std::memory_order_release); }

  /// Pins a shared slot for one call from a thread that is not a scheduler.
  class outside_guard {
   public:
    explicit outside_guard(epoch_domain& d) noexcept;
    ~outside_guard() { slot_->epoch.store(inactive, std::memory_order_release); }
    outside_guard(const outside_guard&) = delete;
    outside_guard& operator=(const outside_guard&) = delete;

   private:
    record* slot_;
  };

  /// Hands `object` to `b`; it is freed by collect() once no thread can reach it.
  void retire(bag& b, void* object, void (*free)(void*) noexcept);
  /// Retirement from a thread without a bag of its own.
  void retire_shared(void* object, void (*free)(void*) noexcept);

  /// Advances the global epoch if every pinned thread has seen it. Cheap to call often.
  bool try_advance() noexcept;
  /// Frees what `b` holds that no thread can reach any more.
  void collect(bag& b) noexcept;
  void collect_shared() noexcept;
  /// Frees everything; only when no other thread uses the domain any more.
  void free_all(bag& b) noexcept;
  void free_all_shared() noexcept;

 private:
  std::atomic<std::uint64_t> global_{2};
  std::unique_ptr<record[]> workers_;
  unsigned worker_count_;
  record outside_[outside_slots];
  mutex shared_mu_;
  bag shared_ BEAMLET_GUARDED_BY(shared_mu_);
  std::atomic<bool> shared_waiting_{false};  ///< shared_ holds something (a hint, read unlocked)
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
