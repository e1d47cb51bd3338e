// bench/scaling: the runtime's hot paths at 1, 2, 4, ... schedulers, and oversubscribed.
//
// Each workload runs one independent unit of work per scheduler (a pair of processes, a
// client and its server, ...), so a perfectly scalable runtime's throughput grows with the
// schedulers until the machine's cores run out. Beside the throughput it prints how many times
// the runtime's shared locks were taken per operation (beamlet/core/detail/lock_count.hpp), which
// needs a library built with BEAMLET_COUNT_LOCKS=ON: a figure that does not depend on the
// machine, so a 2-core run already shows which paths would serialise 64 cores. The count covers
// the core's locks (lib/core); the network layer's own locks are not counted yet. Both figures
// cover only the measured window (between the go signal and the stop), not setup or teardown.
//
//   bench_scaling [--schedulers 1,2,4] [--seconds 2] [--workloads messaging,call,...]
#include <beamlet/beamlet.hpp>
#include <beamlet/core/detail/lock_count.hpp>

#include "../common/cli.hpp"
#include "../common/counter_server.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace beamlet;
using namespace std::chrono_literals;

struct go {};
struct token {
  std::int64_t n;
};
struct ack {};

/// What the units share with the main thread: a stop flag and an operation count per unit
/// (each written by one unit, read by the main thread).
struct shared_state {
  std::atomic<bool> stop{false};
  std::atomic<std::uint32_t> ready{0};
  std::atomic<std::uint32_t> finished{0};
  std::unique_ptr<std::atomic<std::uint64_t>[]> ops;
  explicit shared_state(unsigned units)
      : ops(std::make_unique<std::atomic<std::uint64_t>[]>(units)) {}

  std::uint64_t total(unsigned units) const {
    std::uint64_t sum = 0;
    for (unsigned i = 0; i < units; ++i) sum += ops[i].load(std::memory_order_relaxed);
    return sum;
  }
};

/// One unit of a workload: the body of its driving process. It reports ready, waits for go,
/// then does operations (counting each in `ops`) until `stop`.
using unit_body = std::function<task<>(process& self, unsigned index, shared_state& s)>;

void count(shared_state& s, unsigned index, std::uint64_t n = 1) {
  auto& c = s.ops[index];
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

task<> wait_for_go(process& self, shared_state& s) {
  s.ready.fetch_add(1, std::memory_order_acq_rel);
  co_await self.receive(on<go>());
}

// -- the workloads ---------------------------------------------------------------------------

// One message each way per round trip: two operations.
task<> messaging(process& self, unsigned index, shared_state& s) {
  const pid me = self.self();
  const pid echo = self.spawn_link([me](process& e) -> task<> {
    for (;;) {
      auto m = co_await e.receive(on<token>());
      e.send(me, token{m.get<token>().n});
    }
  });
  co_await wait_for_go(self, s);
  for (std::int64_t i = 0; !s.stop.load(std::memory_order_relaxed); ++i) {
    self.send(echo, token{i});
    co_await self.receive(on<token>());
    count(s, index, 2);
  }
}

// A round trip whose two receives each arm and cancel a timeout.
task<> timed_receive(process& self, unsigned index, shared_state& s) {
  const pid me = self.self();
  const pid echo = self.spawn_link([me](process& e) -> task<> {
    for (;;) {
      auto m = co_await e.receive(on<token>(), after(1h));
      if (m) e.send(me, token{m.get<token>().n});
    }
  });
  co_await wait_for_go(self, s);
  for (std::int64_t i = 0; !s.stop.load(std::memory_order_relaxed); ++i) {
    self.send(echo, token{i});
    co_await self.receive(on<token>(), after(1h));
    count(s, index, 2);
  }
}

// send_after timers: sixteen armed for an hour and cancelled (a state machine's timeouts), and
// one armed for now, which its scheduler fires between runs (the unit yields instead of
// waiting, so that the figure is the timers' and not a sleeping scheduler's). Each timer armed
// is one operation; the ticks are received as they arrive.
task<> send_after_cancel(process& self, unsigned index, shared_state& s) {
  co_await wait_for_go(self, s);
  for (std::int64_t i = 0; !s.stop.load(std::memory_order_relaxed); ++i) {
    self.send_after(self.self(), token{i}, 0ms);
    for (int k = 0; k < 16; ++k) {
      const ref later = self.send_after(self.self(), token{i}, 1h);
      if (!self.cancel_timer(later)) std::abort();
    }
    co_await self.yield();
    while (co_await self.receive(on<token>(), after(0ms))) {
    }
    count(s, index, 17);
  }
}

// A spawn of a process that exits at once, 64 at a time: the last of a wave to run acks, so
// the spawner starts the next wave only when the children of this one have all run (the
// run queues stay short whatever the scheduling).
task<> spawn(process& self, unsigned index, shared_state& s) {
  const pid me = self.self();
  auto left = std::make_shared<std::atomic<int>>(0);
  co_await wait_for_go(self, s);
  while (!s.stop.load(std::memory_order_relaxed)) {
    left->store(64, std::memory_order_relaxed);
    for (int i = 0; i < 64; ++i) {
      self.spawn([me, left](process& c) -> task<> {
        if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) c.send(me, ack{});
        co_return;
      });
    }
    co_await self.receive(on<ack>());
    count(s, index, 64);
  }
}

