// peers: the same workloads on beamlet and on CAF 0.17, back to back in one run, with the same
// message sizes (one 64-bit integer) and the same number of scheduler threads.
//
// CAF runs twice per workload: with its default scheduler (work stealing) and with work sharing
// (caf.scheduler.policy = sharing), because its work-stealing scheduler has a known pathology on
// DOWN fan-out (a burst of woken actors lands in one worker's deque and the others steal them
// one at a time). The comparison is against the better of the two for each workload ("CAF
// best"), so beamlet is compared with CAF at its best, not at its worst.
//
// Output: CSV on stdout, one line per workload as soon as it is measured:
//   metric,beamlet,caf_default,caf_sharing,caf_best,best_policy,ratio
// (per-operation times; ratio = CAF best / beamlet, so above 1 means beamlet is faster). Each
// figure is the median of N runs, runs interleaved.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "../common/cli.hpp"
#include "workloads.hpp"

using namespace peers;

namespace {

struct metric {
  std::string name;
  double ops;
  std::function<double()> beamlet, caf;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const char* const usage_text =
    "usage: peers [--repetitions N] [--csv FILE] [--quick] [--help]\n"
    "\n"
    "  --repetitions N  runs per workload and runtime (median reported); default 5\n"
    "  --csv FILE       also write the table to FILE (rewritten after each workload)\n"
    "  --quick          every size / 100: a smoke run for ctest (seconds), not a measurement\n"
    "  --help           this text\n"
    "\n"
    "Workloads: spawn+exit, one-pair send/receive, ping-pong, monitor+demonitor, DOWN fan-out\n"
    "1x100k, DOWN fan-in 100kx1; each on beamlet, CAF (work stealing) and CAF (work sharing).\n"
    "A default run (5 repetitions) takes about 8-10 minutes on 2 cores, most of it CAF's\n"
    "fan-out with work stealing; --repetitions 1 about 2 minutes.\n";

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  bool quick = false;
  std::string csv;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw cli::error(a + ": a value is missing");
        return argv[++i];
      };
      if (a == "--repetitions") {
        reps = static_cast<int>(cli::parse_count(a, value(), 1, 1000));
      } else if (a == "--csv") {
        csv = value();
      } else if (a == "--quick") {
        quick = true;
      } else if (a == "--help" || a == "-h") {
        std::cout << usage_text;
        return 0;
      } else {
        throw cli::error("unknown option " + a);
      }
    }
  } catch (const cli::error& e) {
    std::cerr << "peers: " << e.what() << "\n\n" << usage_text;
    return 2;
  }
  sizes z;
  if (quick) {
    z.spawns /= 100;
    z.messages /= 100;
    z.round_trips /= 100;
    z.monitors /= 100;
    z.watchers /= 100;
  }
  const std::vector<metric> metrics = {
      {"spawn_exit_ns", double(z.spawns), [&] { return beamlet_side::spawn_exit(z.spawns); },
       [&] { return caf_side::spawn_exit(z.spawns); }},
      {"send_receive_ns_per_msg", double(z.messages),
       [&] { return beamlet_side::send_receive(z.messages); },
       [&] { return caf_side::send_receive(z.messages); }},
      {"ping_pong_ns_per_round_trip", double(z.round_trips),
       [&] { return beamlet_side::ping_pong(z.round_trips); },
       [&] { return caf_side::ping_pong(z.round_trips); }},
      {"monitor_demonitor_ns", double(z.monitors),
       [&] { return beamlet_side::monitor(z.monitors); },
       [&] { return caf_side::monitor(z.monitors); }},
      {quick ? "down_fan_out_1x1k_ms" : "down_fan_out_1x100k_ms", 1e6,
       [&] { return beamlet_side::down_fan_out(z.watchers); },
       [&] { return caf_side::down_fan_out(z.watchers); }},
      {quick ? "down_fan_in_1kx1_ms" : "down_fan_in_100kx1_ms", 1e6,
       [&] { return beamlet_side::down_fan_in(z.watchers); },
       [&] { return caf_side::down_fan_in(z.watchers); }},
  };
  std::vector<std::string> lines{
      "metric,beamlet,caf_default,caf_sharing,caf_best,best_policy,ratio"};
  std::printf("%s\n", lines.back().c_str());
  std::fflush(stdout);
  cli::progress prog(static_cast<int>(metrics.size()) * reps * 3);
  for (const metric& m : metrics) {
    std::vector<double> b, steal, share;
    for (int r = 0; r < reps; ++r) {
      const std::string run = " run " + std::to_string(r + 1) + "/" + std::to_string(reps);
      prog.step(m.name + ": beamlet" + run);
      b.push_back(m.beamlet() / m.ops);
      prog.step(m.name + ": CAF, work stealing (default)" + run);
      caf_side::scheduler_policy = caf_side::policy::stealing;
      steal.push_back(m.caf() / m.ops);
      prog.step(m.name + ": CAF, work sharing" + run);
      caf_side::scheduler_policy = caf_side::policy::sharing;
      share.push_back(m.caf() / m.ops);
    }
    const double mb = median(b), ms = median(steal), mh = median(share);
    const bool sharing_best = mh < ms;
    const double best = sharing_best ? mh : ms;
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s,%.2f,%.2f,%.2f,%.2f,%s,%.2f", m.name.c_str(), mb, ms, mh,
                  best, sharing_best ? "sharing" : "stealing", best / mb);
    lines.push_back(buf);
    std::printf("%s\n", buf);
    std::fflush(stdout);
    if (!csv.empty()) {  // rewritten as each workload ends: an interrupted run keeps what it has
      std::ofstream f(csv);
      for (const std::string& l : lines) f << l << '\n';
    }
  }
  std::fprintf(stderr, "peers: done in %s\n", cli::progress::duration(prog.seconds()).c_str());
  return 0;
}
