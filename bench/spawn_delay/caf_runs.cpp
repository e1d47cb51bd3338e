#include "caf_runs.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace spawn_delay {

namespace {

using start_atom = caf::atom_constant<caf::atom("start")>;
using init_atom = caf::atom_constant<caf::atom("init")>;
using acked_atom = caf::atom_constant<caf::atom("acked")>;
using hold_atom = caf::atom_constant<caf::atom("hold")>;
using wait_atom = caf::atom_constant<caf::atom("wait")>;
using go_atom = caf::atom_constant<caf::atom("go")>;

using namespace std::chrono_literals;

struct shared_state : init_log {
  using init_log::init_log;
  std::atomic<std::int64_t> sent{0};
  /// Supervisors whose wait is in the gatekeeper's mailbox: the release waits for all of them.
  /// Released earlier, a supervisor's wait could reach the gatekeeper after the go, and that
  /// supervisor would await forever (deaf, in CAF 0.17, even to a kill).
  std::atomic<int> held{0};
  /// Set when the run has its figures. A CAF actor that is awaiting a response handles no exit
  /// message, so a kill alone would leave the supervisor serving its whole backlog first.
  std::atomic<bool> stopping{false};
};

/// The child: its "init" is the handler of the supervisor's init request.
caf::behavior child(caf::event_based_actor*, shared_state* s) {
  return {[s](init_atom) {
    s->record_init();
    return acked_atom::value;
  }};
}

/// The supervisor: spawn a linked child, await its ack (nothing else is handled meanwhile),
/// then answer the client. `hold` makes it await the gatekeeper first, so a backlog can queue.
struct supervisor_state {
  std::vector<caf::actor> children;  // a supervisor knows its children (and keeps them alive)
};

caf::behavior supervisor(caf::stateful_actor<supervisor_state>* self, shared_state* s,
                         caf::actor gatekeeper) {
  return {
      [=](start_atom) -> caf::result<acked_atom> {
        if (s->stopping.load(std::memory_order_acquire)) {
          self->quit(caf::exit_reason::user_shutdown);
          return caf::sec::request_receiver_down;
        }
        auto rp = self->make_response_promise();
        auto c = self->spawn<caf::linked>(child, s);
        self->state.children.push_back(c);
        self->request(c, caf::infinite, init_atom::value).await([=](acked_atom) mutable {
          rp.deliver(acked_atom::value);
        });
        return caf::delegated<acked_atom>{};
      },
      [=](hold_atom) {
        self->request(gatekeeper, caf::infinite, wait_atom::value).await([=](go_atom) {
          s->mark_release();
        });
        s->held.fetch_add(1, std::memory_order_release);  // the wait is enqueued by now
      },
  };
}

/// Answers every wait once told to go (the release waits until every wait is queued here).
caf::behavior gatekeeper(caf::stateful_actor<std::vector<caf::response_promise>>* self) {
  return {
      [=](wait_atom) {
        self->state.push_back(self->make_response_promise());
        return caf::delegated<go_atom>{};
      },
      [=](go_atom) {
        for (auto& rp : self->state) rp.deliver(go_atom::value);
        self->state.clear();
      },
  };
}

/// A client: one start request; counts itself as queued once the request is in the mailbox.
void client(caf::event_based_actor* c, caf::actor sup, shared_state* s) {
  c->request(sup, caf::infinite, start_atom::value)
      .then([=](acked_atom) { c->quit(); }, [=](caf::error&) { c->quit(); });
  s->sent.fetch_add(1, std::memory_order_release);
}

caf::actor_system_config& config() {
  static caf::actor_system_config cfg = [] {
    caf::actor_system_config c;
    c.set("scheduler.max-threads", static_cast<size_t>(std::thread::hardware_concurrency()));
    c.set("logger.verbosity", caf::atom("quiet"));
    return c;
  }();
  return cfg;
}

struct caf_rig {
  caf_rig(caf::actor_system& sys, int partitions, shared_state* s) : s_(s) {
    keeper = sys.spawn(gatekeeper);
    for (int p = 0; p < partitions; ++p) sups.push_back(sys.spawn(supervisor, s, keeper));
  }
  const caf::actor& target_of(std::int64_t key) const {
    return sups[static_cast<std::size_t>(key % static_cast<std::int64_t>(sups.size()))];
  }
  void hold() {
    for (auto& sup : sups) caf::anon_send(sup, hold_atom::value);
  }
  void queue(caf::actor_system& sys, std::int64_t first, std::int64_t n) {
    for (std::int64_t i = first; i < first + n; ++i) sys.spawn(client, target_of(i), s_);
  }
  void release() {
    while (s_->held.load(std::memory_order_acquire) < static_cast<int>(sups.size()))
      std::this_thread::sleep_for(1ms);
    caf::anon_send(keeper, go_atom::value);
  }
  void kill() {
    s_->stopping.store(true, std::memory_order_release);
    for (auto& sup : sups) caf::anon_send_exit(sup, caf::exit_reason::kill);
    caf::anon_send_exit(keeper, caf::exit_reason::kill);
  }
  std::vector<caf::actor> sups;
  caf::actor keeper;

