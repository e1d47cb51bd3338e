// spawn_delay: the outage of docs/outage.md, measured.
//
// A DynamicSupervisor with D start_child requests queued (each from its own client process, as
// in the outage) is released, and every child's init is timestamped. The gap between two
// consecutive inits is the cost of one spawn with that many requests still queued. With the
// BEAM-faithful ack wait (scan) that cost grows with the queue; with the marker wait it does
// not; partitioning divides the queue. The same work runs on CAF 0.17 for comparison.
//
// Sections: (1) per-spawn delay against depth, with the fitted slope in ns per queued message;
// (2) draining a backlog through P partitions; (3) catch-up: a backlog with new requests
// arriving at a fixed rate, and whether it drains. Run `spawn_delay --help` for the options.
//
// Every measurement runs in a fresh process (fork), so that one run's memory history (where the
// allocator's recycled blocks sit) cannot shape the next one's scan cost, and sections 1 and 2
// repeat each measurement and report the median and the spread. Beside each time stands the
// deterministic cost: the messages the supervisor examined per spawn, which is the queue length
// for scan, about 1 for marker, and 1/P of the queue per partition; unlike a time, it cannot
// drift between runs. Rows and CSV lines are written as each measurement ends.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../common/cli.hpp"
#include "beamlet_runs.hpp"
#include "caf_runs.hpp"
#include "measure.hpp"

using namespace spawn_delay;

namespace {

const char* const usage_text =
    "usage: spawn_delay [options]\n"
    "\n"
    "  --quick               depths 0,1k,10k,100k; P in {1,16}; one 1M:100/s catch-up of 5 s;\n"
    "                        3 repetitions (about 3-4 minutes)\n"
    "  --depths D,...        section 1 depths (k and M suffixes: 10k, 1M); default\n"
    "                        0,1k,10k,100k,300k,1M\n"
    "  --partitions P,...    section 2 partition counts, 1..1024; default 1,2,4,8,16\n"
    "  --backlog N           section 2 backlog; default 100k\n"
    "  --catch-up B:R,...    section 3 cases: backlog B, R new requests per second; default\n"
    "                        100k:100,100k:1000,1M:100,1M:1000\n"
    "  --duration S          section 3 length in seconds, (0, 3600]; default 20 (5 quick)\n"
    "  --repetitions K       runs per measurement in sections 1 and 2 (median and spread\n"
    "                        reported), 1..50; default 3\n"
    "  --no-caf              skip the CAF variant (it is the slowest part)\n"
    "  --no-sections LIST    skip sections, e.g. 3 or 2,3\n"
    "  --csv FILE            sections 1-2 as CSV, written as each measurement ends\n"
    "  --trajectory-csv FILE section 3 trajectories as CSV\n"
    "  --help                this text\n"
    "\n"
    "Run time on 2 cores: the default run takes about 40-60 minutes (scan drains of 100k with\n"
    "P = 1 take a minute each, 1M depths several); --quick about 3-4 minutes; scripts/demo's\n"
    "selection about 3 minutes. Progress, with elapsed time and an estimate, goes to stderr.\n";

struct options {
  bool quick = false;
  bool caf = true;
  bool section[4] = {false, true, true, true};
  int repetitions = 3;
  std::string csv;
  std::string trajectory_csv;
  std::vector<std::int64_t> depths;
  std::vector<int> partitions;
  std::int64_t backlog = -1;
  std::vector<std::pair<std::int64_t, double>> catch_up;
  double duration = -1;
};

options parse(int argc, char** argv) {
  options o;
  bool reps_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw cli::error(a + ": a value is missing");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << usage_text;
      std::exit(0);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--no-caf") {
      o.caf = false;
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--trajectory-csv") {
      o.trajectory_csv = value();
    } else if (a == "--depths") {
      o.depths = cli::parse_list(
          a, value(), [&](std::string_view t) { return cli::parse_count(a, t, 0, 10'000'000); });
    } else if (a == "--partitions") {
      o.partitions = cli::parse_list(a, value(), [&](std::string_view t) {
        return static_cast<int>(cli::parse_count(a, t, 1, 1024));
      });
    } else if (a == "--backlog") {
      o.backlog = cli::parse_count(a, value(), 1, 10'000'000);
    } else if (a == "--duration") {
      o.duration = cli::parse_number(a, value(), 0.001, 3600);
    } else if (a == "--repetitions") {
      o.repetitions = static_cast<int>(cli::parse_count(a, value(), 1, 50));
      reps_given = true;
    } else if (a == "--no-sections") {
      for (std::int64_t s : cli::parse_list(
               a, value(), [&](std::string_view t) { return cli::parse_count(a, t, 1, 3); }))
        o.section[s] = false;
    } else if (a == "--catch-up") {
      o.catch_up = cli::parse_list(a, value(), [&](std::string_view t) {
        const std::size_t colon = t.find(':');
        if (colon == std::string_view::npos)
          throw cli::error(a + ": '" + std::string(t) + "' is not B:R");
        return std::pair(cli::parse_count(a, t.substr(0, colon), 1, 10'000'000),
                         cli::parse_number(a, t.substr(colon + 1), 0.001, 1e7));
      });
    } else {
      throw cli::error("unknown option " + a);
    }
  }
  if (o.quick && !reps_given) o.repetitions = 3;
  return o;
}

