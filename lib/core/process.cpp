// Spawning, and the operations a process performs on itself and others (basic_process).
#include <beamlet/core/error.hpp>
#include <beamlet/core/process.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <new>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

proc::proc(runtime_core& r, std::uint32_t size) noexcept
    : facade(this, &r, pid()), alloc_size(size) {}

proc::~proc() {
  if (timer != nullptr) {
    timer->~timer_entry();
    deallocate(timer, sizeof(timer_entry));
  }
  if (external) wait_state().~external_wait();
  delete prio.load(std::memory_order_relaxed);
  if (inbox_lanes* l = lanes.load(std::memory_order_relaxed); l != closed_lanes()) delete l;
}

void free_proc(void* obj) noexcept {
  auto* p = static_cast<proc*>(obj);
  const std::size_t size = p->alloc_size;
  p->~proc();
  deallocate(p, size);
}

// -- spawning
// --------------------------------------------------------------------------------------

proc* allocate_proc(runtime_core& rt, std::size_t body_size, std::size_t body_align,
                    const mailbox_limit& limit, const proc* parent) {
  return allocate_proc_for(rt, body_size, body_align, false, limit, parent);
}

namespace {
/// A bounded mailbox's state, made before the process is published (so senders and inspect()
/// only ever see it set). Null when `limit` is unbounded.
std::unique_ptr<mailbox_bound> make_bound(const mailbox_limit& limit) {
  if (limit.capacity == 0) return nullptr;
  if (static_cast<std::uint8_t>(limit.policy) > static_cast<std::uint8_t>(overflow_policy::reject))
    throw std::invalid_argument("beamlet: spawn_options::mailbox: unknown overflow_policy");
  auto b = std::make_unique<mailbox_bound>();
  b->capacity = static_cast<std::int64_t>(
      std::min<std::size_t>(limit.capacity, std::numeric_limits<std::int64_t>::max()));
  b->policy = limit.policy;
  return b;
}
}  // namespace

proc* allocate_proc_for(runtime_core& rt, std::size_t body_size, std::size_t body_align,
                        bool external, const mailbox_limit& limit, const proc* parent) {
  if (rt.closed.load(std::memory_order_relaxed))
    throw system_limit_error("beamlet: the runtime is shutting down");
  if (body_align > proc::body_alignment)
    throw std::invalid_argument("beamlet: over-aligned process bodies are not supported");
  std::unique_ptr<mailbox_bound> bound = make_bound(limit);
  if (external) body_size = sizeof(external_wait);
  const std::size_t size = proc_body_offset + body_size;
  void* mem = allocate(size);
  auto* p = ::new (mem) proc(rt, static_cast<std::uint32_t>(size));
  // Before the table insert below publishes it: process_info reads the parent of any process
  // it finds in the table, a child its spawner has not started yet included.
  if (parent != nullptr) p->parent = parent->id();
  if (bound != nullptr) {
    p->bound = std::move(bound);
    p->bounded = true;
    p->bound->tally.reserved =
        p->bound->policy == overflow_policy::drop_oldest ? nullptr : &p->bound->count;
    p->queue.track_limit(&p->bound->tally);
  }
  try {
    if (external) {
      p->external = true;
      p->state = run_state::ready;
      // A mailbox has no body: its wait state lives there. It is destroyed with the memory, not
      // at exit, because a sender may still be notifying it (see ~proc).
      ::new (p->body_ptr()) external_wait;
    }
    rt.table.insert(p, p->id_slot());
  } catch (...) {
    free_proc(p);
    throw;
  }
  return p;
}

void* body_storage(proc* p) noexcept {
  return p->body_ptr();
}

void set_body_type(proc* p, const body_descriptor* d) noexcept {
  p->body_type.store(d, std::memory_order_relaxed);
}

std::atomic<std::int32_t>* frame_counter(proc* p) noexcept {
  return &p->frame_bytes;
}

process& process_of(proc* p) noexcept {
  return p->facade;
}

