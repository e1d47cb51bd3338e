// Cost axis: observability (docs/operations.md). What an operator's questions cost while the
// system is in the state that prompted them: process_info of a process holding a million
// messages, a metrics scrape and a top pass over a million processes, the logger's throughput,
// and a crash loop of 100k crashes a second (the runtime must stay responsive, the logger must
// drop and count rather than grow).
#include <atomic>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace beamlet::bench {

namespace {

struct never_sent {};

std::atomic<std::int64_t> started_parking{0};

// A process parked in a receive that takes nothing that is queued.
task<> parked(process& self) {
  started_parking.fetch_add(1, std::memory_order_relaxed);
  co_await self.receive(on<never_sent>());
}

// An ostream that throws its characters away (what the text formatter costs, without a
// terminal's).
class null_buffer : public std::streambuf {
 protected:
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

// The runtime's logger with the text handler writing nowhere.
void quiet_text_logger(runtime& rt, std::ostream& out) {
  auto& log = logger::of(rt);
  log.clear_handlers();
  log.add_handler(logger::text(out));
}

// Spawns n parked processes from a process and waits until all are parked.
void spawn_parked(runtime& rt, std::int64_t n) {
  started_parking = 0;
  flag_t done{0};
  rt.spawn([&](process& self) -> task<> {
    for (std::int64_t i = 0; i < n; ++i) self.spawn(parked);
    set_flag(done);
    co_return;
  });
  wait_flag(done);
  while (started_parking.load() < n) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);  // the last ones reach their receive
}

}  // namespace

// One iteration: process_info of a process parked in a receive with `queued` messages it does
// not want (its receive examined them all). Target: under 1 ms at 1M. The lists are read too
// (`complete`): the process is held parked for the read.
void BM_ProcessInfo(benchmark::State& st) {
  runtime rt(runtime_options{.schedulers = 2});
  const auto queued = st.range(0);
  const pid target = rt.spawn(parked);
  for (std::int64_t i = 0; i < queued; ++i) rt.send(target, i);
  for (;;) {
    auto i = process_info(rt, target);
    if (i && i->status == process_status::waiting &&
        i->message_queue_len == static_cast<std::size_t>(queued))
      break;
    std::this_thread::sleep_for(10ms);
  }
  std::size_t seen = 0;
  bool complete = true;
  for (auto _ : st) {
    auto info = process_info(rt, target);
    benchmark::DoNotOptimize(info);
    seen = info ? info->message_queue_len : 0;
    complete = complete && info && info->complete;
  }
  st.counters["queue_len"] = static_cast<double>(seen);
  st.counters["complete"] = complete ? 1 : 0;
  rt.exit(target, exit_reason::kill());
}
BENCHMARK(BM_ProcessInfo)
    ->ArgName("queued")
    ->Arg(1000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMicrosecond);

// One iteration: a Prometheus scrape of a runtime with `processes` parked processes.
void BM_MetricsScrape(benchmark::State& st) {
  runtime rt(runtime_options{.schedulers = 2});
  spawn_parked(rt, st.range(0));
  std::size_t bytes = 0;
  for (auto _ : st) {
    std::string text = prometheus_metrics(rt);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  st.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MetricsScrape)
    ->ArgName("processes")
    ->Arg(1000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

// One iteration: top(10, message_queue_len) over `processes` parked processes (the pass that
// reads every process).
void BM_TopPass(benchmark::State& st) {
  runtime rt(runtime_options{.schedulers = 2});
  spawn_parked(rt, st.range(0));
  for (auto _ : st) {
    auto t = top(rt, 10, top_by::message_queue_len);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_TopPass)
    ->ArgName("processes")
    ->Arg(1000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

// One iteration: one plain event logged by a process and formatted as text by the logger's
// thread (the measured time runs until every event has been handled). Nothing is dropped: the
// threshold is above the batch.
void BM_LoggerEvents(benchmark::State& st) {
  runtime rt(runtime_options{.schedulers = 2});
  null_buffer nb;
  std::ostream out(&nb);
  quiet_text_logger(rt, out);
  auto& log = logger::of(rt);
  log.set_drop_threshold(std::size_t{1} << 30);
  const auto before = log.stats();
  run_in_process(st, rt, [&log](process& self, std::int64_t n) -> task<> {
    for (std::int64_t i = 0; i < n; ++i) beamlet::log(self, log_level::notice, "event");
    log.flush();
    co_return;
  });
  const auto after = log.stats();
  st.counters["dropped"] = static_cast<double>(after.dropped - before.dropped);
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_LoggerEvents)->UseRealTime();

// A crash loop: processes that throw at once, each one a crash report, `rate` crashes a second
// for one second, with the default drop threshold. Meanwhile an outside thread pings a process
// every millisecond: the worst round trip says whether the runtime stayed responsive. Reported:
// crashes done, reports handled and dropped (the logger_dropped event says how many), and the
// worst ping. One iteration is the whole second.
void BM_CrashLoop(benchmark::State& st) {
  const auto rate = st.range(0);
  double worst_ping_us = 0, handled = 0, dropped = 0, crashes = 0;
  for (auto _ : st) {
    runtime rt(runtime_options{.schedulers = 2});
    null_buffer nb;
    std::ostream out(&nb);
    quiet_text_logger(rt, out);
    auto& log = logger::of(rt);
    const auto before = log.stats();
    const pid echo = rt.spawn([](process& self) -> task<> {
      for (;;) {
        auto m = co_await self.receive(on<pid>());
        self.send(m.get<pid>(), 0);
      }
    });
    std::atomic<bool> running{true};
    std::thread pinger([&] {
      scoped_process me(rt);
      while (running.load()) {
        const auto t0 = std::chrono::steady_clock::now();
        rt.send(echo, me.self());
        (void)me.receive(on<int>(), after(5s));
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        if (us > worst_ping_us) worst_ping_us = us;
        std::this_thread::sleep_for(1ms);
      }
    });
    flag_t done{0};
    std::int64_t spawned = 0;
    rt.spawn([&](process& self) -> task<> {
      // Paced in 1 ms slices so the rate holds for the whole second.
      const auto start = std::chrono::steady_clock::now();
      for (int slice = 0; slice < 1000; ++slice) {
        for (std::int64_t i = 0; i < rate / 1000; ++i) {
          self.spawn([](process&) -> task<> {
            throw std::runtime_error("boom");
            co_return;
          });
          ++spawned;
        }
        const auto next = start + std::chrono::milliseconds(slice + 1);
        const auto now = std::chrono::steady_clock::now();
        if (next > now) co_await self.receive(on<never_sent>(), after(next - now));
      }
      set_flag(done);
    });
    wait_flag(done);
    running = false;
    pinger.join();
    log.flush();
    const auto after = log.stats();
    handled = static_cast<double>(after.handled - before.handled);
    dropped = static_cast<double>(after.dropped - before.dropped);
    crashes = static_cast<double>(spawned);
  }
  st.counters["crashes"] = crashes;
  st.counters["reports_handled"] = handled;
  st.counters["reports_dropped"] = dropped;
  st.counters["worst_ping_us"] = worst_ping_us;
}
BENCHMARK(BM_CrashLoop)
    ->ArgName("per_s")
    ->Arg(100'000)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace beamlet::bench
