// The chaos soak: a supervision tree of a few thousand processes under steady load (calls,
// session churn, streams inside the node and to two other nodes, TCP echo traffic) while a
// seeded chaos driver kills processes and supervisors, resets connections, stalls the beamlet
// peer and kills and restarts the erl node. The invariants are checked as it runs and at the
// end, and printed as a table; the exit status is 0 only if every one holds.
//
//   soak [--seconds N | --minutes N] [--seed S] [--sessions N] [--peer PATH] [--no-erl]
//
// The seed is printed first: `--seed S` replays the same decisions (see chaos.hpp).
#include "chaos.hpp"
#include "external_node.hpp"
#include "load.hpp"
#include "service.hpp"
#include "world.hpp"

#include <beamlet/beamlet.hpp>
#include <beamlet/dist.hpp>
#include <beamlet/net.hpp>

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

int usage(bool ok) {
  std::fputs(
      "usage: soak [--seconds N | --minutes N] [--seed S] [--sessions N] [--peer PATH] [--no-erl]\n"
      "  --seconds N   run length, 10..86400 (default 60, the quick mode of ctest)\n"
      "  --minutes N   run length in minutes, 1..1440\n"
      "  --seed S      the chaos' seed (default: from the clock; printed either way)\n"
      "  --sessions N  session workers under the DynamicSupervisor, 10..100000 (default 2000)\n"
      "  --peer PATH   the second beamlet node's program (build-dev/tests/dist_peer)\n"
      "  --no-erl      no erl node (it is used when `erl` is on PATH)\n"
      "  --verbose     a progress line every 10 s\n",
      ok ? stdout : stderr);
  return ok ? 0 : 2;
}

bool number(const char* s, std::uint64_t& out, std::uint64_t lo, std::uint64_t hi) {
  const std::string_view v(s);
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && out >= lo && out <= hi;
}

