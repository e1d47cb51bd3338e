#include "beamlet_runs.hpp"

#include <beamlet/beamlet.hpp>

#include <atomic>
#include <chrono>
#include <climits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace spawn_delay {

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

/// What the children, the gates and the driver share: the init log, and the gates' handshake.
struct shared_state : init_log {
  using init_log::init_log;
  std::atomic<int> gates_ready{0};
  std::atomic<bool> go{false};
};

/// The child every request starts: a gen_server whose init records when it ran.
class timed_child : public gen_server<timed_child> {
 public:
  explicit timed_child(shared_state* s) : s_(s) {}
  void init() { s_->record_init(); }

 private:
  shared_state* s_;
};

struct gate_entered {};

/// A pause that does not look at the mailbox: a plain sleep is a receive, which (in scan mode's
/// cost model) would walk the whole backlog each time it is polled while the backlog builds up.
auto pause(process& self, std::chrono::microseconds d) {
  return self.receive(since(self.make_ref(marked)), after(d));
}

/// The first request of each supervisor: holds it until its share of the backlog is queued and
/// every gate is ready, then lets it go. Runs inside the supervisor process.
start_function gate(shared_state* s, std::size_t share, pid driver) {
  return [s, share, driver](process& sup) -> task<start_result> {
    sup.send(driver, gate_entered{});
    while (sup.message_queue_len() < share) co_await pause(sup, 1ms);
    s->gates_ready.fetch_add(1);
    while (!s->go.load(std::memory_order_acquire)) co_await pause(sup, 100us);
    s->mark_release();
    co_return start_result::ignore();
  };
}

/// A timed child's start, inside the supervisor: it also records how many messages the
/// supervisor examined while it waited for the ack (the start's share of the scan cost, plus the
/// one examination that took the request).
child_spec timed_spec(shared_state* s) {
  start_function start = [s](process& sup) -> task<start_result> {
    const std::uint64_t before = sup.messages_examined();
    const start_result r = co_await timed_child::start_link(sup, {}, s);
    s->record_examined(sup.messages_examined() - before + 1);
    co_return r;
  };
  return child_spec("c", std::move(start))
      .with_restart(restart_type::temporary)
      .with_shutdown(shutdown_spec::brutal_kill());
}

/// A client: one start_child, from its own process.
auto client(dynamic_supervisor_ref target, child_spec spec) {
  return [target = std::move(target), spec = std::move(spec)](process& c) -> task<> {
    try {
      (void)co_await dynamic_supervisor::start_child(c, target, spec);
    } catch (const call_error&) {      // the supervisor is killed once the run has its figures
    } catch (const exit_exception&) {  // likewise a partitioned one: its name no longer routes
    }
  };
}

/// The supervisors of one run: one DynamicSupervisor, or a PartitionSupervisor of them.
class rig {
 public:
  rig(ack_wait_mode mode, int partitions) : mode_(mode), partitions_(partitions) {}

  task<> start(process& self) {
    const dynamic_supervisor_flags flags;
    if (partitions_ == 1) {
      const supervisor_options o{{}, std::nullopt, mode_};
      const start_result s = co_await dynamic_supervisor::start_link(self, o, flags);
      sups_.push_back(s.pid());
    } else {
      partition_supervisor_options o;
      o.name = "spawn_delay";
      o.partitions = partitions_;
      o.child = child_spec("dyn", dynamic_supervisor_start(flags, {.wait = mode_}))
                    .with_type(child_type::supervisor);
      const start_result s = co_await partition_supervisor::start_link(self, o);
      top_ = s.pid();
      for (int p = 0; p < partitions_; ++p)
        sups_.push_back(partition_supervisor::whereis(self, "spawn_delay", p));
    }
    for (pid p : sups_) self.unlink(p);
    if (top_) self.unlink(top_);
  }

  dynamic_supervisor_ref target_of(std::int64_t key) const {
    if (partitions_ == 1) return dynamic_supervisor_ref(sups_[0]);
    return dynamic_supervisor_ref(partition_supervisor::via("spawn_delay", key));
  }
  /// How many of keys [first, first + n) route to partition p.
  std::size_t share(int p, std::int64_t first, std::int64_t n) const {
    std::size_t k = 0;
    for (std::int64_t i = first; i < first + n; ++i)
      if (partition_key(i).partition(partitions_) == p) ++k;
    return k;
  }
  pid sup(int p) const { return sups_[static_cast<std::size_t>(p)]; }

  /// Kills the supervisors outright, so no queued request is served after the measurement.
  void kill(process& self) {
    for (pid p : sups_) self.exit(p, exit_reason::kill());
    if (top_) self.exit(top_, exit_reason::kill());
  }

 private:
  ack_wait_mode mode_;
  int partitions_;
  std::vector<pid> sups_;
  pid top_;
};

/// Queues `n` requests (keys [0, n)) behind the gates; returns when every gate is ready.
task<> queue_backlog(process& self, rig& r, int partitions, shared_state* s, std::int64_t n) {
  for (int p = 0; p < partitions; ++p) {
    const std::size_t share = r.share(p, 0, n);
    self.spawn(client(
        dynamic_supervisor_ref(r.sup(p)),
        child_spec("gate", gate(s, share, self.self())).with_restart(restart_type::temporary)));
  }
  for (int p = 0; p < partitions; ++p) co_await self.receive(on<gate_entered>());
  const child_spec spec = timed_spec(s);
  for (std::int64_t i = 0; i < n; ++i) self.spawn(client(r.target_of(i), spec));
  while (s->gates_ready.load() < partitions) co_await self.sleep(1ms);
}

