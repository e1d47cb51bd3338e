// Distribution over loopback (driven by scripts/bench-dist, which runs every pair in one go):
//
//   dist_bench serve <node> <cookie>
//       A beamlet node with two registered processes: `sink` counts what it gets and answers
//       {done, From} with {count, N, SinkPid, PongPid}; `pong` answers {From, X} with X.
//       Prints "ready <node>".
//       Runs until stdin closes.
//   dist_bench run <node> <cookie> <peer-node> [--messages N] [--sizes 0,100,1000]
//                  [--round-trips K]
//       A beamlet node that drives the peer's sink and pong (a beamlet node or a BEAM one,
//       bench/beam/dist_bench.erl): one-way throughput for each payload size (N messages
//       {m, Payload} by pid, then {done, self()}, timed until the count comes back), then K
//       sequential round trips. Prints one JSON object per measurement.
//   dist_bench slow <node> <cookie> <busy-limit> <seconds> <size>
//       A beamlet node for a slow reader (tests/dist/bad_peer.py's `slow`, which connects to the
//       port printed as "ready <port>"): once it is connected, one process sends it {m, Payload}
//       messages of <size> bytes by name, yielding after each, for <seconds> (or until this
//       process has grown by 1 GiB), with node_options::busy_limit = <busy-limit> (0: off).
//       Prints one JSON object: what was sent, and the peaks of resident memory and outbox.
//   dist_bench big <node> <cookie> <peer-node> <fragment-size> <rounds>
//       A beamlet node (node_options::fragment_size = <fragment-size>; 0: none) that sends the
//       peer's sink a 64 MiB message {m, Binary} <rounds> times, each timed until the sink's count
//       comes back, while another process makes round trips through the peer's pong from just
//       before the send until then. Prints one JSON object: the median transfer time and the
//       round trips' count and percentiles, over all rounds.
//
// With DIST_BENCH_TLS=<dir> in the environment, every mode runs its node over TLS
// (node_options::tls) with <dir>/node.pem, <dir>/node.key and <dir>/ca.pem.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/rss.hpp"

using namespace beamlet;
using dist::term;
using steady = std::chrono::steady_clock;

namespace {

dist::node_options options(const char* name, const char* cookie) {
  dist::node_options o;
  o.name = name;
  o.cookie = cookie;
  o.long_names = std::string(name).find('.') != std::string::npos;
  o.listen_address = "127.0.0.1";
  if (const char* dir = std::getenv("DIST_BENCH_TLS"); dir != nullptr && *dir != '\0') {
    const std::string d = dir;
    o.tls = dist::tls_options{d + "/node.pem", d + "/node.key", d + "/ca.pem"};
  }
  return o;
}

int serve(runtime& rt) {
  scoped_process me(rt);
  const pid pong = me.spawn([](process& self) -> task<> {
    (void)self.register_name("pong");
    for (;;) {
      auto m = co_await self.receive(on<term>());
      term& t = m.get<term>();
      if (t.is_tuple() && t.size() == 2 && t[0].is_pid()) self.send(t[0].pid(), std::move(t[1]));
    }
  });
  me.spawn([pong](process& self) -> task<> {
    (void)self.register_name("sink");
    std::int64_t n = 0;
    for (;;) {
      auto m = co_await self.receive(on<term>());
      const term& t = m.get<term>();
      if (t.is_tuple() && t.size() == 2 && t[0].is_atom("done") && t[1].is_pid()) {
        self.send(t[1].pid(), term::make_tuple({term::make_atom("count"), term(n),
                                                term(self.self()), term(pong)}));
        n = 0;
      } else {
        ++n;
      }
    }
  });
  std::printf("ready %s\n", dist::self(rt)->name.c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}

struct peer_pids {
  pid sink, pong;
};

// The sink answers {done, From} with {count, N, SinkPid, PongPid}: the driver learns both pids
// and then sends by pid, as a real client would after its first lookup.
task<peer_pids> discover(process& self, std::string peer) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    self.send("sink", peer, term::make_tuple({term::make_atom("done"), term(self.self())}));
    const auto is_count = [](const term& t) {
      return t.is_tuple() && t.size() == 4 && t[0].is_atom("count");
    };
    auto m =
        co_await self.receive(on<term>().when(is_count), after(std::chrono::milliseconds(300)));
    if (m) co_return peer_pids{m.get<term>()[2].pid(), m.get<term>()[3].pid()};
  }
  co_return peer_pids{};
}