// gen_server:call to the unit's own server (monitor, marked receive, demonitor).
task<> gen_call(process& self, unsigned index, shared_state& s) {
  const start_result started = co_await bench::counter::start_link(self, {});
  const server_ref<bench::counter> server(started.pid());
  co_await wait_for_go(self, s);
  std::int64_t sum = 0;
  while (!s.stop.load(std::memory_order_relaxed)) {
    sum += co_await call(self, server, bench::get{});
    count(s, index);
  }
  if (sum < 0) std::abort();
}

// A send to a registered name, answered by pid: one named send per operation.
task<> named_send(process& self, unsigned index, shared_state& s) {
  const pid me = self.self();
  const std::string name = "scaling_echo_" + std::to_string(index);
  self.spawn_link([me, name](process& e) -> task<> {
    if (const auto ec = e.register_name(name)) {
      std::fprintf(stderr, "register_name: %s\n", ec.message().c_str());
      std::abort();
    }
    e.send(me, ack{});
    for (;;) {
      auto m = co_await e.receive(on<token>());
      e.send(me, token{m.get<token>().n});
    }
  });
  co_await self.receive(on<ack>());
  co_await wait_for_go(self, s);
  for (std::int64_t i = 0; !s.stop.load(std::memory_order_relaxed); ++i) {
    if (self.send(name, token{i})) std::abort();
    co_await self.receive(on<token>());
    count(s, index);
  }
}

// monitor + demonitor of a live partner: one operation.
task<> monitor_demonitor(process& self, unsigned index, shared_state& s) {
  const pid partner = self.spawn_link([](process& p) -> task<> { co_await p.receive(on<go>()); });
  co_await wait_for_go(self, s);
  while (!s.stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 16; ++i) {
      const ref r = self.monitor(partner);
      self.demonitor(r);
    }
    count(s, index, 16);
  }
}

// A 64-byte echo over loopback: the unit's client sends, its own server (an accepted socket's
// owner) receives and sends back. One round trip per operation, through the sockets' lanes.
task<> socket_echo(process& self, unsigned index, shared_state& s) {
  net::listen_options lo;
  lo.accepted.framing = net::framing::prefix2;
  lo.accepted.max_packet = 4096;
  auto listener = net::listen(self, lo);
  if (!listener) {
    std::fprintf(stderr, "listen: %s\n", listener.error().message().c_str());
    std::abort();
  }
  const std::uint16_t port = listener->port();
  self.spawn_link([l = *listener](process& server) mutable -> task<> {
    auto accepted = co_await net::accept(server, l);
    if (!accepted) std::abort();
    for (;;) {
      auto packet = co_await net::recv(server, *accepted);
      if (!packet || !co_await net::send(server, *accepted, *packet)) co_return;
    }
  });
  net::socket_options o;
  o.framing = net::framing::prefix2;
  o.max_packet = 4096;
  auto sock = co_await net::connect(self, "127.0.0.1", port, o, 5s);
  if (!sock) {
    std::fprintf(stderr, "connect: %s\n", sock.error().message().c_str());
    std::abort();
  }
  const std::string payload(64, 'x');
  co_await wait_for_go(self, s);
  while (!s.stop.load(std::memory_order_relaxed)) {
    if (!co_await net::send(self, *sock, payload)) std::abort();
    auto back = co_await net::recv(self, *sock);
    if (!back || back->size() != payload.size()) std::abort();
    count(s, index);
  }
}

struct workload {
  const char* name;
  const char* unit;
  unit_body body;
};

std::vector<workload> all_workloads() {
  return {
      {"messaging", "message", messaging},
      {"spawn", "spawn", spawn},
      {"timed_receive", "message", timed_receive},
      {"send_after", "timer", send_after_cancel},
      {"call", "call", gen_call},
      {"named_send", "send", named_send},
      {"monitor", "monitor+demonitor", monitor_demonitor},
      {"socket_echo", "64 B round trip", socket_echo},
  };
}

struct result {
  double ops_per_s;
  std::uint64_t ops;
  std::uint64_t locks;
};

