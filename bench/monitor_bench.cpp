// Cost axis: monitors and DOWN delivery.
#include <vector>

#include "bench_support.hpp"

namespace beamlet::bench {

// One iteration: monitor + demonitor of a live process.
void BM_Monitor(benchmark::State& st) {
  runtime rt;
  run_in_process(st, rt, [](process& self, std::int64_t n) -> task<> {
    const pid target =
        self.spawn_link([](process& t) -> task<> { co_await t.receive(on<stop>()); });
    for (std::int64_t i = 0; i < n; ++i) {
      const ref r = self.monitor(target);
      self.demonitor(r);
    }
    self.send(target, stop{});
    co_return;
  });
}
BENCHMARK(BM_Monitor);

// One iteration: one process with `watchers` monitors dies; time until every watcher has
// received its DOWN. Watchers park afterwards, so their own exits are not measured.
void BM_DownFanOut(benchmark::State& st) {
  runtime rt;
  const auto watchers = static_cast<int>(st.range(0));
  for (auto _ : st) {
    std::atomic<int> monitoring{0};
    sharded_counter downs;
    const pid target = rt.spawn([](process& self) -> task<> { co_await self.receive(on<stop>()); });
    std::vector<pid> ws;
    ws.reserve(static_cast<std::size_t>(watchers));
    for (int i = 0; i < watchers; ++i) {
      ws.push_back(rt.spawn([&](process& self) -> task<> {
        (void)self.monitor(target);
        monitoring.fetch_add(1, std::memory_order_relaxed);
        co_await self.receive(on<down>());
        downs.add();
        co_await self.receive(on<stop>());
      }));
    }
    while (monitoring.load() < watchers) std::this_thread::sleep_for(1ms);
    const auto t0 = std::chrono::steady_clock::now();
    rt.exit(target, exit_reason::kill());
    downs.wait_for(watchers);
    st.SetIterationTime(seconds_since(t0));
    for (pid w : ws) rt.send(w, stop{});
    while (rt.process_count() > 0) std::this_thread::sleep_for(1ms);
  }
}
BENCHMARK(BM_DownFanOut)->Arg(100000)->UseManualTime()->Unit(benchmark::kMillisecond);

// One iteration: `dying` processes, all monitored by one watcher, die at once (they are linked
// to one process that is killed); time until the watcher has received every DOWN.
void BM_DownFanIn(benchmark::State& st) {
  runtime rt;
  const auto dying = static_cast<int>(st.range(0));
  for (auto _ : st) {
    std::atomic<int> linked{0};
    flag_t all_down{0};
    const pid trigger =
        rt.spawn([](process& self) -> task<> { co_await self.receive(on<stop>()); });
    rt.spawn([&, dying](process& self) -> task<> {
      for (int i = 0; i < dying; ++i) {
        const pid p = self.spawn([trigger, &linked](process& d) -> task<> {
          d.link(trigger);
          linked.fetch_add(1, std::memory_order_release);
          co_await d.receive(on<stop>());
        });
        (void)self.monitor(p);
      }
      for (int i = 0; i < dying; ++i) co_await self.receive(on<down>());
      set_flag(all_down);
    });
    // Every victim has linked (and so is monitored) before the trigger dies.
    while (linked.load(std::memory_order_acquire) < dying) std::this_thread::sleep_for(1ms);
    const auto t0 = std::chrono::steady_clock::now();
    rt.exit(trigger, exit_reason::kill());
    wait_flag(all_down);
    st.SetIterationTime(seconds_since(t0));
    while (rt.process_count() > 0) std::this_thread::sleep_for(1ms);
  }
}
BENCHMARK(BM_DownFanIn)->Arg(100000)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace beamlet::bench
