// The March 2026 outage, replayed with real beamlet processes and real loopback sockets, with
// each of the fixes that followed and each of the recoveries that were tried. docs/failure-modes.md
// walks through it; docs/outage.md tells the story.
//
//   replay (supervisor, one_for_one)
//   ├── media        the media servers: an acceptor pool on 127.0.0.1 (cluster.hpp)
//   ├── discovery    the service-discovery store, likewise
//   ├── ring_keeper  service discovery: leases in, ring membership out
//   ├── syncers      one tree per voice-syncer instance (cluster.hpp)
//   ├── gateways     gateway hosts and their sessions (users.hpp)
//   └── calls        one call owner per call (users.hpp)
//
// Run it: `outage_replay --fix none --recovery one`. Every second it prints a row (ring
// membership, the longest mailbox of each instance, RPC success, connection starts,
// reconnects, participants whose call is not placed); at the end, the verdict. While it runs,
// http://127.0.0.1:PORT/ shows the same live in a browser (its port is printed first).
#include <beamlet/beamlet.hpp>
#include <beamlet/net.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster.hpp"
#include "live_page.hpp"
#include "model.hpp"
#include "timeline.hpp"
#include "users.hpp"

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

struct options {
  replay::scenario sc;
  std::string csv;
  std::string png;
  std::uint16_t port = 0;
  double linger = 0;
};

int usage(bool ok) {
  std::fputs(
      "usage: outage_replay [--fix F] [--recovery R] [--seconds S] [--quick] [--sessions N]\n"
      "                     [--csv PATH] [--png PATH] [--port N] [--linger S]\n"
      "  --fix F       none | partition | marker | single-supervisor | rate-limit | shed |\n"
      "                deadline | all\n"
      "                (default none); several may be given, comma-separated\n"
      "  --recovery R  none | one | cluster | limits-then-restart (default none)\n"
      "  --seconds S   run length, 12..120 (default 36; recoveries are placed in proportion)\n"
      "  --quick       --seconds 24\n"
      "  --sessions N  devices (one session each), 1000..100000 (default 20000)\n"
      "  --csv PATH    the per-second timeline as CSV\n"
      "  --png PATH    the timeline plotted with gnuplot (needs --csv's data; gnuplot-nox)\n"
      "  --port N      the live page's port on 127.0.0.1 (default: a free one, printed)\n"
      "  --linger S    keep the live page up S seconds after the run, 0..600 (default 0)\n",
      ok ? stdout : stderr);
  return ok ? 0 : 2;
}

bool parse_number(std::string_view v, double& out, double lo, double hi) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && out >= lo && out <= hi;
}

bool apply_fix(std::string_view list, replay::fixes& f) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view one = list.substr(0, comma);
    if (one == "none") {
    } else if (one == "partition") {
      f.partition = true;
    } else if (one == "marker") {
      f.marker = true;
    } else if (one == "single-supervisor") {
      f.single_supervisor = true;
    } else if (one == "rate-limit") {
      f.rate_limit = true;
    } else if (one == "shed") {
      f.shed = true;
    } else if (one == "deadline") {
      f.deadline = true;
    } else if (one == "all") {
      f = {true, true, true, true, true, true};
    } else {
      return false;
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return true;
}

