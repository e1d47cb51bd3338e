// A test-and-test-and-set lock for critical sections of a few instructions (a monitor list
// insert, a watcher set detach). Uncontended, lock is one atomic exchange and unlock a plain
// release store: unlock sits on the spawn, monitor and exit paths, where an atomic
// read-modify-write instead of the store costs measurably (about 10 ns per spawn and exit).
// Contended, it spins briefly (the holder is usually about to release), then yields the thread
// between tries, so a preempted holder gets the CPU back instead of being starved by spinners.
#pragma once

#include <atomic>
#include <thread>

#include <beamlet/core/config.hpp>

#include "thread_safety.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class BEAMLET_CAPABILITY("spinlock") spinlock {
 public:
  void lock() noexcept BEAMLET_ACQUIRE() {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > spin_limit)
          std::this_thread::yield();
        else
          cpu_relax();
      }
    }
  }
  bool try_lock() noexcept BEAMLET_TRY_ACQUIRE(true) {
    return !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept BEAMLET_RELEASE() { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int spin_limit = 64;
  std::atomic<bool> locked_{false};
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
