// What the core tells the observability layer: events (crash reports go through the event
// sink), the system monitor's alarms, and process inspection.
//
// Inspection reads a process without its cooperation. Its counters are atomics the owner
// writes with plain relaxed stores, and the length of its undrained inbox rides in the inbox
// word, so they are read at any time, even from a process holding a million messages, without
// walking anything. Its lists (links, monitors, what it waits for) belong to the owner; another
// thread may read them only while the owner is parked, and only if it keeps it parked: the
// inspector swaps the inbox's `blocked` mark for `inspected`, which makes a sender's push queue
// its message without waking the process, reads, and puts `blocked` back (waking the process
// itself if a message came meanwhile). A mailbox is held in its wait by its mutex instead.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "observation.hpp"
#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "scheduler.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string_view to_string(log_level l) noexcept {
  switch (l) {
    case log_level::emergency:
      return "emergency";
    case log_level::alert:
      return "alert";
    case log_level::critical:
      return "critical";
    case log_level::error:
      return "error";
    case log_level::warning:
      return "warning";
    case log_level::notice:
      return "notice";
    case log_level::info:
      return "info";
    case log_level::debug:
      return "debug";
  }
  return "unknown";
}

namespace detail {

// -- events ------------------------------------------------------------------------------------

void install_hook(runtime_core& rt, event_sink* sink) noexcept {
  lock_guard lock(rt.hooks_mu);
  // Levels off first: an event that still finds them on finds the new sink (or none).
  rt.event_level.store(-1, std::memory_order_relaxed);
  rt.report_level.store(-1, std::memory_order_relaxed);
  rt.hooks.events.store(sink, std::memory_order_release);
}

void set_event_level(runtime_core& rt, log_level level, bool reports) noexcept {
  lock_guard lock(rt.hooks_mu);
  if (rt.hooks.events.load(std::memory_order_relaxed) == nullptr) return;
  rt.event_level.store(static_cast<int>(level), std::memory_order_release);
  rt.report_level.store(reports ? static_cast<int>(level) : -1, std::memory_order_release);
}

bool log_enabled(const runtime_core& rt, log_level level) noexcept {
  return static_cast<int>(level) <= rt.event_level.load(std::memory_order_relaxed);
}

bool report_enabled(const runtime_core& rt, log_level level) noexcept {
  return static_cast<int>(level) <= rt.report_level.load(std::memory_order_relaxed);
}

void emit_event(runtime_core& rt, log_event&& e) noexcept {
  if (!(e.report.empty() ? log_enabled(rt, e.level) : report_enabled(rt, e.level))) return;
  event_sink* sink = rt.hooks.events.load(std::memory_order_acquire);
  if (sink == nullptr) return;
  if (e.time == std::chrono::system_clock::time_point{}) e.time = std::chrono::system_clock::now();
  sink->emit(std::move(e));
}

// -- the system monitor ------------------------------------------------------------------------

void set_system_monitor(runtime_core& rt, const system_monitor_settings& s) noexcept {
  auto& m = rt.monitor;
  const bool on = static_cast<bool>(s.subscriber);
  m.active.store(0, std::memory_order_relaxed);
  m.subscriber.store(s.subscriber.serial(), std::memory_order_relaxed);
  m.long_queue_disable.store(on ? s.long_queue_disable : 0, std::memory_order_relaxed);
  m.long_schedule_ns.store(on ? s.long_schedule.count() : 0, std::memory_order_relaxed);
  m.long_queue_enable.store(on ? s.long_queue_enable : 0, std::memory_order_relaxed);
  // A new subscriber (or none) has heard of no alarm: every process starts from "off".
  {
    pin guard(rt);
    rt.table.for_each([](proc* p) { p->queue_alarm.store(false, std::memory_order_relaxed); });
  }
  std::uint8_t active = 0;
  if (on && s.long_queue_enable != 0) active |= monitor_queue;
  if (on && s.long_schedule.count() != 0) active |= monitor_schedule;
  if (on && s.busy_dist_port) active |= monitor_busy_dist;
  // Last: runs test this one first.
  m.active.store(active, std::memory_order_release);
}

system_monitor_settings system_monitor_of(const runtime_core& rt) noexcept {
  const auto& m = rt.monitor;
  system_monitor_settings s;
  s.subscriber = pid(m.subscriber.load(std::memory_order_relaxed));
  s.long_queue_enable = m.long_queue_enable.load(std::memory_order_relaxed);
  s.long_queue_disable = m.long_queue_disable.load(std::memory_order_relaxed);
  s.long_schedule = std::chrono::nanoseconds(m.long_schedule_ns.load(std::memory_order_relaxed));
  s.busy_dist_port = (m.active.load(std::memory_order_relaxed) & monitor_busy_dist) != 0;
  return s;
}

namespace {
void send_alarm(runtime_core& rt, monitor_alarm a) noexcept {
  const pid to(rt.monitor.subscriber.load(std::memory_order_relaxed));
  if (!to) return;
  try {
    deliver(rt, to, make_message(a));
  } catch (...) {
    // Out of memory: this alarm is lost; the next state change sends another.
  }
}
}  // namespace

void busy_port_alarm(runtime_core& rt, pid suspended, pid port) noexcept {
  if ((rt.monitor.active.load(std::memory_order_acquire) & monitor_busy_dist) == 0) return;
  const monitor_alarm a{monitor_alarm::kind::busy_dist_port, suspended, true, 0, {}, port};
  send_alarm(rt, a);
}

namespace {
// The process's own memory besides its queue: record, frames, and sender lanes if it has them.
std::size_t record_bytes(const proc* p) noexcept {
  const inbox_lanes* l = p->lanes.load(std::memory_order_acquire);
  return p->alloc_size +
         static_cast<std::size_t>(
             std::max<std::int32_t>(0, p->frame_bytes.load(std::memory_order_relaxed))) +
         (l != nullptr && l != closed_lanes() ? sizeof(inbox_lanes) : 0);
}

std::size_t undrained_messages(const proc* p, std::uintptr_t word) noexcept {
  if (word == inbox_word::closed) return 0;
  std::size_t n = inbox_word::count(word);
  bool saturated = n == inbox_word::max_count;
  if (const inbox_lanes* l = p->lanes.load(std::memory_order_acquire)) [[unlikely]] {
    for (const auto& lane : l->lanes) {
      const std::uint32_t c = inbox_word::count(lane.word.load(std::memory_order_relaxed));
      n += c;
      saturated = saturated || c == inbox_word::max_count;
    }
  }
  if (saturated) {
    // The overflow is added after the push and taken back at the drain, so it can be briefly
    // off in either direction while both happen; it never goes below zero for long.
    const std::int64_t extra = p->inbox_overflow.load(std::memory_order_relaxed);
    if (extra > 0) n += static_cast<std::size_t>(extra);
  }
  return n;
}
}  // namespace

namespace {
struct queue_reading {
  std::size_t queued = 0;
  std::uintptr_t word = 0;
  std::size_t undrained = 0;  ///< undrained_messages(word), lanes included
};

// The owner counts arrivals in the queue's length as it takes them out of the inbox
// (message_queue::add_arriving), inside a seqlock's write section (begin_arrival): a reading of
// the length and the inbox word that straddles that moment would miss the whole batch, so it is
// taken again. The section is a few instructions long; the spin is short.
queue_reading read_queue(const proc* p) noexcept {
  for (int attempt = 0;; ++attempt) {
    const std::uint16_t before = p->queue.arrival_seq();
    if ((before & 1u) == 0) {
      queue_reading r;
      r.queued = p->queue.size();
      r.word = p->inbox.load(std::memory_order_relaxed);
      r.undrained = undrained_messages(p, r.word);  // the lanes too, inside the section
      std::atomic_thread_fence(std::memory_order_acquire);
      if (p->queue.arrival_seq() == before) return r;
    }
    if (attempt > 64) std::this_thread::yield();  // the owner was preempted inside
  }
}
}  // namespace

std::size_t queue_length(const proc* p) noexcept {
  const queue_reading r = read_queue(p);
  return r.queued + r.undrained;
}

void alarm_queue(proc* p, bool on) noexcept {
  if (p->queue_alarm.exchange(on, std::memory_order_acq_rel) == on) return;  // no change
  monitor_alarm a{monitor_alarm::kind::long_message_queue, p->id(), on, queue_length(p), {}, {}};
  send_alarm(*p->rt(), a);
}

void check_queue_alarm(proc* p) noexcept {
  const auto& m = p->rt()->monitor;
  if (p->queue_alarm.load(std::memory_order_relaxed)) {
    if (queue_length(p) <= m.long_queue_disable.load(std::memory_order_relaxed))
      alarm_queue(p, false);
  } else if (const std::size_t enable = m.long_queue_enable.load(std::memory_order_relaxed);
             enable != 0 && queue_length(p) >= enable) {
    alarm_queue(p, true);
  }
}

void check_long_schedule(proc* p, std::int64_t ns) noexcept {
  const std::int64_t limit = p->rt()->monitor.long_schedule_ns.load(std::memory_order_relaxed);
  if (limit == 0 || ns <= limit) return;
  send_alarm(*p->rt(), monitor_alarm{monitor_alarm::kind::long_schedule,
                                     p->id(),
                                     true,
                                     queue_length(p),
                                     std::chrono::nanoseconds(ns),
                                     {}});
}

// -- wait labels -------------------------------------------------------------------------------

void set_waiting_for(basic_process& self, const char* what, pid who) noexcept {
  self.p_->wait_what = what;
  self.p_->wait_who = who;
}

// -- inspection --------------------------------------------------------------------------------

std::vector<pid> ancestors_of(runtime_core& rt, const proc* p) {
  std::vector<pid> out;
  pin guard(rt);
  pid next = p->parent;
  while (next && out.size() < 64) {  // bounded: a chain longer than that is not a tree
    out.push_back(next);
    const proc* q = rt.table.lookup(next);
    if (q == nullptr) break;
    next = q->parent;
  }
  return out;
}

std::string pid_list(const std::vector<pid>& pids) {
  std::string s = "[";
  for (std::size_t i = 0; i < pids.size(); ++i) {
    if (i > 0) s += ',';
    s += pids[i].to_string();
  }
  return s + "]";
}

std::string named_list(runtime_core& rt, const std::vector<pid>& pids) {
  std::string s = "[";
  for (std::size_t i = 0; i < pids.size(); ++i) {
    if (i > 0) s += ',';
    pin guard(rt);
    const proc* p = rt.table.lookup(pids[i]);
    const auto name = p != nullptr ? rt.names.name_of(p) : std::nullopt;
    s += name ? *name : pids[i].to_string();
  }
  return s + "]";
}

namespace {

// Is a worker running p right now? (Each worker's running slot holds the process it runs.)
bool running_on_a_worker(runtime_core& rt, const proc* p) noexcept {
  bool running = false;
  rt.sched.for_each_worker([&](const worker& w) {
    if (const auto* slot = w.running_slot.load(std::memory_order_acquire))
      running = running || slot->load(std::memory_order_relaxed) == p;
  });
  return running;
}

// The owner-only lists of a process that is held parked.
void read_lists(proc* p, process_details& s) {
  p->links.for_each([&](std::uint64_t serial, empty_value&) { s.links.emplace_back(serial); });
  std::sort(s.links.begin(), s.links.end());
  p->monitors.for_each([&](std::uint64_t, monitor_entry& e) {
    if (e.name != nullptr)
      s.monitored_names.push_back(*e.name);
    else
      s.monitors.push_back(e.target);
  });
  std::sort(s.monitors.begin(), s.monitors.end());
  if (p->op != nullptr && p->wait_what != nullptr) {
    s.waiting_for = p->wait_what;
    if (p->wait_who) s.waiting_for.append(" ").append(p->wait_who.to_string());
  } else if (p->op != nullptr) {
    s.waiting_for = "a message";
  }
  const message_node* n = p->queue.head()->next;
  for (; n != nullptr && s.queued_types.size() < queued_types_shown; n = n->next)
    if (n->type->kind == node_kind::message)
      s.queued_types.push_back(demangled_name(*n->type->type));
  s.complete = true;
}

// Holds a parked coroutine process parked while its lists are read.
void inspect_parked(runtime_core& rt, proc* p, process_details& s) {
  std::uintptr_t expected = inbox_word::blocked;
  if (!p->inbox.compare_exchange_strong(expected, inbox_word::inspected, std::memory_order_acq_rel))
    return;  // not parked (any more): lists stay empty, `complete` false
  try {
    read_lists(p, s);
  } catch (...) {
  }
  expected = inbox_word::inspected;
  if (!p->inbox.compare_exchange_strong(expected, inbox_word::blocked, std::memory_order_acq_rel))
    rt.sched.wake(p);  // a message came meanwhile: its sender left the wake-up to us
}

void inspect_mailbox(proc* p, process_details& s) {
  lock_guard lock(p->wait_state().mu);
  // Under the mutex, a mailbox whose word is `blocked` is in its wait and cannot leave it.
  if (p->inbox.load(std::memory_order_acquire) != inbox_word::blocked) return;
  try {
    read_lists(p, s);
  } catch (...) {
  }
}

}  // namespace

std::optional<process_details> inspect(runtime_core& rt, pid id) {
  pin guard(rt);
  proc* p = id ? rt.table.lookup(id) : nullptr;
  if (p == nullptr) return std::nullopt;
  process_details s;
  s.pid = id;
  s.outside_thread = p->external;
  const queue_reading q = read_queue(p);
  const std::uintptr_t word = q.word;
  const std::size_t undrained = q.undrained;
  const priority_state* urgent = p->prio.load(std::memory_order_acquire);
  s.message_queue_len = q.queued + undrained + (urgent != nullptr ? urgent->queue.size() : 0);
  s.queue_bytes = p->queue.bytes();
  s.messages_received = p->queue.received() + undrained;
  s.messages_examined = p->queue.scanned();
  if (p->bound != nullptr) {
    s.mailbox_capacity = static_cast<std::size_t>(p->bound->capacity);
    s.messages_dropped = p->bound->dropped.load(std::memory_order_relaxed);
  }
  s.reductions = p->reductions_done.load(std::memory_order_relaxed);
  s.trap_exit = p->trap_flag.load(std::memory_order_relaxed);
  s.parent = p->parent;
  const body_descriptor* body = p->body_type.load(std::memory_order_relaxed);
  if (body != nullptr) s.initial_call = demangled_name(*body->initial_call);
  if (p->external) s.initial_call = "beamlet::scoped_process";
  const bool self = p == running_proc();
  if (word == inbox_word::closed) {
    s.status = process_status::exiting;
  } else if (self || running_on_a_worker(rt, p) ||
             (p->external && (word & inbox_word::pointer_mask) != inbox_word::blocked)) {
    // (A mailbox not blocked in its receive: its thread is running code of its own.)
    s.status = process_status::running;
  } else if ((word & inbox_word::pointer_mask) == inbox_word::blocked ||
             (word & inbox_word::pointer_mask) == inbox_word::inspected) {
    s.status = p->pauses.load(std::memory_order_relaxed) != 0 ? process_status::suspended
                                                              : process_status::waiting;
  } else {
    s.status = process_status::runnable;
  }
  s.registered_name = rt.names.name_of(p).value_or(std::string());
  {
    lock_guard lock(rt.labels.mu);
    if (const auto it = rt.labels.by_serial.find(id.serial()); it != rt.labels.by_serial.end())
      s.labels = it->second;
  }
  {
    detail::lock_guard lock(p->watchers_lock);
    // Its monitors have been told (or are being told) it is dead: whoever got a DOWN must not
    // find it alive here, as on BEAM.
    if (p->watchers_closed) return std::nullopt;
    for (const auto& w : p->watchers)
      if (w.ref != 0) s.monitored_by.push_back(w.watcher);
  }
  std::sort(s.monitored_by.begin(), s.monitored_by.end());
  if (self) {
    read_lists(p, s);  // the owner asking: its lists are its own
    s.waiting_for.clear();
  } else if (s.status == process_status::waiting) {
    if (p->external)
      inspect_mailbox(p, s);
    else
      inspect_parked(rt, p, s);
  }
  s.ancestors = ancestors_of(rt, p);
  s.memory = record_bytes(p) + s.queue_bytes;
  return s;
}

std::string registered_name_of(runtime_core& rt, pid id) {
  pin guard(rt);
  const proc* p = id ? rt.table.lookup(id) : nullptr;
  if (p == nullptr) return {};
  return rt.names.name_of(p).value_or(std::string());
}

std::vector<pid> process_list(runtime_core& rt) {
  std::vector<pid> out;
  out.reserve(rt.table.size());
  pin guard(rt);
  rt.table.for_each([&](proc* p) { out.push_back(p->id()); });
  std::sort(out.begin(), out.end());
  return out;
}

void visit_processes(runtime_core& rt, const std::function<void(const process_sample&)>& f) {
  pin guard(rt);
  rt.table.for_each([&](proc* p) {
    process_sample s;
    s.id = p->id();
    s.parent = p->parent;
    s.message_queue_len = queue_length(p);
    s.memory = record_bytes(p) + p->queue.bytes();
    s.reductions = p->reductions_done.load(std::memory_order_relaxed);
    if (const body_descriptor* body = p->body_type.load(std::memory_order_relaxed))
      s.initial_call = body->initial_call;
    f(s);
  });
}

std::vector<process_sample> sample_processes(runtime_core& rt) {
  std::vector<process_sample> out;
  out.reserve(rt.table.size() + 16);
  visit_processes(rt, [&](const process_sample& s) { out.push_back(s); });
  std::sort(out.begin(), out.end(),
            [](const process_sample& a, const process_sample& b) { return a.id < b.id; });
  return out;
}

std::vector<int> scheduler_threads(runtime_core& rt) {
  std::vector<int> out;
  rt.sched.for_each_worker(
      [&](const worker& w) { out.push_back(w.tid.load(std::memory_order_acquire)); });
  return out;
}

std::vector<std::pair<std::string, pid>> registered_processes(runtime_core& rt) {
  return rt.names.entries();
}

runtime_stats stats_of(runtime_core& rt) {
  runtime_stats s;
  // Read before the table's totals, so that an exit counted by class is also in the total.
  const auto add = [&s](const event_counters& c) {
    s.exits_shutdown += c.exits[0].load(std::memory_order_relaxed);
    s.exits_killed += c.exits[1].load(std::memory_order_relaxed);
    s.exits_error += c.exits[2].load(std::memory_order_relaxed);
    s.messages_delivered += c.delivered.load(std::memory_order_relaxed);
  };
  s.messages_dropped = rt.messages_dropped.load(std::memory_order_relaxed);
  add(rt.outside_counters);
  s.schedulers = rt.sched.size();
  rt.sched.for_each_worker([&](const worker& w) {
    add(w.counters);
    s.run_queues.push_back(w.ring.size());
  });
  s.global_queue = rt.sched.global_queued();
  // Spawns and exits from the table: every insert is a spawn, a mailbox or a discarded
  // allocation; every insert no longer in the table has exited. (A process that has exited but
  // is not yet out of the table counts as alive for a moment.)
  const std::uint64_t discarded = rt.discarded.load(std::memory_order_relaxed);
  const std::uint64_t opened = rt.scoped_processes_opened.load(std::memory_order_relaxed);
  s.processes = rt.table.size();
  s.scoped_processes = rt.scoped_processes.load(std::memory_order_relaxed);
  const std::uint64_t inserted = rt.table.inserted();
  const auto sub = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  s.spawns = sub(inserted, opened + discarded);
  const std::uint64_t exits = sub(inserted, s.processes + discarded);
  s.exits_normal = sub(exits, s.exits_shutdown + s.exits_killed + s.exits_error);
  s.timers = rt.timers.pending();
  return s;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