void discard_proc(proc* p) noexcept {
  pin guard(*p->rt());
  p->rt()->discarded.fetch_add(1, std::memory_order_relaxed);
  exit_process(p, exit_reason::normal());
}

pid start_proc(proc* p, std::coroutine_handle<task_promise<void>> body, const spawn_options& flags,
               proc* parent, ref* monitor_ref) noexcept {
  runtime_core& rt = *p->rt();
  p->body = body;
  p->resume_point = body;
  const pid id = p->id();
  if (parent != nullptr) {
    // Set up before the child can run: spawn_link/spawn_monitor are atomic (no window in which
    // the child could die unobserved).
    try {
      if (flags.link) {
        p->links.insert(parent->id().serial(), {});
        parent->links.insert(id.serial(), {});
      }
      if (flags.monitor) {
        if (flags.marked) {
          drain(parent);
          // The ref is made after the marker, so nothing carrying it can be queued before.
        }
        const std::uint64_t r = rt.new_ref();
        if (flags.marked) parent->queue.set_marker(r);
        std::uint32_t slot;
        {
          // The child is published, so a concurrent monitor() could touch its set.
          detail::lock_guard lock(p->watchers_lock);
          slot = p->watchers.add(r, parent->id());
        }
        parent->monitors.insert(r, monitor_entry{id, slot, nullptr});
        *monitor_ref = ref(r);
      }
    } catch (...) {
      // Out of memory while linking: the child never runs; report it as an immediate death.
      exit_process(p, exit_reason::from_exception(std::current_exception()));
      return id;
    }
  }
  rt.sched.spawned(p);
  return id;
}

// -- messaging entry points -----------------------------------------------------------------------

void send_node(runtime_core& rt, pid to, message_node* n) noexcept {
  // A remote pid goes to the layer without a pin: a busy connection may make an outside thread
  // wait there (backpressure), and a pin held meanwhile would hold up every reclamation.
  if (to.is_remote()) [[unlikely]] {
    deliver(rt, to, n);
    return;
  }
  pin guard(rt);
  deliver(rt, to, n);
}

send_status send_node_checked(runtime_core& rt, pid to, message_node* n,
                              message_node** give_back) noexcept {
  if (to.is_remote()) [[unlikely]] {
    remote_hooks* h = rt.hooks.remote.load(std::memory_order_acquire);
    if (h == nullptr) {
      destroy_node(n);
      return send_status::no_process;
    }
    return h->send(to, n);
  }
  pin guard(rt);
  proc* p = rt.table.lookup(to);
  if (p == nullptr) {
    destroy_node(n);
    return send_status::no_process;
  }
  if (p->bounded) return push_bounded(p, n, give_back);
  return push(p, n) ? send_status::queued : send_status::no_process;
}

std::error_code status_error(send_status s) noexcept {
  switch (s) {
    case send_status::queued:
      return {};
    case send_status::full:
      return errc::mailbox_full;
    case send_status::no_process:
      return errc::not_alive;
    case send_status::refused:
      return errc::not_encodable;
  }
  return {};
}

send_status send_priority_node(runtime_core& rt, const priority_alias& to,
                               message_node* n) noexcept {
  message_node* wrapper;
  try {
    wrapper = make_node<priority_signal>(priority_tag, priority_signal{to.id.value(), n});
  } catch (...) {
    // Out of memory: lost, as a message to a process that cannot take it (the temporary
    // priority_signal owned `n` and has destroyed it).
    return send_status::no_process;
  }
  pin guard(rt);
  return deliver(rt, to.owner, wrapper) ? send_status::queued : send_status::no_process;
}

void clear_marker(basic_process& self, ref r) noexcept {
  self.p_->queue.clear_marker(r.value());
}

std::optional<priority_alias> published_priority_alias(runtime_core& rt, pid who) noexcept {
  pin guard(rt);
  proc* p = rt.table.lookup(who);
  if (p == nullptr) return std::nullopt;
  const priority_state* urgent = p->prio.load(std::memory_order_acquire);
  const std::uint64_t a = urgent != nullptr ? urgent->published.load(std::memory_order_acquire) : 0;
  if (a == 0) return std::nullopt;
  return priority_alias{who, ref(a)};
}

