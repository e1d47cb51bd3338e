/// @file
/// beamlet/core/runtime.hpp: the runtime: schedulers, process table, names and timers.
///
/// A runtime owns N scheduler threads (default: one per hardware thread), the table of live
/// processes, the name registry and one timer thread. Every member function is thread-safe and
/// may be called from any thread, process or not; operations that need a process identity
/// (monitoring, waiting for a reply) are done from outside threads through beamlet::scoped_process.
///
/// Shutdown (explicit, or by the destructor) sends every process an exit signal `shutdown`,
/// gives them `shutdown_grace` to finish (trapping processes get exit_message{null pid,
/// shutdown} and may clean up), then ends the rest with reason `shutdown` without running them
/// again, joins every thread and frees every process, message and timer. Scoped processes must be
/// destroyed before their runtime. Whatever processes point at must outlive them: an object
/// declared after the runtime in the same scope is destroyed while the processes still run, so
/// call shutdown() before it goes (processes spawned outside a supervision tree, for instance,
/// are still running when the tree has stopped). An idle runtime uses no CPU: schedulers park
/// on a futex until their earliest timer (receive timeouts, and send_after timers armed by their
/// processes), and the timer thread (send_after timers armed from other threads) sleeps until
/// its earliest deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <beamlet/core/clock.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Upper bound of runtime_options::schedulers; a larger value is rejected.
inline constexpr unsigned max_schedulers = 1024;
/// Upper bound of runtime_options::max_processes (2^28); a larger value is rejected.
inline constexpr std::size_t max_process_limit = std::size_t{1} << 28;

/// Checked when the runtime is constructed: an out-of-range value throws std::invalid_argument.
struct runtime_options {
  /// Scheduler threads; 0 means std::thread::hardware_concurrency(). At most max_schedulers.
  unsigned schedulers = 0;
  /// How many processes (scoped processes included) may be alive at once, exactly: the spawn after
  /// that throws system_limit_error. 1..max_process_limit. The process table is reserved
  /// lazily, so a large value costs address space (about 9 bytes per process), not RSS.
  std::size_t max_processes = std::size_t{1} << 22;
  /// Binds scheduler thread i to CPU i (mod the CPUs this process may use), as BEAM's +sbt
  /// does: steadier figures for benchmarks, at the price of sharing a core with whatever else
  /// is bound there. Off by default; ignored where the system refuses it.
  bool pin_schedulers = false;
  /// Receives a process may complete in one run before it is rescheduled behind the others
  /// (BEAM's reduction budget). A value below 1 counts as 1.
  int reductions = 2000;
  /// How long shutdown waits for processes to exit on the `shutdown` signal before ending the
  /// rest. Must not be negative; milliseconds::max() waits as long as it takes.
  std::chrono::milliseconds shutdown_grace{1000};
  /// The time processes live in (beamlet/core/clock.hpp): null (or a steady_runtime_clock) is the
  /// steady clock; a manual_clock makes timers and restart-intensity windows run in virtual time
  /// (tests). Any other clock is rejected.
  std::shared_ptr<runtime_clock> clock{};
};

/// A beamlet node: the schedulers its processes run on, its process table, name registry and
/// timers (see the header comment for threading and shutdown). Not copyable or movable: its
/// processes and scoped processes refer to it.
class runtime {
 public:
  /// A runtime with default runtime_options; its schedulers are running on return.
  runtime();
  /// A runtime with `options`; its schedulers are running on return. Throws
  /// std::invalid_argument if an option is out of range.
  explicit runtime(runtime_options options);
  /// Calls shutdown(). Must not run inside one of this runtime's processes (std::terminate).
  ~runtime();  // NOLINT(bugprone-exception-escape): terminates by design, see shutdown()
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// Starts a process running `body(process&)`. Throws system_limit_error if the process table
  /// is full or the runtime is shutting down.
  template <class F>
  pid spawn(F&& body) {
    return detail::spawn_body(*core_, nullptr, std::forward<F>(body), {}, nullptr);
  }

