// Ending a process (spec §2 rule 4, §3 rules 2 and 6, §9 rule 4).
#include <utility>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

namespace {

// Signals that arrived after the process stopped draining, in arrival order: links still get
// their exit signal (the link existed before the process was gone), everything else is dropped.
void settle(proc* p, message_node* first) noexcept {
  for (message_node* n = first; n != nullptr;) {
    message_node* next = n->next;
    if (n->type->kind == node_kind::signal) {
      const signal_kind k = kind_of(n);
      try {
        if (k == signal_kind::link)
          p->links.insert(payload<link_signal>(n).from.serial(), {});
        else if (k == signal_kind::unlink)
          p->links.erase(payload<unlink_signal>(n).from.serial());
      } catch (...) {
        // Out of memory recording a late link: that peer is not told. Nothing else to do.
      }
    }
    destroy_node(n);
    n = next;
  }
}

void signal_links(proc* p) noexcept {
  runtime_core& rt = *p->rt();
  p->links.for_each([&](std::uint64_t serial, empty_value&) {
    try {
      deliver(rt, pid(serial),
              make_node<exit_signal>(exit_tag, exit_signal{p->id(), p->reason, true}));
    } catch (...) {
      // Allocation failed: this peer is not told (documented OOM limitation).
    }
  });
  p->links.clear();
}

// One lock for the whole fan-out: detach the set, then deliver without holding anything. The
// watchers are scattered in memory, so the loop prefetches the table slot and then the inbox of
// watchers a few steps ahead; with 100k watchers this turns a chain of cache misses into
// overlapping ones.
void signal_watchers(proc* p) noexcept {
  watcher_set set;
  {
    std::lock_guard lock(p->watchers_lock);
    p->watchers_closed = true;
    set.swap(p->watchers);
  }
  runtime_core& rt = *p->rt();
  const watcher_set::slot* s = set.begin();
  const auto n = static_cast<std::size_t>(set.end() - s);
  constexpr std::size_t slot_ahead = 16;
  constexpr std::size_t inbox_ahead = 8;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + slot_ahead < n) rt.table.prefetch_slot(s[i + slot_ahead].watcher);
    if (i + inbox_ahead < n) {
      if (proc* q = rt.table.peek(s[i + inbox_ahead].watcher)) __builtin_prefetch(&q->inbox, 1);
    }
    if (s[i].ref == 0) continue;
    try {
      deliver(rt, s[i].watcher,
              make_node<down>(down_tag, down{ref(s[i].ref), p->id(), p->reason, std::string()}));
    } catch (...) {
      // Allocation failed: this watcher is not told (documented OOM limitation).
    }
  }
}

void drop_own_monitors(proc* p) noexcept {
  runtime_core& rt = *p->rt();
  p->monitors.for_each([&](std::uint64_t r, monitor_entry& e) {
    drop_monitor(rt, r, e);
    delete e.name;
  });
  p->monitors.clear();
}

}  // namespace

void exit_process(proc* p, exit_reason reason) noexcept {
  runtime_core& rt = *p->rt();
  p->exiting = true;
  p->reason = std::move(reason);
  p->state = run_state::dead;
  p->op = nullptr;

  // 1. Frames and body first: destructors may still send, and what a process sent before it
  //    died must reach its watchers before its DOWN (spec §1.1 rule 3).
  if (p->body) {
    p->body.destroy();
    p->body = {};
  }
  if (p->destroy_body != nullptr) {
    p->destroy_body(p->body_ptr());
    p->destroy_body = nullptr;
  }
  if (p->timer_armed) {
    rt.timers.cancel(&p->timer);
    p->timer_armed = false;
  }

  // 2. Close the inbox: from now on every push fails, so nothing can be left behind in it.
  //    What was held back by drain(until_kill) is older than what is still in the inbox.
  settle(p, std::exchange(p->deferred, nullptr));
  settle(p, in_arrival_order(p->inbox.exchange(closed_mark, std::memory_order_seq_cst)));
  p->queue.clear();
  // Timers aimed at a dead process would only be dropped when they fire: cancel them now, as
  // BEAM does. The flag is read after the inbox is closed (see timer_service::send_after).
  if (p->timers_aimed.load(std::memory_order_seq_cst)) rt.timers.cancel_aimed_at(p->id());

  // 3. The name goes before anyone learns of the death, so a restarted process can take it.
  rt.names.release(p);

  // 4. Links and watchers.
  signal_links(p);
  signal_watchers(p);
  drop_own_monitors(p);

  // 5. Unpublish and free once no thread can still hold a pointer.
  rt.table.remove(p->id());
  if (!p->external) rt.retire(p);
}

}  // namespace detail
BEAMLET_END_NAMESPACE