std::error_code send_node_named(runtime_core& rt, std::string_view name, message_node* n) noexcept {
  std::optional<pid> to;
  try {
    to = rt.names.whereis(name);
  } catch (...) {
    destroy_node(n);
    return std::make_error_code(std::errc::not_enough_memory);
  }
  if (!to) {
    destroy_node(n);
    return errc::not_registered;
  }
  send_node(rt, *to, n);
  return {};
}

pid whereis_in(runtime_core& rt, std::string_view name) {
  return rt.names.whereis(name).value_or(pid());
}

bool is_alive_in(runtime_core& rt, pid p) noexcept {
  if (!p) return false;
  pin guard(rt);
  proc* q = rt.table.lookup(p);
  return q != nullptr && q->inbox.load(std::memory_order_acquire) != inbox_word::closed;
}

clock_time now_in(const runtime_core& rt) noexcept {
  return rt.now();
}

unsigned scheduler_count(const runtime_core& rt) noexcept {
  return rt.options.schedulers;
}

std::error_code unregister_in(runtime_core& rt, std::string_view name) {
  pin guard(rt);
  return rt.names.unregister_name(name, rt.table);
}

runtime_core* runtime_of(const basic_process& p) noexcept {
  return p.rt_;
}

ref send_node_after(runtime_core& rt, pid to, message_node* n, timeout_value delay) {
  return rt.timers.send_after(to, n, delay);
}

}  // namespace detail

// -- basic_process
// ---------------------------------------------------------------------------------

using detail::pin;

std::optional<std::chrono::nanoseconds> basic_process::cancel_timer(ref timer) const {
  if (!timer) return std::nullopt;
  return rt_->timers.cancel_send_after(timer);
}

void basic_process::link(pid other) {
  detail::proc* p = p_;
  if (other == self_) return;
  auto& links = p->links;
  bool delivered = false;
  if (other) {  // the null pid names no process: it is never recorded
    if (links.contains(other.serial())) return;
    links.insert(other.serial(), {});
    pin guard(*rt_);
    delivered = detail::deliver(
        *rt_, other,
        detail::make_node<detail::link_signal>(detail::link_tag, detail::link_signal{self_}));
  }
  if (delivered) return;
  // The peer is gone (spec §2 rule 2, OTP 25).
  links.erase(other.serial());
  if (p->trap) {
    detail::self_deliver(p, detail::make_message(exit_message{other, exit_reason::noproc()}));
  } else {
    throw exit_exception(exit_reason::noproc());
  }
}

void basic_process::unlink(pid other) noexcept {
  detail::proc* p = p_;
  if (!other || !p->links.erase(other.serial())) return;
  try {
    pin guard(*rt_);
    detail::deliver(
        *rt_, other,
        detail::make_node<detail::unlink_signal>(detail::unlink_tag, detail::unlink_signal{self_}));
  } catch (...) {
    // Out of memory: the peer keeps a one-sided link; its exit signal is ignored here anyway
    // because our side is gone.
  }
}

void basic_process::exit(pid target, const exit_reason& reason) {
  detail::proc* p = p_;
  if (target == self_) {
    // A signal to oneself is acted on at once (BEAM handles it on return from the BIF).
    const auto k = reason.which();
    if (k == exit_reason::kind::kill) throw exit_exception(exit_reason::killed());
    if (p->trap) {
      detail::self_deliver(p, detail::make_message(exit_message{self_, reason}));
      return;
    }
    throw exit_exception(reason);  // `normal` too: exit(self(), normal) ends the caller
  }
  if (!target) return;  // names no process: like a dead one, no effect
  pin guard(*rt_);
  detail::deliver(*rt_, target,
                  detail::make_node<detail::exit_signal>(
                      detail::exit_tag, detail::exit_signal{self_, reason, false}));
}

bool basic_process::trap_exit(bool on) noexcept {
  p_->trap_flag.store(on, std::memory_order_relaxed);
  return std::exchange(p_->trap, on);
}

