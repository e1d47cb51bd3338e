// bench/memory_spike: resident memory before, at the peak of, and after a spike of children.
//
// A DynamicSupervisor starts `--children` GenServer children, then every one of them is
// terminated again: one round, the shape of a reconnect storm that ends. After `--rounds` such
// rounds the program watches the RSS fall for `--settle` seconds, sampling every 50 ms.
//
// The level the spike is judged against ("before") is that of a service that has run: the
// runtime and the supervisor up, and a warm-up of `--warmup` children started and stopped, so the
// code of those paths is paged in and each size class has its first chunk. The level of the cold
// runtime is printed beside it. Then, per configuration: the first round's peak and the highest,
// the RSS when the last round ended, one and `--settle` seconds later, how long it took to come
// back within 1.25x of "before", and the size-class allocator's mapped bytes at the end. Each
// configuration runs in a process of its own (forked before any runtime exists), so they share
// no memory.
//
//   memory_spike [--children 100k] [--rounds 1,6,20] [--settle 5] [--warmup 10k] [--schedulers N]
#include <beamlet/beamlet.hpp>
#include <beamlet/core/detail/allocator.hpp>

#include "../common/cli.hpp"
#include "../common/rss.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace beamlet;
using beamlet::bench::rss_bytes;
using namespace std::chrono_literals;

double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

/// The smallest useful child: a gen_server with no state.
class idle_child : public gen_server<idle_child> {};

struct finish {};

struct options {
  std::int64_t children = 100000;
  std::vector<std::int64_t> rounds{1, 6, 20};
  double settle = 5;
  std::int64_t warmup = 10000;
  unsigned schedulers = 0;
};

struct row {
  std::int64_t rounds = 0;
  std::int64_t cold = 0;
  std::int64_t before = 0;
  std::int64_t chunks_at_end = 0;  ///< the size-class allocator's mapped bytes, settled
  std::int64_t peak = 0;
  std::int64_t first_peak = 0;
  std::int64_t at_end = 0;
  std::int64_t after_1s = 0;
  std::int64_t after_settle = 0;
  double back_within_s = -1;  ///< seconds until RSS <= 1.25x before; -1: not within --settle
  double spike_s = 0;         ///< how long the rounds took
};

