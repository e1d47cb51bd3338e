// The supervisors' reports and counters: supervisor and progress reports shaped like OTP's
// (supervisor:report_error/4 and report_progress/2), and the per-supervisor counters behind
// beamlet/otp/supervisor_stats.hpp. A report is built only when the logger would take it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/otp/child_spec.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// {local,Name} for a registered supervisor, else {<0.7.0>,Module}, as OTP names supervisors.
std::string supervisor_name(basic_process& self, std::string_view module);
/// [{pid,<0.8.0>},{id,"cache"},{start,cache},{restart_type,permanent},{significant,false},
///  {shutdown,5000},{child_type,worker}]: OTP's child description (`start` stands for mfargs).
std::string describe_child(const child_spec& spec, pid child);

/// A supervisor report (error level): errorContext `context` (child_terminated, start_error,
/// shutdown_error, shutdown), `reason`, and the offending child.
void supervisor_report(basic_process& self, std::string_view module, std::string_view context,
                       std::string_view reason, const child_spec& spec, pid child);
/// A progress report (info level): the supervisor started `child`.
void progress_report(basic_process& self, std::string_view module, const child_spec& spec,
                     pid child);

/// OTP's rule for child_terminated reports: a permanent child's every exit; a transient or
/// temporary child's exits other than normal, shutdown and {shutdown, _}.
inline bool reports_termination(const child_spec& spec, const exit_reason& reason) {
  return spec.restart == restart_type::permanent || !reason.is_clean();
}
/// OTP's shutdown/2 verdict: did the child end the way it was told to? killed for brutal_kill,
/// shutdown otherwise; shutdown, {shutdown, _} and normal also for a child that is not
/// permanent. A child killed after its shutdown time did not stop: a shutdown_error.
bool clean_shutdown(const child_spec& spec, const exit_reason& reason);

/// The counters of one supervisor, shared with the runtime's registry.
struct supervisor_counters {
  pid self;
  const char* kind = "";
  std::atomic<std::uint64_t> restarts{0};
  std::atomic<std::uint64_t> start_child_calls{0};
  std::atomic<std::uint64_t> start_child_errors{0};
  std::atomic<std::size_t> children{0};
  std::atomic<std::uint64_t> rate_limited{0};  ///< start requests over the start rate
  std::atomic<std::uint64_t> overloaded{0};    ///< start requests shed
  /// The operator's shedding override (a beamlet::shedding), read at each start request.
  std::atomic<std::uint8_t> shed_mode{0};

  /// Only the supervisor writes: a load and a store.
  static void bump(std::atomic<std::uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void set_children(std::size_t n) noexcept { children.store(n, std::memory_order_relaxed); }
};

/// The counters of the live supervisor `sup` (null if none).
std::shared_ptr<supervisor_counters> find_supervisor(runtime_core& rt, pid sup);

/// Registers a supervisor's counters for as long as it lives (a member of the server object,
/// so it goes with the process however the process ends).
class supervisor_registration {
 public:
  supervisor_registration() = default;
  ~supervisor_registration();
  supervisor_registration(const supervisor_registration&) = delete;
  supervisor_registration& operator=(const supervisor_registration&) = delete;

  /// Called from the supervisor's init.
  void enroll(basic_process& self, const char* kind);
  supervisor_counters* operator->() noexcept { return counters_.get(); }

 private:
  std::shared_ptr<supervisor_counters> counters_ = std::make_shared<supervisor_counters>();
  runtime_core* rt_ = nullptr;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
