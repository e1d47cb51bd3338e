/// @file
/// beamlet/otp/partition_supervisor.hpp: Elixir's PartitionSupervisor (spec §8).
///
/// N independent copies of one child (normally a DynamicSupervisor), started as the children
/// 0..N-1 of a static supervisor, plus a routing table from partition to the partition's current
/// pid. A key picks a partition exactly as Elixir does, so traffic that would all queue in one
/// supervisor is spread over N mailboxes: the fix of the March 2026 outage.
///
///   partition_supervisor_options o;
///   o.name = "conns";
///   o.child = child_spec("dyn", dynamic_supervisor_start()).with_type(child_type::supervisor);
///   co_await partition_supervisor::start_link(self, o);
///   co_await dynamic_supervisor::start_child(self, partition_supervisor::via("conns", user_id),
///                                            spec);
///
/// Routing (§8.3 rule 7): an integral key goes to abs(key) % N; a string key to
/// erlang:phash2(<<Key>>, N), bit-exact with Elixir for the same binary; a pid or ref key to
/// its 64-bit value % N (Erlang's hash of those is not portable, so no port can match it).
/// Differences from Elixir 1.14, on purpose: routing always reaches the partition's live child
/// after a restart (1.14 keeps returning the dead pid for via-named supervisors, §8.3 rule 12);
/// a partition supervisor can also be addressed by pid; count_children and stop accept any
/// address. beamlet has no Registry module, so the supervisor's own name is a registered name.
///
/// Errors: bad options are reported like a static supervisor's bad flags, as the start result
/// {error, {supervisor_data, E}} (E: missing_name, missing_child, {invalid_partitions, N}, or an
/// invalid strategy/intensity/period), or {error, {start_spec, {missing_start, P}}} when
/// with_arguments returns a spec without a start function for partition P; the options are
/// checked in the caller, and nothing is spawned. (Elixir raises ArgumentError for the first
/// four; beamlet reports every configuration error of every start function the same way, see
/// docs/errors.md.)
/// Routing through an unknown supervisor exits the caller with {noproc, {partition_supervisor,
/// partitions, [Name]}} (an exit_exception, not wrapped by call). A partition whose child is
/// dead or restarting routes to its last pid (calls fail with noproc until the restart
/// succeeds); one whose child returned ignore routes to the null pid.
///
/// Thread-safety: routing (via, partitions, whereis) is safe from any thread; the other calls
/// are process (or mailbox) operations.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <beamlet/core/call_context.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/core/via.hpp>
#include <beamlet/otp/child_spec.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/rate_limit.hpp>
#include <beamlet/otp/start_result.hpp>
#include <beamlet/otp/supervisor.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

/// An integer type other than bool: what routes by abs(key) rem N.
template <class I>
concept integer_key = std::integral<I> && !std::is_same_v<I, bool>;

/// What a partition supervisor routes on.
class partition_key {
 public:
  /// An integer key: partition abs(v) rem N.
  template <integer_key I>
  partition_key(I v) noexcept : kind_(kind::integer) {
    if constexpr (std::is_signed_v<I>) {
      // |v| without overflow for the most negative value.
      magnitude_ =
          v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    } else {
      magnitude_ = static_cast<std::uint64_t>(v);
    }
  }
  /// A binary key: partition `erlang:phash2(<<Key>>, N)`, as Elixir picks for the same bytes.
  partition_key(std::string_view binary) : kind_(kind::binary), bytes_(binary) {}
  /// A binary key, as for a string_view.
  partition_key(const std::string& binary) : kind_(kind::binary), bytes_(binary) {}
  /// A binary key from a C string, as for a string_view.
  partition_key(const char* binary) : kind_(kind::binary), bytes_(binary) {}
  /// A pid key: partition `p.serial()` rem N (no port can match Erlang's hash of a pid).
  partition_key(pid p) noexcept : kind_(kind::integer), magnitude_(p.serial()) {}
  /// A ref key: partition `r.value()` rem N.
  partition_key(ref r) noexcept : kind_(kind::integer), magnitude_(r.value()) {}

  /// The partition in 0..partitions-1 (partitions > 0).
  int partition(int partitions) const noexcept;
  /// `42`, `<<"user:42">>`: for error messages.
  std::string to_string() const;

