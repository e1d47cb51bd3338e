/// @file
/// beamlet/otp/dynamic_supervisor.hpp: Elixir's DynamicSupervisor (spec §7).
///
/// A supervisor that starts with no children and starts them on demand. Children are kept by pid
/// (ids are ignored and need not be unique), restarted one_for_one within `intensity` restarts
/// per `period` seconds, and stopped in parallel on shutdown: every child is signalled first, then
/// the supervisor waits for all of them (one kill timer per distinct shutdown time).
///
/// start_child validates the spec in the caller, before the supervisor is contacted; then the
/// supervisor checks max_children (restarting children count) and runs the start function. Its
/// results are passed through unwrapped: {ok, Pid}, {ok, Pid, Info}, ignore, max_children or the
/// start function's own error reason (an exception thrown by it becomes that reason).
///
/// The cost model is the point of this class. A child start ends with a selective receive for
/// the child's init ack inside the supervisor process. With ack_wait_mode::scan (the default, what
/// OTP 25-27 do) that receive examines every message queued in the supervisor, so under a flood
/// of start_child requests each start costs O(queue) and throughput collapses: the March 2026
/// outage. ack_wait_mode::marker keys the wait on a fresh marked ref, so the backlog is skipped and
/// a start costs O(1) whatever is queued (what erlang/otp PR #11633 proposes). Results are
/// identical; choose marker for any supervisor that may face bursts of starts, and scan to
/// reproduce BEAM. A failed restart is retried behind the queued messages ($gen_restart), and
/// every retry counts toward the intensity.
///
/// Overload control (beyond Elixir, all off by default; docs/operations.md): `start_rate` caps
/// the starts per second with a token bucket, and `shed_above` answers start requests with
/// {error, overloaded} while more than that many messages are queued; an operator can force
/// shedding on or off at runtime (set_shedding). Both answer before the start function runs and
/// start nothing. supervisor_options::mailbox bounds the queue itself, and
/// supervisor_options::priority lets the management calls overtake a backlog. A child spec's
/// `backoff` spaces its restarts (beamlet/otp/child_spec.hpp).
///
/// Thread-safety: a dynamic supervisor is a process. Each management call is declared once for
/// both contexts (beamlet/core/call_context.hpp): from a process it is a task to co_await, from
/// the thread owning a scoped_process it blocks.
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
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/otp/child_spec.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/rate_limit.hpp>
#include <beamlet/otp/start_result.hpp>
#include <beamlet/otp/supervisor.hpp>

BEAMLET_BEGIN_NAMESPACE

/// DynamicSupervisor.init/1 options; the defaults are Elixir's.
struct dynamic_supervisor_flags {
  /// Only one_for_one is valid ({supervisor_data, {invalid_strategy, S}} otherwise).
  restart_strategy strategy = restart_strategy::one_for_one;
  /// Restarts allowed within `period` (Elixir's :max_restarts; the same name as in
  /// supervisor_flags); must be >= 0.
  int intensity = 3;
  /// The intensity window in seconds (Elixir's :max_seconds); must be > 0.
  int period = 5;
  /// nullopt: infinity. Counts running and restarting children; must be >= 0.
  std::optional<std::int64_t> max_children{};
  /// Prepended to every child start (see extra_arguments and worker_start_extra).
  extra_arguments extra{};
  /// Start-rate limit: start requests over it get {error, rate_limited} (sup_errc) at once and
  /// start nothing. Restarts are not limited (the intensity governs them). Invalid rates give
  /// {supervisor_data, {invalid_start_rate, R}}.
  std::optional<rate_limit> start_rate{};
  /// Load shedding: while more than this many messages are queued in the supervisor, start
  /// requests get {error, overloaded} and start nothing. set_shedding overrides it.
  std::optional<std::size_t> shed_above{};
};

/// The operator's override of a dynamic supervisor's load shedding.
enum class shedding : std::uint8_t {
  automatic,  ///< follow shed_above (no shedding without it)
  on,         ///< refuse every start request with overloaded
  off,        ///< never shed
};

/// What a dynamic supervisor's init returns: flags, or ignore. A default-constructed value is a
/// bad return ({bad_return, {dynamic_supervisor, init, undefined}}).
class dynamic_supervisor_init {
 public:
  dynamic_supervisor_init() = default;
  /// {ok, Flags}: the supervisor starts with `f`.
  dynamic_supervisor_init(dynamic_supervisor_flags f) : flags(std::move(f)), kind_(kind::ok) {}
  /// ignore: the supervisor does not start, and start_link returns `ignore`.
  static dynamic_supervisor_init ignore() {
    dynamic_supervisor_init i;
    i.kind_ = kind::ignore;
    return i;
  }
  /// True for {ok, Flags}.
  bool is_ok() const noexcept { return kind_ == kind::ok; }
  /// True for ignore.
  bool is_ignore() const noexcept { return kind_ == kind::ignore; }