bool basic_process::trap_exit() const noexcept {
  return p_->trap;
}

ack_wait_mode basic_process::ack_wait(ack_wait_mode mode) noexcept {
  return std::exchange(p_->ack_mode, mode);
}

ack_wait_mode basic_process::ack_wait() const noexcept {
  return p_->ack_mode;
}

ref basic_process::make_ref() const noexcept {
  return ref(rt_->new_ref());
}

ref basic_process::make_ref(marked_t) noexcept {
  detail::drain(p_);
  const std::uint64_t r = rt_->new_ref();
  p_->queue.set_marker(r);
  return ref(r);
}

namespace {

// A monitor of a process on another node: recorded here, then asked of its node, whose answer
// (a DOWN, noproc or noconnection) comes back as a remote DOWN signal.
// `name` (null for a monitor by pid) goes into the monitor's entry, or back into `name` when
// the monitor ends at once (its DOWN carries the name).
template <class NoprocDown>
ref monitor_remote(detail::proc* p, detail::runtime_core& rt, pid target, std::uint64_t r,
                   std::unique_ptr<std::string>& name, NoprocDown& noproc_down) {
  detail::remote_hooks* h = rt.hooks.remote.load(std::memory_order_acquire);
  if (h == nullptr) {  // no node runs: nothing remote can be alive
    noproc_down();
    return ref(r);
  }
  p->monitors.insert(r, detail::monitor_entry{target, 0, std::move(name)});
  if (!h->monitor(p->id(), target, r)) {
    detail::monitor_entry e;
    p->monitors.erase(r, &e);
    name = std::move(e.name);
    noproc_down();
  }
  return ref(r);
}

ref monitor_impl(detail::proc* p, detail::runtime_core& rt, pid target, bool marked,
                 std::unique_ptr<std::string> name) {
  if (marked) detail::drain(p);
  const std::uint64_t r = rt.new_ref();
  if (marked) p->queue.set_marker(r);
  auto noproc_down = [&] {
    std::string n = name != nullptr ? std::move(*name) : std::string();
    detail::self_deliver(
        p, detail::make_message(down{ref(r), target, exit_reason::noproc(), std::move(n)}));
  };
  if (target == p->id()) return ref(r);  // monitoring oneself creates no entry (spec §3 rule 7)
  pin guard(rt);
  if (target.is_remote()) [[unlikely]]
    return monitor_remote(p, rt, target, r, name, noproc_down);
  detail::proc* t = target ? rt.table.lookup(target) : nullptr;
  if (t == nullptr) {
    noproc_down();
    return ref(r);
  }
  // Record the monitor on our side first, then on the target: a DOWN can only come after the
  // latter, and we will find the entry when it arrives.
  auto& map = p->monitors;
  detail::monitor_entry* entry = map.insert(r, detail::monitor_entry{target, 0, std::move(name)});
  {
    detail::lock_guard lock(t->watchers_lock);
    if (!t->watchers_closed) {
      try {
        entry->slot = t->watchers.add(r, p->id());
        return ref(r);
      } catch (...) {
        map.erase(r);
        throw;
      }
    }
  }
  // The target is exiting and has already told its watchers: it is not alive for us.
  detail::monitor_entry gone;
  map.erase(r, &gone);
  name = std::move(gone.name);
  noproc_down();
  return ref(r);
}

}  // namespace

ref basic_process::monitor(pid target) {
  return monitor_impl(p_, *rt_, target, false, nullptr);
}

ref basic_process::monitor(pid target, marked_t) {
  return monitor_impl(p_, *rt_, target, true, nullptr);
}

ref basic_process::monitor(std::string_view name) {
  const std::optional<pid> target = rt_->names.whereis(name);
  return monitor_impl(p_, *rt_, target.value_or(pid()), false, std::make_unique<std::string>(name));
}