struct settings {
  std::string peer;
  long messages;
  std::vector<int> sizes;
  long round_trips;
};

// The driver is a process, as on the BEAM side: its sends and receives are a process's.
task<> driver(process& self, settings s, pid done) {
  const peer_pids to = co_await discover(self, s.peer);
  if (!to.sink) {
    std::fprintf(stderr, "dist_bench: the sink on %s does not answer\n", s.peer.c_str());
    self.send(done, 1);
    co_return;
  }
  const auto is_count = [](const term& t) {
    return t.is_tuple() && t.size() == 4 && t[0].is_atom("count");
  };
  // Discovery asks again every 300 ms until the connection is up, and every ask is answered:
  // left queued, a late answer would be taken for the first size's count (and shift the rest).
  for (;;) {
    auto stale =
        co_await self.receive(on<term>().when(is_count), after(std::chrono::milliseconds(500)));
    if (stale.timed_out()) break;
  }
  for (int size : s.sizes) {
    const term msg =
        term::make_tuple({term::make_atom("m"), term::make_binary(std::string(size, 'x'))});
    const auto t0 = steady::now();
    for (long i = 0; i < s.messages; ++i) self.send(to.sink, msg);
    self.send(to.sink, term::make_tuple({term::make_atom("done"), term(self.self())}));
    auto m = co_await self.receive(on<term>().when(is_count), after(std::chrono::seconds(120)));
    const double secs = std::chrono::duration<double>(steady::now() - t0).count();
    const long got = m ? static_cast<long>(m.get<term>()[1].integer()) : -1;
    std::printf(
        "{\"kind\":\"oneway\",\"size\":%d,\"messages\":%ld,\"received\":%ld,"
        "\"seconds\":%.6f,\"per_second\":%.0f}\n",
        size, s.messages, got, secs, got / secs);
    std::fflush(stdout);
  }
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(s.round_trips));
  const term ping = term::make_tuple({term(self.self()), term::make_atom("ping")});
  const auto is_ping = [](const term& t) { return t.is_atom("ping"); };
  for (long i = 0; i < s.round_trips; ++i) {
    const auto t0 = steady::now();
    self.send(to.pong, ping);
    auto m = co_await self.receive(on<term>().when(is_ping), after(std::chrono::seconds(10)));
    if (!m) {
      std::fprintf(stderr, "dist_bench: a round trip got no answer\n");
      self.send(done, 1);
      co_return;
    }
    us.push_back(std::chrono::duration<double, std::micro>(steady::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("{\"kind\":\"rtt\",\"round_trips\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
              s.round_trips, us[us.size() / 2], us[us.size() * 99 / 100]);
  std::fflush(stdout);
  self.send(done, 0);
}

int run(runtime& rt, settings s) {
  scoped_process me(rt);
  me.spawn([s, done = me.self()](process& self) { return driver(self, s, done); });
  auto rc = me.receive(on<int>(), after(std::chrono::minutes(10)));
  return rc ? rc.get<int>() : 1;
}

// The slow-reader measurement: one sender, a sampler on this thread every 10 ms.
int slow(runtime& rt, std::size_t busy_limit, double seconds, int size) {
  std::printf("ready %u\n", static_cast<unsigned>(dist::self(rt)->port));
  std::fflush(stdout);
  scoped_process me(rt);
  dist::monitor_nodes(me);
  auto up = me.receive(on<dist::nodeup>(), after(std::chrono::seconds(30)));
  if (!up) {
    std::fprintf(stderr, "dist_bench: the slow reader never connected\n");
    return 1;
  }
  const std::string peer = up.get<dist::nodeup>().node;
  std::atomic<long> sent{0};
  std::atomic<bool> stop{false};
  const std::int64_t base = bench::rss_bytes();
  const pid sender = me.spawn([&sent, &stop, peer, size](process& self) -> task<> {
    const term msg =
        term::make_tuple({term::make_atom("m"), term::make_binary(std::string(size, 'x'))});
    while (!stop.load(std::memory_order_relaxed)) {
      self.send("sink", peer, msg);
      sent.fetch_add(1, std::memory_order_relaxed);
      co_await self.yield();
    }
  });
  (void)me.monitor(sender);
  const auto t0 = steady::now();
  std::int64_t rss_peak = 0;
  std::size_t outbox_peak = 0;
  bool capped = false;
  double ran = 0;
  for (;;) {
    ran = std::chrono::duration<double>(steady::now() - t0).count();
    rss_peak = std::max(rss_peak, bench::rss_bytes() - base);
    outbox_peak = std::max(outbox_peak, dist::outbox_bytes(rt, peer).value_or(0));
    capped = rss_peak > (std::int64_t{1} << 30);
    if (ran >= seconds || capped) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const long n = sent.load();
  stop.store(true);
  // A suspended sender sees the flag once the connection drains or goes (the reader closes).
  (void)me.receive(on<down>(), after(std::chrono::seconds(120)));
  std::printf(
      "{\"kind\":\"slow\",\"busy_limit\":%zu,\"size\":%d,\"seconds\":%.3f,\"sent\":%ld,"
      "\"sent_mb_per_s\":%.3f,\"rss_peak_mib\":%.1f,\"outbox_peak_mib\":%.2f,"
      "\"capped\":%s}\n",
      busy_limit, size, ran, n, static_cast<double>(n) * size / ran / 1e6,
      static_cast<double>(rss_peak) / (1 << 20), static_cast<double>(outbox_peak) / (1 << 20),
      capped ? "true" : "false");
  std::fflush(stdout);
  return 0;
}

// -- a large message in flight -------------------------------------------------------------

constexpr std::size_t big_size = std::size_t{64} << 20;
struct stop_pinging {
  pid driver;
};
struct trip_times {
  std::vector<double> us;
};

// Round trips through `pong`, one at a time, until told to stop; then their times go back.
task<> pinger(process& self, pid pong) {
  std::vector<double> us;
  const term ping = term::make_tuple({term(self.self()), term::make_atom("ping")});
  const auto is_ping = [](const term& t) { return t.is_atom("ping"); };
  for (;;) {
    auto s = co_await self.receive(on<stop_pinging>(), after(std::chrono::milliseconds(0)));
    if (s) {
      self.send(s.get<stop_pinging>().driver, trip_times{std::move(us)});
      co_return;
    }
    const auto t0 = steady::now();
    self.send(pong, ping);
    auto m = co_await self.receive(on<term>().when(is_ping), after(std::chrono::seconds(60)));
    if (!m) co_return;
    us.push_back(std::chrono::duration<double, std::micro>(steady::now() - t0).count());
  }
}

task<> big_driver(process& self, std::string peer, std::size_t fragment_size, int rounds,
                  pid done) {
  const peer_pids to = co_await discover(self, peer);
  if (!to.sink) {
    std::fprintf(stderr, "dist_bench: the sink on %s does not answer\n", peer.c_str());
    self.send(done, 1);
    co_return;
  }
  const auto is_count = [](const term& t) {
    return t.is_tuple() && t.size() == 4 && t[0].is_atom("count");
  };
  for (;;) {  // late answers to discovery (see driver)
    auto stale =
        co_await self.receive(on<term>().when(is_count), after(std::chrono::milliseconds(500)));
    if (stale.timed_out()) break;
  }
  const term msg =
      term::make_tuple({term::make_atom("m"), term::make_binary(std::string(big_size, 'x'))});
  std::vector<double> transfers_ms;
  std::vector<double> trips;
  for (int r = 0; r < rounds; ++r) {
    const pid p = self.spawn([pong = to.pong](process& me) { return pinger(me, pong); });
    term payload = msg;  // made before the clock starts, moved in: as a service sends one
    const auto t0 = steady::now();
    self.send(to.sink, std::move(payload));
    self.send(to.sink, term::make_tuple({term::make_atom("done"), term(self.self())}));
    auto m = co_await self.receive(on<term>().when(is_count), after(std::chrono::seconds(120)));
    transfers_ms.push_back(std::chrono::duration<double, std::milli>(steady::now() - t0).count());
    self.send(p, stop_pinging{self.self()});
    auto t = co_await self.receive(on<trip_times>(), after(std::chrono::seconds(120)));
    if (!m || !t) {
      std::fprintf(stderr, "dist_bench: the large message or the pinger got no answer\n");
      self.send(done, 1);
      co_return;
    }
    const auto& us = t.get<trip_times>().us;
    trips.insert(trips.end(), us.begin(), us.end());
  }
  std::sort(transfers_ms.begin(), transfers_ms.end());
  std::sort(trips.begin(), trips.end());
  const auto at = [&](std::size_t i) { return trips.empty() ? -1.0 : trips[i]; };
  std::printf(
      "{\"kind\":\"big\",\"size\":%zu,\"fragment_size\":%zu,\"rounds\":%d,"
      "\"transfer_ms\":%.1f,\"trips\":%zu,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
      big_size, fragment_size, rounds, transfers_ms[transfers_ms.size() / 2], trips.size(),
      at(trips.size() / 2), at(trips.size() * 99 / 100));
  std::fflush(stdout);
  self.send(done, 0);
}

int big(runtime& rt, std::string peer, std::size_t fragment_size, int rounds) {
  scoped_process me(rt);
  me.spawn([peer, fragment_size, rounds, done = me.self()](process& self) {
    return big_driver(self, peer, fragment_size, rounds, done);
  });
  auto rc = me.receive(on<int>(), after(std::chrono::minutes(10)));
  return rc ? rc.get<int>() : 1;
}

std::vector<int> parse_sizes(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || (std::string(argv[1]) == "run" && argc < 5) ||
      (std::string(argv[1]) == "slow" && argc != 7) ||
      (std::string(argv[1]) == "big" && argc != 7)) {
    std::fprintf(stderr,
                 "usage: dist_bench serve <node> <cookie>\n"
                 "       dist_bench run <node> <cookie> <peer-node> [--messages N] "
                 "[--sizes 0,100,1000] [--round-trips K]\n"
                 "       dist_bench slow <node> <cookie> <busy-limit> <seconds> <size>\n"
                 "       dist_bench big <node> <cookie> <peer-node> <fragment-size> <rounds>\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode != "serve" && mode != "run" && mode != "slow" && mode != "big") {
    std::fprintf(stderr, "dist_bench: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  dist::node_options o = options(argv[2], argv[3]);
  if (mode == "slow") o.busy_limit = static_cast<std::size_t>(std::atoll(argv[4]));
  if (mode == "big") o.fragment_size = static_cast<std::size_t>(std::atoll(argv[5]));
  runtime rt;
  auto n = dist::start(rt, o);
  if (!n) {
    std::fprintf(stderr, "dist_bench: %s\n", n.error().message().c_str());
    return 1;
  }
  if (mode == "serve") return serve(rt);
  if (mode == "slow") {
    const double seconds = std::atof(argv[5]);
    const int size = std::atoi(argv[6]);
    if (seconds <= 0 || size < 0) {
      std::fprintf(stderr, "dist_bench: bad slow-reader settings\n");
      return 2;
    }
    return slow(rt, o.busy_limit, seconds, size);
  }
  if (mode == "big") {
    const int rounds = std::atoi(argv[6]);
    if (rounds <= 0) {
      std::fprintf(stderr, "dist_bench: rounds must be positive\n");
      return 2;
    }
    return big(rt, argv[4], o.fragment_size, rounds);
  }
  long messages = 200000, round_trips = 20000;
  std::vector<int> sizes{0, 100, 1000};
  for (int i = 5; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--messages") {
      messages = std::atol(argv[i + 1]);
    } else if (flag == "--sizes") {
      sizes = parse_sizes(argv[i + 1]);
    } else if (flag == "--round-trips") {
      round_trips = std::atol(argv[i + 1]);
    } else {
      std::fprintf(stderr, "dist_bench: unknown option '%s'\n", flag.c_str());
      return 2;
    }
  }
  if (messages <= 0 || round_trips <= 0 || sizes.empty()) {
    std::fprintf(stderr, "dist_bench: counts must be positive\n");
    return 2;
  }
  return run(rt, settings{argv[4], messages, sizes, round_trips});
}
