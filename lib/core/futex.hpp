// A 32-bit word to sleep on, with a timeout (Linux futex).
//
// std::atomic::wait has no timeout, and a scheduler thread with timers pending must wake up
// by itself when the earliest is due. Waiting and waking both go through the futex system call
// (mixing them with std::atomic::notify_one would not do: libstdc++ may skip the wake-up of a
// waiter it did not register). The word's value is the condition; the calls only sleep and wake.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              std::atomic<std::uint32_t>::is_always_lock_free);

/// Sleeps while `word` holds `expected`, at most `timeout` (forever if negative). Returns on a
/// wake-up, a changed value, the timeout or a signal: callers test their condition again.
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::chrono::nanoseconds timeout) noexcept {
  timespec ts{};
  timespec* rel = nullptr;
  if (timeout >= std::chrono::nanoseconds::zero()) {
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    rel = &ts;
  }
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, rel,
            nullptr, 0);
}

/// Wakes one thread sleeping in futex_wait on `word`.
inline void futex_wake_one(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
