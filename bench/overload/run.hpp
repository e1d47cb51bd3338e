// One overload run and one calibration run, each meant to be called in a fresh process (the
// runtime they start is theirs alone, so its memory figures belong to one configuration).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace overload {

enum class control : std::uint8_t { none, rate_limit, shedding, bounded, partitioned };

inline constexpr control all_controls[] = {control::none, control::rate_limit, control::shedding,
                                           control::bounded, control::partitioned};

/// The name used on the command line and in the CSVs.
inline std::string_view name_of(control c) {
  switch (c) {
    case control::none:
      return "none";
    case control::rate_limit:
      return "rate_limit";
    case control::shedding:
      return "shedding";
    case control::bounded:
      return "bounded";
    case control::partitioned:
      return "partitioned";
  }
  return "?";
}

struct run_params {
  control what = control::none;
  double offered_per_s = 0;
  double seconds = 10;
  double recovery_cap_s = 60;
  std::int64_t start_cost_ns = 100'000;
  double rate_per_s = 0;  // rate_limit
  double burst = 1;       // rate_limit
  std::int64_t shed_above = 1000;
  std::int64_t mailbox_capacity = 1000;
  int partitions = 16;
};

/// One point of the time series: t is seconds since the load began (the load ends at
/// run_params::seconds; later points belong to the recovery).
struct sample {
  double t_s = 0;
  std::int64_t queue_len = 0;  // summed over the partitions
  std::int64_t accepted = 0;   // cumulative
  std::int64_t refused = 0;    // cumulative, every cause
  std::int64_t rss_bytes = 0;
};

/// Plain data, so that a forked child can hand it back through a pipe as bytes.
struct run_summary {
  std::int64_t offered = 0;  // requests actually sent during the load
  std::int64_t accepted = 0;
  std::int64_t accepted_in_load = 0;  // answered before the load stopped: the goodput
  std::int64_t rate_limited = 0;
  std::int64_t overloaded = 0;
  std::int64_t mailbox_full = 0;
  std::int64_t other_errors = 0;
  std::int64_t unanswered = 0;  // still waiting when the supervisor was torn down
  double p50_ms = 0, p99_ms = 0;
  std::int64_t peak_queue = 0;
  std::int64_t peak_rss_bytes = 0;
  std::int64_t peak_sup_bytes = 0;  // process_info memory, summed over the partitions
  bool recovered = false;
  double recovery_s = 0;
};

struct run_result {
  run_summary summary;
  std::vector<sample> series;
};

/// Starts per second of one idle scan-mode DynamicSupervisor, measured closed-loop for `seconds`.
double calibrate(std::int64_t start_cost_ns, double seconds);

/// Offers p.offered_per_s start requests for p.seconds, then waits for the recovery.
run_result run(const run_params& p);

}  // namespace overload