/// The driver sets `flag` on its way; if it died before (an exception out of a start, say),
/// the run fails here instead of waiting for a flag nobody will set.
void driver_alive(const runtime& rt, pid driver, const std::atomic<bool>& flag) {
  if (!rt.is_alive(driver) && !flag.load(std::memory_order_acquire))
    throw std::runtime_error("the run's driver process ended before it finished");
}

std::string name_of(ack_wait_mode mode) {
  return mode == ack_wait_mode::scan ? "beamlet-scan" : "beamlet-marker";
}

}  // namespace

backlog_run beamlet_backlog(ack_wait_mode mode, int partitions, std::int64_t depth,
                            std::int64_t timed, const progress_fn& progress) {
  backlog_run out;
  out.variant = name_of(mode);
  out.partitions = partitions;
  out.depth = depth;
  const std::int64_t want = depth == 0 ? timed : std::min(timed, depth);
  auto s = std::make_unique<shared_state>(want);
  std::atomic<bool> done{false};
  {
    runtime rt({.pin_schedulers = true});
    const pid driver = rt.spawn([&](process& self) -> task<> {
      self.trap_exit(true);
      rig r(mode, partitions);
      co_await r.start(self);
      if (depth == 0) {
        // No backlog: one start after the other, each waiting for the previous reply.
        const child_spec spec = timed_spec(s.get());
        s->release_ns = now_ns();
        for (std::int64_t i = 0; i < want; ++i)
          (void)co_await dynamic_supervisor::start_child(self, r.target_of(i), spec);
      } else {
        co_await queue_backlog(self, r, partitions, s.get(), depth);
        s->go.store(true, std::memory_order_release);
        while (s->written.load(std::memory_order_acquire) < want) co_await self.sleep(1ms);
      }
      r.kill(self);
      done.store(true, std::memory_order_release);
    });
    std::int64_t last = -1;
    while (!done.load(std::memory_order_acquire)) {
      driver_alive(rt, driver, done);
      std::this_thread::sleep_for(200ms);
      const std::int64_t w = s->written.load();
      if (w != last && progress) {
        progress(out.variant + " P=" + std::to_string(partitions) +
                 " depth=" + std::to_string(depth) + ": " + std::to_string(w) + "/" +
                 std::to_string(want) + " started");
        last = w;
      }
    }
  }
  s->fill(out, want);
  out.examined_per_spawn = s->examined_mean();
  return out;
}

catch_up_run beamlet_catch_up(ack_wait_mode mode, int partitions, std::int64_t backlog, double rate,
                              double duration, const progress_fn& progress) {
  catch_up_run out;
  out.variant = name_of(mode);
  out.partitions = partitions;
  out.backlog = backlog;
  out.rate_per_s = rate;
  out.duration_s = duration;
  const auto arrivals_max = static_cast<std::int64_t>(rate * duration) + 1;
  auto s = std::make_unique<shared_state>(0);
  std::atomic<std::int64_t> arrived{0};
  std::atomic<bool> released{false}, done{false};
  {
    runtime rt({.pin_schedulers = true});
    const pid driver = rt.spawn([&](process& self) -> task<> {
      self.trap_exit(true);
      rig r(mode, partitions);
      co_await r.start(self);
      co_await queue_backlog(self, r, partitions, s.get(), backlog);
      s->go.store(true, std::memory_order_release);
      released.store(true, std::memory_order_release);
      // Arrivals at `rate`: every 10 ms, the requests due by then.
      const auto t0 = std::chrono::steady_clock::now();
      const child_spec spec = timed_spec(s.get());
      std::int64_t sent = 0;
      for (;;) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (elapsed >= duration) break;
        const auto due = std::min(arrivals_max, static_cast<std::int64_t>(elapsed * rate));
        for (; sent < due; ++sent) self.spawn(client(r.target_of(backlog + sent), spec));
        arrived.store(sent, std::memory_order_release);
        co_await self.sleep(10ms);
      }
      r.kill(self);
      done.store(true, std::memory_order_release);
    });
    while (!released.load(std::memory_order_acquire)) {
      driver_alive(rt, driver, released);
      std::this_thread::sleep_for(1ms);
    }
    const auto t0 = std::chrono::steady_clock::now();
    int tick = 0;
    while (!done.load(std::memory_order_acquire)) {
      driver_alive(rt, driver, done);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::int64_t served = s->started.load();
      const std::int64_t a = arrived.load();
      out.points.push_back({t, backlog + a - served});
      if (progress && ++tick % 10 == 0)
        progress(out.variant + " P=" + std::to_string(partitions) + " backlog=" +
                 std::to_string(backlog) + " rate=" + std::to_string(static_cast<int>(rate)) +
                 "/s: t=" + std::to_string(static_cast<int>(t)) +
                 "s waiting=" + std::to_string(backlog + a - served));
      std::this_thread::sleep_for(100ms);
    }
  }
  out.arrived = arrived.load();
  out.served = s->started.load();
  return out;
}

}  // namespace spawn_delay
