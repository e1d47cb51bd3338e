// A worker's local run queue: a bounded FIFO ring with one producer (the owning worker) and
// many consumers (the owner and thieves). Consumers claim items by CAS on `head`; the owner
// publishes with a release store of `tail`. FIFO order keeps scheduling fair among the processes
// of one worker; thieves take half of the queue at once so one steal balances a burst of spawns.
#pragma once

#include <atomic>
#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct proc;

class run_queue {
 public:
  static constexpr std::uint32_t capacity = 256;

  /// Owner only. False when full.
  bool push(proc* p) noexcept {
    const std::uint32_t t = tail_.load(std::memory_order_relaxed);
    const std::uint32_t h = head_.load(std::memory_order_acquire);
    if (t - h >= capacity) return false;
    slots_[t % capacity].store(p, std::memory_order_relaxed);
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }

  /// Owner or thief: the oldest item, or null.
  proc* pop() noexcept {
    std::uint32_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      const std::uint32_t t = tail_.load(std::memory_order_acquire);
      if (h == t) return nullptr;
      proc* p = slots_[h % capacity].load(std::memory_order_relaxed);
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        return p;
    }
  }

  /// Thief: moves about half of this queue into `into` (which must be empty and owned by the
  /// caller) and returns one more item to run, or null if there was nothing to take.
  proc* steal_into(run_queue& into) noexcept {
    std::uint32_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      const std::uint32_t t = tail_.load(std::memory_order_acquire);
      const std::uint32_t n = t - h;
      if (n == 0 || n > capacity) return nullptr;  // empty, or a torn read: retry is pointless
      const std::uint32_t take = n - n / 2;        // at least one
      const std::uint32_t base = into.tail_.load(std::memory_order_relaxed);
      for (std::uint32_t i = 0; i < take - 1; ++i)
        into.slots_[(base + i) % capacity].store(
            slots_[(h + i) % capacity].load(std::memory_order_relaxed), std::memory_order_relaxed);
      proc* last = slots_[(h + take - 1) % capacity].load(std::memory_order_relaxed);
      if (head_.compare_exchange_weak(h, h + take, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        into.tail_.store(base + take - 1, std::memory_order_release);
        return last;
      }
    }
  }

  /// The oldest item without taking it (a hint: it may be taken concurrently).
  proc* peek() const noexcept {
    const std::uint32_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_relaxed)) return nullptr;
    return slots_[h % capacity].load(std::memory_order_relaxed);
  }

  /// Approximate when others pop concurrently; exact for the owner with no thieves.
  std::uint32_t size() const noexcept {
    const std::uint32_t t = tail_.load(std::memory_order_acquire);
    const std::uint32_t h = head_.load(std::memory_order_acquire);
    return t - h > capacity ? 0 : t - h;  // h read after t may have passed it
  }
  bool empty() const noexcept { return size() == 0; }

 private:
  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
  std::atomic<proc*> slots_[capacity] = {};
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