// -- one measurement in a fresh process -------------------------------------------------------

/// What sections 1 and 2 keep of a backlog run (computed in the child).
struct backlog_summary {
  double p50_ns = 0, p90_ns = 0;
  bool drained = false;
  double drain_s = 0;
  double examined = -1;
};

backlog_summary summarize(const backlog_run& r, std::size_t window) {
  std::vector<double> g = gaps_ns(r.init_ns);
  // The first gap starts at the release, which the gates signal with up to 1 ms of skew.
  if (g.size() > 1) g.erase(g.begin());
  if (g.size() > window) g.resize(window);
  return {percentile(g, 50), percentile(g, 90), r.drained, r.drain_s, r.examined_per_spawn};
}

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// Runs `f` in a child process and returns the bytes it wrote (nullopt if it failed). The
/// parent never starts a runtime, so forking it is safe.
template <class F>
std::optional<std::string> in_fresh_process(F f) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return std::nullopt;
  if (child == 0) {
    // A run stuck in the child must not outlive a parent that was killed (by a test timeout).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(fds[0]);
    int status = 0;
    try {
      const std::string bytes = f();
      if (!write_all(fds[1], bytes.data(), bytes.size())) status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "spawn_delay: measurement failed: %s\n", e.what());
      status = 1;
    }
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(status);
  }
  ::close(fds[1]);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

