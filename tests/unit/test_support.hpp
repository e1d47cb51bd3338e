// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>
#include <beamlet/beamlet.hpp>
#include <beamlet/testing.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace beamlet::test {

using namespace std::chrono_literals;

/// Stress sizes shrink under ThreadSanitizer, which is ~10x slower and memory hungry.
#if defined(BEAMLET_TSAN)
inline constexpr int stress_divisor = 20;
#else
inline constexpr int stress_divisor = 1;
#endif

// gtest's ASSERT_* `return`, which a coroutine cannot; these record the failure and end the
// coroutine (a task<> body) instead.
#define CO_ASSERT_TRUE(cond)                        \
  do {                                              \
    if (!(cond)) {                                  \
      ADD_FAILURE() << "CO_ASSERT_TRUE(" #cond ")"; \
      co_return;                                    \
    }                                               \
  } while (false)
#define CO_ASSERT_FALSE(cond) CO_ASSERT_TRUE(!(cond))
#define CO_ASSERT_EQ(a, b)        \
  do {                            \
    EXPECT_EQ(a, b);              \
    if (!((a) == (b))) co_return; \
  } while (false)

// The helpers users get too (beamlet/testing.hpp): the project's tests use the same ones.
using testing::assert_receive;
using testing::eventually;
using testing::refute_receive;
using testing::watched;

/// Runs `body` as a process and waits for it to end; returns its exit reason, or nullopt if it
/// did not end within `limit`.
template <class F>
std::optional<exit_reason> run_process(runtime& rt, F&& body,
                                       std::chrono::milliseconds limit = 20s) {
  return testing::run(rt, std::forward<F>(body), limit);
}

/// Expects that `w` ends within `limit` and returns its reason.
inline exit_reason expect_exit(runtime&, watched& w, std::chrono::milliseconds limit = 20s) {
  auto r = w.wait(limit);
  EXPECT_TRUE(r.has_value()) << w.id() << " did not exit within " << limit.count() << " ms";
  return r.value_or(exit_reason::error("still_running"));
}

/// Waits until a process that the test does not watch has ended (its reason is not available:
/// use `watched` for that).
inline void expect_gone(runtime& rt, pid p, std::chrono::milliseconds limit = 20s) {
  EXPECT_TRUE(rt.wait(p, limit).has_value()) << p << " did not exit";
}

/// A process body that waits for any message and then returns (exit `normal`).
inline task<> wait_for_any(process& self) {
  co_await self.receive(on_any());
}

/// A process body that never returns on its own.
inline task<> park_forever(process& self) {
  for (;;) co_await self.receive(on_any());
}

}  // namespace beamlet::test
