#include "chaos.hpp"

#include "service.hpp"

#include <beamlet/dist.hpp>

#include <random>
#include <vector>

namespace soak {

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

struct victim {
  pid target;
  pid supervisor;       ///< whose restart count the kill must show up in (null: none)
  bool linked = false;  ///< a worker linked to the witness
};

// Kills under a monitor: the DOWN must come, and says whether the kill hit a live process.
task<> kill_one(process& self, world& w, victim v) {
  const ref r = self.monitor(v.target);
  self.exit(v.target, exit_reason::kill());
  auto m =
      co_await self.receive(on<down>().when([r](const down& d) { return d.ref == r; }), after(5s));
  w.downs.checked.fetch_add(1, std::memory_order_relaxed);
  if (!m) {
    w.violate(w.downs, "no DOWN within 5 s of killing " + v.target.to_string());
    self.demonitor(r, flush);
    co_return;
  }
  if (!(m.get<down>().reason == exit_reason::killed())) {
    w.kills_missed.fetch_add(1, std::memory_order_relaxed);  // it had ended already (noproc)
    co_return;
  }
  w.kills.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(w.mu);
  if (v.supervisor) ++w.kills_by_supervisor[v.supervisor];
  if (v.linked) w.killed_workers.push_back(v.target);
}

// A running child of `sup`, picked by the seed; null if it has none running now.
template <class Children, class Filter = bool (*)(pid)>
pid pick(
    std::mt19937_64& rng, const Children& kids, Filter may = [](pid) { return true; }) {
  std::vector<pid> running;
  for (const child_info& k : kids)
    if (k.pid && k.status == child_info::state::running && may(k.pid)) running.push_back(k.pid);
  return running.empty() ? pid() : running[rng() % running.size()];
}

}  // namespace

task<> chaos(process& self, world& w, external_node* peer, external_node* erl) {
  heartbeat& hb = w.add_beat("chaos");
  std::mt19937_64 rng(w.opt.seed);
  auto next_erl_kill = clock::now() + std::chrono::seconds(10 + rng() % 10);
  clock::time_point stall_end{}, next_erl_check{};
  while (!w.stopping.load()) {
    co_await self.sleep(25ms);
    hb.beat();
    const auto now = clock::now();
    if (w.peer_stalled.load() && now >= stall_end) {
      peer->resume();
      w.peer_stalled.store(false);
    }
    if (erl != nullptr && now >= next_erl_check) {
      next_erl_check = now + 1s;
      if (erl->restart_if_exited()) w.erl_restarts.fetch_add(1, std::memory_order_relaxed);
    }
    if (erl != nullptr && now >= next_erl_kill) {
      erl->kill();
      w.erl_restarts.fetch_add(1, std::memory_order_relaxed);
      (void)erl->start();
      next_erl_kill = now + std::chrono::seconds(10 + rng() % 10);
    }
    const auto roll = rng() % 1000;
    victim v;
    try {
      if (roll < 250) {
        const auto sup = w.rt->whereis(counters_name);
        if (!sup) continue;
        const auto kids = co_await supervisor::which_children(self, *sup, 5s);
        v = {pick(rng, kids), *sup, true};
      } else if (roll < 450) {
        const auto sup = w.rt->whereis(sessions_name);
        if (!sup) continue;
        const auto kids = co_await dynamic_supervisor::which_children(self, *sup, 5s);
        v = {pick(rng, kids, chaos_may_kill), *sup, true};
      } else if (roll < 550) {
        const auto sup = w.rt->whereis(sinks_name);
        if (!sup) continue;
        const auto kids = co_await supervisor::which_children(self, *sup, 5s);
        v = {pick(rng, kids), *sup, true};
      } else if (roll < 700) {
        // A connection reset from the server's side: its owner dies, so its socket closes.
        std::lock_guard<std::mutex> g(w.mu);
        if (w.socket_handlers.empty()) continue;
        auto it = w.socket_handlers.begin();
        std::advance(it, static_cast<long>(rng() % w.socket_handlers.size()));
        v = {it->first, pid(), false};
        w.handler_kills.fetch_add(1, std::memory_order_relaxed);
      } else if (roll < 715) {
        // A whole subtree: its supervisor (restarted by the top with all its children anew).
        const auto top = w.rt->whereis(top_name);
        if (!top) continue;
        const auto kids = co_await supervisor::which_children(self, *top, 5s);
        v = {pick(rng, kids), *top, false};
        w.supervisor_kills.fetch_add(1, std::memory_order_relaxed);
      } else if (roll < 722 && peer != nullptr && !w.peer_stalled.load()) {
        peer->stall();
        w.peer_stalled.store(true);
        w.peer_stalls.fetch_add(1, std::memory_order_relaxed);
        stall_end = now + std::chrono::milliseconds(300 + rng() % 1200);
        continue;
      } else if (roll < 726 && peer != nullptr && !w.peer_stalled.load()) {
        if (dist::disconnect_node(*w.rt, w.peer_node))
          w.peer_disconnects.fetch_add(1, std::memory_order_relaxed);
        continue;
      } else {
        continue;
      }
    } catch (const call_error&) {
      continue;  // the supervisor asked is being restarted itself
    }
    if (v.target) co_await kill_one(self, w, v);
  }
  if (w.peer_stalled.load()) {
    peer->resume();
    w.peer_stalled.store(false);
  }
}

}  // namespace soak
