// Cost axis: process creation and termination.
#include "bench_support.hpp"

namespace beamlet::bench {

// One iteration: spawn an empty process (with a monitor) and wait for its DOWN.
void BM_SpawnExit(benchmark::State& st) {
  runtime rt;
  run_in_process(st, rt, [](process& self, std::int64_t n) -> task<> {
    for (std::int64_t i = 0; i < n; ++i) {
      (void)self.spawn_monitor([](process&) -> task<> { co_return; });
      co_await self.receive(on<down>());
    }
  });
}
BENCHMARK(BM_SpawnExit);

}  // namespace beamlet::bench