row measure(const options& o, std::int64_t rounds) {
  runtime_options ro;
  if (o.schedulers > 0) ro.schedulers = o.schedulers;
  runtime rt(ro);
  row r;
  r.rounds = rounds;
  // 0 starting, 1 supervisor up, 2 warmed up, 3 rounds done, -1 failed
  std::atomic<int> phase{0};
  std::atomic<std::int64_t> peak{0}, first_peak{0};
  std::atomic<std::int64_t> cold{0}, before{0};
  const pid driver = rt.spawn([&](process& self) -> task<> {
    const dynamic_supervisor_flags flags;
    const start_result s =
        co_await dynamic_supervisor::start_link(self, supervisor_options{}, flags);
    if (!s.is_ok()) {
      phase = -1;
      co_return;
    }
    const dynamic_supervisor_ref sup(s.pid());
    const child_spec spec = child_spec("c", worker_start<idle_child>())
                                .with_restart(restart_type::temporary)
                                .with_shutdown(shutdown_spec::brutal_kill());
    std::vector<pid> kids;
    // One round of `size` children started, then all of them terminated.
    auto spike = [&](std::int64_t size) -> task<bool> {
      for (std::int64_t i = 0; i < size; ++i) {
        auto c = co_await dynamic_supervisor::start_child(self, sup, spec);
        if (!c || !c->is_ok()) co_return false;
        kids.push_back(c->pid());
      }
      co_return true;
    };
    // The main thread reads the cold level, then the level after the warm-up, then lets the
    // rounds begin.
    phase = 1;
    while (cold.load() == 0) co_await self.receive(after(1ms));
    if (!co_await spike(o.warmup)) {
      phase = -1;
      co_return;
    }
    for (pid k : kids) (void)co_await dynamic_supervisor::terminate_child(self, sup, k);
    kids.clear();
    kids.shrink_to_fit();
    phase = 2;
    while (before.load() == 0) co_await self.receive(after(1ms));
    kids.reserve(static_cast<std::size_t>(o.children));
    for (std::int64_t round = 0; round < rounds; ++round) {
      for (std::int64_t i = 0; i < o.children; ++i) {
        auto c = co_await dynamic_supervisor::start_child(self, sup, spec);
        if (!c || !c->is_ok()) {
          phase = -1;
          co_return;
        }
        kids.push_back(c->pid());
      }
      const std::int64_t now = rss_bytes();
      peak = std::max(peak.load(), now);
      if (round == 0) first_peak = now;
      for (pid k : kids) (void)co_await dynamic_supervisor::terminate_child(self, sup, k);
      kids.clear();
    }
    kids.shrink_to_fit();
    phase = 3;
    co_await self.receive(on<finish>());
    self.unlink(s.pid());
    self.exit(s.pid(), exit_reason::kill());
  });
  while (phase.load() == 0) std::this_thread::sleep_for(1ms);
  if (phase.load() < 0) throw std::runtime_error("the supervisor did not start");
  std::this_thread::sleep_for(200ms);  // settle the runtime's own start-up
  r.cold = rss_bytes();
  cold = r.cold;
  while (phase.load() == 1) std::this_thread::sleep_for(1ms);
  if (phase.load() < 0) throw std::runtime_error("a warm-up child did not start");
  std::this_thread::sleep_for(1500ms);  // whatever the warm-up freed is trimmed by now
  r.before = rss_bytes();
  before = r.before;
  const auto t0 = std::chrono::steady_clock::now();
  while (phase.load() == 2) std::this_thread::sleep_for(1ms);
  if (phase.load() < 0) throw std::runtime_error("a child did not start");
  const auto end = std::chrono::steady_clock::now();
  r.spike_s = std::chrono::duration<double>(end - t0).count();
  r.peak = peak;
  r.first_peak = first_peak;
  r.at_end = rss_bytes();
  const auto limit = static_cast<std::int64_t>(static_cast<double>(r.before) * 1.25);
  for (;;) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - end).count();
    const std::int64_t now = rss_bytes();
    if (r.back_within_s < 0 && now <= limit) r.back_within_s = t;
    if (r.after_1s == 0 && t >= 1.0) r.after_1s = now;
    if (t >= o.settle) {
      r.after_settle = now;
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  if (r.after_1s == 0) r.after_1s = r.after_settle;
  r.chunks_at_end = beamlet::detail::allocator_statistics().mapped_bytes;
  (void)rt.send(driver, finish{});
  (void)rt.wait(driver, 10s);
  return r;
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: memory_spike [--children 100k] [--rounds 1,6,20] [--settle 5] "
               "[--warmup 10k] [--schedulers N]\n"
               "  Starts and stops --children GenServers under one DynamicSupervisor, --rounds\n"
               "  times, and prints the RSS before, at the peak and after (each --rounds value\n"
               "  in a process of its own).\n");
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) throw cli::error(std::string(a) + ": needs a value");
      return argv[++i];
    };
    if (a == "--children") {
      o.children = cli::parse_count(a, value(), 1, 10000000);
    } else if (a == "--rounds") {
      o.rounds = cli::parse_list(
          a, value(), [&](std::string_view t) { return cli::parse_count(a, t, 1, 100000); });
    } else if (a == "--settle") {
      o.settle = static_cast<double>(cli::parse_count(a, value(), 1, 3600));
    } else if (a == "--warmup") {
      o.warmup = cli::parse_count(a, value(), 0, 10000000);
    } else if (a == "--schedulers") {
      o.schedulers = static_cast<unsigned>(cli::parse_count(a, value(), 1, 1024));
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else {
      throw cli::error("unknown option " + std::string(a));
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse(argc, argv);
  } catch (const cli::error& e) {
    std::fprintf(stderr, "memory_spike: %s\n", e.what());
    usage(stderr);
    return 2;
  }
  std::printf(
      "%lld children per round, RSS in MiB. cold: the runtime just up; before: after a warm-up "
      "of %lld children; back_s: seconds until RSS <= 1.25x before; chunks: the allocator's "
      "mapped MiB at the end\n",
      static_cast<long long>(o.children), static_cast<long long>(o.warmup));
  std::printf("%6s %8s %6s %7s %8s %8s %7s %7s %8s %7s %7s\n", "rounds", "spike_s", "cold",
              "before", "peak_1st", "peak", "at_end", "+1s", "+settle", "back_s", "chunks");
  std::fflush(stdout);
  int failed = 0;
  for (const std::int64_t rounds : o.rounds) {
    // No runtime exists in this process yet, so fork is safe: each configuration starts from
    // a fresh address space.
    const pid_t child = ::fork();
    if (child < 0) {
      std::perror("fork");
      return 1;
    }
    if (child == 0) {
      try {
        const row r = measure(o, rounds);
        char back[32];
        if (r.back_within_s < 0)
          std::snprintf(back, sizeof back, "never");
        else
          std::snprintf(back, sizeof back, "%.2f", r.back_within_s);
        std::printf("%6lld %8.2f %6.1f %7.1f %8.1f %8.1f %7.1f %7.1f %8.1f %7s %7.1f\n",
                    static_cast<long long>(r.rounds), r.spike_s, mib(r.cold), mib(r.before),
                    mib(r.first_peak), mib(r.peak), mib(r.at_end), mib(r.after_1s),
                    mib(r.after_settle), back, mib(r.chunks_at_end));
        std::fflush(stdout);
        std::_Exit(0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "memory_spike: %s\n", e.what());
        std::_Exit(1);
      }
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
