// Ending a process (spec §2 rule 4, §3 rules 2 and 6, §9 rule 4).
#include <algorithm>
#include <typeinfo>
#include <utility>
#include <vector>

#include "observation.hpp"
#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
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

// Closes p's lanes as the inbox was closed: later pushes fail, what is in them is settled. A
// process that never had lanes gets the closed set, so no sender can give it lanes now.
void close_lanes(proc* p) noexcept {
  inbox_lanes* l = nullptr;
  if (p->lanes.compare_exchange_strong(l, closed_lanes(), std::memory_order_seq_cst)) return;
  for (auto& lane : l->lanes)
    settle(p, in_arrival_order(
                  lane.word.exchange(inbox_lanes::closed_mark, std::memory_order_seq_cst)));
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
    detail::lock_guard lock(p->watchers_lock);
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
  p->monitors.for_each([&](std::uint64_t r, monitor_entry& e) { drop_monitor(rt, p->id(), r, e); });
  p->monitors.clear();
}

// OTP's proc_lib crash report: who crashed, how, and in what state.
void report_crash(proc* p, const std::type_info* initial_call) noexcept {
  try {
    runtime_core& rt = *p->rt();
    log_event e;
    e.level = log_level::error;
    e.pid = p->id();
    e.report = "crash_report";
    e.registered_name = rt.names.name_of(p).value_or(std::string());
    e.message = "process " + p->id().to_string() + " crashed: " + p->reason.to_string();
    e.fields.emplace_back("initial_call",
                          initial_call != nullptr ? demangled_name(*initial_call) : "undefined");
    e.fields.emplace_back("pid", p->id().to_string());
    e.fields.emplace_back("registered_name", e.registered_name.empty() ? "[]" : e.registered_name);
    e.fields.emplace_back("error_info", p->reason.to_string());
    e.fields.emplace_back("ancestors", named_list(rt, ancestors_of(rt, p)));
    e.fields.emplace_back("message_queue_len", std::to_string(queue_length(p)));
    std::vector<pid> links;
    p->links.for_each([&](std::uint64_t serial, empty_value&) { links.emplace_back(serial); });
    std::sort(links.begin(), links.end());
    e.fields.emplace_back("links", pid_list(links));
    e.fields.emplace_back("trap_exit", p->trap ? "true" : "false");
    e.fields.emplace_back("reductions",
                          std::to_string(p->reductions_done.load(std::memory_order_relaxed)));
    emit_event(rt, std::move(e));
  } catch (...) {
    // Out of memory building the report: the process still ends.
  }
}

}  // namespace

void exit_process(proc* p, exit_reason reason, exit_cause cause) noexcept {
  runtime_core& rt = *p->rt();
  const sending_as as(p);  // its last signals take the lane its messages took
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
  const std::type_info* initial_call = nullptr;  // for the crash report
  // Only this thread writes body_type (process_info reads it): a load and a store, no exchange.
  if (const body_descriptor* b = p->body_type.load(std::memory_order_relaxed)) {
    p->body_type.store(nullptr, std::memory_order_relaxed);
    initial_call = b->initial_call;
    b->destroy(p->body_ptr());
  }
  if (p->timer_armed) {
    rt.timers.cancel(p->timer);
    p->timer_armed = false;
  }
  if (cause == exit_cause::own && !p->reason.is_clean() && !p->external &&
      report_enabled(rt, log_level::error))
    report_crash(p, initial_call);
  if (p->queue_alarm.load(std::memory_order_relaxed)) alarm_queue(p, false);

  // 2. Close the inbox: from now on every push fails, so nothing can be left behind in it.
  //    What was held back by drain(until_kill) is older than what is still in the inbox.
  settle(p, std::exchange(p->deferred, nullptr));
  settle(p, in_arrival_order(p->inbox.exchange(inbox_word::closed, std::memory_order_seq_cst)));
  close_lanes(p);
  p->queue.clear();
  if (p->urgent() != nullptr) p->urgent()->queue.clear();
  // Timers aimed at a dead process would only be dropped when they fire: cancel them now, as
  // BEAM does. The owners are read after the inbox is closed (see timer_service::send_after).
  if (const std::uint32_t owners = p->timer_owners.load(std::memory_order_seq_cst); owners != 0)
    rt.timers.cancel_aimed_at(p->id(), owners);

  // 3. The name goes before anyone learns of the death, so a restarted process can take it.
  rt.names.release(p);
  if (p->labelled) {
    lock_guard lock(rt.labels.mu);
    rt.labels.by_serial.erase(p->id().serial());
  }

  // 4. Unpublished and counted before anyone learns of the death: whoever got the DOWN sees it
  //    in process_count and in the metrics (whose exit totals are derived from the table).
  //    Lookups fail from here on, which is what they would find a moment later anyway.
  //    A mailbox leaves the mailbox count first: shutdown waits until the table holds nothing
  //    but scoped processes, which must never look true while a process is still alive.
  count_exit(rt, p->reason);
  if (p->external) rt.scoped_processes.fetch_sub(1, std::memory_order_seq_cst);
  rt.table.remove(p->id());
  if (rt.draining.load(std::memory_order_seq_cst)) [[unlikely]] {
    // A shutdown waits for the processes to end: the exit that ends the wait wakes it.
    if (rt.table.size_seq_cst() <= rt.scoped_processes.load(std::memory_order_seq_cst)) {
      lock_guard lock(rt.drain_mu);
      rt.drain_cv.notify_all();
    }
  }

  // 5. Links and watchers.
  signal_links(p);
  signal_watchers(p);
  drop_own_monitors(p);

  // 6. Free once no thread can still hold a pointer.
  if (!p->external) rt.retire(p);
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
