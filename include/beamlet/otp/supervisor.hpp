/// @file
/// beamlet/otp/supervisor.hpp: the static supervisor (OTP `supervisor`, spec §6).
///
/// A supervisor is a process that starts a list of children in order, traps exits, and restarts
/// children that end according to their restart type and the supervisor's strategy:
///  * one_for_one: only the child that ended;
///  * one_for_all: all children (stopped in reverse start order, restarted in order);
///  * rest_for_one: the child that ended and those started after it.
/// More than `intensity` restarts within `period` seconds (timestamps in whole seconds, window
/// inclusive, shared by all children) make the supervisor give up: it stops its other children
/// and exits with reason `shutdown`, escalating to its own supervisor. Children are stopped in
/// reverse start order, each according to its shutdown spec. Temporary children are never
/// restarted; a temporary sibling caught in a group restart is dropped, not restarted.
///
/// Flags default to Elixir's Supervisor (one_for_one, 3 restarts in 5 s; Erlang's own map
/// default is intensity 1). The management API mirrors OTP's, with its error values as sup_error
/// codes. Calls wait without limit by default, as OTP's do (gen_server:call(Sup, Req,
/// infinity)); every call takes an optional `timeout` so that a stuck supervisor cannot block its
/// caller forever: when it expires the call throws call_error(timeout), as a gen_server call
/// does, and the supervisor is not told. Children start through the supervisor's
/// ack_wait flag (supervisor_options::wait), so a static supervisor can also be made O(1) in its
/// mailbox; the default is OTP's pid-keyed scan.
///
/// Thread-safety: a supervisor is a process; these functions are called from processes (or, the
/// blocking form of each call, from the thread owning a scoped_process).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <beamlet/core/call_context.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/otp/child_spec.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/start_result.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Which children a restart takes along: one_for_one (the child that ended), one_for_all (every
/// child), rest_for_one (that child and those started after it). See the file comment.
enum class restart_strategy : std::uint8_t { one_for_one, one_for_all, rest_for_one };

/// OTP 24+: whether the exit of significant children ends the supervisor.
enum class auto_shutdown : std::uint8_t { never, any_significant, all_significant };

/// OTP's sup_flags: the strategy and the restart intensity. Checked before any child starts; a
/// bad flag fails the start with {supervisor_data, E} (e.g. {invalid_period, 0}).
struct supervisor_flags {
  /// How the children are restarted (one_for_one by default).
  restart_strategy strategy = restart_strategy::one_for_one;
  /// Restarts allowed within `period`; 0 means the first crash ends the supervisor.
  int intensity = 3;
  /// Seconds; must be > 0.
  int period = 5;
  /// OTP's auto_shutdown: whether a significant child's exit stops the supervisor with
  /// reason `shutdown` (never by default).
  auto_shutdown shutdown_when = auto_shutdown::never;
};

/// What a supervisor's init returns: flags and children, or ignore. A default-constructed value
/// is OTP's "anything else" (start then fails with {bad_return, {supervisor, init, Value}}).
class supervisor_init {
 public:
  /// The bad value: start_link fails with {bad_return, ...}.
  supervisor_init() = default;
  /// {ok, {Flags, Children}}: flags `f` and the children `c`, in start order.
  supervisor_init(supervisor_flags f, std::vector<child_spec> c)
      : flags(f), children(std::move(c)), kind_(kind::ok) {}
  /// ignore: nothing is started and start_link returns ignore.
  static supervisor_init ignore() {
    supervisor_init i;
    i.kind_ = kind::ignore;
    return i;
  }
  /// Whether this holds flags and children.
  bool is_ok() const noexcept { return kind_ == kind::ok; }
  /// Whether this is ignore.
  bool is_ignore() const noexcept { return kind_ == kind::ignore; }

  /// The supervisor's flags (used when is_ok()).
  supervisor_flags flags;
  /// The children, started one at a time in this order.
  std::vector<child_spec> children;

 private:
  enum class kind : std::uint8_t { bad, ok, ignore };
  kind kind_ = kind::bad;
};

