// Cost axis: memory per process.
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace beamlet::bench {

// Resident memory per idle process: 100k processes parked in a receive, measured as the growth
// of the RSS divided by 100k (everything included: process, coroutine frame, table slot,
// allocator slack). Reported as the counter bytes_per_process.
void BM_IdleProcessBytes(benchmark::State& st) {
  const int count = static_cast<int>(st.range(0));
  double bytes = 0;
  for (auto _ : st) {
    runtime rt;
    std::atomic<int> parked{0};
    const std::int64_t before = rss_bytes();
    std::vector<pid> ps;
    ps.reserve(static_cast<std::size_t>(count));
    const std::int64_t vector_bytes = rss_bytes() - before;  // the pid vector itself
    for (int i = 0; i < count; ++i) {
      ps.push_back(rt.spawn([&parked](process& self) -> task<> {
        parked.fetch_add(1, std::memory_order_relaxed);
        co_await self.receive(on<stop>());
      }));
    }
    while (parked.load() < count) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);
    bytes = static_cast<double>(rss_bytes() - before - vector_bytes) / count;
    for (pid p : ps) rt.send(p, stop{});
  }
  st.counters["bytes_per_process"] = bytes;
}
// One repetition only: later repetitions would reuse the memory the first one made resident.
BENCHMARK(BM_IdleProcessBytes)
    ->Arg(100000)
    ->Iterations(1)
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace beamlet::bench
