// The same workloads on CAF 0.17, written the way CAF programs are: event-based actors, as many
// scheduler threads as beamlet uses, and either of CAF's scheduler policies (work stealing, its
// default, or work sharing: one shared queue), chosen by scheduler_policy.
//
// Every actor handle is kept until the workload ends: CAF terminates an actor nobody holds a
// handle to (exit reason `unreachable`), which would end watchers and senders early.
#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "workloads.hpp"

namespace peers::caf_side {

policy scheduler_policy = policy::stealing;

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using go_atom = caf::atom_constant<caf::atom("go")>;

double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

caf::actor_system_config make_config() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", static_cast<size_t>(std::thread::hardware_concurrency()));
  if (scheduler_policy == policy::sharing)
    cfg.set("scheduler.policy", caf::atom("sharing"));
  else
    cfg.set("scheduler.policy", caf::atom("stealing"));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  return cfg;
}

/// The result handed from actors to the main thread.
struct outcome {
  std::atomic<bool> done{false};
  double ns = 0;
  void finish(double v) {
    ns = v;
    done.store(true, std::memory_order_release);
  }
  double wait() const {
    while (!done.load(std::memory_order_acquire)) std::this_thread::sleep_for(1ms);
    return ns;
  }
};

struct spawner_state {
  std::int64_t left = 0;
  clock_type::time_point t0;
};

}  // namespace

double spawn_exit(std::int64_t n) {
  auto cfg = make_config();
  caf::actor_system sys{cfg};
  outcome out;
  // One at a time: spawn a monitored actor that quits at once, and wait for its DOWN.
  auto spawner = sys.spawn([n, &out](caf::stateful_actor<spawner_state>* self) -> caf::behavior {
    auto next = [self] {
      self->spawn<caf::monitored>([](caf::event_based_actor* a) { a->quit(); });
    };
    self->set_down_handler([self, next, &out](caf::down_msg&) {
      if (--self->state.left == 0) {
        out.finish(ns_since(self->state.t0));
        self->quit();
      } else {
        next();
      }
    });
    return {[self, n, next](go_atom) {
      self->state.left = n;
      self->state.t0 = clock_type::now();
      next();
    }};
  });
  caf::anon_send(spawner, go_atom::value);
  return out.wait();
}

double send_receive(std::int64_t n) {
  auto cfg = make_config();
  caf::actor_system sys{cfg};
  outcome out;
  auto receiver = sys.spawn([n](caf::stateful_actor<std::int64_t>* self) -> caf::behavior {
    self->state = 0;
    return {[self, n](std::int64_t) {
      if (++self->state % window == 0 || self->state == n)
        self->send(caf::actor_cast<caf::actor>(self->current_sender()), ack_atom::value);
      if (self->state == n) self->quit();
    }};
  });
  auto sender =
      sys.spawn([n, receiver, &out](caf::stateful_actor<spawner_state>* self) -> caf::behavior {
        self->state.t0 = clock_type::now();
        self->state.left = n;
        auto burst = [self, receiver] {
          const std::int64_t k = std::min<std::int64_t>(window, self->state.left);
          for (std::int64_t i = 0; i < k; ++i) self->send(receiver, self->state.left - i);
          self->state.left -= k;
        };
        burst();
        return {[self, burst, &out](ack_atom) {
          if (self->state.left == 0) {
            out.finish(ns_since(self->state.t0));
            self->quit();
          } else {
            burst();
          }
        }};
      });
  return out.wait();
}

double ping_pong(std::int64_t n) {
  auto cfg = make_config();
  caf::actor_system sys{cfg};
  outcome out;
  auto echo = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    return {[self](std::int64_t v) {
              self->send(caf::actor_cast<caf::actor>(self->current_sender()), v);
            },
            [self](stop_atom) { self->quit(); }};
  });
  auto pinger =
      sys.spawn([n, echo, &out](caf::stateful_actor<spawner_state>* self) -> caf::behavior {
        self->state.t0 = clock_type::now();
        self->state.left = n;
        self->send(echo, std::int64_t{0});
        return {[self, echo, &out](std::int64_t v) {
          if (--self->state.left == 0) {
            out.finish(ns_since(self->state.t0));
            self->send(echo, stop_atom::value);
            self->quit();
          } else {
            self->send(echo, v + 1);
          }
        }};
      });
  return out.wait();
}

double monitor(std::int64_t n) {
  auto cfg = make_config();
  caf::actor_system sys{cfg};
  outcome out;
  auto target = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    return {[self](stop_atom) { self->quit(); }};
  });
  auto looper = sys.spawn([n, target, &out](caf::event_based_actor* self) {
    const auto t0 = clock_type::now();
    for (std::int64_t i = 0; i < n; ++i) {
      self->monitor(target);
      self->demonitor(target);
    }
    out.finish(ns_since(t0));
    self->send(target, stop_atom::value);
  });
  return out.wait();
}

double down_fan_out(int watchers) {
  auto cfg = make_config();
  caf::actor_system sys{cfg};
  std::atomic<int> monitoring{0}, downs{0};
  auto target =
      sys.spawn([](caf::event_based_actor*) -> caf::behavior { return {[](stop_atom) {}}; });
  std::vector<caf::actor> handles;
  handles.reserve(static_cast<std::size_t>(watchers));
  for (int i = 0; i < watchers; ++i) {
    auto w =
        sys.spawn([target, &monitoring, &downs](caf::event_based_actor* self) -> caf::behavior {
          // Watchers stay alive after their DOWN (as on the beamlet side): the measure is the
          // delivery, not the watchers' own exits.
          self->set_down_handler(
              [&downs](caf::down_msg&) { downs.fetch_add(1, std::memory_order_relaxed); });
          return {[self, target, &monitoring](go_atom) {
            self->monitor(target);
            monitoring.fetch_add(1, std::memory_order_relaxed);
          }};
        });
    caf::anon_send(w, go_atom::value);
    handles.push_back(std::move(w));
  }
  while (monitoring.load() < watchers) std::this_thread::sleep_for(1ms);
  const auto t0 = clock_type::now();
  caf::anon_send_exit(target, caf::exit_reason::kill);
  while (downs.load(std::memory_order_relaxed) < watchers) std::this_thread::sleep_for(20us);
  return ns_since(t0);
}

double down_fan_in(int dying) {
  auto cfg = make_config();
  caf::actor_system sys{cfg};
  outcome out;
  std::vector<caf::actor> victims;
  std::atomic<bool> ready{false};
  struct watcher_state {
    int downs = 0;
  };
  auto watcher = sys.spawn(
      [dying, &victims, &ready, &out](caf::stateful_actor<watcher_state>* self) -> caf::behavior {
        self->set_down_handler([self, dying, &out](caf::down_msg&) {
          if (++self->state.downs == dying) {
            out.finish(0);
            self->quit();
          }
        });
        return {[self, dying, &victims, &ready](go_atom) {
          victims.reserve(static_cast<std::size_t>(dying));
          for (int i = 0; i < dying; ++i) {
            victims.push_back(self->spawn<caf::monitored>(
                [](caf::event_based_actor*) -> caf::behavior { return {[](stop_atom) {}}; }));
          }
          ready.store(true, std::memory_order_release);
        }};
      });
  caf::anon_send(watcher, go_atom::value);
  while (!ready.load(std::memory_order_acquire)) std::this_thread::sleep_for(1ms);
  const auto t0 = clock_type::now();
  for (const caf::actor& v : victims) caf::anon_send_exit(v, caf::exit_reason::kill);
  out.wait();
  return ns_since(t0);
}

}  // namespace peers::caf_side
