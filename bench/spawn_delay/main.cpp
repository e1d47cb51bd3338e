// spawn_delay: the outage of docs/outage.md, measured.
//
// A DynamicSupervisor with D start_child requests queued (each from its own client process, as
// in the outage) is released, and every child's init is timestamped. The gap between two
// consecutive inits is the cost of one spawn with that many requests still queued. With the
// BEAM-faithful ack wait (scan) that cost grows with the queue; with the marker wait it does
// not; partitioning divides the queue. The same work runs on CAF 0.17 for comparison.
//
//   spawn_delay [--quick] [--csv FILE] [--trajectory-csv FILE] [--no-caf]
//
// Sections: (1) per-spawn delay against depth, with the fitted slope in ns per queued message;
// (2) draining a 100k backlog through P partitions; (3) catch-up: a backlog with new requests
// arriving at a fixed rate, and whether it drains. Progress goes to stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "beamlet_runs.hpp"
#include "caf_runs.hpp"
#include "measure.hpp"

using namespace spawn_delay;

namespace {

struct options {
  bool quick = false;
  bool caf = true;
  std::string csv;
  std::string trajectory_csv;
  // Overrides of the defaults (empty / negative: the default of the mode).
  std::vector<std::int64_t> depths;
  std::vector<int> partitions;
  std::int64_t backlog = -1;
  std::vector<std::pair<std::int64_t, double>> catch_up;
  double duration = -1;
};

template <class T>
std::vector<T> list_of(const std::string& s) {
  std::vector<T> v;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    const std::string item =
        s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) v.push_back(static_cast<T>(std::stoll(item)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

[[noreturn]] void usage() {
  std::cerr << "usage: spawn_delay [--quick] [--csv FILE] [--trajectory-csv FILE] [--no-caf]\n"
               "                   [--depths D,D,...] [--partitions P,P,...] [--backlog N]\n"
               "                   [--catch-up B:R,B:R,...] [--duration S]\n";
  std::exit(2);
}

options parse_args(int argc, char** argv);

/// Parses and checks the command line; any malformed or out-of-range value prints the usage.
options parse(int argc, char** argv) {
  options o;
  try {
    o = parse_args(argc, argv);
  } catch (const std::exception&) {  // std::stoll / std::stod on a non-number
    usage();
  }
  auto bad = [](const char* what) {
    std::cerr << "spawn_delay: " << what << "\n";
    usage();
  };
  for (std::int64_t d : o.depths)
    if (d < 0) bad("depths must be >= 0");
  for (int p : o.partitions)
    if (p < 1 || p > 1024) bad("partitions must be in 1..1024");
  if (o.backlog == 0 || o.backlog < -1) bad("backlog must be >= 1");
  for (const auto& [b, r] : o.catch_up)
    if (b < 1 || !(r > 0)) bad("catch-up needs a backlog >= 1 and a rate > 0");
  if (o.duration != -1 && !(o.duration > 0 && o.duration <= 3600))
    bad("duration must be in (0, 3600] s");
  return o;
}

options parse_args(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--no-caf") {
      o.caf = false;
    } else if (a == "--csv" && i + 1 < argc) {
      o.csv = argv[++i];
    } else if (a == "--trajectory-csv" && i + 1 < argc) {
      o.trajectory_csv = argv[++i];
    } else if (a == "--depths" && i + 1 < argc) {
      o.depths = list_of<std::int64_t>(argv[++i]);
    } else if (a == "--partitions" && i + 1 < argc) {
      o.partitions = list_of<int>(argv[++i]);
    } else if (a == "--backlog" && i + 1 < argc) {
      o.backlog = std::stoll(argv[++i]);
    } else if (a == "--duration" && i + 1 < argc) {
      o.duration = std::stod(argv[++i]);
    } else if (a == "--catch-up" && i + 1 < argc) {
      std::string spec = argv[++i];
      std::size_t pos = 0;
      while (pos < spec.size()) {
        std::size_t comma = spec.find(',', pos);
        if (comma == std::string::npos) comma = spec.size();
        const std::string item = spec.substr(pos, comma - pos);
        const std::size_t colon = item.find(':');
        if (colon == std::string::npos) usage();
        o.catch_up.emplace_back(std::stoll(item.substr(0, colon)),
                                std::stod(item.substr(colon + 1)));
        pos = comma + 1;
      }
    } else {
      usage();
    }
  }
  return o;
}

void progress(const std::string& line) {
  std::cerr << "  " << line << "\n";
}

/// A CSV row (and a table row): per-spawn gaps over the first `window` spawns.
struct row {
  std::string variant;
  int partitions;
  std::int64_t depth;
  double p50_ns, p90_ns;
  bool drained;
  double drain_s;
};

row summarize(const backlog_run& r, std::size_t window) {
  std::vector<double> g = gaps_ns(r.init_ns);
  // The first gap starts at the release, which the gates signal with up to 1 ms of skew.
  if (g.size() > 1) g.erase(g.begin());
  if (g.size() > window) g.resize(window);
  return row{r.variant,         r.partitions, r.depth,  percentile(g, 50),
             percentile(g, 90), r.drained,    r.drain_s};
}

std::string fmt_ns(double ns) {
  char buf[32];
  if (ns >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else if (ns >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);
  const auto t_start = std::chrono::steady_clock::now();
  std::vector<row> rows;  // the depth sweep, then the partitioned drains
  using beamlet::ack_wait;

  // -- 1. per-spawn delay against depth ----------------------------------------------------------
  const std::vector<std::int64_t> depths =
      !opt.depths.empty() ? opt.depths
      : opt.quick         ? std::vector<std::int64_t>{0, 1000, 10000, 100000}
                          : std::vector<std::int64_t>{0, 1000, 10000, 100000, 300000, 1000000};
  const std::size_t window = 1000;
  std::cerr << "1. per-spawn delay against depth\n";
  for (std::int64_t d : depths) {
    const std::int64_t seq = opt.quick ? 1000 : 2000;
    // Drain completely where that is cheap; otherwise time the first `window` spawns, at an
    // almost unchanged depth.
    auto timed_for = [&](bool cheap) -> std::int64_t {
      if (d == 0) return seq;
      return cheap ? d : static_cast<std::int64_t>(window) + 1;
    };
    rows.push_back(
        summarize(beamlet_backlog(ack_wait::scan, 1, d, timed_for(d <= 10000), progress), window));
    rows.push_back(summarize(
        beamlet_backlog(ack_wait::marker, 1, d, timed_for(!opt.quick || d <= 100000), progress),
        window));
    if (opt.caf)
      rows.push_back(summarize(caf_backlog(1, d, timed_for(d <= 10000), progress), window));
  }

  // -- 2. draining 100k through P partitions -----------------------------------------------------
  const std::int64_t backlog = opt.backlog > 0 ? opt.backlog : 100000;
  const std::vector<int> parts = !opt.partitions.empty() ? opt.partitions
                                 : opt.quick             ? std::vector<int>{1, 16}
                                                         : std::vector<int>{1, 2, 4, 8, 16};
  std::cerr << "2. draining " << backlog << " queued requests through P partitions\n";
  std::vector<row> drains;
  for (int p : parts) {
    // The quick run cannot afford scan's O(n^2) drain through one supervisor: it times the
    // first spawns only (drain_s stays empty).
    const bool full = !opt.quick || p > 1;
    drains.push_back(
        summarize(beamlet_backlog(ack_wait::scan, p, backlog, full ? backlog : 2001, progress),
                  static_cast<std::size_t>(backlog)));
    drains.push_back(summarize(beamlet_backlog(ack_wait::marker, p, backlog, backlog, progress),
                               static_cast<std::size_t>(backlog)));
    if (opt.caf && (p == 1 || p == 16) && full)
      drains.push_back(
          summarize(caf_backlog(p, backlog, backlog, progress), static_cast<std::size_t>(backlog)));
  }
  rows.insert(rows.end(), drains.begin(), drains.end());

  // -- fitted slopes (the depth sweep only)
  // --------------------------------------------------------
  const std::size_t sweep_rows = rows.size() - drains.size();
  std::map<std::string, linear_fit> fits;
  for (const std::string v : {"beamlet-scan", "beamlet-marker", "caf-await"}) {
    std::vector<double> x, y;
    for (std::size_t i = 0; i < sweep_rows; ++i) {
      if (rows[i].variant != v) continue;
      x.push_back(static_cast<double>(rows[i].depth));
      y.push_back(rows[i].p50_ns);
    }
    if (x.size() >= 2) fits[v] = fit(x, y);
  }

  // -- 3. catch-up
  // ---------------------------------------------------------------------------------
  struct case_t {
    std::int64_t backlog;
    double rate;
  };
  std::vector<case_t> cases =
      opt.quick
          ? std::vector<case_t>{{1000000, 100}}
          : std::vector<case_t>{{100000, 100}, {100000, 1000}, {1000000, 100}, {1000000, 1000}};
  if (!opt.catch_up.empty()) {
    cases.clear();
    for (const auto& [b, r] : opt.catch_up) cases.push_back({b, r});
  }
  const double duration = opt.duration > 0 ? opt.duration : opt.quick ? 5 : 20;
  std::cerr << "3. catch-up: a backlog plus arrivals at a fixed rate, for " << duration << " s\n";
  std::vector<catch_up_run> trajectories;
  for (const case_t& c : cases) {
    trajectories.push_back(
        beamlet_catch_up(ack_wait::scan, 1, c.backlog, c.rate, duration, progress));
    trajectories.push_back(
        beamlet_catch_up(ack_wait::marker, 1, c.backlog, c.rate, duration, progress));
    trajectories.push_back(
        beamlet_catch_up(ack_wait::scan, 16, c.backlog, c.rate, duration, progress));
    if (opt.caf && !opt.quick)
      trajectories.push_back(caf_catch_up(1, c.backlog, c.rate, duration, progress));
  }

  // -- report
  // --------------------------------------------------------------------------------------
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "variant,partitions,depth,per_spawn_ns_p50,per_spawn_ns_p90,drain_s\n";
    for (const row& r : rows) {
      f << r.variant << ',' << r.partitions << ',' << r.depth << ',' << std::llround(r.p50_ns)
        << ',' << std::llround(r.p90_ns) << ',';
      if (r.drained) f << r.drain_s;
      f << '\n';
    }
  }
  if (!opt.trajectory_csv.empty()) {
    std::ofstream f(opt.trajectory_csv);
    f << "variant,partitions,backlog,rate_per_s,t_s,waiting\n";
    for (const catch_up_run& t : trajectories)
      for (const trajectory_point& p : t.points)
        f << t.variant << ',' << t.partitions << ',' << t.backlog << ',' << t.rate_per_s << ','
          << p.t_s << ',' << p.waiting << '\n';
  }

  std::printf(
      "Per-spawn delay with D requests queued (median and p90 of the gaps between\n"
      "consecutive child inits, first %zu spawns; drain = all D served)\n\n",
      window);
  std::printf("%-15s %3s %9s %12s %12s %10s\n", "variant", "P", "depth", "p50", "p90", "drain");
  for (const row& r : rows) {
    char drain[32] = "";
    if (r.drained) std::snprintf(drain, sizeof drain, "%.3f s", r.drain_s);
    std::printf("%-15s %3d %9lld %12s %12s %10s\n", r.variant.c_str(), r.partitions,
                static_cast<long long>(r.depth), fmt_ns(r.p50_ns).c_str(), fmt_ns(r.p90_ns).c_str(),
                drain);
  }
  std::printf("\nFitted per-spawn delay = slope x depth + intercept (P = 1, depths above):\n");
  for (const auto& [v, f] : fits)
    std::printf("  %-15s slope %8.3f ns per queued request, intercept %s, r^2 %.3f\n", v.c_str(),
                f.slope, fmt_ns(f.intercept).c_str(), f.r2);

  std::printf("\nCatch-up over %.0f s (waiting = queued requests not yet served):\n", duration);
  std::printf("%-15s %3s %9s %7s %12s %12s %8s  %s\n", "variant", "P", "backlog", "rate/s",
              "waiting@0", "waiting@end", "served", "verdict");
  for (const catch_up_run& t : trajectories) {
    const std::int64_t w0 = t.points.empty() ? t.backlog : t.points.front().waiting;
    const std::int64_t w1 = t.points.empty() ? t.backlog : t.points.back().waiting;
    std::string verdict;
    double caught = -1;
    for (const trajectory_point& p : t.points)
      if (p.waiting <= 0) {
        caught = p.t_s;
        break;
      }
    if (caught >= 0) {
      char b[64];
      std::snprintf(b, sizeof b, "drained in %.1f s", caught);
      verdict = b;
    } else {
      verdict = w1 < w0 ? "shrinking, not drained" : "growing: never catches up";
    }
    std::printf("%-15s %3d %9lld %7.0f %12lld %12lld %8lld  %s\n", t.variant.c_str(), t.partitions,
                static_cast<long long>(t.backlog), t.rate_per_s, static_cast<long long>(w0),
                static_cast<long long>(w1), static_cast<long long>(t.served), verdict.c_str());
  }
  if (const auto it = fits.find("beamlet-scan"); it != fits.end() && it->second.slope > 0) {
    std::printf("\nBreak-even backlog for beamlet-scan (per-spawn delay = 1/rate):\n");
    for (double rate : {100.0, 1000.0}) {
      const double b = (1e9 / rate - it->second.intercept) / it->second.slope;
      std::printf("  at %5.0f/s: %.0f queued requests\n", rate, b);
    }
  }
  std::printf("\nTotal run time %.0f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
  return 0;
}
