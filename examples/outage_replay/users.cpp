#include "users.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <unordered_map>
#include <vector>

namespace replay {

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

// -- messages -------------------------------------------------------------------------------------

struct tick {};
struct start_sessions {
  pid reply_to;
};
struct sessions_started {};
/// A device that must reconnect through this host.
struct reconnect {
  int device;
};
/// Kill this share of your sessions (the fault).
struct kill_share {
  double share;
  std::uint64_t seed;
};
struct joined {
  int device;
  pid session;
  bool initial;
};
struct rpc_done {
  int participant;
  bool ok;
};
struct retry {
  int participant;
};
struct calls_lost {};
/// A participant's client rejoins a call that dropped.
struct rejoin {};
struct keepalive {};

int call_of(const scenario& sc, int device) {
  return device / sc.call_size;
}
int calls(const scenario& sc) {
  return (sc.sessions + sc.call_size - 1) / sc.call_size;
}

/// Call owners by call number; written once each at their start, before any device joins.
std::vector<std::atomic<pid>>& owners(const scenario& sc) {
  static std::vector<std::atomic<pid>> v(static_cast<std::size_t>(calls(sc)));
  return v;
}

// -- sessions -------------------------------------------------------------------------------------

/// A connected device's session: it waits to be ended.
struct session_body {
  int device;
  task<> operator()(process& self, const starter& st) const {
    st.ack(self, start_result::ok(self.self()));
    co_await self.receive(on<calls_lost>());  // never sent: a session lives until it is killed
  }
};

child_spec session_spec(int device) {
  return child_spec("session", proc_start(session_body{device}))
      .with_restart(restart_type::temporary)
      .with_shutdown(shutdown_spec::brutal_kill());
}

// -- the gateway ----------------------------------------------------------------------------------

class gateway {
 public:
  gateway(process& self, users_context& u, int g)
      : self_(self),
        u_(u),
        g_(g),
        sessions_(dynamic_supervisor_ref("sessions_" + std::to_string(g))),
        bucket_(rate_limit{u.sc->host_limit(), std::max(1.0, u.sc->host_limit() / 10)}),
        rng_(static_cast<std::uint64_t>(g) * 7919u) {}

  task<> run() {
    self_.send_after(self_.self(), tick{}, 20ms);
    for (;;) {
      auto m = co_await self_.receive(on<down>(), on<tick>(), on<reconnect>(), on<start_sessions>(),
                                      on<kill_share>());
      if (const down* d = m.get_if<down>()) {
        on_down(*d);
      } else if (m.get_if<tick>() != nullptr) {
        co_await on_tick();
        self_.send_after(self_.self(), tick{}, 20ms);
      } else if (const reconnect* r = m.get_if<reconnect>()) {
        pending_.push_back(r->device);
      } else if (const start_sessions* s = m.get_if<start_sessions>()) {
        const pid reply_to = s->reply_to;
        for (int dev = g_; dev < u_.sc->sessions; dev += u_.sc->hosts)
          co_await start_session(dev, true);
        self_.send(reply_to, sessions_started{});
      } else if (const kill_share* k = m.get_if<kill_share>()) {
        std::mt19937_64 rng(k->seed);
        std::bernoulli_distribution pick(k->share);
        int n = 0;
        for (const auto& entry : sessions_by_ref_)
          if (pick(rng)) {
            self_.exit(entry.second.session, exit_reason::kill());
            ++n;
          }
        u_.c->sessions_killed.fetch_add(n, std::memory_order_relaxed);
      }
    }
  }

 private:
  struct hosted {
    int device;
    pid session;
  };

  bool out_of_memory() const { return std::chrono::steady_clock::now() < oom_until_; }

  void on_down(const down& d) {
    const auto it = sessions_by_ref_.find(d.ref.value());
    if (it == sessions_by_ref_.end()) return;
    const int device = it->second.device;
    sessions_by_ref_.erase(it);
    u_.c->downs.fetch_add(1, std::memory_order_relaxed);
    if (out_of_memory())
      send_elsewhere(device);
    else
      pending_.push_back(device);
  }

