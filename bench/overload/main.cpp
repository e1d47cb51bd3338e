// overload: one DynamicSupervisor offered 10 times its start capacity, under each overload
// control in turn.
//
// The supervisor waits for its children's init acks with ack_wait_mode::scan in every configuration
// (OTP's default, the wait behind the outage of docs/outage.md), so the rows differ by their
// control alone: none; a start-rate limit (dynamic_supervisor_flags::start_rate); load shedding
// (shed_above); a bounded mailbox that rejects at the send (supervisor_options::mailbox); 16
// partitions (a PartitionSupervisor of plain DynamicSupervisors). Each row reports the goodput,
// the latency of the accepted starts, memory, and how long the system takes to serve starts
// again once the load stops.
//
// Capacity. Each child's init spins for a fixed time (100 us by default) before it acks, so the
// start capacity C is set by a known cost. C is measured first, closed-loop, on an idle
// supervisor (--capacity skips that); the load is then 10 C requests per second.
//
// The load generator is open-loop: requests keep arriving whether or not earlier ones were
// answered, as connections do, which is what lets a queue grow without bound. Each request is
// a process of its own, spawned at its due time by one generator process that wakes every
// millisecond and spawns the requests due by then; each does one synchronous start_child and
// records its outcome in shared counters. A fixed pool of clients making paced calls would be
// closed-loop in disguise: the requests in flight could never exceed the pool, a bounded queue
// that would hide the very growth being measured. A spawn and a call cost the generator a few
// microseconds per request, a fraction of one of the two cores at 10 C; the offered rate it
// actually achieved is reported, never assumed. Latency counts from a request's due time, not
// from when its process got to run, so a late generator cannot make waits look shorter.
//
// Every configuration (and the calibration) runs in a fresh process (fork): its peak RSS is its
// own, and the previous configuration's allocator state, or its doomed backlog, cannot touch it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "../common/cli.hpp"
#include "run.hpp"

using namespace overload;

