/// @file
/// beamlet/observe/metrics.hpp: the runtime's metrics, in the Prometheus text exposition format.
///
///   std::string text = beamlet::prometheus_metrics(rt);   // what GET /metrics serves
///
/// What is exported (all prefixed beamlet_):
///   processes, scoped_processes                gauges: alive now
///   spawns_total                               counter
///   exits_total{reason="normal|shutdown|killed|error"}
///   messages_total                             counter: messages that reached a process's queue
///   timers                                     gauge: pending receive timeouts and send_after
///   run_queue_length{scheduler="0"}, global_run_queue_length
///   supervisor_restarts_total, supervisor_start_child_total,
///   supervisor_start_child_errors_total, supervisor_children   per supervisor
///       {supervisor="<name or pid>",kind="supervisor|dynamic_supervisor"}
///   message_queue_len{name="..."}              the top_k registered processes by queue length
///   logger_events_total, logger_dropped_total  the logger's counters
/// and what the layers above add through collectors (add_metrics_collector):
///   net_open_sockets, net_pool_accepted_total, net_pool_refused_total,
///   net_pool_accept_errors_total, net_pool_active{pool="..."}     the network layer
///   http_connections_open, http_connections_total, http_requests_total, http_rejected_total,
///   http_timeouts_total, http_bad_requests_total, http_accept_errors_total,
///   http_queued_bytes, http_slow_closed_total{port="..."}          each HTTP endpoint
///   dist_outbox_bytes{node="..."}, dist_busy_pauses_total         the distribution layer
/// and, last, the application's own families (beamlet/observe/app_metrics.hpp), under their own
/// names.
/// Counters count since the runtime started (Prometheus derives rates, e.g. the start_child
/// rate, with rate()). messages_total is published by each scheduler between runs (at least
/// every 16 runs, and whenever it idles), so it may trail by a scheduler's last few runs.
/// Collecting reads counters the runtime keeps per scheduler, and one pass over the registered
/// names; it never asks a process anything, so it answers under overload. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class basic_process;
namespace detail {
class runtime_core;
}  // namespace detail

/// What prometheus_metrics includes.
struct metrics_options {
  /// How many registered processes message_queue_len lists (largest queues first).
  std::size_t top_k = 10;
};

/// The metrics of `rt` now, as Prometheus text (what GET /metrics serves): the runtime's own
/// families, then the collectors', then the application's.
std::string prometheus_metrics(runtime& rt, const metrics_options& opts = {});
/// As prometheus_metrics(runtime&, ...), for the runtime of process `self`.
std::string prometheus_metrics(basic_process& self, const metrics_options& opts = {});

/// Writes metric families in the exposition format, for collectors. Names are given without
/// the `beamlet_` prefix, which the writer adds.
class metrics_writer {
 public:
  /// The HELP and TYPE lines of a family (type: "counter", "gauge"); once per family.
  void family(std::string_view name, std::string_view type, std::string_view help);
  /// One sample of the family `name`; `labels` as `key="value",...` (see label()).
  void sample(std::string_view name, std::uint64_t value, std::string_view labels = {});
  /// `key="value"`, with the value escaped as the format requires.
  static std::string label(std::string_view key, std::string_view value);
  /// The text written so far, moved out of the writer.
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Adds families to what prometheus_metrics writes for this runtime (after the built-in ones):
/// `collect` is called each time the metrics are collected, on the collecting thread, and must
/// not block (read counters, do not call processes). A collector added under a `key` already
/// taken replaces that one. The network layer and the HTTP endpoint add theirs this way, and
/// so can an application. Thread-safe.
using metrics_collector = std::function<void(metrics_writer& out)>;
/// Adds `collect` under `key`, replacing a collector already there; it is called on every
/// collection until removed.
void add_metrics_collector(runtime& rt, std::string key, metrics_collector collect);
/// Removes the collector under `key`, if any. A collection already under way may still call it.
void remove_metrics_collector(runtime& rt, std::string_view key);
namespace detail {
void add_metrics_collector(runtime_core& rt, std::string key, metrics_collector collect);
void remove_metrics_collector(runtime_core& rt, std::string_view key);
}  // namespace detail

BEAMLET_END_NAMESPACE