bool basic_process::demonitor(ref r) noexcept {
  detail::proc* p = p_;
  detail::monitor_entry e;
  if (!r || !p->monitors.erase(r.value(), &e)) return false;
  {
    pin guard(*rt_);
    detail::drop_monitor(*rt_, self_, r.value(), e);
  }
  return true;
}

bool basic_process::demonitor(ref r, flush_t) noexcept {
  // A DOWN reaches the queue only when the monitor fires, which also removes it from our map.
  // So if the monitor was still active, no DOWN can be queued (one still in flight is dropped
  // at the door): the common case, as after every call, costs no scan at all.
  if (demonitor(r)) return true;
  if (!r) return false;
  detail::proc* p = p_;
  try {
    detail::drain(p);
  } catch (...) {
    // drain only allocates to trap exits; a failure there already marked the process exiting.
  }
  detail::message_node* prev = p->queue.marker_position(r.value());
  for (detail::message_node* n = prev->next; n != nullptr; prev = n, n = n->next) {
    if (n->type == detail::tag_of<down>() && detail::payload<down>(n).ref == r) {
      detail::destroy_node(p->queue.unlink_after(prev));
      break;
    }
  }
  return false;
}

std::error_code basic_process::register_name(std::string_view name) {
  return rt_->names.register_name(name, p_);
}

void basic_process::set_label(std::string_view key, std::string value) {
  auto& t = rt_->labels;
  detail::lock_guard lock(t.mu);
  auto& labels = t.by_serial[p_->id().serial()];
  const auto it = std::lower_bound(labels.begin(), labels.end(), key,
                                   [](const auto& kv, std::string_view k) { return kv.first < k; });
  const bool found = it != labels.end() && it->first == key;
  if (value.empty()) {
    if (found) labels.erase(it);
  } else if (found) {
    it->second = std::move(value);
  } else {
    labels.emplace(it, std::string(key), std::move(value));
  }
  if (labels.empty()) t.by_serial.erase(p_->id().serial());
  p_->labelled = true;  // (an exit finding none left erases nothing)
}

bool basic_process::is_alive(pid p) const noexcept {
  return detail::is_alive_in(*rt_, p);
}

std::size_t basic_process::message_queue_len() noexcept {
  try {
    detail::drain(p_);
  } catch (...) {
  }
  const std::size_t urgent = p_->urgent() != nullptr ? p_->urgent()->queue.size() : 0;
  return p_->queue.size() + urgent;
}

priority_alias basic_process::make_priority_alias(bool publish) {
  detail::proc* p = p_;
  if (p->urgent() == nullptr) p->prio.store(new detail::priority_state, std::memory_order_release);
  const std::uint64_t id = rt_->new_ref();
  p->urgent()->aliases.push_back(id);
  // Publishing again replaces the published alias; the earlier one stays active.
  if (publish) p->urgent()->published.store(id, std::memory_order_release);
  return priority_alias{self_, ref(id)};
}

bool basic_process::unalias(const priority_alias& a) noexcept {
  detail::proc* p = p_;
  if (a.owner != self_ || p->urgent() == nullptr) return false;
  // The published alias lives as long as the process: whoever looked it up may be sending
  // through it (a stop, a shutdown), and must not find it dead while the process is not.
  if (p->urgent()->published.load(std::memory_order_relaxed) == a.id.value()) return false;
  auto& v = p->urgent()->aliases;
  const auto it = std::find(v.begin(), v.end(), a.id.value());
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

void basic_process::exit(const priority_alias& target, const exit_reason& reason) {
  if (!target) return;
  detail::message_node* inner = detail::make_node<detail::exit_signal>(
      detail::exit_tag, detail::exit_signal{self_, reason, false});
  detail::send_priority_node(*rt_, target, inner);
}

std::vector<pid> basic_process::monitors() const {
  std::vector<pid> out;
  out.reserve(p_->monitors.size());
  p_->monitors.for_each([&](std::uint64_t, detail::monitor_entry& e) { out.push_back(e.target); });
  return out;
}

std::uint64_t basic_process::messages_examined() const noexcept {
  return p_->queue.scanned();
}

BEAMLET_END_PRIVATE_NAMESPACE
