#include "run.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <beamlet/beamlet.hpp>

#include "../common/rss.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>

namespace overload {

using namespace beamlet;
using beamlet::bench::rss_bytes;
using namespace std::chrono_literals;

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The child every request starts. Its init spins (CPU time, like real setup work, not a sleep
/// that would leave the core to others) so that the supervisor's start capacity is set by a
/// known cost; it ends right after its ack, like a short-lived connection, so the supervisor's
/// child table stays small and each start costs what the calibration measured.
struct spinning_child {
  std::int64_t cost_ns;
  task<> operator()(process& self, const starter& st) const {
    const std::int64_t until = now_ns() + cost_ns;
    while (now_ns() < until) {
    }
    st.ack(self, start_result::ok(self.self()));
    co_return;
  }
};

child_spec child_of(std::int64_t cost_ns) {
  start_function start = [cost_ns](process& sup) -> task<start_result> {
    const spinning_child body{cost_ns};
    co_return co_await start_link(sup, body);
  };
  return child_spec("c", std::move(start))
      .with_restart(restart_type::temporary)
      .with_shutdown(shutdown_spec::brutal_kill());
}

constexpr std::string_view partition_name = "overload";

/// What the driver, the clients and the sampling thread share. Counters are atomics because
/// clients run on both schedulers and the sampler reads them from outside the runtime.
struct shared_state {
  shared_state(const run_params& params, std::size_t capacity)
      : p(params), spec(child_of(params.start_cost_ns)), latency_ns(capacity) {}

  const run_params& p;
  const child_spec spec;
  /// Per request: its latency, 0 if it was not accepted (so far).
  std::vector<std::atomic<std::int64_t>> latency_ns;
  std::vector<pid> sups;  // written before `ready`
  std::atomic<bool> ready{false}, load_started{false}, sampling{true}, done{false};
  std::string failure;     // written before `done`, if the run could not be set up
  std::int64_t t0_ns = 0;  // written before `load_started`
  std::atomic<std::int64_t> sent{0}, accepted{0}, rate_limited{0}, overloaded{0}, mailbox_full{0},
      other_errors{0}, finished{0};
  run_summary summary;  // the driver's part, written before `done`

  dynamic_supervisor_ref target_of(std::int64_t key) const {
    if (p.what == control::partitioned)
      return dynamic_supervisor_ref(partition_supervisor::via(std::string(partition_name), key));
    return dynamic_supervisor_ref(sups.front());
  }
  std::int64_t refused() const {
    return rate_limited.load(std::memory_order_relaxed) +
           overloaded.load(std::memory_order_relaxed) +
           mailbox_full.load(std::memory_order_relaxed);
  }
  /// When request i was due: latency counts from there, not from when its client got to run,
  /// so a generator that falls behind cannot hide the wait (no coordinated omission).
  std::int64_t intended_ns(std::int64_t i) const {
    return t0_ns + std::llround(static_cast<double>(i) * 1e9 / p.offered_per_s);
  }
  void record(std::int64_t i, const sup_result<start_result>& r) {
    if (r.has_value()) {
      if (r->is_ok()) {
        latency_ns[static_cast<std::size_t>(i)].store(
            std::max<std::int64_t>(1, now_ns() - intended_ns(i)), std::memory_order_relaxed);
        accepted.fetch_add(1, std::memory_order_relaxed);
      } else {
        other_errors.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
    switch (r.error().code) {
      case sup_errc::rate_limited:
        rate_limited.fetch_add(1, std::memory_order_relaxed);
        break;
      case sup_errc::overloaded:
        overloaded.fetch_add(1, std::memory_order_relaxed);
        break;
      case sup_errc::mailbox_full:
        mailbox_full.fetch_add(1, std::memory_order_relaxed);
        break;
      default:
        other_errors.fetch_add(1, std::memory_order_relaxed);
        break;
    }
  }
};

/// One request: a process of its own, so that requests keep arriving however long the earlier
/// ones wait (open loop).
struct client {
  shared_state* s;
  std::int64_t i;
  task<> operator()(process& self) const {
    const dynamic_supervisor_ref target = s->target_of(i);
    try {
      const sup_result<start_result> r =
          co_await dynamic_supervisor::start_child(self, target, s->spec);
      s->record(i, r);
    } catch (const call_error&) {  // the supervisor was torn down with this request queued
    }
    s->finished.fetch_add(1, std::memory_order_release);
  }
};

/// Starts the configuration's supervisor(s); returns the DynamicSupervisor pids.
task<std::vector<pid>> start_rig(process& self, const run_params& p) {
  dynamic_supervisor_flags flags;
  supervisor_options opts;
  opts.wait = ack_wait_mode::scan;
  std::vector<pid> sups;
  switch (p.what) {
    case control::none:
      break;
    case control::rate_limit:
      flags.start_rate = rate_limit{p.rate_per_s, p.burst};
      break;
    case control::shedding:
      flags.shed_above = static_cast<std::size_t>(p.shed_above);
      break;
    case control::bounded:
      opts.mailbox =
          mailbox_limit{static_cast<std::size_t>(p.mailbox_capacity), overflow_policy::reject};
      break;
    case control::partitioned: {
      partition_supervisor_options o;
      o.name = std::string(partition_name);
      o.partitions = p.partitions;
      o.child = child_spec("dyn", dynamic_supervisor_start(flags, opts))
                    .with_type(child_type::supervisor);
      const start_result r = co_await partition_supervisor::start_link(self, o);
      if (!r.is_ok()) throw std::runtime_error("partition supervisor: " + r.to_string());
      self.unlink(r.pid());
      for (int k = 0; k < p.partitions; ++k)
        sups.push_back(partition_supervisor::whereis(self, partition_name, k));
      sups.push_back(r.pid());  // last: killed last, and not a DynamicSupervisor
      co_return sups;
    }
  }
  const start_result r = co_await dynamic_supervisor::start_link(self, opts, flags);
  if (!r.is_ok()) throw std::runtime_error("dynamic supervisor: " + r.to_string());
  self.unlink(r.pid());
  sups.push_back(r.pid());
  co_return sups;
}

/// The DynamicSupervisors among the rig's pids (the partition supervisor's own pid comes last).
std::size_t dynamic_count(const run_params& p, const std::vector<pid>& sups) {
  return p.what == control::partitioned ? sups.size() - 1 : sups.size();
}

/// Summed queue length and memory of the DynamicSupervisors.
template <class Where>
std::pair<std::int64_t, std::int64_t> queues_of(Where& where, const run_params& p,
                                                const std::vector<pid>& sups) {
  std::int64_t q = 0, mem = 0;
  for (std::size_t k = 0; k < dynamic_count(p, sups); ++k) {
    if (const auto info = process_info(where, sups[k])) {
      q += static_cast<std::int64_t>(info->message_queue_len);
      mem += static_cast<std::int64_t>(info->memory);
    }
  }
  return {q, mem};
}

/// One start_child per DynamicSupervisor, each of which must succeed (a refusal, e.g. by an
/// empty token bucket, means the system has not recovered yet).
task<bool> probe(process& self, shared_state& s, std::chrono::nanoseconds left) {
  const std::size_t n = dynamic_count(s.p, s.sups);
  for (std::size_t k = 0; k < n; ++k) {
    // With P partitions, integer key k routes to partition k.
    const dynamic_supervisor_ref target = s.target_of(static_cast<std::int64_t>(k));
    const timeout_value limit(left);
    try {
      const sup_result<start_result> r =
          co_await dynamic_supervisor::start_child(self, target, s.spec, limit);
      if (!r.has_value() || !r->is_ok()) co_return false;
    } catch (const call_error&) {  // timeout: the cap is reached
      co_return false;
    }
  }
  co_return true;
}

task<> drive(process& self, shared_state& s) {
  const run_params& p = s.p;
  self.trap_exit(true);
  s.sups = co_await start_rig(self, p);
  s.ready.store(true, std::memory_order_release);

  // The load: every millisecond, the requests due by then.
  const auto total = static_cast<std::int64_t>(s.latency_ns.size());
  s.t0_ns = now_ns();
  s.load_started.store(true, std::memory_order_release);
  const std::int64_t load_end = s.t0_ns + std::llround(p.seconds * 1e9);
  std::int64_t sent = 0;
  for (;;) {
    const std::int64_t t = now_ns();
    if (t >= load_end) break;
    const auto due = std::min(total, static_cast<std::int64_t>(static_cast<double>(t - s.t0_ns) *
                                                               1e-9 * p.offered_per_s));
    for (; sent < due; ++sent) self.spawn(client{&s, sent});
    s.sent.store(sent, std::memory_order_relaxed);
    co_await self.sleep(1ms);
  }
  s.summary.accepted_in_load = s.accepted.load();

  // The recovery: the queues empty, then a probe start succeeds everywhere.
  const std::int64_t cap_end = load_end + std::llround(p.recovery_cap_s * 1e9);
  for (;;) {
    const std::int64_t t = now_ns();
    if (t >= cap_end) break;
    if (queues_of(self, p, s.sups).first == 0) {
      const bool ok = co_await probe(self, s, std::chrono::nanoseconds(cap_end - t));
      if (ok) {
        s.summary.recovered = true;
        s.summary.recovery_s = static_cast<double>(now_ns() - load_end) / 1e9;
        break;
      }
    }
    co_await self.sleep(5ms);
  }

  // Teardown. The counts are read first, so that requests that fail only because the
  // supervisor is killed count as unanswered, not as refused.
  s.sampling.store(false, std::memory_order_release);
  s.summary.offered = sent;
  s.summary.accepted = s.accepted.load();
  s.summary.rate_limited = s.rate_limited.load();
  s.summary.overloaded = s.overloaded.load();
  s.summary.mailbox_full = s.mailbox_full.load();
  s.summary.other_errors = s.other_errors.load();
  s.summary.unanswered = sent - s.summary.accepted - s.refused() - s.summary.other_errors;
  for (auto it = s.sups.rbegin(); it != s.sups.rend(); ++it) self.exit(*it, exit_reason::kill());
  // The pending clients learn of it through their call monitors; waiting for them keeps the
  // latency array still while it is read, and lets the runtime shut down with nothing alive.
  const std::int64_t give_up = now_ns() + std::llround(60e9);
  while (s.finished.load(std::memory_order_acquire) < sent && now_ns() < give_up)
    co_await self.sleep(10ms);
  s.done.store(true, std::memory_order_release);
}

double percentile_ms(const std::vector<std::int64_t>& sorted, double pct) {
  if (sorted.empty()) return 0;
  const auto rank =
      static_cast<std::size_t>(std::ceil(pct / 100.0 * static_cast<double>(sorted.size())));
  return static_cast<double>(sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)]) / 1e6;
}

/// A closed-loop client of the calibration: one start after the other.
struct calibration_client {
  pid sup;
  const child_spec* spec;
  std::atomic<std::int64_t>* starts;
  std::atomic<bool>* stop;
  std::atomic<int>* running;
  task<> operator()(process& self) const {
    const dynamic_supervisor_ref target(sup);
    while (!stop->load(std::memory_order_acquire)) {
      const sup_result<start_result> r =
          co_await dynamic_supervisor::start_child(self, target, *spec);
      if (r.has_value() && r->is_ok()) starts->fetch_add(1, std::memory_order_relaxed);
    }
    running->fetch_sub(1, std::memory_order_release);
  }
};

}  // namespace

double calibrate(std::int64_t start_cost_ns, double seconds) {
  // A few concurrent clients keep the supervisor busy while a reply travels back, so what is
  // measured is the supervisor's rate, not one client's round trip; a queue of 4 costs the scan
  // nothing worth measuring.
  constexpr int clients = 4;
  const child_spec spec = child_of(start_cost_ns);
  std::atomic<std::int64_t> starts{0};
  std::atomic<bool> stop{false}, done{false};
  std::atomic<int> running{clients};
  double rate = 0;
  {
    runtime rt;
    rt.spawn([&](process& self) -> task<> {
      self.trap_exit(true);
      supervisor_options opts;
      opts.wait = ack_wait_mode::scan;
      const dynamic_supervisor_flags flags;
      const start_result r = co_await dynamic_supervisor::start_link(self, opts, flags);
      if (!r.is_ok()) throw std::runtime_error("dynamic supervisor: " + r.to_string());
      for (int k = 0; k < clients; ++k)
        self.spawn(calibration_client{r.pid(), &spec, &starts, &stop, &running});
      co_await self.sleep(100ms);  // warm-up: first allocations, caches
      const std::int64_t c0 = starts.load(), t0 = now_ns();
      co_await self.sleep(std::chrono::nanoseconds(std::llround(seconds * 1e9)));
      const std::int64_t c1 = starts.load(), t1 = now_ns();
      rate = static_cast<double>(c1 - c0) * 1e9 / static_cast<double>(t1 - t0);
      stop.store(true, std::memory_order_release);
      while (running.load(std::memory_order_acquire) > 0) co_await self.sleep(1ms);
      self.unlink(r.pid());
      self.exit(r.pid(), exit_reason::kill());
      done.store(true, std::memory_order_release);
    });
    while (!done.load(std::memory_order_acquire)) std::this_thread::sleep_for(10ms);
  }
  return rate;
}

run_result run(const run_params& p) {
  const auto capacity = static_cast<std::size_t>(std::max(0.0, p.offered_per_s * p.seconds));
  auto s = std::make_unique<shared_state>(p, capacity);
  run_result out;
  std::int64_t peak_q = 0, peak_mem = 0, peak_rss = 0;
  {
    runtime rt;
    rt.spawn([&](process& self) -> task<> {
      try {
        co_await drive(self, *s);
      } catch (const std::exception& e) {
        // Release the sampling thread, which would otherwise wait for a load that never comes.
        s->failure = e.what();
        s->sampling.store(false, std::memory_order_release);
        s->load_started.store(true, std::memory_order_release);
        s->done.store(true, std::memory_order_release);
      }
    });
    // Sampling from this thread, which is not a scheduler: it reads counters and process_info
    // (neither needs the supervisor's cooperation) and costs the measured cores nothing else.
    while (!s->load_started.load(std::memory_order_acquire)) std::this_thread::sleep_for(1ms);
    const auto t0 = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(s->t0_ns));
    for (int k = 0; s->sampling.load(std::memory_order_acquire); ++k) {
      const auto [q, mem] = queues_of(rt, p, s->sups);
      sample x;
      x.t_s = static_cast<double>(now_ns() - s->t0_ns) / 1e9;
      x.queue_len = q;
      x.accepted = s->accepted.load(std::memory_order_relaxed);
      x.refused = s->refused();
      x.rss_bytes = rss_bytes();
      out.series.push_back(x);
      peak_q = std::max(peak_q, q);
      peak_mem = std::max(peak_mem, mem);
      peak_rss = std::max(peak_rss, x.rss_bytes);
      std::this_thread::sleep_until(t0 + (k + 1) * 100ms);
    }
    while (!s->done.load(std::memory_order_acquire)) std::this_thread::sleep_for(10ms);
  }
  if (!s->failure.empty()) throw std::runtime_error(s->failure);
  out.summary = s->summary;
  out.summary.peak_queue = peak_q;
  out.summary.peak_sup_bytes = peak_mem;
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);  // the true peak, between samples too (ru_maxrss is in KiB)
  out.summary.peak_rss_bytes = std::max(peak_rss, static_cast<std::int64_t>(ru.ru_maxrss) * 1024);
  std::vector<std::int64_t> lat;
  lat.reserve(static_cast<std::size_t>(out.summary.accepted));
  for (const auto& l : s->latency_ns)
    if (const std::int64_t v = l.load(std::memory_order_relaxed); v > 0) lat.push_back(v);
  std::sort(lat.begin(), lat.end());
  out.summary.p50_ms = percentile_ms(lat, 50);
  out.summary.p99_ms = percentile_ms(lat, 99);
  return out;
}

}  // namespace overload
