// Clang's thread-safety analysis (-Wthread-safety) for the core's locks: a mutex, the lock
// guards that hold it, and the attributes that name which lock guards which field. libstdc++'s
// std::mutex carries no annotations, so the analysis cannot see through it; these thin wrappers
// cost nothing (every call is an inline forward) and let a Clang build reject, at compile time,
// a guarded field read without its lock or a function called without the lock it requires.
// Under GCC the attributes expand to nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

#include <beamlet/core/config.hpp>

#if defined(__clang__)
#define BEAMLET_TSA(x) __attribute__((x))
#else
#define BEAMLET_TSA(x)
#endif

#define BEAMLET_CAPABILITY(name) BEAMLET_TSA(capability(name))
#define BEAMLET_SCOPED_CAPABILITY BEAMLET_TSA(scoped_lockable)
#define BEAMLET_GUARDED_BY(m) BEAMLET_TSA(guarded_by(m))
#define BEAMLET_REQUIRES(...) BEAMLET_TSA(requires_capability(__VA_ARGS__))
#define BEAMLET_ACQUIRE(...) BEAMLET_TSA(acquire_capability(__VA_ARGS__))
#define BEAMLET_RELEASE(...) BEAMLET_TSA(release_capability(__VA_ARGS__))
#define BEAMLET_TRY_ACQUIRE(...) BEAMLET_TSA(try_acquire_capability(__VA_ARGS__))
#define BEAMLET_EXCLUDES(...) BEAMLET_TSA(locks_excluded(__VA_ARGS__))

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

#if defined(BEAMLET_COUNT_LOCKS)
inline constexpr bool lock_counting = true;
#else
inline constexpr bool lock_counting = false;
#endif
/// Acquisitions of the runtime's shared locks (beamlet/core/detail/lock_count.hpp); only
/// BEAMLET_COUNT_LOCKS builds add to it.
inline std::atomic<std::uint64_t> shared_locks_taken{0};
inline void count_shared_lock() noexcept {
  if constexpr (lock_counting) shared_locks_taken.fetch_add(1, std::memory_order_relaxed);
}

/// std::mutex, as a capability the analysis knows. `Shared`: a lock the whole runtime contends
/// on, which BEAMLET_COUNT_LOCKS builds count; `local_mutex` is one process's own.
template <bool Shared>
class BEAMLET_CAPABILITY("mutex") basic_mutex {
 public:
  void lock() BEAMLET_ACQUIRE() {
    if constexpr (Shared) count_shared_lock();
    m_.lock();
  }
  bool try_lock() BEAMLET_TRY_ACQUIRE(true) {
    if constexpr (Shared) count_shared_lock();
    return m_.try_lock();
  }
  void unlock() BEAMLET_RELEASE() { m_.unlock(); }
  /// The underlying mutex, for std::unique_lock in a condition-variable wait.
  std::mutex& native() noexcept { return m_; }

 private:
  std::mutex m_;
};
using mutex = basic_mutex<true>;
using local_mutex = basic_mutex<false>;

/// std::recursive_mutex, as a capability (re-entry is the wrapped mutex's business; the
/// analysis only checks that the lock is held where it is required).
class BEAMLET_CAPABILITY("mutex") recursive_mutex {
 public:
  void lock() BEAMLET_ACQUIRE() {
    count_shared_lock();
    m_.lock();
  }
  void unlock() BEAMLET_RELEASE() { m_.unlock(); }

 private:
  std::recursive_mutex m_;
};

/// std::lock_guard for the annotated locks (any type with lock/unlock and the attributes).
template <class Mutex>
class BEAMLET_SCOPED_CAPABILITY lock_guard {
 public:
  explicit lock_guard(Mutex& m) BEAMLET_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~lock_guard() BEAMLET_RELEASE() { m_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  Mutex& m_;
};

/// std::unique_lock over a detail::basic_mutex, held from construction to destruction (a condition
/// variable's wait releases and retakes it inside), for the waits below.
class BEAMLET_SCOPED_CAPABILITY unique_lock {
 public:
  template <bool Shared>
  explicit unique_lock(basic_mutex<Shared>& m) BEAMLET_ACQUIRE(m) : lock_(m.native()) {
    if constexpr (Shared) count_shared_lock();
  }
  ~unique_lock() BEAMLET_RELEASE() = default;
  unique_lock(const unique_lock&) = delete;
  unique_lock& operator=(const unique_lock&) = delete;

  // Condition-variable waits: the lock is held whenever a predicate runs and when the wait
  // returns, so the analysis treats the whole wait as holding it. A predicate that reads
  // guarded fields says so (`[&]() BEAMLET_REQUIRES(m) { ... }`): the analysis checks a lambda
  // on its own.
  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <class Clock, class Duration>
  std::cv_status wait_until(std::condition_variable& cv,
                            const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline);
  }
  template <class Clock, class Duration, class Pred>
  bool wait_until(std::condition_variable& cv,
                  const std::chrono::time_point<Clock, Duration>& deadline, Pred pred) {
    return cv.wait_until(lock_, deadline, std::move(pred));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