 private:
  shared_state* s_;
};

}  // namespace

backlog_run caf_backlog(int partitions, std::int64_t depth, std::int64_t timed,
                        const progress_fn& progress) {
  backlog_run out;
  out.variant = "caf-await";
  out.partitions = partitions;
  out.depth = depth;
  const std::int64_t want = depth == 0 ? timed : std::min(timed, depth);
  auto s = std::make_unique<shared_state>(want);
  {
    caf::actor_system sys{config()};
    caf_rig r(sys, partitions, s.get());
    if (depth == 0) {
      caf::scoped_actor self{sys};
      s->release_ns = now_ns();
      for (std::int64_t i = 0; i < want; ++i)
        self->request(r.target_of(i), caf::infinite, start_atom::value)
            .receive([](acked_atom) {},
                     [](caf::error& e) {
                       std::fprintf(stderr, "caf: %s\n", caf::to_string(e).c_str());
                     });
    } else {
      r.hold();
      r.queue(sys, 0, depth);
      while (s->sent.load(std::memory_order_acquire) < depth) std::this_thread::sleep_for(1ms);
      r.release();
      std::int64_t last = -1;
      while (s->written.load(std::memory_order_acquire) < want) {
        std::this_thread::sleep_for(200ms);
        const std::int64_t w = s->written.load();
        if (w != last && progress)
          progress("caf-await P=" + std::to_string(partitions) + " depth=" + std::to_string(depth) +
                   ": " + std::to_string(w) + "/" + std::to_string(want) + " started");
        last = w;
      }
    }
    r.kill();
  }
  s->fill(out, want);
  return out;
}

catch_up_run caf_catch_up(int partitions, std::int64_t backlog, double rate, double duration,
                          const progress_fn& progress) {
  catch_up_run out;
  out.variant = "caf-await";
  out.partitions = partitions;
  out.backlog = backlog;
  out.rate_per_s = rate;
  out.duration_s = duration;
  auto s = std::make_unique<shared_state>(0);
  {
    caf::actor_system sys{config()};
    caf_rig r(sys, partitions, s.get());
    r.hold();
    r.queue(sys, 0, backlog);
    while (s->sent.load(std::memory_order_acquire) < backlog) std::this_thread::sleep_for(1ms);
    r.release();
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t sent = 0;
    int tick = 0;
    for (;;) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (t >= duration) break;
      const auto due = static_cast<std::int64_t>(t * rate);
      if (due > sent) {
        r.queue(sys, backlog + sent, due - sent);
        sent = due;
      }
      const std::int64_t served = s->started.load();
      if (tick % 10 == 0) {
        out.points.push_back({t, backlog + sent - served});
        if (progress && tick % 100 == 0)
          progress("caf-await P=" + std::to_string(partitions) + " backlog=" +
                   std::to_string(backlog) + " rate=" + std::to_string(static_cast<int>(rate)) +
                   "/s: t=" + std::to_string(static_cast<int>(t)) +
                   "s waiting=" + std::to_string(backlog + sent - served));
      }
      ++tick;
      std::this_thread::sleep_for(10ms);
    }
    out.arrived = sent;
    out.served = s->started.load();
    r.kill();
  }
  return out;
}

}  // namespace spawn_delay