std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Polls `ok` for up to `limit`; true as soon as it holds.
template <class F>
bool within(std::chrono::milliseconds limit, F ok) {
  const auto until = soak::clock::now() + limit;
  for (;;) {
    if (ok()) return true;
    if (soak::clock::now() >= until) return false;
    std::this_thread::sleep_for(20ms);
  }
}

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  soak::world w;
  bool seeded = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has = i + 1 < argc;
    std::uint64_t n = 0;
    if (a == "--help") return usage(true);
    if (a == "--seconds" && has && number(argv[++i], n, 10, 86400)) {
      w.opt.duration = std::chrono::seconds(n);
    } else if (a == "--minutes" && has && number(argv[++i], n, 1, 1440)) {
      w.opt.duration = std::chrono::minutes(n);
    } else if (a == "--seed" && has && number(argv[++i], n, 0, UINT64_MAX)) {
      w.opt.seed = n;
      seeded = true;
    } else if (a == "--sessions" && has && number(argv[++i], n, 10, 100000)) {
      w.opt.sessions = static_cast<int>(n);
    } else if (a == "--peer" && has) {
      w.opt.peer_exe = argv[++i];
    } else if (a == "--no-erl") {
      w.opt.erl = false;
    } else if (a == "--verbose") {
      w.opt.verbose = true;
    } else {
      return usage(false);
    }
  }
  if (!seeded) w.opt.seed = std::random_device{}() ^ static_cast<std::uint64_t>(::getpid());
  if (w.opt.erl && !soak::external_node::erl_available()) {
    std::printf("soak: no erl on PATH, so no erl node (scripts/bootstrap installs erlang-nox)\n");
    w.opt.erl = false;
  }
  std::printf("soak: seed %llu (replay: --seed %llu), %lld s, %d sessions, peer %s, erl %s\n",
              static_cast<unsigned long long>(w.opt.seed),
              static_cast<unsigned long long>(w.opt.seed),
              static_cast<long long>(w.opt.duration.count()), w.opt.sessions,
              w.opt.peer_exe.empty() ? "no" : "yes", w.opt.erl ? "yes" : "no");

  runtime rt;
  w.rt = &rt;
  logger::of(rt).set_level(std::getenv("SOAK_LOG")
                               ? log_level::error
                               : log_level::critical);  // thousands of crash reports, by design
  const std::string suffix = std::to_string(::getpid());
  w.node_name = "soak" + suffix + "@127.0.0.1";
  w.cookie = "soak_cookie_" + suffix;
  w.peer_node = "soakpeer" + suffix + "@127.0.0.1";
  w.erl_node = "soakerl" + suffix + "@127.0.0.1";
  dist::node_options no;
  no.name = w.node_name;
  no.long_names = true;
  no.cookie = w.cookie;
  no.listen_address = "127.0.0.1";
  no.net_ticktime = 20s;
  if (auto n = dist::start(rt, no); !n) {
    std::fprintf(stderr, "soak: cannot start the node: %s\n", n.error().message().c_str());
    return 1;
  }
  scoped_process me(rt);
  me.trap_exit(true);
  const std::size_t base_processes = rt.process_count();
  const std::size_t base_timers = rt.pending_timers();
  const std::size_t base_sockets = net::open_sockets(rt);

  std::unique_ptr<soak::external_node> peer, erl;
  if (!w.opt.peer_exe.empty()) {
    const auto secs = std::to_string(w.opt.duration.count() + 120);
    peer = std::make_unique<soak::external_node>(
        w.peer_node, std::vector<std::string>{w.opt.peer_exe, w.peer_node, w.cookie, secs});
    if (!peer->start()) {
      std::fprintf(stderr, "soak: cannot run %s\n", w.opt.peer_exe.c_str());
      return 1;
    }
  }
  if (w.opt.erl) {
    erl = std::make_unique<soak::external_node>(
        w.erl_node, soak::external_node::erl_argv(w.erl_node, w.cookie));
    if (!erl->start()) {
      std::fprintf(stderr, "soak: cannot run erl\n");
      return 1;
    }
  }

  const pid witness = rt.spawn([&w](process& self) { return soak::witness(self, w); });
  w.witness = witness;
  const start_result top = soak::start_service(me, w);
  if (!top.is_ok()) {
    std::fprintf(stderr, "soak: the service did not start: %s\n", top.to_string().c_str());
    return 1;
  }

  // The load and the chaos, each watched by a monitor so that the end can wait for them.
  std::mt19937_64 seeds(w.opt.seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<ref> load;
  auto start = [&](auto body) {
    const pid p = rt.spawn(std::move(body));
    load.push_back(me.monitor(p));
  };
  for (int i = 0; i < w.opt.callers; ++i)
    start([&w, i, s = seeds()](process& self) { return soak::caller(self, w, i, s); });
  start([&w, s = seeds()](process& self) { return soak::session_churn(self, w, s); });
  for (int i = 0; i < w.opt.local_streams; ++i)
    start([&w, i](process& self) { return soak::local_streamer(self, w, i); });
  if (peer)
    start([&w](process& self) {
      return soak::remote_streamer(self, w, w.peer_node, "echo", w.remote_peer, false);
    });
  if (erl)
    start([&w](process& self) {
      return soak::remote_streamer(self, w, w.erl_node, "soak_echo", w.remote_erl, true);
    });
  for (int i = 0; i < w.opt.socket_clients; ++i)
    start([&w, i, s = seeds()](process& self) { return soak::socket_client(self, w, i, s); });
  start([&w, p = peer.get(), e = erl.get()](process& self) { return soak::chaos(self, w, p, e); });

  // The run: RSS once a second (bounded after the warm-up), heartbeats (no load process stuck).
  const auto begin = soak::clock::now();
  const auto warmup = std::max<std::chrono::seconds>(10s, w.opt.duration / 5);
  std::size_t rss_warm = 0, rss_max = 0, peak_processes = 0;
  std::vector<bool> reported_stuck;
  for (auto next = begin + 1s; soak::clock::now() < begin + w.opt.duration; next += 1s) {
    std::this_thread::sleep_until(next);
    const auto elapsed = soak::clock::now() - begin;
    const std::size_t rss = rss_bytes();
    peak_processes = std::max(peak_processes, rt.process_count());
    if (elapsed < warmup) {
      rss_warm = std::max(rss_warm, rss);
    } else {
      rss_max = std::max(rss_max, rss);
    }
    const auto now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(soak::clock::now().time_since_epoch())
            .count();
    {
      std::lock_guard<std::mutex> g(w.mu);
      reported_stuck.resize(w.beats.size(), false);
      for (std::size_t i = 0; i < w.beats.size(); ++i) {
        w.progress.checked.fetch_add(1, std::memory_order_relaxed);
        if (!reported_stuck[i] && now_ms - w.beats[i]->ms.load() > 30'000) {
          reported_stuck[i] = true;
          w.progress.violations.fetch_add(1);
          if (w.notes.size() < 20) w.notes.push_back(w.beat_names[i] + ": no progress for 30 s");
        }
      }
    }
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
    if (w.opt.verbose && secs % 10 == 0)
      std::printf("soak: %llds: %zu processes, RSS %s, %llu kills, %llu calls\n",
                  static_cast<long long>(secs), rt.process_count(), mib(rss).c_str(),
                  static_cast<unsigned long long>(w.kills.load()),
                  static_cast<unsigned long long>(w.calls.checked.load()));
  }

  // The end: the load stops (streams are closed with their totals), then the checks.
  w.stopping.store(true);
  std::size_t ended = 0;
  while (ended < load.size()) {
    auto m = me.receive(on<down>(), after(60s));
    if (!m) break;
    ++ended;
  }
  w.progress.checked.fetch_add(1);
  if (ended < load.size())
    w.violate(w.progress, std::to_string(load.size() - ended) +
                              " load processes did not end within 60 s of the stop");

  // Restarts: each live supervisor of the tree restarted exactly the children killed under it.
  std::vector<std::string> restart_lines;
  const bool restarts_ok = within(10s, [&] {
    restart_lines.clear();
    std::lock_guard<std::mutex> g(w.mu);
    for (const char* name :
         {soak::top_name, soak::counters_name, soak::sessions_name, soak::sinks_name}) {
      const auto p = rt.whereis(name);
      if (!p) {
        restart_lines.push_back(std::string(name) + ": not running");
        continue;
      }
      std::uint64_t restarts = 0;
      for (const auto& s : supervisor_stats(rt))
        if (s.supervisor == *p) restarts = s.restarts;
      const std::uint64_t kills = w.kills_by_supervisor[*p];
      // The top restarts whole subtrees: a killed supervisor's children die on their next
      // step, after it, so a restart may find a name still held ({already_started, Pid}) and
      // is tried again, as in OTP. Each try counts, so the top has at least one per kill;
      // the supervisors below restart workers, exactly once each.
      const bool is_top = std::string_view(name) == soak::top_name;
      if (is_top ? restarts < kills : restarts != kills)
        restart_lines.push_back(std::string(name) + ": " + std::to_string(restarts) +
                                " restarts, " + std::to_string(kills) + " kills");
    }
    return restart_lines.empty();
  });
  w.restarts.checked.fetch_add(4);
  if (!restarts_ok)
    for (auto& l : restart_lines) w.violate(w.restarts, l);

  // Links: every killed worker's EXIT reached the witness.
  std::size_t unseen = 0;
  within(10s, [&] {
    std::lock_guard<std::mutex> g(w.mu);
    unseen = 0;
    for (const pid p : w.killed_workers)
      if (!w.witness_saw_killed.count(p)) ++unseen;
    return unseen == 0;
  });
  {
    std::lock_guard<std::mutex> g(w.mu);
    w.links.checked.store(w.killed_workers.size());
  }
  if (unseen > 0)
    w.violate(w.links, std::to_string(unseen) + " killed workers' EXIT never reached the witness");

  // Baselines: with the tree stopped and the other nodes gone, nothing is left over.
  supervisor::stop(me, top.pid());
  me.exit(witness, exit_reason::kill());
  if (peer) peer->kill();
  if (erl) erl->kill();
  std::size_t processes = 0, timers = 0, sockets = 0, connections = 0;
  const bool baseline_ok = within(20s, [&] {
    processes = rt.process_count();
    timers = rt.pending_timers();
    sockets = net::open_sockets(rt);
    connections = dist::nodes(rt).size();
    // Timers may end below the baseline (a connection's tick timer), never above it.
    return processes == base_processes && timers <= base_timers && sockets == base_sockets &&
           connections == 0;
  });
  w.baselines.checked.fetch_add(4);
  if (!baseline_ok)
    w.violate(w.baselines, "after the stop: " + std::to_string(processes) + " processes (" +
                               std::to_string(base_processes) + " before), " +
                               std::to_string(timers) + " timers (" + std::to_string(base_timers) +
                               "), " + std::to_string(sockets) + " sockets (" +
                               std::to_string(base_sockets) + "), " + std::to_string(connections) +
                               " connections (0)");

  // Memory: after the warm-up the RSS stays within half as much again (and 128 MiB) of it.
  const std::size_t rss_limit = rss_warm + std::max<std::size_t>(128u << 20, rss_warm / 2);
  w.memory.checked.fetch_add(1);
  if (rss_max > rss_limit)
    w.violate(w.memory, "RSS " + mib(rss_max) + " after the warm-up's " + mib(rss_warm));

  // The report.
  const auto row = [](const char* what, const soak::check& c) {
    std::printf("  %-58s %12llu %10llu\n", what, static_cast<unsigned long long>(c.checked.load()),
                static_cast<unsigned long long>(c.violations.load()));
  };
  std::printf(
      "\nsoak: seed %llu, %lld s, peak %zu processes, RSS %s after the warm-up, at most %s\n",
      static_cast<unsigned long long>(w.opt.seed), static_cast<long long>(w.opt.duration.count()),
      peak_processes, mib(rss_warm).c_str(), mib(rss_max).c_str());
  std::printf(
      "chaos: %llu kills (%llu supervisors, %llu connections; %llu already gone), %llu stalls, "
      "%llu disconnects, %llu erl restarts\n",
      static_cast<unsigned long long>(w.kills.load()),
      static_cast<unsigned long long>(w.supervisor_kills.load()),
      static_cast<unsigned long long>(w.handler_kills.load()),
      static_cast<unsigned long long>(w.kills_missed.load()),
      static_cast<unsigned long long>(w.peer_stalls.load()),
      static_cast<unsigned long long>(w.peer_disconnects.load()),
      static_cast<unsigned long long>(w.erl_restarts.load()));
  std::printf(
      "load: call errors noproc %llu, server exited %llu, timeout %llu, other %llu; "
      "sessions started %llu, stopped %llu; stream resets %llu, remote disconnects %llu, "
      "socket resets %llu\n",
      static_cast<unsigned long long>(w.call_errors_noproc.load()),
      static_cast<unsigned long long>(w.call_errors_exited.load()),
      static_cast<unsigned long long>(w.call_errors_timeout.load()),
      static_cast<unsigned long long>(w.call_errors_other.load()),
      static_cast<unsigned long long>(w.sessions_started.load()),
      static_cast<unsigned long long>(w.sessions_stopped.load()),
      static_cast<unsigned long long>(w.stream_resets.load()),
      static_cast<unsigned long long>(w.remote_disconnects.load()),
      static_cast<unsigned long long>(w.socket_resets.load()));
  std::printf("\n  %-58s %12s %10s\n", "invariant", "checked", "violations");
  row("calls: the right reply or a documented call_error", w.calls);
  row("local streams: in order, no gap or duplicate, none lost", w.local_streams);
  row("stream to the beamlet peer: in order per connection", w.remote_peer);
  row("stream to the erl node: in order per connection", w.remote_erl);
  row("rpc:call to the erl node: its name or {badrpc, R}", w.rpc);
  row("sockets: every echoed byte is the byte sent", w.sockets);
  row("kills: the killer's monitor got DOWN", w.downs);
  row("links: each killed worker's EXIT(killed) reached the witness", w.links);
  row("supervisors: restarts equal the kills of their children", w.restarts);
  std::printf("  %-58s\n", "  (the top: at least one per kill; a restart is retried while");
  std::printf("  %-58s\n", "  a name is still held by a dying child, as in OTP)");
  row("progress: no load process stuck 30 s; all end at the stop", w.progress);
  row("baselines: processes, timers, sockets, connections", w.baselines);
  row("memory: RSS bounded after the warm-up", w.memory);
  std::uint64_t violations = 0;
  for (const soak::check* c :
       {&w.calls, &w.local_streams, &w.remote_peer, &w.remote_erl, &w.rpc, &w.sockets, &w.downs,
        &w.links, &w.restarts, &w.progress, &w.baselines, &w.memory})
    violations += c->violations.load();
  for (const auto& n : w.notes) std::printf("  violation: %s\n", n.c_str());
  std::printf("soak: %s\n", violations == 0 ? "every invariant held" : "INVARIANTS VIOLATED");
  dist::stop(rt);
  return violations == 0 ? 0 : 1;
}
