// beamlet/metrics.hpp: the runtime's metrics, in the Prometheus text exposition format.
//
//   std::string text = beamlet::prometheus_metrics(rt);   // what GET /metrics serves
//
// What is exported (all prefixed beamlet_):
//   processes, mailboxes                       gauges: alive now
//   spawns_total                               counter
//   exits_total{reason="normal|shutdown|killed|error"}
//   messages_total                             counter: messages that reached a process's queue
//   timers                                     gauge: pending receive timeouts and send_after
//   run_queue_length{scheduler="0"}, global_run_queue_length
//   supervisor_restarts_total, supervisor_start_child_total,
//   supervisor_start_child_errors_total, supervisor_children   per supervisor
//       {supervisor="<name or pid>",kind="supervisor|dynamic_supervisor"}
//   message_queue_len{name="..."}              the top_k registered processes by queue length
//   logger_events_total, logger_dropped_total  the logger's counters
// Counters count since the runtime started (Prometheus derives rates, e.g. the start_child
// rate, with rate()). messages_total is published by each scheduler between runs (at least
// every 16 runs, and whenever it idles), so it may trail by a scheduler's last few runs. Collecting
// reads counters the runtime keeps per scheduler, and one pass over the registered names; it never
// asks a process anything, so it answers under overload. Thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include <beamlet/config.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class basic_process;

struct metrics_options {
  /// How many registered processes message_queue_len lists (largest queues first).
  std::size_t top_k = 10;
};

std::string prometheus_metrics(runtime& rt, const metrics_options& opts = {});
std::string prometheus_metrics(basic_process& self, const metrics_options& opts = {});

BEAMLET_END_NAMESPACE