namespace {

const char* const usage_text =
    "usage: overload [options]\n"
    "\n"
    "  --seconds S          load duration per configuration, (0, 600]; default 10 (3 quick)\n"
    "  --capacity C         starts/s of one supervisor; skips the calibration\n"
    "  --factor F           offered load as a multiple of C, (0, 1000]; default 10\n"
    "  --configs LIST       a subset of none,rate_limit,shedding,bounded,partitioned (default\n"
    "                       all, in that order)\n"
    "  --recovery-cap S     how long to wait for the recovery after the load, [0, 3600];\n"
    "                       default 30 (10 quick); longer is reported as '> cap'\n"
    "  --start-cost-us N    CPU time each child's init spins, 1..100000; default 100\n"
    "  --rate-limit F       rate_limit's start_rate as a fraction of C, (0, 100]; default 0.5\n"
    "                       (burst: 10 ms worth)\n"
    "  --shed-above N       shedding's shed_above, in queued messages; default 1000\n"
    "  --mailbox N          bounded's mailbox capacity; default 1000\n"
    "  --partitions P       partitioned's partition count, 1..1024; default 16\n"
    "  --quick              3 s per configuration, 10 s recovery cap\n"
    "  --csv FILE           the summary table as CSV\n"
    "  --series-csv FILE    queue length, starts and refusals every 100 ms, per configuration\n"
    "  --help               this text\n"
    "\n"
    "Run time: each configuration takes its load time plus its recovery (up to the cap) plus a\n"
    "few seconds of teardown: about 2-3 minutes by default on 2 cores, under a minute with\n"
    "--quick. Progress goes to stderr; scripts/overload runs it and plots the series.\n";

struct options {
  double seconds = -1;
  double capacity = 0;
  double factor = 10;
  std::vector<control> configs;
  double recovery_cap = -1;
  std::int64_t start_cost_us = 100;
  double rate_fraction = 0.5;
  std::int64_t shed_above = 1000;
  std::int64_t mailbox = 1000;
  int partitions = 16;
  bool quick = false;
  std::string csv;
  std::string series_csv;
};

control control_named(std::string_view option, std::string_view t) {
  for (control c : all_controls)
    if (name_of(c) == t) return c;
  throw cli::error(std::string(option) + ": unknown configuration '" + std::string(t) + "'");
}

options parse(int argc, char** argv) {
  options o;
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
    } else if (a == "--seconds") {
      o.seconds = cli::parse_number(a, value(), 0.001, 600);
    } else if (a == "--capacity") {
      o.capacity = static_cast<double>(cli::parse_count(a, value(), 1, 100'000'000));
    } else if (a == "--factor") {
      o.factor = cli::parse_number(a, value(), 0.001, 1000);
    } else if (a == "--configs") {
      o.configs =
          cli::parse_list(a, value(), [&](std::string_view t) { return control_named(a, t); });
    } else if (a == "--recovery-cap") {
      o.recovery_cap = cli::parse_number(a, value(), 0, 3600);
    } else if (a == "--start-cost-us") {
      o.start_cost_us = cli::parse_count(a, value(), 1, 100'000);
    } else if (a == "--rate-limit") {
      o.rate_fraction = cli::parse_number(a, value(), 0.0001, 100);
    } else if (a == "--shed-above") {
      o.shed_above = cli::parse_count(a, value(), 0, 100'000'000);
    } else if (a == "--mailbox") {
      o.mailbox = cli::parse_count(a, value(), 1, 100'000'000);
    } else if (a == "--partitions") {
      o.partitions = static_cast<int>(cli::parse_count(a, value(), 1, 1024));
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--series-csv") {
      o.series_csv = value();
    } else {
      throw cli::error("unknown option " + a);
    }
  }
  if (o.seconds < 0) o.seconds = o.quick ? 3 : 10;
  if (o.recovery_cap < 0) o.recovery_cap = o.quick ? 10 : 30;
  if (o.configs.empty()) o.configs.assign(std::begin(all_controls), std::end(all_controls));
  // Offered requests are preallocated slots (8 bytes each): refuse what would not fit.
  if (o.capacity > 0 && o.capacity * o.factor * o.seconds > 1e9)
    throw cli::error("--capacity x --factor x --seconds exceeds 1e9 requests");
  return o;
}

// -- one measurement in a fresh process ---------------------------------------------------------