std::optional<options> parse(int argc, char** argv, bool& help) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help") {
      help = true;
      return std::nullopt;
    }
    if (a == "--quick") {
      o.sc.seconds = 24;
    } else if (a == "--fix" && has_value) {
      o.sc.fix_name = argv[++i];
      if (!apply_fix(o.sc.fix_name, o.sc.fix)) return std::nullopt;
    } else if (a == "--recovery" && has_value) {
      const std::string_view r = argv[++i];
      o.sc.recovery_name = std::string(r);
      if (r == "none")
        o.sc.recovery = replay::recovery_plan::none;
      else if (r == "one")
        o.sc.recovery = replay::recovery_plan::one;
      else if (r == "cluster")
        o.sc.recovery = replay::recovery_plan::cluster;
      else if (r == "limits-then-restart")
        o.sc.recovery = replay::recovery_plan::limits_then_restart;
      else
        return std::nullopt;
    } else if (a == "--seconds" && has_value) {
      if (!parse_number(argv[++i], o.sc.seconds, 12, 120)) return std::nullopt;
    } else if (a == "--sessions" && has_value) {
      double n = 0;
      if (!parse_number(argv[++i], n, 1000, 100'000)) return std::nullopt;
      o.sc.sessions = static_cast<int>(n);
    } else if (a == "--csv" && has_value) {
      o.csv = argv[++i];
    } else if (a == "--png" && has_value) {
      o.png = argv[++i];
    } else if (a == "--port" && has_value) {
      double p = 0;
      if (!parse_number(argv[++i], p, 0, 65535)) return std::nullopt;
      o.port = static_cast<std::uint16_t>(p);
    } else if (a == "--linger" && has_value) {
      if (!parse_number(argv[++i], o.linger, 0, 600)) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  return o;
}

/// The replay's recovery actions, as an operator would run them from a shell.
class operator_console {
 public:
  operator_console(scoped_process& me, replay::cluster_context& cx, replay::users_context& u,
                   replay::timeline& tl)
      : me_(me), cx_(cx), u_(u), tl_(tl) {}

  /// The instance with the longest mailbox right now.
  int worst_instance() {
    int worst = 0;
    std::size_t most = 0;
    for (int i = 0; i < cx_.disc->provisioned(); ++i)
      if (const std::size_t q = replay::instance_queue(cx_, i); q > most) {
        most = q;
        worst = i;
      }
    return worst;
  }

  void restart_instance(int i) {
    const std::string id = cx_.instance_name(i);
    (void)supervisor::terminate_child(me_, "syncers", id, 10s);
    (void)supervisor::restart_child(me_, "syncers", id, 10s);
  }

  void restart_pool(int i) {
    const std::string inst = cx_.instance_name(i);
    (void)supervisor::terminate_child(me_, inst, "pool", 10s);
    (void)supervisor::restart_child(me_, inst, "pool", 10s);
  }

  void add_instances(int target) {
    for (int i = cx_.disc->provisioned(); i < target; ++i)
      (void)supervisor::start_child(me_, "syncers", instance_spec(i), 10s);
    cx_.disc->provision(target);
  }

  child_spec instance_spec(int i) {
    return child_spec(cx_.instance_name(i), replay::instance_start(cx_, i))
        .with_type(child_type::supervisor);
  }

  /// Runs the scenario's recovery step due at `t` (seconds since the start), if any.
  void step(double t, double fault_at, double span) {
    using replay::recovery_plan;
    const double since = t - fault_at;
    const auto due = [&](double share) {
      const double at = share * span;
      return since >= at && since < at + 1;
    };
    switch (cx_.sc->recovery) {
      case recovery_plan::none:
        break;
      case recovery_plan::one:
        if (due(0.35)) {
          const int i = worst_instance();
          restart_instance(i);
          tl_.restarted(t, {i});
          tl_.mark("restart instance " + std::to_string(i));
        } else if (due(0.55)) {
          const int i = worst_instance();
          restart_pool(i);
          tl_.restarted(t, {i});
          tl_.mark("restart pool_" + std::to_string(i));
        }
        break;
      case recovery_plan::cluster:
        if (due(0.4)) {
          std::vector<int> all;
          for (int i = 0; i < cx_.disc->provisioned(); ++i) {
            restart_instance(i);
            all.push_back(i);
          }
          replay::lose_all_calls(me_, u_);
          tl_.restarted(t, all);
          tl_.mark("restart the whole cluster");
        }
        break;
      case recovery_plan::limits_then_restart:
        if (due(0.3)) {
          u_.set_upstream_limit(cx_.sc->lowered_limit);
          tl_.mark("lower upstream rate limits");
        } else if (due(0.4)) {
          std::vector<int> restarted;
          for (int i = 0; i < cx_.disc->provisioned(); ++i)
            if (replay::instance_queue(cx_, i) >= 1'000 || !cx_.disc->member(i)) {
              restart_instance(i);
              restarted.push_back(i);
            }
          tl_.restarted(t, restarted);
          tl_.mark("targeted restarts (" + std::to_string(restarted.size()) + ")");
        } else if (due(0.5)) {
          add_instances(cx_.sc->max_instances);
          tl_.mark("add instances (" + std::to_string(cx_.sc->max_instances) + ")");
        }
        break;
    }
  }

 private:
  scoped_process& me_;
  replay::cluster_context& cx_;
  replay::users_context& u_;
  replay::timeline& tl_;
};

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

void plot(const options& o) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::fprintf(stderr,
                 "outage_replay: gnuplot not found (scripts/bootstrap installs "
                 "gnuplot-nox); no plot\n");
    return;
  }
  const std::string title =
      "outage replay: --fix " + o.sc.fix_name + " --recovery " + o.sc.recovery_name;
  const std::string cmd = "gnuplot -e \"csv='" + o.csv + "'; out='" + o.png + "'; title='" + title +
                          "'; fault_at=" + std::to_string(o.sc.fault_at) + "\" '" +
                          BEAMLET_OUTAGE_REPLAY_PLOT + "'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "outage_replay: gnuplot failed: %s\n", cmd.c_str());
  else
    std::printf("plot: %s\n", o.png.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  auto parsed = parse(argc, argv, help);
  if (!parsed) return usage(help);
  options& o = *parsed;
  if (!o.png.empty() && o.csv.empty()) o.csv = o.png + ".csv";
  replay::scenario& sc = o.sc;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  runtime rt;
  // Crash and supervisor reports of connections failing under the overload are the point of
  // the replay, not news: only critical events reach stderr.
  logger::of(rt).set_level(log_level::critical);
  scoped_process me(rt);
  me.trap_exit(true);
  replay::counters counts;
  replay::discovery disc(sc.instances, sc.max_instances);
  replay::cluster_context cx(rt, sc, counts, disc);
  replay::users_context users(cx);
  if (sc.fix.rate_limit) users.set_upstream_limit(sc.upstream_limit);
  replay::timeline tl(cx);
  // Processes outside the supervision tree (RPC attempts, placement handlers) point at the
  // contexts above and may still be waiting on a timeout when the tree has stopped: on every
  // way out of main, every process ends before those contexts do (the runtime itself would stop
  // them only after they are gone: glibc caught one writing to freed memory at exit).
  const struct stop_processes_first {
    runtime& rt;
    ~stop_processes_first() { rt.shutdown(); }
  } stop_processes_first{rt};

  // The media servers first: the instances need their port.
  auto top = supervisor::start_link(me, {"replay"}, [&cx] {
    return supervisor_init(
        supervisor_flags{},
        {child_spec("media", replay::stub_start("media", cx.sc->media_connections))
             .with_type(child_type::supervisor),
         child_spec("discovery", replay::stub_start("discovery", 1024))
             .with_type(child_type::supervisor),
         child_spec("ring_keeper", replay::ring_keeper_start(cx))});
  });
  if (!top) {
    std::fprintf(stderr, "outage_replay: could not start: %s\n", top.to_string().c_str());
    return 1;
  }
  cx.media_port = net::acceptor_pool::stats(rt, "media")->port;
  cx.discovery_port = net::acceptor_pool::stats(rt, "discovery")->port;
  std::vector<child_spec> instances;
  operator_console console(me, cx, users, tl);
  for (int i = 0; i < sc.instances; ++i) instances.push_back(console.instance_spec(i));
  supervisor_options syncers_options;
  syncers_options.name = "syncers";
  supervisor_flags syncers_flags;
  syncers_flags.intensity = 100;
  const auto syncers = supervisor::start_child(
      me, "replay",
      child_spec("syncers", supervisor_start(syncers_flags, instances, syncers_options)));
  const auto gateways = supervisor::start_child(
      me, "replay",
      child_spec("gateways", replay::gateways_start(users)).with_type(child_type::supervisor));
  const auto calls = supervisor::start_child(
      me, "replay",
      child_spec("calls", replay::calls_start(users)).with_type(child_type::supervisor));
  if (!syncers || !gateways || !calls) {
    std::fprintf(stderr, "outage_replay: a part did not start\n");
    return 1;
  }

  http_endpoint_options ho;
  ho.port = o.port;
  ho.tree_max_children = 12;
  ho.console = true;  // the page links to it: the operator's view of the same runtime
  ho.pages.push_back({"/", "text/html; charset=utf-8",
                      [](std::string_view) { return std::string(replay::live_page_html); }});
  ho.pages.push_back(
      {"/replay/state", "application/json", [&tl](std::string_view) { return tl.json(false); }});
  auto endpoint = http_endpoint::start(rt, ho);
  if (!endpoint) {
    std::fprintf(stderr, "outage_replay: no HTTP endpoint: %s\n",
                 endpoint.error().message().c_str());
    return 1;
  }
  std::printf("live view: http://127.0.0.1:%u/\n", endpoint->port());
  std::printf(
      "scenario: --fix %s --recovery %s; %d instances, %d gateway hosts, %d devices in "
      "calls of %d; fault at %.0f s kills %.0f%% of sessions; lease %.0f s (60 s "
      "scaled)\n",
      sc.fix_name.c_str(), sc.recovery_name.c_str(), sc.instances, sc.hosts, sc.sessions,
      sc.call_size, sc.fault_at, 100 * sc.fault_fraction, sc.lease_ttl);
  replay::populate(me, users);

  const bool grows = sc.recovery == replay::recovery_plan::limits_then_restart;
  std::puts(replay::timeline::format_header(grows ? sc.max_instances : sc.instances).c_str());
  const auto t0 = std::chrono::steady_clock::now();
  const double span = sc.seconds - sc.fault_at;
  for (int second = 1; second <= static_cast<int>(sc.seconds); ++second) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(second));
    const double t = second;
    if (t >= sc.fault_at && t < sc.fault_at + 1) {
      replay::inject_fault(me, users);
      tl.mark("fault: sessions killed");
    }
    console.step(t, sc.fault_at, span);
    std::puts(replay::timeline::format_row(tl.record(t)).c_str());
  }
  tl.set_done();

  const replay::verdict v = tl.judge();
  std::printf("\n%s", replay::format_verdict(v, sc).c_str());
  for (const char* stub : {"media", "discovery"})
    if (const auto st = net::acceptor_pool::stats(rt, stub))
      std::printf("%-36s %llu connections, %llu refused (over its bound)\n",
                  (std::string(stub) + " stub").c_str(),
                  static_cast<unsigned long long>(st->accepted),
                  static_cast<unsigned long long>(st->refused));
  if (!o.csv.empty()) {
    if (!write_file(o.csv, tl.csv()))
      std::fprintf(stderr, "outage_replay: cannot write %s\n", o.csv.c_str());
    else
      std::printf("csv: %s\n", o.csv.c_str());
  }
  if (!o.png.empty()) plot(o);
  if (o.linger > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.linger));

  endpoint->stop();
  supervisor::stop(me, "replay", exit_reason::shutdown(), 30s);
  // Processes ended by the shutdown close their sockets as they go; the sockets' schedulers
  // finish the closes they were handed.
  const auto closing = std::chrono::steady_clock::now() + 10s;
  while (net::open_sockets(rt) > 0 && std::chrono::steady_clock::now() < closing)
    std::this_thread::sleep_for(10ms);
  const std::size_t open = net::open_sockets(rt);
  std::printf("sockets open at the end: %zu\n", open);
  return open == 0 ? 0 : 1;
}
