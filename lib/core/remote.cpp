// Operations on remote pids and signals from other nodes (beamlet/core/detail/remote.hpp). The core
// keeps a remote link or monitor in the same tables as a local one, so unlink, demonitor, a
// process's death and process_info treat both alike; only the delivery differs.
#include <beamlet/core/detail/remote.hpp>
#include <beamlet/core/process.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "observation.hpp"
#include "process_ops.hpp"
#include "run_context.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

void install_hook(runtime_core& rt, remote_hooks* hooks) noexcept {
  lock_guard lock(rt.hooks_mu);
  rt.hooks.remote.store(hooks, std::memory_order_release);
}

void send_node_remote_named(runtime_core& rt, pid from, std::string_view name,
                            std::string_view node, message_node* n) noexcept {
  remote_hooks* h = rt.hooks.remote.load(std::memory_order_acquire);
  if (h == nullptr) {
    destroy_node(n);
    return;
  }
  h->send_named(from, name, node, n);
}

bool remote_link_in(runtime_core& rt, pid from, pid to) noexcept {
  if (to.is_remote() || !to) return false;
  try {
    pin guard(rt);
    return deliver(rt, to, make_node<link_signal>(link_tag, link_signal{from}));
  } catch (...) {
    return false;  // out of memory: as if the target were gone (the peer gets noproc)
  }
}

void remote_unlink_in(runtime_core& rt, pid from, pid to) noexcept {
  if (to.is_remote() || !to) return;
  try {
    pin guard(rt);
    deliver(rt, to, make_node<unlink_signal>(unlink_tag, unlink_signal{from}));
  } catch (...) {
  }
}

bool remote_exit_in(runtime_core& rt, pid from, pid to, exit_reason reason,
                    bool via_link) noexcept {
  if (to.is_remote() || !to) return false;
  try {
    pin guard(rt);
    return deliver(
        rt, to, make_node<exit_signal>(exit_tag, exit_signal{from, std::move(reason), via_link}));
  } catch (...) {
    return false;
  }
}

bool remote_monitor_in(runtime_core& rt, pid watcher, pid target, std::uint64_t ref,
                       std::uint32_t* slot) noexcept {
  if (target.is_remote() || !target) return false;
  pin guard(rt);
  proc* t = rt.table.lookup(target);
  if (t == nullptr) return false;
  detail::lock_guard lock(t->watchers_lock);
  if (t->watchers_closed) return false;
  try {
    *slot = t->watchers.add(ref, watcher);
  } catch (...) {
    return false;
  }
  return true;
}

void remote_demonitor_in(runtime_core& rt, pid target, std::uint64_t ref,
                         std::uint32_t slot) noexcept {
  if (target.is_remote() || !target) return;
  pin guard(rt);
  proc* t = rt.table.lookup(target);
  if (t == nullptr) return;
  detail::lock_guard lock(t->watchers_lock);
  if (!t->watchers_closed) t->watchers.remove(slot, ref);
}

void remote_down_in(runtime_core& rt, pid watcher, std::uint64_t ref, pid target,
                    exit_reason reason, std::string name) noexcept {
  if (watcher.is_remote() || !watcher) return;
  try {
    pin guard(rt);
    deliver(rt, watcher,
            make_node<down>(down_tag,
                            down{beamlet::ref(ref), target, std::move(reason), std::move(name)}));
  } catch (...) {
    // Out of memory: this watcher is not told (the documented OOM limitation of DOWNs).
  }
}

pid running_process(const runtime_core& rt) noexcept {
  const proc* p = running_proc();
  return p != nullptr && !p->external && p->rt() == &rt ? p->id() : pid();
}

pid acting_process(const runtime_core& rt) noexcept {
  const proc* p = running_proc();
  return p != nullptr && p->rt() == &rt ? p->id() : pid();
}

pause_ticket remote_pause_running(const runtime_core& rt) noexcept {
  proc* p = running_proc();
  if (p == nullptr || p->external || p->rt() != &rt) return {};
  message_node* n = nullptr;
  try {
    n = make_node<resume_signal>(resume_tag, resume_signal{});
  } catch (...) {
    return {};  // out of memory: the sender goes on unpaused
  }
  // The running process's own field: this thread is its owner now.
  p->pauses.store(static_cast<std::uint16_t>(p->pauses.load(std::memory_order_relaxed) + 1),
                  std::memory_order_relaxed);
  // Back to the scheduler at the next reduction, where the pause takes effect.
  this_run.budget = 0;
  return {p->id(), n};
}

void remote_resume(runtime_core& rt, pause_ticket t) noexcept {
  if (t.resume == nullptr) return;
  pin guard(rt);
  deliver(rt, t.who, t.resume);
}

void remote_busy_alarm(runtime_core& rt, pid suspended, pid port) noexcept {
  busy_port_alarm(rt, suspended, port);
}

}  // namespace detail

ref basic_process::monitor(std::string_view name, std::string_view node) {
  detail::proc* p = p_;
  const std::uint64_t r = rt_->new_ref();
  detail::remote_hooks* h = rt_->hooks.remote.load(std::memory_order_acquire);
  auto unreachable = [&] {
    detail::self_deliver(
        p, detail::make_message(
               down{ref(r), pid(), exit_reason::error("noconnection"), std::string(name)}));
    return ref(r);
  };
  if (h == nullptr) return unreachable();
  detail::monitor_entry* e =
      p->monitors.insert(r, detail::monitor_entry{pid(), 0, std::make_unique<std::string>(name)});
  // Recorded first: the answer is a signal this process handles only after we return.
  const pid stand_in = h->monitor_named(self_, name, node, r);
  if (!stand_in) {
    p->monitors.erase(r);
    return unreachable();
  }
  e->target = stand_in;
  return ref(r);
}

BEAMLET_END_PRIVATE_NAMESPACE