bool write_all(int fd, const std::string& bytes) {
  const char* c = bytes.data();
  std::size_t n = bytes.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// `f()`'s bytes, computed in a forked child (nullopt if it failed). This process never starts a
/// runtime, so there are no scheduler threads to lose in the fork.
template <class F>
std::optional<std::string> in_fresh_process(F f) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(fds[0]);
    int status = 0;
    try {
      if (!write_all(fds[1], f())) status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "overload: run failed: %s\n", e.what());
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

std::string encode(const run_result& r) {
  std::string b(reinterpret_cast<const char*>(&r.summary), sizeof r.summary);
  b.append(reinterpret_cast<const char*>(r.series.data()), r.series.size() * sizeof(sample));
  return b;
}

std::optional<run_result> decode(const std::string& b) {
  if (b.size() < sizeof(run_summary) || (b.size() - sizeof(run_summary)) % sizeof(sample) != 0)
    return std::nullopt;
  run_result r;
  std::memcpy(&r.summary, b.data(), sizeof r.summary);
  r.series.resize((b.size() - sizeof(run_summary)) / sizeof(sample));
  std::memcpy(r.series.data(), b.data() + sizeof(run_summary), r.series.size() * sizeof(sample));
  return r;
}

// -- the report ---------------------------------------------------------------------------------

std::string label_of(control c, const run_params& p) {
  switch (c) {
    case control::none:
      return "no control";
    case control::rate_limit:
      return "rate limit";
    case control::shedding:
      return "shedding";
    case control::bounded:
      return "bounded mbox";
    case control::partitioned:
      return std::to_string(p.partitions) + " partitions";
  }
  return "?";
}

double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

std::string fmt_ms(double ms) {
  char b[32];
  if (ms >= 1000)
    std::snprintf(b, sizeof b, "%.2f s", ms / 1000);
  else
    std::snprintf(b, sizeof b, "%.2f ms", ms);
  return b;
}

class report {
 public:
  report(const options& o) {
    if (!o.csv.empty()) {
      csv_.open(o.csv);
      if (!csv_) throw cli::error("--csv: cannot write " + o.csv);
      csv_ << "config,offered_per_s,offered,accepted,rate_limited,overloaded,mailbox_full,"
              "other_errors,unanswered,goodput_per_s,p50_ms,p99_ms,peak_queue,peak_rss_mb,"
              "peak_sup_mb,recovered,recovery_s\n";
      csv_.flush();
    }
    if (!o.series_csv.empty()) {
      series_.open(o.series_csv);
      if (!series_) throw cli::error("--series-csv: cannot write " + o.series_csv);
      series_ << "config,t_s,queue_len,accepted,refused,goodput_per_s,rss_mb\n";
      series_.flush();
    }
  }

  void header(double cap) {
    cap_ = cap;
    std::printf("%-14s %9s %9s %9s %9s %9s %10s %9s %9s %9s %10s %9s %9s\n", "config", "offered/s",
                "accepted", "rate_lim", "overload", "mbox_full", "unanswered", "goodput/s", "p50",
                "p99", "peak_queue", "peak_RSS", "recovery");
    std::fflush(stdout);
  }

  void add(control c, const run_params& p, const run_result& r) {
    const run_summary& s = r.summary;
    const double offered_per_s = static_cast<double>(s.offered) / p.seconds;
    const double goodput = static_cast<double>(s.accepted_in_load) / p.seconds;
    char rec[32];
    if (s.recovered)
      std::snprintf(rec, sizeof rec, "%.3f s", s.recovery_s);
    else
      std::snprintf(rec, sizeof rec, "> %.0f s", cap_);
    char rss[32];
    std::snprintf(rss, sizeof rss, "%.0f MB", mib(s.peak_rss_bytes));
    std::printf("%-14s %9.0f %9lld %9lld %9lld %9lld %10lld %9.0f %9s %9s %10lld %9s %9s\n",
                label_of(c, p).c_str(), offered_per_s, static_cast<long long>(s.accepted),
                static_cast<long long>(s.rate_limited), static_cast<long long>(s.overloaded),
                static_cast<long long>(s.mailbox_full), static_cast<long long>(s.unanswered),
                goodput, fmt_ms(s.p50_ms).c_str(), fmt_ms(s.p99_ms).c_str(),
                static_cast<long long>(s.peak_queue), rss, rec);
    std::fflush(stdout);
    const std::string name(name_of(c));
    if (csv_.is_open()) {
      csv_ << name << ',' << offered_per_s << ',' << s.offered << ',' << s.accepted << ','
           << s.rate_limited << ',' << s.overloaded << ',' << s.mailbox_full << ','
           << s.other_errors << ',' << s.unanswered << ',' << goodput << ',' << s.p50_ms << ','
           << s.p99_ms << ',' << s.peak_queue << ',' << mib(s.peak_rss_bytes) << ','
           << mib(s.peak_sup_bytes) << ',' << (s.recovered ? 1 : 0) << ',';
      if (s.recovered) csv_ << s.recovery_s;
      csv_ << '\n';
      csv_.flush();
    }
    if (series_.is_open()) {
      double t_prev = 0;
      std::int64_t a_prev = 0;
      for (const sample& x : r.series) {
        const double dt = x.t_s - t_prev;
        const double rate = dt > 0 ? static_cast<double>(x.accepted - a_prev) / dt : 0;
        series_ << name << ',' << x.t_s << ',' << x.queue_len << ',' << x.accepted << ','
                << x.refused << ',' << rate << ',' << mib(x.rss_bytes) << '\n';
        t_prev = x.t_s;
        a_prev = x.accepted;
      }
      series_.flush();
    }
  }

 private:
  double cap_ = 0;
  std::ofstream csv_;
  std::ofstream series_;
};

}  // namespace

