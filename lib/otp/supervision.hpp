// What the static supervisor and DynamicSupervisor share: starting a child, stopping one the
// OTP way, and the restart-intensity window.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "term.hpp"

#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/otp/child_spec.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/rate_limit.hpp>
#include <beamlet/otp/start_result.hpp>
#include <beamlet/otp/supervisor.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// How an exception thrown by a start function is reported.
enum class start_failure_style {
  supervisor,  ///< OTP supervisor: {'EXIT', Reason}
  dynamic,     ///< Elixir DynamicSupervisor: the exception's reason itself
};

/// Runs a child's start function inside the supervisor process `self`. `spec` and `extra`
/// must stay in place until the returned task completes. An `ok` result without a pid is
/// turned into {error, {ok,undefined}}, as OTP's supervisors do for a non-pid.
task<start_result> start_child_process(process& self, const child_spec& spec,
                                       const extra_arguments& extra, start_failure_style style);

/// Stops one child as OTP's supervisor:shutdown/2 does (spec §6.2 rule 5): monitor, unlink,
/// take an EXIT that is already queued, else signal (kill for brutal_kill, shutdown otherwise),
/// wait up to the shutdown time for the DOWN, kill and wait again on timeout. Returns the
/// child's exit reason, after a shutdown_error report if it is not the expected one (`module`
/// names the supervisor kind in that report).
task<exit_reason> shutdown_child(process& self, pid child, const child_spec& spec,
                                 std::string_view module);

/// A management call answered with a sup_result, from a process: a request the supervisor's
/// bounded mailbox refused (call_error kind mailbox_full) becomes {error, mailbox_full}; other
/// call errors propagate. `prio`: through the supervisor's published priority alias. `req` is
/// taken by value into the frame, so a plain function may pass a braced temporary; a coroutine
/// passes a named variable instead, since its call sits in a co_await (GCC 12,
/// docs/gcc12-coroutines.md, rule 1).
template <class S, class Req>
task<reply_of_t<Req>> sup_call(process& self, server_ref<S> sup, Req req, timeout_value timeout,
                               bool prio = false) {
  try {
    if (prio) co_return co_await call(self, sup, req, priority, timeout);
    co_return co_await call(self, sup, req, timeout);
  } catch (const call_error& e) {
    if (e.which() != call_error::kind::mailbox_full) throw;
  }
  co_return unexpected(sup_error{sup_errc::mailbox_full, pid(), {}, std::nullopt});
}
/// The same from an outside thread's scoped_process.
template <class S, class Req>
reply_of_t<Req> sup_call(scoped_process& me, server_ref<S> sup, Req req, timeout_value timeout,
                         bool prio = false) {
  try {
    if (prio) return call(me, sup, req, priority, timeout);
    return call(me, sup, req, timeout);
  } catch (const call_error& e) {
    if (e.which() != call_error::kind::mailbox_full) throw;
  }
  return unexpected(sup_error{sup_errc::mailbox_full, pid(), {}, std::nullopt});
}

/// A call that owns its request (taken by value, alive in the call's own frame), so that a
/// management call can hand a process the task without being a coroutine itself. Errors are
/// call's (mailbox_full included). `prio`: through the server's published priority alias.
template <class S, class Req>
task<reply_of_t<Req>> owned_call(process& self, server_ref<S> to, Req req, timeout_value timeout,
                                 bool prio = false) {
  if (prio) co_return co_await call(self, to, req, priority, timeout);
  co_return co_await call(self, to, req, timeout);
}
/// The same from an outside thread's scoped_process.
template <class S, class Req>
reply_of_t<Req> owned_call(scoped_process& me, server_ref<S> to, Req req, timeout_value timeout,
                           bool prio = false) {
  if (prio) return call(me, to, req, priority, timeout);
  return call(me, to, req, timeout);
}

/// `{invalid_start_rate,{Rate,Burst}}` when `r` is not a valid token bucket rate.
std::optional<std::string> check_start_rate(const std::optional<rate_limit>& r);

/// A child's restart backoff (child_spec::backoff) as its supervisor tracks it.
class backoff_state {
 public:
  /// The child (re)started at `now`.
  void started(clock_time now) noexcept { started_ = now; }
  /// The delay before the restart being decided at `now`, jitter included. `retry`: the last
  /// start failed (the child never ran, so the count is not reset).
  /// Also starts a new generation: a timer for an earlier delay is stale from now on.
  std::chrono::nanoseconds next_delay(const restart_backoff& b, clock_time now, bool retry);
  std::uint64_t generation() const noexcept { return generation_; }

 private:
  unsigned failures_ = 0;  ///< restarts since the child last ran for reset_after
  clock_time started_{};
  std::uint64_t generation_ = 0;
};

/// Sends `shutdown` to a child, through its published priority alias when it has one.
void signal_shutdown(basic_process& self, pid child);

/// The restart intensity window: timestamps in whole monotonic seconds, inclusive, shared by
/// all children (spec §6.3 rule 7).
class restart_window {
 public:
  restart_window() = default;
  restart_window(int intensity, int period) : intensity_(intensity), period_(period) {}
  /// Records a restart attempt made at `at` (the runtime's time, so tests can use virtual
  /// time); false when it exceeds the intensity.
  bool add(clock_time at);

 private:
  int intensity_ = 3;
  int period_ = 5;
  std::deque<std::int64_t> stamps_;
};

/// The steps every supervisor's init begins with (spec §6.1 rule 1, §7.1 rules 3-5): trap exits,
/// adopt the ack wait, run the init function into `value`, and judge it. Returns the init result
/// that ends the start (ignore; stop with {bad_return, {Module, init, undefined}}; stop with the
/// reason `check(value)` gives, e.g. {supervisor_data, E}), or nullopt to go on.
template <class Value, class Init, class Check>
std::optional<gen::init_result> begin_init(process& self, ack_wait_mode wait, const Init& init,
                                           std::string_view module, Value& value, Check check) {
  self.trap_exit(true);
  self.ack_wait(wait);
  value = init();
  if (value.is_ignore()) return gen::init_result(gen::ignore());
  if (!value.is_ok())
    return gen::init_result(
        gen::stop(exit_reason::error(concat({"{bad_return,{", module, ",init,undefined}}"}))));
  if (std::optional<exit_reason> bad = check(value)) return gen::init_result(gen::stop(*bad));
  return std::nullopt;
}

/// {supervisor_data, E} for a flag error E, if any.
inline std::optional<exit_reason> supervisor_data(const std::optional<std::string>& e) {
  if (!e) return std::nullopt;
  return exit_reason::error(concat({"{supervisor_data,", *e, "}"}));
}

/// The first invalid flag, rendered as OTP does ({invalid_intensity,-1}), if any.
std::optional<std::string> check_flags(const supervisor_flags& f);

/// {shutdown, {failed_to_start_child, Id, Reason}}
exit_reason failed_to_start(const std::string& id, const exit_reason& reason);

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
