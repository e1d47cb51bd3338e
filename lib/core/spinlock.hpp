// A minimal test-and-test-and-set lock for critical sections of a few instructions (a monitor
// list insert). Yields the thread after a short spin so a preempted holder is not starved.
#pragma once

#include <atomic>
#include <thread>

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
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();
        } else {
          cpu_relax();
        }
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace detail
BEAMLET_END_NAMESPACE
