// Cost axis: selective receive against a backlog (spec §1.3).
#include <algorithm>
#include <random>
#include <vector>

#include "bench_support.hpp"

namespace beamlet::bench {

namespace {
struct tagged {
  ref tag;
};

// Leaves this thread's free list for `msg` nodes in random address order, as in a process that
// has been running for a while: the next `count` messages it allocates are scattered in memory.
void scatter_free_list(std::int64_t count) {
  std::vector<detail::message_node*> nodes;
  nodes.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) nodes.push_back(detail::make_message(msg{i}));
  std::shuffle(nodes.begin(), nodes.end(), std::mt19937_64(42));
  for (auto* n : nodes) detail::destroy_node(n);
}
task<> fill(process& self, std::int64_t backlog) {
  for (std::int64_t i = 0; i < backlog; ++i) self.send(self.self(), msg{i});
  // Take the backlog into the queue now, so the timed receives do not pay for it.
  (void)self.message_queue_len();
  co_return;
}
}  // namespace

// One iteration: one receive whose match sits behind N queued non-matching messages. The
// BEAM cost model: every receive scans the whole backlog. `skipped` reports the time per
// skipped message.
void BM_SelectiveScan(benchmark::State& st) {
  runtime rt({.schedulers = 1});
  const std::int64_t backlog = st.range(0);
  run_in_process_manual(st, rt, [backlog](process& self, std::int64_t n) -> task<double> {
    co_await fill(self, backlog);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < n; ++i) {
      self.send(self.self(), stop{});
      co_await self.receive(on<stop>());
    }
    co_return seconds_since(t0);
  });
  st.counters["skipped"] =
      benchmark::Counter(static_cast<double>(backlog) * st.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SelectiveScan)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// As BM_SelectiveScan, but the queued messages are scattered in memory (allocated from a free
// list in random order), so every step of the scan is a dependent cache miss: the cost of a
// backlog in a process that has been running for a while. BEAM's queue is a linked list too
// and has the same behaviour.
void BM_SelectiveScanScattered(benchmark::State& st) {
  runtime rt({.schedulers = 1});
  const std::int64_t backlog = st.range(0);
  run_in_process_manual(st, rt, [backlog](process& self, std::int64_t n) -> task<double> {
    scatter_free_list(backlog);
    co_await fill(self, backlog);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < n; ++i) {
      self.send(self.self(), stop{});
      co_await self.receive(on<stop>());
    }
    co_return seconds_since(t0);
  });
  st.counters["skipped"] =
      benchmark::Counter(static_cast<double>(backlog) * st.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// One iteration: make a marked ref, send a message carrying it, and receive it with
// receive(since(ref), ...), behind the same backlog. With the marker the backlog is skipped,
// so the cost should not depend on N (compare with N = 0).
void BM_MarkerReceive(benchmark::State& st) {
  runtime rt({.schedulers = 1});
  const std::int64_t backlog = st.range(0);
  run_in_process_manual(st, rt, [backlog](process& self, std::int64_t n) -> task<double> {
    co_await fill(self, backlog);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < n; ++i) {
      const ref r = self.make_ref(marked);
      self.send(self.self(), tagged{r});
      co_await self.receive(since(r),
                            on<tagged>().when([r](const tagged& t) { return t.tag == r; }));
    }
    co_return seconds_since(t0);
  });
}
BENCHMARK(BM_MarkerReceive)
    ->Arg(0)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->UseManualTime()
    ->Unit(benchmark::kNanosecond);

BENCHMARK(BM_SelectiveScanScattered)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace beamlet::bench