/// Why a management call failed (OTP's {error, ...} values).
enum class sup_errc : std::uint8_t {
  already_started,     ///< {already_started, Pid}: the id is running (pid())
  already_present,     ///< the id exists but is not running
  not_found,           ///< no such child
  running,             ///< the child is running
  restarting,          ///< the child is being restarted
  start_failed,        ///< the start function failed with reason() (OTP: {Reason, Child})
  invalid_child_spec,  ///< the spec did not validate (spec())
  max_children,        ///< DynamicSupervisor: max_children reached
  rate_limited,        ///< DynamicSupervisor: over its start_rate (nothing was started)
  overloaded,          ///< DynamicSupervisor: shedding load (nothing was started)
  mailbox_full,        ///< the supervisor's bounded mailbox refused the request
};

/// A failed management call: OTP's {error, ...} as a code and the value that goes with it.
struct sup_error {
  /// Which error.
  sup_errc code = sup_errc::not_found;
  beamlet::pid pid{};                ///< already_started: the running child; null otherwise
  exit_reason reason{};              ///< start_failed: why the child's start function failed
  std::optional<spec_error> spec{};  ///< invalid_child_spec: the spec's first problem
  /// OTP's rendering: `{already_started,<0.7.0>}`, `not_found`, `{invalid_shutdown,-1}`; a
  /// failed start renders its reason alone.
  std::string to_string() const;
};

/// What a management call returns: the value, or the sup_error ({error, ...}).
template <class T>
using sup_result = expected<T, sup_error>;

/// One child as which_children reports it.
struct child_info {
  /// running (pid set); restarting (a failed restart will be retried, or a backoff delay
  /// runs); undefined (not running: terminated, ignored, or a transient that ended cleanly).
  enum class state : std::uint8_t { running, restarting, undefined };
  std::string id;                    ///< the child spec's id
  beamlet::pid pid;                  ///< null unless running
  state status;                      ///< running, restarting or undefined
  child_type type;                   ///< worker or supervisor, from the spec
  std::vector<std::string> modules;  ///< the spec's modules
};

/// count_children: `active` counts children whose process is alive.
struct child_counts {
  std::size_t specs = 0;        ///< child specs held, running or not
  std::size_t active = 0;       ///< children whose process is alive
  std::size_t supervisors = 0;  ///< specs of type supervisor
  std::size_t workers = 0;      ///< specs of type worker
  /// Field-wise equality.
  friend bool operator==(const child_counts&, const child_counts&) = default;
};

/// How supervisor::start_link starts the supervisor process.
struct supervisor_options {
  /// Registered name (copied).
  std::string_view name{};
  /// Start timeout (infinity by default).
  timeout_value timeout{};
  /// How the supervisor waits for its children's init acks (default: scan, as OTP).
  ack_wait_mode wait = ack_wait_mode::scan;
  /// Bounds the supervisor's mailbox (beamlet/core/mailbox_limit.hpp; drop_newest or reject, as for
  /// any gen_server). Requests it refuses fail at once: those answered with a sup_result
  /// (start_child, terminate_child...) with sup_errc::mailbox_full, which_children and
  /// count_children with call_error kind mailbox_full. Exit signals, init acks, system
  /// messages and the supervisor's own restart timers are never refused.
  mailbox_limit mailbox{};
  /// Publishes a priority alias (beamlet/core/priority.hpp): which_children, count_children,
  /// terminate_child, stop, and a parent supervisor's shutdown then reach the supervisor ahead
  /// of every queued start request.
  bool priority = false;
};

namespace detail {
class supervisor_server;
}  // namespace detail

/// How the management calls reach a supervisor: its pid, registered name, or via name.
using supervisor_ref = server_ref<detail::supervisor_server>;
/// OTP's Module:init/1: runs inside the new supervisor process and returns its flags and
/// children, or ignore.
using supervisor_init_fn = std::function<supervisor_init()>;

