/// @file
/// beamlet/core/testing.hpp: what you need to test your own processes.
///
/// Independent of any test framework: a failed assertion throws testing::assertion_failure (a
/// std::logic_error) whose what() says what was expected and what was found, so GoogleTest,
/// Catch2 or a plain main() all report it. Inside a process, an uncaught assertion_failure ends
/// the process with {exception, beamlet::testing::assertion_failure, "..."}, which the test sees
/// through watch()/run().
///
///   beamlet::runtime rt;
///   beamlet::scoped_process me(rt);
///   rt.send(server, ping{me.self()});
///   auto p = beamlet::testing::assert_receive<pong>(me);            // within 1 s, or throws
///   beamlet::testing::refute_receive<pong>(me, 50ms);               // no second pong
///
///   auto reason = beamlet::testing::run(rt, [](beamlet::process& self) -> beamlet::task<> {
///     ...
///   });                                                             // the body's exit reason
///
/// Virtual time: give the runtime a manual_clock (beamlet/core/clock.hpp) and advance it; process
/// timers, receive timeouts and supervisor restart windows follow it, while these helpers (which
/// run on the test's own thread) wait in real time.
///
///   auto clock = std::make_shared<beamlet::manual_clock>();
///   beamlet::runtime rt({.clock = clock});
///   ...; clock->advance(std::chrono::seconds(5));
///
/// Thread-safety: like a scoped_process, each helper is used from the thread that owns its
/// scoped_process.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>

#include <beamlet/core/clock.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace testing {

/// An assertion of this header failed.
class assertion_failure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
inline std::string describe(timeout_value t) {
  const auto ms = t.milliseconds();
  return ms ? std::to_string(*ms) + " ms" : std::string("infinity");
}
template <class T>
std::string type_of() {
  return ::beamlet::detail::demangled_name(typeid(T));
}
struct always {
  template <class T>
  bool operator()(const T&) const noexcept {
    return true;
  }
};
}  // namespace detail

/// Waits up to `t` for a message of type T passing `pred` (oldest first, as a receive) and
/// returns it; throws assertion_failure otherwise. Other messages stay queued.
template <class T, class Pred = detail::always>
T assert_receive(scoped_process& me, timeout_value t = std::chrono::seconds(1), Pred pred = {}) {
  auto m = me.receive(on<T>().when(std::move(pred)), after(t));
  if (!m)
    throw assertion_failure("assert_receive: no message of type " + detail::type_of<T>() +
                            " within " + detail::describe(t) + " (" +
                            std::to_string(me.message_queue_len()) + " other messages queued)");
  return std::move(m.template get<T>());
}

/// As assert_receive, from inside a process (its own time, see the header comment).
template <class T, class Pred = detail::always>
task<T> assert_receive(process& self, timeout_value t = std::chrono::seconds(1), Pred pred = {}) {
  auto m = co_await self.receive(on<T>().when(std::move(pred)), after(t));
  if (!m)
    throw assertion_failure("assert_receive: no message of type " + detail::type_of<T>() +
                            " within " + detail::describe(t));
  co_return std::move(m.template get<T>());
}

/// Expects no message of type T passing `pred` within `t`; throws assertion_failure if one is
/// (or was already) there. Other messages stay queued.
template <class T, class Pred = detail::always>
void refute_receive(scoped_process& me, timeout_value t = std::chrono::milliseconds(100),
                    Pred pred = {}) {
  if (me.receive(on<T>().when(std::move(pred)), after(t)))
    throw assertion_failure("refute_receive: got a message of type " + detail::type_of<T>() +
                            " within " + detail::describe(t));
}

/// As refute_receive, from inside a process (its own time, see the header comment).
template <class T, class Pred = detail::always>
task<> refute_receive(process& self, timeout_value t = std::chrono::milliseconds(100),
                      Pred pred = {}) {
  // Named, not tested inside the condition: GCC 12 (docs/gcc12-coroutines.md).
  auto m = co_await self.receive(on<T>().when(std::move(pred)), after(t));
  if (m)
    throw assertion_failure("refute_receive: got a message of type " + detail::type_of<T>() +
                            " within " + detail::describe(t));
}

/// A process spawned with a monitor held by the test's thread, so its exit reason can be read
/// whenever the test asks, even if the process ended long before. Converts to its pid. Destroy
/// it before its runtime.
class watched {
 public:
  /// Spawns `body` in `rt` (as runtime::spawn) and monitors it from a scoped_process of its
  /// own.
  template <class F>
  watched(runtime& rt, F&& body) : box_(rt) {
    auto r = box_.spawn_monitor(std::forward<F>(body));
    pid_ = r.pid;
    ref_ = r.monitor;
  }
  /// The process's pid, so a watched can be passed where a pid is expected.
  operator pid() const noexcept { return pid_; }
  /// The process's pid.
  pid id() const noexcept { return pid_; }

  /// The exit reason, or nullopt if the process is still running after `limit` (real time).
  std::optional<exit_reason> wait(timeout_value limit = std::chrono::seconds(20)) {
    if (reason_) return reason_;
    const ref r = ref_;
    auto d = box_.receive(on<down>().when([r](const down& x) { return x.ref == r; }), after(limit));
    if (d) reason_ = d.get<down>().reason;
    return reason_;
  }
  /// The exit reason; throws assertion_failure if the process is still running after `limit`.
  exit_reason reason(timeout_value limit = std::chrono::seconds(20)) {
    if (auto r = wait(limit)) return *r;
    throw assertion_failure("watched process " + pid_.to_string() + " did not exit within " +
                            detail::describe(limit));
  }

 private:
  scoped_process box_;
  pid pid_;
  ref ref_;
  std::optional<exit_reason> reason_;
};

/// Spawns `body` and waits for it to end; its exit reason, or nullopt if it did not end within
/// `limit` (real time).
template <class F>
std::optional<exit_reason> run(runtime& rt, F&& body,
                               timeout_value limit = std::chrono::seconds(20)) {
  watched w(rt, std::forward<F>(body));
  return w.wait(limit);
}

/// Polls `cond` (every millisecond, real time) until it holds or `limit` passes.
inline bool eventually(const std::function<bool()>& cond,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace testing
BEAMLET_END_NAMESPACE