  /// While this host is down, its devices reconnect through the others, over about 2 s.
  void send_elsewhere(int device) {
    const int hosts = u_.sc->hosts;
    if (hosts < 2) {
      pending_.push_back(device);
      return;
    }
    std::uniform_int_distribution<int> other(1, hosts - 1);
    std::uniform_int_distribution<int> delay_ms(10, 2000);
    const std::string name = u_.gateway_name((g_ + other(rng_)) % hosts);
    if (const auto to = u_.cx->rt->whereis(name))
      self_.send_after(*to, reconnect{device}, std::chrono::milliseconds(delay_ms(rng_)));
  }

  task<> on_tick() {
    const auto now = std::chrono::steady_clock::now();
    if (out_of_memory()) co_return;
    if (now - window_start_ >= 1s) {
      window_start_ = now;
      window_starts_ = 0;
    }
    while (!pending_.empty()) {
      if (!bucket_.try_acquire(now)) break;
      const int device = pending_.front();
      pending_.pop_front();
      co_await start_session(device, false);
      if (++window_starts_ > u_.sc->host_capacity()) {
        run_out_of_memory();
        co_return;
      }
    }
  }

  /// More session starts in a second than this (smaller) host has memory for: every session
  /// on it ends, and the host is back after a second, empty.
  void run_out_of_memory() {
    u_.c->gateway_ooms.fetch_add(1, std::memory_order_relaxed);
    oom_until_ = std::chrono::steady_clock::now() + 1s;
    for (const auto& entry : sessions_by_ref_)
      self_.exit(entry.second.session, exit_reason::kill());
    while (!pending_.empty()) {
      send_elsewhere(pending_.front());
      pending_.pop_front();
    }
  }

  task<> start_session(int device, bool initial) {
    const child_spec spec = session_spec(device);
    sup_result<start_result> r = co_await dynamic_supervisor::start_child(self_, sessions_, spec);
    if (!r.has_value() || !r->is_ok()) {
      pending_.push_back(device);
      co_return;
    }
    const pid session = r->pid();
    const ref mon = self_.monitor(session);
    sessions_by_ref_.emplace(mon.value(), hosted{device, session});
    if (!initial) u_.c->reconnects.fetch_add(1, std::memory_order_relaxed);
    const pid owner = owners(*u_.sc)[static_cast<std::size_t>(call_of(*u_.sc, device))].load();
    self_.send(owner, joined{device, session, initial});
  }

  process& self_;
  users_context& u_;
  int g_;
  dynamic_supervisor_ref sessions_;
  token_bucket bucket_;
  std::mt19937_64 rng_;
  std::unordered_map<std::uint64_t, hosted> sessions_by_ref_;
  std::deque<int> pending_;
  std::chrono::steady_clock::time_point window_start_{}, oom_until_{};
  double window_starts_ = 0;
};

struct gateway_body {
  users_context* u;
  int g;
  task<> operator()(process& self, const starter& st) const {
    if (u->cx->rt->register_name(u->gateway_name(g), self.self())) {
      st.ack(self, start_result::error(exit_reason::error("{already_registered}")));
      co_return;
    }
    st.ack(self, start_result::ok(self.self()));
    gateway gw(self, *u, g);
    co_await gw.run();
  }
};

// -- the call owner -------------------------------------------------------------------------------

/// One RPC as a process of its own, so that the owner keeps taking messages while it waits:
/// up to rpc_attempts attempts, then the outcome to the owner (participant -1: a keepalive).
task<> rpc_process(process& self, users_context* u, pid owner, std::uint64_t call, int p,
                   int attempts) {
  bool ok = false;
  for (int a = 0; a < attempts && !ok; ++a) {
    // The upstream limit counts every placement attempt (the owner took the first one's token);
    // a keepalive (p < 0) is the steady load, not limited.
    if (a > 0)
      if (token_bucket* b = u->upstream.load(std::memory_order_acquire))
        if (!b->try_acquire(std::chrono::steady_clock::now())) break;
    ok = co_await place_attempt(self, *u->cx, call, p);
  }
  if (p >= 0) {
    const rpc_done d{p, ok};
    self.send(owner, d);
  }
}

class call_owner {
 public:
  call_owner(process& self, users_context& u, int call)
      : self_(self), u_(u), call_(call), rng_(static_cast<std::uint64_t>(call) + 17u) {
    const int first = call * u.sc->call_size;
    const int n = std::min(u.sc->call_size, u.sc->sessions - first);
    parts_.resize(static_cast<std::size_t>(std::max(0, n)));
  }

