// Cost axis: OTP behaviours (GenServer calls, child starts, restarts) and the outage's
// mechanism, the per-spawn cost of a supervisor with start requests queued behind.
#include <memory>
#include <vector>

#include "bench_support.hpp"
#include "common/counter_server.hpp"

namespace beamlet::bench {

namespace {

/// The smallest useful child: a gen_server with no state, acked through proc_lib.
class idle_worker : public gen_server<idle_worker> {};

struct started {
  pid child;
};
/// A child that tells `notify` it has started (from init, so before its ack).
class notifier : public gen_server<notifier> {
 public:
  explicit notifier(pid notify) : notify_(notify) {}
  void init() { self().send(notify_, started{self().self()}); }

 private:
  pid notify_;
};

}  // namespace

// One iteration: a gen_server call round trip (monitor + marked receive + demonitor).
void BM_GenServerCall(benchmark::State& st) {
  runtime rt;
  run_in_process(st, rt, [](process& self, std::int64_t n) -> task<> {
    const start_result s = co_await counter::start_link(self, {});
    const server_ref<counter> c(s.pid());
    std::int64_t sum = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += co_await call(self, c, get{});
    benchmark::DoNotOptimize(sum);
    co_await beamlet::stop(self, c);
  });
}
BENCHMARK(BM_GenServerCall);

// One iteration: DynamicSupervisor.start_child of a gen_server child on an idle supervisor
// (caller-side validation, the call, the child's spawn, init and ack, the bookkeeping). The
// children stay, as they would in a pool; stopping them is not timed.
void BM_StartChild(benchmark::State& st) {
  runtime rt;
  run_in_process_manual(st, rt, [](process& self, std::int64_t n) -> task<double> {
    const dynamic_supervisor_flags f;
    const supervisor_options o{};
    const start_result s = co_await dynamic_supervisor::start_link(self, o, f);
    const dynamic_supervisor_ref sup(s.pid());
    const child_spec spec = child_spec("w", worker_start<idle_worker>())
                                .with_restart(restart_type::temporary)
                                .with_shutdown(shutdown_spec::brutal_kill());
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < n; ++i) {
      auto r = co_await dynamic_supervisor::start_child(self, sup, spec);
      if (!r.has_value()) std::abort();
    }
    const double seconds = seconds_since(t0);
    self.unlink(s.pid());
    self.exit(s.pid(), exit_reason::kill());
    co_return seconds;
  });
}
BENCHMARK(BM_StartChild)->UseManualTime();

// One iteration: one child start by a DynamicSupervisor that has `backlog` more start_child
// requests queued behind it (spec §7.2 rule 11a, the outage). Setup: a first request's
// start function holds the supervisor until `measured + backlog` client processes have queued
// their requests, then the clock starts; it stops when the first `measured` children have run
// their init. With ack_wait_mode::scan each start examines the whole queue (O(backlog)); with
// ack_wait_mode::marker it skips it (O(1)). Reported: time per start.
void BM_StartChildBacklog(benchmark::State& st) {
  const auto mode = static_cast<ack_wait_mode>(st.range(0));
  const auto backlog = static_cast<std::int64_t>(st.range(1));
  constexpr std::int64_t measured = 200;
  st.SetLabel(mode == ack_wait_mode::scan ? "scan" : "marker");
  for (auto _ : st) {
    runtime rt;
    flag_t done{0};
    double seconds = 0;
    rt.spawn([&](process& self) -> task<> {
      const dynamic_supervisor_flags f;
      const supervisor_options o{{}, std::nullopt, mode};
      const start_result s = co_await dynamic_supervisor::start_link(self, o, f);
      const dynamic_supervisor_ref sup(s.pid());
      const pid me = self.self();
      const std::size_t queued = static_cast<std::size_t>(measured + backlog);
      auto t0 = std::make_shared<std::chrono::steady_clock::time_point>();
      // The gate: runs inside the supervisor, polls its own queue, starts nothing.
      start_function gate = [queued, t0, me](process& sup_self) -> task<start_result> {
        sup_self.send(me, started{pid()});
        while (sup_self.message_queue_len() < queued) co_await sup_self.sleep(1ms);
        *t0 = std::chrono::steady_clock::now();
        co_return start_result::ignore();
      };
      const child_spec gate_spec = child_spec("gate", gate).with_restart(restart_type::temporary);
      const child_spec child = child_spec("c", worker_start<notifier>(me))
                                   .with_restart(restart_type::temporary)
                                   .with_shutdown(shutdown_spec::brutal_kill());
      auto client = [sup](child_spec c) {
        return [sup, c](process& p) -> task<> {
          try {
            (void)co_await dynamic_supervisor::start_child(p, sup, c);
          } catch (const call_error&) {  // the supervisor is killed after the measurement
          }
        };
      };
      self.spawn(client(gate_spec));
      co_await self.receive(on<started>());  // the gate holds the supervisor
      for (std::size_t i = 0; i < queued; ++i) self.spawn(client(child));
      for (std::int64_t i = 0; i < measured; ++i) co_await self.receive(on<started>());
      seconds = seconds_since(*t0);
      self.unlink(s.pid());
      self.exit(s.pid(), exit_reason::kill());
      set_flag(done);
    });
    wait_flag(done);
    st.SetIterationTime(seconds / static_cast<double>(measured));
  }
}
BENCHMARK(BM_StartChildBacklog)
    ->ArgNames({"mode", "backlog"})
    ->ArgsProduct({{static_cast<int>(ack_wait_mode::scan), static_cast<int>(ack_wait_mode::marker)},
                   {0, 10000, 100000}})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMicrosecond);

// One iteration: a child is killed and its supervisor has the replacement running (the
// replacement's init has run). A static one_for_one supervisor with room for every restart.
void BM_SupervisorRestart(benchmark::State& st) {
  runtime rt;
  run_in_process_manual(st, rt, [](process& self, std::int64_t n) -> task<double> {
    const supervisor_flags f{restart_strategy::one_for_one, 1 << 30, 1, auto_shutdown::never};
    std::vector<child_spec> kids{child_spec("c", worker_start<notifier>(self.self()))
                                     .with_shutdown(shutdown_spec::brutal_kill())};
    const supervisor_options o{};
    const start_result s = co_await supervisor::start_link(self, o, f, std::move(kids));
    auto first = co_await self.receive(on<started>());
    pid child = first.get<started>().child;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < n; ++i) {
      self.exit(child, exit_reason::kill());
      auto next = co_await self.receive(on<started>());
      child = next.get<started>().child;
    }
    const double seconds = seconds_since(t0);
    self.unlink(s.pid());
    self.exit(s.pid(), exit_reason::kill());
    co_return seconds;
  });
}
BENCHMARK(BM_SupervisorRestart)->UseManualTime();

}  // namespace beamlet::bench
