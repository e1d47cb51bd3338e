// A lock for critical sections of a few instructions (a monitor list insert, a watcher set
// detach). Uncontended, lock and unlock are one atomic operation each. Contended, it spins
// briefly (the holder is usually about to release), then waits on the lock word with
// std::atomic::wait (a futex on Linux), so a preempted holder costs its waiters no CPU. It is
// Drepper's three-state mutex: 0 free, 1 held, 2 held with (possibly) waiters; only unlocking a
// word in state 2 pays for a wake-up.
#pragma once

#include <atomic>
#include <cstdint>

#include <beamlet/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class spinlock {
 public:
  void lock() noexcept {
    std::uint32_t c = 0;
    if (state_.compare_exchange_strong(c, 1, std::memory_order_acquire)) return;
    for (int i = 0; i < spin_limit; ++i) {
      cpu_relax();
      c = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(c, 1, std::memory_order_acquire))
        return;
    }
    // Announce a waiter (state 2) and sleep until the word changes.
    if (c != 2) c = state_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      state_.wait(2, std::memory_order_relaxed);
      c = state_.exchange(2, std::memory_order_acquire);
    }
  }
  bool try_lock() noexcept {
    std::uint32_t c = 0;
    return state_.compare_exchange_strong(c, 1, std::memory_order_acquire);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  static constexpr int spin_limit = 64;
  std::atomic<std::uint32_t> state_{0};
};

}  // namespace detail
BEAMLET_END_NAMESPACE