/// The static supervisor (OTP's `supervisor` module with a static child list): start_link and
/// the management calls, all static; a running supervisor is named by a supervisor_ref.
class supervisor {
 public:
  /// supervisor:start_link: starts the supervisor linked to `self`; `init` runs inside it.
  /// Returns {ok, Pid}, ignore, or {error, R} with R one of {supervisor_data, E},
  /// {start_spec, E}, {bad_return, ...}, or {shutdown, {failed_to_start_child, Id, Reason}}.
  static task<start_result> start_link(process& self, supervisor_options opts,
                                       supervisor_init_fn init);
  /// start_link with a fixed init.
  static task<start_result> start_link(process& self, supervisor_options opts,
                                       supervisor_flags flags, std::vector<child_spec> children);
  /// start_link from an outside thread (the supervisor is linked to the scoped_process).
  static start_result start_link(scoped_process& me, supervisor_options opts,
                                 supervisor_init_fn init);

  // The management API, each call declared once for both contexts (beamlet/core/call_context.hpp):
  // from a process it is a task to co_await; from an outside thread's scoped_process it blocks.
  // Each call throws call_error for a dead or unknown supervisor (noproc) and, with a finite
  // `timeout`, when the supervisor does not answer in time.
  /// supervisor:start_child: validates `spec`, appends it and starts the child. Returns {ok, Pid}
  /// or ignore (the spec is kept unless temporary). Errors: invalid_child_spec, already_started
  /// (pid()), already_present, start_failed (reason(); the spec is dropped).
  template <call_context Ctx>
  static in_context<Ctx, sup_result<start_result>> start_child(Ctx& self, supervisor_ref sup,
                                                               child_spec spec,
                                                               timeout_value timeout = infinity);
  /// supervisor:terminate_child: stops the child by its shutdown spec. The spec is kept, so
  /// restart_child can start it again, unless the child is temporary. Errors: not_found.
  template <call_context Ctx>
  static in_context<Ctx, sup_result<void>> terminate_child(Ctx& self, supervisor_ref sup,
                                                           std::string id,
                                                           timeout_value timeout = infinity);
  /// A pid is not an id for a static supervisor: always not_found (spec §6.4 rule 12).
  template <call_context Ctx>
  static in_context<Ctx, sup_result<void>> terminate_child(Ctx& self, supervisor_ref sup, pid child,
                                                           timeout_value timeout = infinity);
  /// supervisor:restart_child: starts a terminated child again from its kept spec. Returns
  /// {ok, Pid} or ignore. Errors: not_found, running, restarting, start_failed (spec kept).
  template <call_context Ctx>
  static in_context<Ctx, sup_result<start_result>> restart_child(Ctx& self, supervisor_ref sup,
                                                                 std::string id,
                                                                 timeout_value timeout = infinity);
  /// supervisor:delete_child: forgets a terminated child's spec. Errors: not_found, running,
  /// restarting.
  template <call_context Ctx>
  static in_context<Ctx, sup_result<void>> delete_child(Ctx& self, supervisor_ref sup,
                                                        std::string id,
                                                        timeout_value timeout = infinity);
  /// Most recently started first.
  template <call_context Ctx>
  static in_context<Ctx, std::vector<child_info>> which_children(Ctx& self, supervisor_ref sup,
                                                                 timeout_value timeout = infinity);
  /// supervisor:count_children: how many specs, live children, supervisors and workers.
  template <call_context Ctx>
  static in_context<Ctx, child_counts> count_children(Ctx& self, supervisor_ref sup,
                                                      timeout_value timeout = infinity);
  /// supervisor:get_childspec: a copy of the child's spec. Errors: not_found.
  template <call_context Ctx>
  static in_context<Ctx, sup_result<child_spec>> get_childspec(Ctx& self, supervisor_ref sup,
                                                               std::string id,
                                                               timeout_value timeout = infinity);
  /// Stops the supervisor (and its children) and waits until it has exited.
  template <call_context Ctx>
  static in_context<Ctx, void> stop(Ctx& self, supervisor_ref sup,
                                    exit_reason reason = exit_reason::normal(),
                                    timeout_value timeout = infinity);
};

/// A start function for a nested supervisor: `child_spec("sub", supervisor_start(flags,
/// children)).with_type(child_type::supervisor)`.
start_function supervisor_start(supervisor_flags flags, std::vector<child_spec> children,
                                supervisor_options opts = {});

BEAMLET_END_NAMESPACE