result run_one(const workload& w, unsigned schedulers, double seconds) {
  runtime_options o;
  o.schedulers = schedulers;
  runtime rt(o);
  const unsigned units = schedulers;
  shared_state s(units);
  std::vector<pid> drivers;
  for (unsigned i = 0; i < units; ++i) {
    drivers.push_back(rt.spawn([&w, &s, i](process& self) -> task<> {
      co_await w.body(self, i, s);
      s.finished.fetch_add(1, std::memory_order_acq_rel);
      co_await self.receive(on<go>());  // stay, with the unit's partners linked, until shutdown
    }));
  }
  while (s.ready.load(std::memory_order_acquire) < units) std::this_thread::sleep_for(1ms);

  const std::uint64_t ops0 = s.total(units);
  const std::uint64_t locks0 = detail::shared_lock_acquisitions();
  const auto t0 = std::chrono::steady_clock::now();
  for (const pid d : drivers) rt.send(d, go{});
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::uint64_t locks1 = detail::shared_lock_acquisitions();
  const std::uint64_t ops1 = s.total(units);
  const auto t1 = std::chrono::steady_clock::now();
  s.stop.store(true, std::memory_order_relaxed);
  while (s.finished.load(std::memory_order_acquire) < units) std::this_thread::sleep_for(1ms);

  const double elapsed = std::chrono::duration<double>(t1 - t0).count();
  return {static_cast<double>(ops1 - ops0) / elapsed, ops1 - ops0, locks1 - locks0};
}

constexpr const char* usage =
    "usage: bench_scaling [--schedulers 1,2,4] [--seconds S] [--workloads a,b]\n"
    "workloads: messaging spawn timed_receive send_after call named_send monitor socket_echo\n";

workload find_workload(std::string_view name) {
  for (const workload& w : all_workloads())
    if (name == w.name) return w;
  throw cli::error("--workloads: unknown workload '" + std::string(name) + "'");
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned hw = std::max(1U, std::thread::hardware_concurrency());
  std::vector<unsigned> counts;
  for (unsigned n = 1; n < hw; n *= 2) counts.push_back(n);
  counts.push_back(hw);
  counts.push_back(2 * hw);  // oversubscribed
  double seconds = 2.0;
  std::vector<workload> chosen = all_workloads();

  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (i + 1 >= argc) throw cli::error(std::string(arg) + ": needs a value");
      const std::string_view value = argv[++i];
      if (arg == "--seconds") {
        seconds = cli::parse_number(arg, value, 0.01, 600);
      } else if (arg == "--schedulers") {
        counts = cli::parse_list(arg, value, [&](std::string_view c) {
          return static_cast<unsigned>(cli::parse_count(arg, c, 1, max_schedulers));
        });
      } else if (arg == "--workloads") {
        chosen = cli::parse_list(arg, value, find_workload);
      } else {
        throw cli::error(std::string(arg) + ": unknown option");
      }
    }
  } catch (const cli::error& e) {
    std::fprintf(stderr, "bench_scaling: %s\n%s", e.what(), usage);
    return 2;
  }

  const bool counting = detail::counts_shared_locks();
  std::printf("bench_scaling: %u hardware threads, %.1f s a cell, shared locks %s\n", hw, seconds,
              counting ? "counted" : "not counted (configure with -DBEAMLET_COUNT_LOCKS=ON)");
  std::printf("%-14s %-18s %6s %14s %10s %14s\n", "workload", "operation", "sched", "ops/s",
              "speedup", "locks/op");
  struct lock_row {
    const char* name;
    std::uint64_t ops = 0;
    std::uint64_t locks = 0;
  };
  std::vector<lock_row> lock_table;
  for (const workload& w : chosen) {
    double base = 0;
    lock_row row{w.name};
    for (const unsigned n : counts) {
      const result r = run_one(w, n, seconds);
      if (base == 0) base = r.ops_per_s;
      row.ops += r.ops;
      row.locks += r.locks;
      char locks[32] = "-";
      if (counting && r.ops > 0)
        std::snprintf(locks, sizeof locks, "%.4f",
                      static_cast<double>(r.locks) / static_cast<double>(r.ops));
      std::printf("%-14s %-18s %6u %14.0f %9.2fx %14s\n", w.name, w.unit, n, r.ops_per_s,
                  base > 0 ? r.ops_per_s / base : 0.0, locks);
      std::fflush(stdout);
    }
    lock_table.push_back(row);
  }
  if (counting) {
    std::printf("\nshared-lock acquisitions, all cells of a workload together:\n");
    std::printf("%-14s %16s %14s %12s\n", "workload", "operations", "acquisitions", "per op");
    for (const lock_row& row : lock_table)
      std::printf(
          "%-14s %16llu %14llu %12.6f\n", row.name, static_cast<unsigned long long>(row.ops),
          static_cast<unsigned long long>(row.locks),
          row.ops > 0 ? static_cast<double>(row.locks) / static_cast<double>(row.ops) : 0.0);
  }
  return 0;
}