 private:
  enum class kind : std::uint8_t { integer, binary };
  kind kind_;
  std::uint64_t magnitude_ = 0;
  std::string bytes_;
};

/// What partition_supervisor::start_link starts; the defaults are Elixir's.
struct partition_supervisor_options {
  /// Required; the supervisor registers under it.
  std::string name;
  /// Required: the child started once per partition (its id is replaced by the partition).
  child_spec child;
  /// Default: the runtime's scheduler count (Elixir: System.schedulers_online()).
  std::optional<int> partitions;
  /// Elixir's with_arguments: makes partition p's spec from `child` (default: unchanged).
  std::function<child_spec(child_spec, int partition)> with_arguments;
  /// The static supervisor's flags (strategy, `intensity` restarts in `period` seconds: Elixir's
  /// :max_restarts and :max_seconds).
  restart_strategy strategy = restart_strategy::one_for_one;
  /// Restarts allowed within `period` (Elixir's :max_restarts).
  int intensity = 3;
  /// The intensity window in seconds (Elixir's :max_seconds).
  int period = 5;
  /// How long start_link waits for the supervisor's init, which starts every partition (infinity by
  /// default).
  timeout_value timeout;
  /// How the supervisor waits for its children's init acks.
  ack_wait_mode wait = ack_wait_mode::scan;
  /// Start-rate limit over all partitions together, applied by start_child below (in the
  /// caller: a refused start never reaches a partition). Per partition, give the partitions'
  /// dynamic_supervisor_flags a start_rate. Invalid: {supervisor_data, {invalid_start_rate, R}}.
  std::optional<rate_limit> total_start_rate{};
};

/// Elixir's PartitionSupervisor: starting one, routing to its partitions, and managing it. Every
/// function is static.
class partition_supervisor {
 public:
  /// Starts the supervisor and its partitions; bad options give {error, ...} (header comment).
  /// `opts` is read before the task first suspends.
  static task<start_result> start_link(process& self, const partition_supervisor_options& opts);
  /// start_link from an outside thread (blocks it); the supervisor is linked to the scoped_process.
  static start_result start_link(scoped_process& me, const partition_supervisor_options& opts);

  /// DynamicSupervisor.start_child on key's partition, after the total start rate: over it,
  /// {error, rate_limited} at once and nothing is started. The partitions must be dynamic
  /// supervisors. Exits as via() routing does for an unknown supervisor.
  static task<sup_result<start_result>> start_child(process& self, std::string_view name,
                                                    partition_key key, child_spec spec,
                                                    timeout_value timeout = infinity);
  /// {via, PartitionSupervisor, {Name, Key}}: the child of key's partition, resolved at use.
  static via_name via(std::string name, partition_key key);
  /// The same, for a supervisor known by pid.
  static via_name via(pid sup, partition_key key);

  /// The partition count. Throws exit_exception {noproc, ...} for an unknown supervisor.
  static int partitions(runtime& rt, std::string_view name);
  /// The same, from a process.
  static int partitions(process& self, std::string_view name);
  /// GenServer.whereis({via, PartitionSupervisor, {Name, Key}}).
  static pid whereis(runtime& rt, std::string_view name, const partition_key& key);
  /// The same, from a process.
  static pid whereis(process& self, std::string_view name, const partition_key& key);

  // The management calls, each for both contexts (beamlet/core/call_context.hpp). Each takes
  // an optional timeout, as supervisor's do (call_error(timeout) on expiry).
  /// One entry per partition, id = the partition number, in reverse partition order.
  template <call_context Ctx>
  static in_context<Ctx, std::vector<child_info>> which_children(Ctx& self, supervisor_ref sup,
                                                                 timeout_value timeout = infinity);
  /// supervisor:count_children: the partitions, counted as a static supervisor's children.
  template <call_context Ctx>
  static in_context<Ctx, child_counts> count_children(Ctx& self, supervisor_ref sup,
                                                      timeout_value timeout = infinity);
  /// Synchronous: once it returns, the name is free and routing through it fails.
  template <call_context Ctx>
  static in_context<Ctx, void> stop(Ctx& self, supervisor_ref sup,
                                    exit_reason reason = exit_reason::normal(),
                                    timeout_value timeout = infinity);
};

/// A start function for a partition supervisor nested in another supervisor.
start_function partition_supervisor_start(partition_supervisor_options opts);

BEAMLET_END_NAMESPACE
