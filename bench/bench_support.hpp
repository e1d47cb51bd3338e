// Helpers for the Google Benchmark programs.
//
// Most beamlet work happens inside processes, while Google Benchmark drives a loop on the main
// thread. run_in_process() bridges the two: it runs the whole batch of `max_iterations`
// iterations inside one process during the first pass of the timing loop, so the measured time
// divided by the iteration count is the cost of one iteration, with a single cross-thread
// hand-off amortised over the batch.
#pragma once

#include <benchmark/benchmark.h>
#include <beamlet/beamlet.hpp>

#include "common/rss.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace beamlet::bench {

using namespace std::chrono_literals;

/// A one-shot event for a (non-process) thread to block on. 32 bits, so that
/// std::atomic::wait is a plain futex wait: a 1-byte atomic makes libstdc++ spin, which on a
/// 2-core machine steals a core from the schedulers being measured.
using flag_t = std::atomic<std::uint32_t>;
inline void wait_flag(flag_t& flag) {
  while (flag.load(std::memory_order_acquire) == 0) flag.wait(0, std::memory_order_acquire);
}
inline void set_flag(flag_t& flag) {
  flag.store(1, std::memory_order_release);
  flag.notify_all();
}

/// Runs `body(self, n)` in a process, timed as n iterations of `st`.
template <class Body>
void run_in_process(benchmark::State& st, runtime& rt, Body body) {
  const auto n = static_cast<std::int64_t>(st.max_iterations);
  bool first = true;
  for (auto _ : st) {
    if (!first) continue;
    first = false;
    flag_t done{0};
    rt.spawn([&](process& self) -> task<> {
      co_await body(self, n);
      set_flag(done);
    });
    wait_flag(done);
  }
}

/// Like run_in_process, but the body reports the time of its measured part itself (setup it
/// does first is excluded). Requires ->UseManualTime().
template <class Body>
void run_in_process_manual(benchmark::State& st, runtime& rt, Body body) {
  const auto n = static_cast<std::int64_t>(st.max_iterations);
  bool first = true;
  for (auto _ : st) {
    if (!first) {
      st.SetIterationTime(0);
      continue;
    }
    first = false;
    flag_t done{0};
    double seconds = 0;
    rt.spawn([&](process& self) -> task<> {
      seconds = co_await body(self, n);
      set_flag(done);
    });
    wait_flag(done);
    st.SetIterationTime(seconds);
  }
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A counter incremented from many scheduler threads without a shared cache line: one padded
/// shard per thread, summed by the (polling) reader. Benchmarks that count "every watcher got its
/// DOWN" would otherwise measure contention on their own counter.
class sharded_counter {
 public:
  void add() noexcept { shards_[shard()].n.fetch_add(1, std::memory_order_relaxed); }
  std::int64_t sum() const noexcept {
    std::int64_t total = 0;
    for (const auto& s : shards_) total += s.n.load(std::memory_order_relaxed);
    return total;
  }
  /// Spins (with short sleeps) until the sum reaches `target`.
  void wait_for(std::int64_t target) const {
    while (sum() < target) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

 private:
  static std::size_t shard() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t mine = next.fetch_add(1) % kShards;
    return mine;
  }
  static constexpr std::size_t kShards = 64;
  struct alignas(64) padded {
    std::atomic<std::int64_t> n{0};
  };
  padded shards_[kShards];
};

/// A small message, the same size as the peers' benchmarks use (one 64-bit word).
struct msg {
  std::int64_t value;
};
struct stop {};

}  // namespace beamlet::bench