  /// Sends `msg` to `to` from outside any process. Never fails; dropped if `to` is dead.
  template <message T>
  void send(pid to, T&& msg) {
    detail::send_node(*core_, to, detail::make_message(std::forward<T>(msg)));
  }
  /// Sends to a registered name; errc::not_registered if nobody holds it.
  template <message T>
  [[nodiscard]] std::error_code send(std::string_view name, T&& msg) {
    return detail::send_node_named(*core_, name, detail::make_message(std::forward<T>(msg)));
  }
  /// Delivers `msg` to `to` after `delay`; the returned ref cancels it. Same rules as
  /// basic_process::send_after.
  template <message T>
  ref send_after(pid to, T&& msg, timeout_value delay) {
    return detail::send_node_after(*core_, to, detail::make_message(std::forward<T>(msg)), delay);
  }
  /// Cancels a send_after timer, from any thread; returns the time that was left, or nullopt if
  /// it had already fired, was cancelled, or is unknown (the null ref included). Same rules as
  /// basic_process::cancel_timer.
  std::optional<std::chrono::nanoseconds> cancel_timer(ref timer);
  /// Timers pending: send_after timers plus receives blocked with a timeout.
  std::size_t pending_timers() const noexcept;

  /// Sends an exit signal from outside (its sender is the null pid). `kill` cannot be trapped.
  void exit(pid target, const exit_reason& reason);

  /// Blocks until `target` has exited and returns its reason (`noproc` if it was not alive, the
  /// null pid included), or nullopt after `timeout`.
  std::optional<exit_reason> wait(pid target, timeout_value timeout);

  // -- names (spec §9) ----------------------------------------------------------------------
  /// Registers `p` under `name` (Erlang's register/2). A process holds at most one name and
  /// loses it when it exits. Errors: errc::invalid_name (empty or `undefined`),
  /// errc::already_named, errc::name_taken, errc::not_alive (`p` dead, null or remote).
  [[nodiscard]] std::error_code register_name(std::string_view name, pid p);
  /// Frees `name`, whoever holds it; errc::not_registered if nobody does.
  [[nodiscard]] std::error_code unregister_name(std::string_view name);
  /// The process registered under `name`, or nullopt. Lock-free.
  std::optional<pid> whereis(std::string_view name) const;
  /// Every registered name, sorted (Erlang's registered/0).
  std::vector<std::string> registered() const;
  /// The name `p` is registered under (process_info(P, registered_name)), if any.
  std::optional<std::string> registered_name(pid p) const;

  // -- state -------------------------------------------------------------------------------------
  /// True while `p` is a live process of this runtime; false once it has exited, and for the
  /// null pid. A snapshot: it may have exited by the time the caller looks.
  bool is_alive(pid p) const noexcept;
  /// The runtime's time (runtime_options::clock).
  clock_time now() const noexcept;
  /// Processes in the process table (scoped processes included). An exiting process leaves the
  /// table before its links and monitors are told, so a DOWN received means it is no longer
  /// counted.
  std::size_t process_count() const noexcept;
  /// Scheduler threads this runtime runs (runtime_options::schedulers, 0 resolved).
  unsigned schedulers() const noexcept;
  /// The watchers of `p`, one entry per monitor (process_info(P, monitored_by)); empty if `p`
  /// is not alive.
  std::vector<pid> monitored_by(pid p) const;

  /// Stops every process (see the header comment) and joins all threads. Idempotent and
  /// thread-safe: when several threads call it, one does the work and the others return once
  /// it is done. Called from inside one of this runtime's processes it throws std::logic_error
  /// (it would wait for its caller to exit). The destructor calls it, so a runtime must not be
  /// destroyed from inside one of its own processes either (that would std::terminate).
  void shutdown();

  /// The internal core, for beamlet's own headers (extension(), gen_server clients): not part
  /// of the stable API.
  detail::runtime_core& core() noexcept { return *core_; }

 private:
  std::unique_ptr<detail::runtime_core, detail::core_release> core_;
};

/// The priority alias `p` published (beamlet/core/priority.hpp), if it is alive and has one. Any
/// thread.
inline std::optional<priority_alias> published_priority_alias(runtime& rt, pid p) noexcept {
  return detail::published_priority_alias(rt.core(), p);
}

BEAMLET_END_NAMESPACE