int main(int argc, char** argv) {
  options opt;
  try {
    opt = parse(argc, argv);
  } catch (const cli::error& e) {
    std::cerr << "overload: " << e.what() << "\n\n" << usage_text;
    return 2;
  }
  const auto t_start = std::chrono::steady_clock::now();
  cli::progress prog(static_cast<int>(opt.configs.size()) + (opt.capacity > 0 ? 0 : 1));
  const std::int64_t cost_ns = opt.start_cost_us * 1000;

  double capacity = opt.capacity;
  const char* capacity_source = "given";
  if (capacity <= 0) {
    prog.step("calibration: starts/s of an idle supervisor");
    const double calibration_s = opt.quick ? 0.5 : 1;
    const auto bytes = in_fresh_process([&] {
      const double c = calibrate(cost_ns, calibration_s);
      return std::string(reinterpret_cast<const char*>(&c), sizeof c);
    });
    if (!bytes || bytes->size() != sizeof(double)) {
      std::fprintf(stderr, "overload: the calibration failed\n");
      return 1;
    }
    std::memcpy(&capacity, bytes->data(), sizeof capacity);
    capacity_source = "calibrated";
    if (!(capacity >= 1)) {
      std::fprintf(stderr, "overload: the calibration measured no starts\n");
      return 1;
    }
    if (capacity * opt.factor * opt.seconds > 1e9) {
      std::fprintf(stderr, "overload: %.0f starts/s x %g x %g s is too many requests\n", capacity,
                   opt.factor, opt.seconds);
      return 1;
    }
  }

  run_params base;
  base.offered_per_s = capacity * opt.factor;
  base.seconds = opt.seconds;
  base.recovery_cap_s = opt.recovery_cap;
  base.start_cost_ns = cost_ns;
  base.rate_per_s = capacity * opt.rate_fraction;
  base.burst = std::max(1.0, base.rate_per_s / 100);
  base.shed_above = opt.shed_above;
  base.mailbox_capacity = opt.mailbox;
  base.partitions = opt.partitions;

  std::printf(
      "One DynamicSupervisor (ack wait: scan) offered %g x its start capacity for %g s.\n"
      "Capacity C = %.0f starts/s (%s; each child's init spins %lld us); offered %.0f/s.\n"
      "Controls: rate limit %.0f/s (burst %.0f); shedding above %lld queued; mailbox bounded at\n"
      "%lld (reject); %d partitions. Latency is from each request's due time to its reply, over\n"
      "accepted starts; goodput counts starts answered before the load stopped; recovery is the\n"
      "time from the end of the load until the queues are empty and a probe start succeeds\n"
      "(capped at %g s); unanswered requests were still queued when the supervisor was killed.\n\n",
      opt.factor, opt.seconds, capacity, capacity_source, static_cast<long long>(opt.start_cost_us),
      base.offered_per_s, base.rate_per_s, base.burst, static_cast<long long>(opt.shed_above),
      static_cast<long long>(opt.mailbox), opt.partitions, opt.recovery_cap);

  int failures = 0;
  try {
    report rep(opt);
    rep.header(opt.recovery_cap);
    for (control c : opt.configs) {
      run_params p = base;
      p.what = c;
      prog.step(label_of(c, p) + ": " + std::to_string(std::lround(p.offered_per_s)) + "/s for " +
                cli::progress::duration(p.seconds));
      const auto bytes = in_fresh_process([&] { return encode(run(p)); });
      const auto r = bytes ? decode(*bytes) : std::nullopt;
      if (!r) {
        std::fprintf(stderr, "overload: the %s run failed\n", std::string(name_of(c)).c_str());
        ++failures;
        continue;
      }
      rep.add(c, p, *r);
    }
  } catch (const cli::error& e) {
    std::cerr << "overload: " << e.what() << "\n";
    return 2;
  }
  std::printf("\nTotal run time %s\n",
              cli::progress::duration(
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count())
                  .c_str());
  return failures == 0 ? 0 : 1;
}
