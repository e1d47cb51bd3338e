// peers: the same workloads on beamlet and on CAF 0.17, back to back in one run, with the same
// message sizes (one 64-bit integer) and the same number of scheduler threads.
//
//   peers [--repetitions N] [--csv FILE] [--quick]
//
// --quick divides every size by 100 (a smoke run for ctest, not a measurement).
// Prints metric,beamlet,caf,ratio (per-operation times; ratio = CAF / beamlet, so above 1 means
// beamlet is faster). Each figure is the median of N runs (default 5), runs interleaved.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

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
}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  bool quick = false;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repetitions" && i + 1 < argc) {
      try {
        reps = std::stoi(argv[++i]);
      } catch (const std::exception&) {
        reps = 0;  // reported below
      }
    } else if (a == "--csv" && i + 1 < argc)
      csv = argv[++i];
    else if (a == "--quick")
      quick = true;
    else {
      std::cerr << "usage: peers [--repetitions N] [--csv FILE] [--quick]\n";
      return 2;
    }
  }
  sizes z;
  if (quick) {
    z.spawns /= 100;
    z.messages /= 100;
    z.round_trips /= 100;
    z.monitors /= 100;
    z.watchers /= 100;
  }
  if (reps < 1) {
    std::cerr << "peers: --repetitions must be at least 1\n";
    return 2;
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
  std::vector<std::string> lines;
  lines.push_back("metric,beamlet,caf,ratio");
  std::printf("%s\n", lines.back().c_str());
  for (const metric& m : metrics) {
    std::vector<double> b, c;
    for (int r = 0; r < reps; ++r) {
      std::cerr << "  " << m.name << " run " << r + 1 << "/" << reps << "\n";
      b.push_back(m.beamlet() / m.ops);
      c.push_back(m.caf() / m.ops);
    }
    const double mb = median(b), mc = median(c);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s,%.2f,%.2f,%.2f", m.name.c_str(), mb, mc, mc / mb);
    lines.push_back(buf);
    std::printf("%s\n", buf);
    std::fflush(stdout);
  }
  if (!csv.empty()) {
    std::ofstream f(csv);
    for (const std::string& l : lines) f << l << '\n';
  }
  return 0;
}