  task<> run() {
    std::uniform_int_distribution<int> first_keepalive(0, 4000);
    self_.send_after(self_.self(), keepalive{}, std::chrono::milliseconds(first_keepalive(rng_)));
    for (;;) {
      auto m = co_await self_.receive(on<joined>(), on<down>(), on<rpc_done>(), on<retry>(),
                                      on<calls_lost>(), on<rejoin>(), on<keepalive>());
      if (const joined* j = m.get_if<joined>()) {
        on_joined(*j);
      } else if (const down* d = m.get_if<down>()) {
        on_down(*d);
      } else if (const rpc_done* r = m.get_if<rpc_done>()) {
        on_rpc_done(*r);
      } else if (const retry* t = m.get_if<retry>()) {
        participant& p = at(t->participant);
        p.retry_queued = false;
        if (p.present && !p.placed && !p.inflight) launch(t->participant);
      } else if (m.get_if<calls_lost>() != nullptr) {
        // Every participant's client sees its call drop and rejoins within a second, and each
        // rejoin recreates the call: up to call_size placements per participant.
        std::uniform_int_distribution<int> within(0, 1000);
        for (const participant& p : parts_)
          if (p.present)
            self_.send_after(self_.self(), rejoin{}, std::chrono::milliseconds(within(rng_)));
      } else if (m.get_if<rejoin>() != nullptr) {
        recreate();
      } else if (m.get_if<keepalive>() != nullptr) {
        // The call's periodic update to its media server: the steady load.
        spawn_rpc(-1, 1);
        self_.send_after(self_.self(), keepalive{}, 4s);
      }
    }
  }

 private:
  struct participant {
    pid session;
    std::uint64_t monitor = 0;
    bool present = false, placed = false, inflight = false, again = false, retry_queued = false;
    int failures = 0;
  };

  participant& at(int p) { return parts_[static_cast<std::size_t>(p)]; }

  void set_placed(participant& p, bool placed) {
    if (p.present && p.placed != placed)
      u_.c->unplaced.fetch_add(placed ? -1 : 1, std::memory_order_relaxed);
    p.placed = placed;
  }

  void on_joined(const joined& j) {
    const int idx = j.device - call_ * u_.sc->call_size;
    participant& p = at(idx);
    if (p.present) {
      self_.demonitor(ref(p.monitor), flush);
      set_placed(p, true);  // leaves the unplaced count before it is counted again below
    }
    p.session = j.session;
    p.monitor = self_.monitor(j.session).value();
    p.present = true;
    p.placed = true;
    if (j.initial) return;  // the call existed before the replay began
    // A participant rejoined: the call is stopped and recreated, one placement each.
    recreate();
  }

  void recreate() {
    for (int i = 0; i < static_cast<int>(parts_.size()); ++i) {
      participant& p = at(i);
      if (!p.present) continue;
      set_placed(p, false);
      if (p.inflight)
        p.again = true;
      else
        launch(i);
    }
  }

  void on_down(const down& d) {
    for (int i = 0; i < static_cast<int>(parts_.size()); ++i) {
      participant& p = at(i);
      if (!p.present || p.monitor != d.ref.value()) continue;
      u_.c->downs.fetch_add(1, std::memory_order_relaxed);
      set_placed(p, true);
      p.present = false;
      spawn_rpc(i, 1);  // the participant leaves the call: one update, not retried
      return;
    }
  }

  void on_rpc_done(const rpc_done& r) {
    participant& p = at(r.participant);
    p.inflight = false;
    if (!p.present) return;
    if (p.again) {
      p.again = false;
      launch(r.participant);
      return;
    }
    if (r.ok) {
      if (!p.placed) u_.c->placed.fetch_add(1, std::memory_order_relaxed);
      set_placed(p, true);
      p.failures = 0;
      return;
    }
    // The user tries again after a backoff: 0.5 s doubling to 2 s, with jitter.
    if (!p.placed) schedule_retry(r.participant, p);
  }

  void schedule_retry(int idx, participant& p) {
    if (p.retry_queued) return;
    p.retry_queued = true;
    const int base = 500 << std::min(p.failures++, 2);
    std::uniform_int_distribution<int> jitter(0, base / 2);
    self_.send_after(self_.self(), retry{idx}, std::chrono::milliseconds(base + jitter(rng_)));
  }