  /// The flags of {ok, Flags}; meaningful only when is_ok().
  dynamic_supervisor_flags flags;

 private:
  enum class kind : std::uint8_t { bad, ok, ignore };
  kind kind_ = kind::bad;
};

namespace detail {
class dynamic_supervisor_server;
}  // namespace detail

/// How to reach a dynamic supervisor: its pid, registered name or via name, resolved at each use.
using dynamic_supervisor_ref = server_ref<detail::dynamic_supervisor_server>;
/// DynamicSupervisor's init callback: runs inside the new supervisor and returns its flags or
/// ignore.
using dynamic_supervisor_init_fn = std::function<dynamic_supervisor_init()>;

/// Elixir's DynamicSupervisor: starting one, its management calls, and the load-shedding switch.
/// Every function is static.
class dynamic_supervisor {
 public:
  /// DynamicSupervisor.start_link: {ok, Pid}, ignore, or {error, R} with R one of
  /// {supervisor_data, E} or {bad_return, ...}. `opts.wait` selects the child ack wait.
  static task<start_result> start_link(process& self, supervisor_options opts,
                                       dynamic_supervisor_init_fn init);
  /// `flags` is copied before the task first suspends (a reference parameter, so passing a
  /// named flags object creates no temporary in the caller's co_await expression; see
  /// docs/gcc12-coroutines.md).
  static task<start_result> start_link(process& self, supervisor_options opts,
                                       const dynamic_supervisor_flags& flags);
  /// start_link from an outside thread (blocks it); the supervisor is linked to the scoped_process.
  static start_result start_link(scoped_process& me, supervisor_options opts,
                                 const dynamic_supervisor_flags& flags);

  // The management API, each call for both contexts. Each throws call_error for a dead or
  // unknown supervisor (noproc) and, with a finite `timeout`, when the supervisor does not
  // answer in time (the default, infinity, is Elixir's).

  /// Starts a child. An invalid spec fails with invalid_child_spec without contacting `sup`.
  template <call_context Ctx>
  static in_context<Ctx, sup_result<start_result>> start_child(Ctx& self,
                                                               dynamic_supervisor_ref sup,
                                                               child_spec spec,
                                                               timeout_value timeout = infinity);
  /// start_child without waiting (gen_server:send_request): queues the request and returns at
  /// once; receive_response(self, id) then gives what start_child would have. Many may be
  /// outstanding. An invalid spec throws std::invalid_argument (nothing is sent); a dead
  /// supervisor, or a bounded mailbox that refuses the request, surfaces in receive_response
  /// (noproc, mailbox_full).
  static request_id<sup_result<start_result>> send_start_child(basic_process& self,
                                                               dynamic_supervisor_ref sup,
                                                               child_spec spec);
  /// Stops a child (or forgets a restarting one) by pid; not_found if it is not a child (the
  /// null pid included).
  template <call_context Ctx>
  static in_context<Ctx, sup_result<void>> terminate_child(Ctx& self, dynamic_supervisor_ref sup,
                                                           pid child,
                                                           timeout_value timeout = infinity);
  /// Unordered. Each entry's id is empty (Elixir's :undefined); a restarting child has the
  /// null pid and state restarting.
  template <call_context Ctx>
  static in_context<Ctx, std::vector<child_info>> which_children(Ctx& self,
                                                                 dynamic_supervisor_ref sup,
                                                                 timeout_value timeout = infinity);
  /// `active` counts children that are not restarting (no liveness check, as Elixir).
  template <call_context Ctx>
  static in_context<Ctx, child_counts> count_children(Ctx& self, dynamic_supervisor_ref sup,
                                                      timeout_value timeout = infinity);
  /// Stops the supervisor (its children in parallel) and waits until it has exited.
  template <call_context Ctx>
  static in_context<Ctx, void> stop(Ctx& self, dynamic_supervisor_ref sup,
                                    exit_reason reason = exit_reason::normal(),
                                    timeout_value timeout = infinity);

  /// Forces shedding on or off, or back to automatic, at once: the switch is read by the
  /// supervisor at each start request, without a message, so it works however deep the queue
  /// is. Any thread. False if `sup` is not a live dynamic supervisor; a `mode` that is not one
  /// of the enumerators throws std::invalid_argument.
  static bool set_shedding(runtime& rt, pid sup, shedding mode);
  /// The same, from a process.
  static bool set_shedding(basic_process& self, pid sup, shedding mode);
};

/// A start function for a dynamic supervisor as the child of another supervisor:
/// `child_spec("conns", dynamic_supervisor_start(flags, opts)).with_type(child_type::supervisor)`.
start_function dynamic_supervisor_start(dynamic_supervisor_flags flags = {},
                                        supervisor_options opts = {});

BEAMLET_END_NAMESPACE