template <class T>
std::string bytes_of(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

/// One point of section 1 or 2: K runs of the same measurement, each in a fresh process.
struct row {
  int section;
  std::string variant;
  int partitions;
  std::int64_t depth;
  std::vector<backlog_summary> runs;

  double median_of(double backlog_summary::*field) const {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }
  double min_p50() const {
    double m = runs.empty() ? 0 : runs[0].p50_ns;
    for (const auto& r : runs) m = std::min(m, r.p50_ns);
    return m;
  }
  double max_p50() const {
    double m = 0;
    for (const auto& r : runs) m = std::max(m, r.p50_ns);
    return m;
  }
  bool drained() const {
    return !runs.empty() &&
           std::all_of(runs.begin(), runs.end(), [](const auto& r) { return r.drained; });
  }
};

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

std::string fmt_examined(double e) {
  if (e < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", e);
  return buf;
}

class report {
 public:
  explicit report(const std::string& csv_path) {
    if (!csv_path.empty()) {
      csv_.open(csv_path);
      csv_ << "variant,partitions,depth,per_spawn_ns_p50,per_spawn_ns_p90,drain_s,repetitions,"
              "per_spawn_ns_p50_min,per_spawn_ns_p50_max,examined_per_spawn\n";
      csv_.flush();
    }
    std::printf("%-15s %3s %9s %12s %23s %12s %10s %10s\n", "variant", "P", "depth", "p50",
                "p50 spread (min..max)", "p90", "examined", "drain");
    std::fflush(stdout);
  }
  void add(const row& r) {
    const double p50 = r.median_of(&backlog_summary::p50_ns);
    const double p90 = r.median_of(&backlog_summary::p90_ns);
    const double examined = r.median_of(&backlog_summary::examined);
    const double drain = r.median_of(&backlog_summary::drain_s);
    char drain_text[32] = "";
    if (r.drained()) std::snprintf(drain_text, sizeof drain_text, "%.3f s", drain);
    const std::string spread = fmt_ns(r.min_p50()) + ".." + fmt_ns(r.max_p50());
    std::printf("%-15s %3d %9lld %12s %23s %12s %10s %10s\n", r.variant.c_str(), r.partitions,
                static_cast<long long>(r.depth), fmt_ns(p50).c_str(), spread.c_str(),
                fmt_ns(p90).c_str(), fmt_examined(examined).c_str(), drain_text);
    std::fflush(stdout);
    if (csv_.is_open()) {
      csv_ << r.variant << ',' << r.partitions << ',' << r.depth << ',' << std::llround(p50) << ','
           << std::llround(p90) << ',';
      if (r.drained()) csv_ << drain;
      csv_ << ',' << r.runs.size() << ',' << std::llround(r.min_p50()) << ','
           << std::llround(r.max_p50()) << ',';
      if (examined >= 0) csv_ << examined;
      csv_ << '\n';
      csv_.flush();
    }
  }

 private:
  std::ofstream csv_;
};

}  // namespace

int main(int argc, char** argv) {
  options opt;
  try {
    opt = parse(argc, argv);
  } catch (const cli::error& e) {
    std::cerr << "spawn_delay: " << e.what() << "\n\n" << usage_text;
    return 2;
  }
  using beamlet::ack_wait_mode;
  const auto t_start = std::chrono::steady_clock::now();

  const std::vector<std::int64_t> depths =
      !opt.depths.empty() ? opt.depths
      : opt.quick         ? std::vector<std::int64_t>{0, 1000, 10000, 100000}
                          : std::vector<std::int64_t>{0, 1000, 10000, 100000, 300000, 1000000};
  const std::int64_t backlog = opt.backlog > 0 ? opt.backlog : 100000;
  const std::vector<int> parts = !opt.partitions.empty() ? opt.partitions
                                 : opt.quick             ? std::vector<int>{1, 16}
                                                         : std::vector<int>{1, 2, 4, 8, 16};
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
  const int k = opt.repetitions;
  const std::size_t window = 1000;

  // The plan, so that progress can say how far along the run is.
  struct task_t {
    int section;
    std::string variant;
    ack_wait_mode mode;
    bool caf;
    int partitions;
    std::int64_t depth;
    std::int64_t timed;
  };
  std::vector<task_t> plan;
  if (opt.section[1]) {
    for (std::int64_t d : depths) {
      const std::int64_t seq = opt.quick ? 1000 : 2000;
      // Drain completely where that is cheap; otherwise time the first `window` spawns, at an
      // almost unchanged depth.
      auto timed_for = [&](bool cheap) -> std::int64_t {
        if (d == 0) return seq;
        return cheap ? d : static_cast<std::int64_t>(window) + 1;
      };
      plan.push_back({1, "beamlet-scan", ack_wait_mode::scan, false, 1, d, timed_for(d <= 10000)});
      plan.push_back({1, "beamlet-marker", ack_wait_mode::marker, false, 1, d,
                      timed_for(!opt.quick || d <= 100000)});
      if (opt.caf)
        plan.push_back({1, "caf-await", ack_wait_mode::scan, true, 1, d, timed_for(d <= 10000)});
    }
  }
  if (opt.section[2]) {
    for (int p : parts) {
      // The quick run cannot afford scan's O(n^2) drain through one supervisor: it times the
      // first spawns only (no drain time).
      const bool full = !opt.quick || p > 1;
      plan.push_back(
          {2, "beamlet-scan", ack_wait_mode::scan, false, p, backlog, full ? backlog : 2001});
      plan.push_back({2, "beamlet-marker", ack_wait_mode::marker, false, p, backlog, backlog});
      if (opt.caf && (p == 1 || p == 16) && full)
        plan.push_back({2, "caf-await", ack_wait_mode::scan, true, p, backlog, backlog});
    }
  }
  const int catch_up_runs =
      opt.section[3] ? static_cast<int>(cases.size()) * (opt.caf && !opt.quick ? 4 : 3) : 0;
  cli::progress prog(static_cast<int>(plan.size()) * k + catch_up_runs);
  auto quiet = [](const std::string&) {};  // per-run detail would drown the estimate

  // -- sections 1 and 2 --------------------------------------------------------------------------
  std::vector<row> rows;
  std::map<std::string, linear_fit> fits;
  if (!plan.empty()) {
    std::printf(
        "Per-spawn delay with D requests queued: median over %d runs (each in a fresh process) of\n"
        "the median gap between consecutive child inits (first %zu spawns), the spread of that\n"
        "median across runs, p90, messages the supervisor examined per spawn, and the drain time\n"
        "(all D served).\n\n",
        k, window);
  }
  report rep(opt.csv);
  int current_section = 0;
  for (const task_t& t : plan) {
    if (t.section != current_section) {
      current_section = t.section;
      std::fprintf(stderr, current_section == 1 ? "1. per-spawn delay against depth\n"
                                                : "2. draining the backlog through P partitions\n");
      if (current_section == 2) std::printf("\n");
    }
    row r{t.section, t.variant, t.partitions, t.depth, {}};
    for (int i = 0; i < k; ++i) {
      prog.step(t.variant + " P=" + std::to_string(t.partitions) +
                " depth=" + std::to_string(t.depth) + " run " + std::to_string(i + 1) + "/" +
                std::to_string(k));
      const std::size_t win = t.section == 1 ? window : static_cast<std::size_t>(t.depth);
      auto bytes = in_fresh_process([&] {
        const backlog_run run =
            t.caf ? caf_backlog(t.partitions, t.depth, t.timed, quiet)
                  : beamlet_backlog(t.mode, t.partitions, t.depth, t.timed, quiet);
        return bytes_of(summarize(run, win));
      });
      if (!bytes || bytes->size() != sizeof(backlog_summary)) {
        std::fprintf(stderr, "spawn_delay: a run of %s failed\n", t.variant.c_str());
        continue;
      }
      backlog_summary s;
      std::memcpy(&s, bytes->data(), sizeof s);
      r.runs.push_back(s);
    }
    if (!r.runs.empty()) {
      rep.add(r);
      rows.push_back(r);
    }
  }
  // Fitted slopes over the depth sweep (section 1).
  for (const std::string v : {"beamlet-scan", "beamlet-marker", "caf-await"}) {
    std::vector<double> x, y;
    for (const row& r : rows)
      if (r.section == 1 && r.variant == v) {
        x.push_back(static_cast<double>(r.depth));
        y.push_back(r.median_of(&backlog_summary::p50_ns));
      }
    if (x.size() >= 2) fits[v] = fit(x, y);
  }
  if (opt.section[1] && !fits.empty()) {
    std::printf("\nFitted per-spawn delay = slope x depth + intercept (P = 1, section 1):\n");
    for (const auto& [v, f] : fits)
      std::printf("  %-15s slope %8.3f ns per queued request, r^2 %.3f\n", v.c_str(), f.slope,
                  f.r2);
  }

  // -- 3. catch-up
  // ---------------------------------------------------------------------------------
  if (opt.section[3]) {
    std::fprintf(stderr, "3. catch-up: a backlog plus arrivals at a fixed rate, for %g s\n",
                 duration);
    std::ofstream traj;
    if (!opt.trajectory_csv.empty()) {
      traj.open(opt.trajectory_csv);
      traj << "variant,partitions,backlog,rate_per_s,t_s,waiting\n";
    }
    std::printf(
        "\nCatch-up over %.0f s (one run each, in a fresh process; waiting = queued\n"
        "requests not yet served):\n",
        duration);
    std::printf("%-15s %3s %9s %7s %12s %12s %8s  %s\n", "variant", "P", "backlog", "rate/s",
                "waiting@0", "waiting@end", "served", "verdict");
    std::fflush(stdout);
    for (const case_t& c : cases) {
      struct cv {
        std::string variant;
        ack_wait_mode mode;
        bool caf;
        int partitions;
      };
      std::vector<cv> variants{{"beamlet-scan", ack_wait_mode::scan, false, 1},
                               {"beamlet-marker", ack_wait_mode::marker, false, 1},
                               {"beamlet-scan", ack_wait_mode::scan, false, 16}};
      if (opt.caf && !opt.quick) variants.push_back({"caf-await", ack_wait_mode::scan, true, 1});
      for (const cv& v : variants) {
        prog.step(v.variant + " P=" + std::to_string(v.partitions) +
                  " catch-up backlog=" + std::to_string(c.backlog) +
                  " rate=" + std::to_string(static_cast<int>(c.rate)) + "/s");
        auto bytes = in_fresh_process([&] {
          const catch_up_run run =
              v.caf ? caf_catch_up(v.partitions, c.backlog, c.rate, duration, quiet)
                    : beamlet_catch_up(v.mode, v.partitions, c.backlog, c.rate, duration, quiet);
          std::string b = bytes_of(run.served);
          for (const trajectory_point& p : run.points) b += bytes_of(p);
          return b;
        });
        if (!bytes || bytes->size() < sizeof(std::int64_t)) {
          std::fprintf(stderr, "spawn_delay: a catch-up run of %s failed\n", v.variant.c_str());
          continue;
        }
        std::int64_t served = 0;
        std::memcpy(&served, bytes->data(), sizeof served);
        std::vector<trajectory_point> points((bytes->size() - sizeof served) /
                                             sizeof(trajectory_point));
        std::memcpy(points.data(), bytes->data() + sizeof served,
                    points.size() * sizeof(trajectory_point));
        for (const trajectory_point& p : points)
          if (traj.is_open())
            traj << v.variant << ',' << v.partitions << ',' << c.backlog << ',' << c.rate << ','
                 << p.t_s << ',' << p.waiting << '\n';
        if (traj.is_open()) traj.flush();
        const std::int64_t w0 = points.empty() ? c.backlog : points.front().waiting;
        const std::int64_t w1 = points.empty() ? c.backlog : points.back().waiting;
        std::string verdict;
        double caught = -1;
        for (const trajectory_point& p : points)
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
        std::printf("%-15s %3d %9lld %7.0f %12lld %12lld %8lld  %s\n", v.variant.c_str(),
                    v.partitions, static_cast<long long>(c.backlog), c.rate,
                    static_cast<long long>(w0), static_cast<long long>(w1),
                    static_cast<long long>(served), verdict.c_str());
        std::fflush(stdout);
      }
    }
    if (const auto it = fits.find("beamlet-scan"); it != fits.end() && it->second.slope > 0) {
      std::printf("\nBreak-even backlog for beamlet-scan (per-spawn delay = 1/rate, fitted):\n");
      for (double rate : {100.0, 1000.0}) {
        const double b = (1e9 / rate - it->second.intercept) / it->second.slope;
        std::printf("  at %5.0f/s: %.0f queued requests\n", rate, std::max(0.0, b));
      }
    }
  }
  std::printf("\nTotal run time %s\n",
              cli::progress::duration(
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count())
                  .c_str());
  return 0;
}