  void launch(int idx) {
    participant& p = at(idx);
    if (token_bucket* b = u_.upstream.load(std::memory_order_acquire)) {
      if (!b->try_acquire(std::chrono::steady_clock::now())) {
        // Held back upstream: the request waits at the caller, not in a queue downstream. The
        // wait is jittered and long enough that thousands of held-back participants asking
        // again are not themselves a load (at 50 ms, 18,000 of them were 360,000 wake-ups a
        // second).
        if (!p.retry_queued) {
          p.retry_queued = true;
          std::uniform_int_distribution<int> wait(250, 500);
          self_.send_after(self_.self(), retry{idx}, std::chrono::milliseconds(wait(rng_)));
        }
        return;
      }
    }
    p.inflight = true;
    spawn_rpc(idx, u_.sc->rpc_attempts);
  }

  void spawn_rpc(int p, int attempts) {
    self_.spawn([u = &u_, owner = self_.self(), call = static_cast<std::uint64_t>(call_), p,
                 attempts](process& h) { return rpc_process(h, u, owner, call, p, attempts); });
  }

  process& self_;
  users_context& u_;
  int call_;
  std::mt19937_64 rng_;
  std::vector<participant> parts_;
};

struct call_owner_body {
  users_context* u;
  int call;
  task<> operator()(process& self, const starter& st) const {
    owners(*u->sc)[static_cast<std::size_t>(call)].store(self.self());
    st.ack(self, start_result::ok(self.self()));
    call_owner owner(self, *u, call);
    co_await owner.run();
  }
};

}  // namespace

users_context::users_context(cluster_context& cl) : cx(&cl), sc(cl.sc), c(cl.c) {}

void users_context::set_upstream_limit(double per_second) {
  if (per_second <= 0) {
    upstream.store(nullptr, std::memory_order_release);
    return;
  }
  std::lock_guard lock(mu_);
  buckets_.push_back(
      std::make_unique<token_bucket>(rate_limit{per_second, std::max(1.0, per_second / 20)}));
  upstream.store(buckets_.back().get(), std::memory_order_release);
}

start_function gateways_start(users_context& u) {
  std::vector<child_spec> hosts;
  for (int g = 0; g < u.sc->hosts; ++g) {
    supervisor_options so;
    so.name = u.cx->name("sessions_" + std::to_string(g));
    supervisor_flags f;
    f.strategy = restart_strategy::one_for_all;
    hosts.push_back(
        child_spec("host_" + std::to_string(g),
                   supervisor_start(f, {child_spec("sessions", dynamic_supervisor_start({}, so)),
                                        child_spec("gateway", proc_start(gateway_body{&u, g}))})));
  }
  supervisor_options so;
  so.name = u.cx->name("gateways");
  return supervisor_start(supervisor_flags{}, std::move(hosts), so);
}

start_function calls_start(users_context& u) {
  supervisor_options so;
  so.name = u.cx->name("calls");
  dynamic_supervisor_flags f;
  f.intensity = 100;
  return dynamic_supervisor_start(f, so);
}

void populate(scoped_process& me, users_context& u) {
  (void)owners(*u.sc);
  for (int k = 0; k < calls(*u.sc); ++k) {
    const auto r = dynamic_supervisor::start_child(
        me, "calls", child_spec("call", proc_start(call_owner_body{&u, k})));
    if (!r.has_value() || !r->is_ok()) throw std::runtime_error("a call owner did not start");
  }
  for (int g = 0; g < u.sc->hosts; ++g) {
    const auto gw = u.cx->rt->whereis(u.gateway_name(g));
    if (!gw) throw std::runtime_error("gateway " + std::to_string(g) + " is not running");
    me.send(*gw, start_sessions{me.self()});
  }
  for (int g = 0; g < u.sc->hosts; ++g)
    if (!me.receive(on<sessions_started>(), after(60s)))
      throw std::runtime_error("the gateways did not start their sessions within 60 s");
}

void inject_fault(scoped_process& me, users_context& u) {
  const int zone = u.zone_hosts();
  const double share = std::min(1.0, u.sc->fault_fraction * u.sc->hosts / zone);
  for (int g = 0; g < zone; ++g)
    if (const auto gw = u.cx->rt->whereis(u.gateway_name(g)))
      me.send(*gw, kill_share{share, 1234u + static_cast<std::uint64_t>(g)});
}

void lose_all_calls(scoped_process& me, users_context& u) {
  for (auto& o : owners(*u.sc)) me.send(o.load(), calls_lost{});
}

}  // namespace replay
