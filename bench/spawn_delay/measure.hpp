// What one spawn-delay run measures, and the statistics the report needs.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spawn_delay {

/// One backlog run: `depth` start requests queued (split over `partitions` supervisors), the
/// supervisors released at once, and the init times of the children that started.
struct backlog_run {
  std::string variant;  // beamlet-scan, beamlet-marker, caf-await, beam
  int partitions = 1;
  std::int64_t depth = 0;
  /// Init times in ns after the release, sorted. The first `timed` starts, or all of them.
  std::vector<std::int64_t> init_ns;
  /// All `depth` requests were served (so drain_s is meaningful).
  bool drained = false;
  double drain_s = 0;
  /// Messages the supervisor's receives examined per spawn, averaged over the timed spawns
  /// (the deterministic cost: about the queue length with scan, about 1 with marker); -1 when
  /// the runtime cannot tell (CAF, BEAM).
  double examined_per_spawn = -1;
};

/// A point of a catch-up trajectory: time since release, requests still waiting.
struct trajectory_point {
  double t_s;
  std::int64_t waiting;
};

struct catch_up_run {
  std::string variant;
  int partitions = 1;
  std::int64_t backlog = 0;
  double rate_per_s = 0;
  double duration_s = 0;
  std::vector<trajectory_point> points;
  std::int64_t arrived = 0;
  std::int64_t served = 0;
};

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Where the children of a run record their init times (in completion order), and when the
/// supervisors were released. Shared by the beamlet and CAF runs; the driver reads the first n
/// times once `written` reaches n.
struct init_log {
  explicit init_log(std::int64_t capacity) : times(static_cast<std::size_t>(capacity)) {}

  /// Called by a child's init.
  void record_init() noexcept {
    const std::int64_t t = now_ns();
    const std::int64_t i = started.fetch_add(1, std::memory_order_relaxed);
    if (i < static_cast<std::int64_t>(times.size())) times[static_cast<std::size_t>(i)] = t;
    written.fetch_add(1, std::memory_order_release);
  }
  /// Called by each supervisor as it is released: the earliest release counts.
  void mark_release() noexcept {
    const std::int64_t t = now_ns();
    std::int64_t cur = release_ns.load();
    while (t < cur && !release_ns.compare_exchange_weak(cur, t)) {
    }
  }
  /// The first `want` init times, relative to the release and sorted, into `out`.
  void fill(backlog_run& out, std::int64_t want) const {
    const std::int64_t release = release_ns.load();
    out.init_ns.reserve(static_cast<std::size_t>(want));
    for (std::int64_t i = 0; i < want; ++i)
      out.init_ns.push_back(times[static_cast<std::size_t>(i)] - release);
    std::sort(out.init_ns.begin(), out.init_ns.end());
    out.drained = out.depth > 0 && want == out.depth;
    if (out.drained) out.drain_s = static_cast<double>(out.init_ns.back()) / 1e9;
  }

  /// Called by a start function, inside the supervisor, with what its ack wait examined.
  void record_examined(std::uint64_t n) noexcept {
    if (examined_count.fetch_add(1, std::memory_order_relaxed) <
        static_cast<std::int64_t>(times.size()))
      examined_sum.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  }
  double examined_mean() const noexcept {
    const std::int64_t n =
        std::min<std::int64_t>(examined_count.load(), static_cast<std::int64_t>(times.size()));
    return n == 0 ? -1 : static_cast<double>(examined_sum.load()) / static_cast<double>(n);
  }

  std::vector<std::int64_t> times;
  std::atomic<std::int64_t> examined_sum{0};
  std::atomic<std::int64_t> examined_count{0};
  std::atomic<std::int64_t> started{0};
  std::atomic<std::int64_t> written{0};
  std::atomic<std::int64_t> release_ns{LLONG_MAX};
};

/// The gaps between consecutive inits (the first is measured from the release).
inline std::vector<double> gaps_ns(const std::vector<std::int64_t>& sorted_inits) {
  std::vector<double> g;
  g.reserve(sorted_inits.size());
  std::int64_t prev = 0;
  for (std::int64_t t : sorted_inits) {
    g.push_back(static_cast<double>(t - prev));
    prev = t;
  }
  return g;
}

/// Nearest-rank percentile (p in [0, 100]) of an unsorted sample; 0 for an empty one.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct linear_fit {
  double slope = 0, intercept = 0, r2 = 0;
};

/// Least squares y = slope * x + intercept, with the coefficient of determination.
inline linear_fit fit(const std::vector<double>& x, const std::vector<double>& y) {
  linear_fit f;
  const auto n = static_cast<double>(x.size());
  if (x.size() < 2) return f;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double den = n * sxx - sx * sx;
  if (den == 0) return f;
  f.slope = (n * sxy - sx * sy) / den;
  f.intercept = (sy - f.slope * sx) / n;
  double ss_tot = 0, ss_res = 0;
  const double mean = sy / n;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = y[i] - (f.slope * x[i] + f.intercept);
    ss_res += e * e;
    ss_tot += (y[i] - mean) * (y[i] - mean);
  }
  f.r2 = ss_tot == 0 ? 1 : 1 - ss_res / ss_tot;
  return f;
}

}  // namespace spawn_delay
