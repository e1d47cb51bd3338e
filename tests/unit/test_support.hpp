// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>
#include <beamlet/beamlet.hpp>
#include <beamlet/core/testing.hpp>

#include <beamlet/observe/logger.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace beamlet::test {

using namespace std::chrono_literals;

// Which sanitizer instruments this build: GCC says so with __SANITIZE_*__, Clang through
// __has_feature (BEAMLET_TSAN comes from beamlet/core/config.hpp).
#if defined(__SANITIZE_ADDRESS__)
#define BEAMLET_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BEAMLET_TEST_ASAN 1
#endif
#endif
#if defined(BEAMLET_TEST_ASAN)
inline constexpr bool under_asan = true;
#else
inline constexpr bool under_asan = false;
#endif
#if defined(BEAMLET_TSAN)
inline constexpr bool under_tsan = true;
#else
inline constexpr bool under_tsan = false;
#endif
inline constexpr bool sanitized = under_asan || under_tsan;

/// Stress sizes shrink under the sanitizers: ThreadSanitizer is ~10x slower and memory hungry,
/// AddressSanitizer ~3x slower (a million queued requests took 46 s of the Clang suite). The
/// smaller sizes still take every path the full ones do; the plain build runs the full sizes.
inline constexpr int stress_divisor = under_tsan ? 20 : under_asan ? 4 : 1;

/// The calling thread's name ("beamlet-sched-N" on a scheduler): tells which scheduler ran a
/// process at some point.
inline std::string thread_name() {
  char name[32] = {};
  ::pthread_getname_np(::pthread_self(), name, sizeof name);
  return name;
}

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

// The helpers users get too (beamlet/core/testing.hpp): the project's tests use the same ones.
using testing::assert_receive;
using testing::eventually;
using testing::refute_receive;
using testing::watched;

/// Resident memory of this test process, in bytes.
inline std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

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

/// From inside a process: waits until `cond` holds, looking every millisecond of the runtime's
/// clock, for at most `limit`; whether it held. What a test waits for instead of sleeping.
template <class F>
task<bool> eventually_in(process& self, F cond, std::chrono::milliseconds limit = 10s) {
  for (auto waited = 0ms; !cond(); waited += 1ms) {
    if (waited >= limit) co_return false;
    co_await self.sleep(1ms);
  }
  co_return true;
}

// Messages that many tests send. They live here, not in each file's anonymous namespace, so
// that the files of a test executable can be compiled together (BEAMLET_TEST_UNITY_BATCH).
struct go {};    ///< go on
struct die {};   ///< a cast that stops the server it reaches (each test says how)
struct tick {};  ///< a timer's or a loop's beat
struct get {     ///< a call for a server's int
  using reply_type = int;
};
struct junk {  ///< fills a mailbox
  int n;
};
struct ping {  ///< asks for an answer to `from`
  pid from;
};

/// Lines written by processes and read by the test (thread-safe).
struct journal {
  std::mutex mu;
  std::vector<std::string> lines;
  void add(std::string l) {
    std::lock_guard g(mu);
    lines.push_back(std::move(l));
  }
  /// The lines so far, which stay.
  std::vector<std::string> snapshot() {
    std::lock_guard g(mu);
    return lines;
  }
  /// The lines so far, which go.
  std::vector<std::string> take() {
    std::lock_guard g(mu);
    return std::exchange(lines, {});
  }
};

/// A child start that returns `ignore` (OTP's init returning `ignore`).
inline start_function ignore_start() {
  return [](process&) -> task<start_result> { co_return start_result::ignore(); };
}

/// From a process that traps exits: the reason of `p`'s EXIT signal, or `no_exit` after 10 s.
inline task<exit_reason> exit_of(process& self, pid p) {
  auto m = co_await self.receive(
      on<exit_message>().when([p](const exit_message& e) { return e.from == p; }), after(10s));
  co_return m ? m.get<exit_message>().reason : exit_reason::error("no_exit");
}

/// An atom term.
inline dist::term atom(const char* a) {
  return dist::term::make_atom(a);
}

/// A process body that waits for any message and then returns (exit `normal`).
inline task<> wait_for_any(process& self) {
  co_await self.receive(on_any());
}

/// A process body that never returns on its own.
inline task<> park_forever(process& self) {
  for (;;) co_await self.receive(on_any());
}

/// Collects the events of a runtime's logger (instead of its stderr handler, which it removes,
/// so a test's expected crashes do not flood its output). `level` opens the logger that far.
class captured_log {
 public:
  explicit captured_log(runtime& rt, log_level level = log_level::notice) : log_(logger::of(rt)) {
    log_.clear_handlers();
    log_.set_level(level);
    id_ = log_.add_handler(logger::callback([this](const log_event& e) {
      std::lock_guard lock(mu_);
      events_.push_back(e);
      cv_.notify_all();
    }));
  }
  // Declared after its runtime, it goes first: the logger must stop calling it.
  ~captured_log() { log_.remove_handler(id_); }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;

  /// Waits until an event passing `pred` has been handled; returns a copy of it.
  std::optional<log_event> wait_for(const std::function<bool(const log_event&)>& pred,
                                    std::chrono::milliseconds limit = 10s) {
    std::unique_lock lock(mu_);
    std::optional<log_event> found;
    cv_.wait_for(lock, limit, [&] {
      for (const auto& e : events_)
        if (pred(e)) {
          found = e;
          return true;
        }
      return false;
    });
    return found;
  }
  /// The first report of kind `report` whose field `key` equals `value`.
  std::optional<log_event> wait_for_report(const std::string& report, const std::string& key,
                                           const std::string& value,
                                           std::chrono::milliseconds limit = 10s) {
    return wait_for(
        [&](const log_event& e) { return e.report == report && field(e, key) == value; }, limit);
  }
  /// Every event so far (after a flush of the logger).
  std::vector<log_event> all() {
    log_.flush();
    std::lock_guard lock(mu_);
    return events_;
  }
  std::size_t count(const std::function<bool(const log_event&)>& pred) {
    std::size_t n = 0;
    for (const auto& e : all())
      if (pred(e)) ++n;
    return n;
  }
  static std::string field(const log_event& e, const std::string& key) {
    for (const auto& [k, v] : e.fields)
      if (k == key) return v;
    return "<missing>";
  }

 private:
  logger& log_;
  logger::handler_id id_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<log_event> events_;
};

}  // namespace beamlet::test
