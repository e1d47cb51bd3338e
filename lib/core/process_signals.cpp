// Inbox delivery and signal handling (spec §1.1, §2, §3).
#include <algorithm>
#include <bit>
#include <cassert>
#include <utility>

#include <cstdlib>
#include <new>

#include "observation.hpp"
#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

void wake(proc* p) noexcept {
  if (p->external) {
    // The owner waits on the condition variable with the inbox as its predicate; taking the
    // mutex orders this notify after its check.
    lock_guard lock(p->wait_state().mu);
    p->wait_state().cv.notify_one();
  } else {
    p->rt()->sched.wake(p);
  }
}

// A trapped exit becomes an ordinary message (spec §2 rule 6), or a priority one when the
// signal came through a priority alias.
void trap(proc* p, pid from, exit_reason reason, bool priority) {
  message_queue& q = priority ? p->urgent()->queue : p->queue;
  q.push_back(make_message(exit_message{from, std::move(reason)}));
}

void begin_exit(proc* p, exit_reason reason) noexcept {
  if (p->exiting) return;
  p->exiting = true;
  p->reason = std::move(reason);
}

void handle_exit_signal(proc* p, message_node* n, bool priority = false) {
  auto& sig = payload<exit_signal>(n);
  if (sig.via_link) {
    // A link exit only counts while the link exists: unlink() makes it harmless (§2 rule 3).
    if (!p->links.erase(sig.from.serial())) return;
  }
  if (p->exiting) return;
  const auto k = sig.reason.which();
  if (!sig.via_link && k == exit_reason::kind::kill) {
    begin_exit(p, exit_reason::killed());  // untrappable (§2 rule 7)
  } else if (p->trap) {
    trap(p, sig.from, std::move(sig.reason), priority);
  } else if (k == exit_reason::kind::normal) {
    // Ignored, except exit(self(), normal), which ends the caller (§2 rule 7).
    if (!sig.via_link && sig.from == p->id()) begin_exit(p, exit_reason::normal());
  } else {
    begin_exit(p, std::move(sig.reason));  // same reason; a linked `kill` stays `kill` (rule 5)
  }
}

// Returns true if the node was consumed into the queue (ownership moved).
bool handle_signal(proc* p, message_node* n) {
  switch (kind_of(n)) {
    case signal_kind::link: {
      const pid from = payload<link_signal>(n).from;
      p->links.insert(from.serial(), {});
      return false;
    }
    case signal_kind::unlink:
      p->links.erase(payload<unlink_signal>(n).from.serial());
      return false;
    case signal_kind::exit:
      handle_exit_signal(p, n);
      return false;
    case signal_kind::down: {
      auto& d = payload<down>(n);
      monitor_entry e;
      // Only a monitor still held produces a DOWN: demonitor() drops late ones (§3 rule 5).
      if (p->exiting || !p->monitors.erase(d.ref.value(), &e)) return false;
      if (e.name != nullptr) d.name = std::move(*e.name);
      n->type = tag_of<down>();
      p->queue.push_back(n);
      return true;
    }
    case signal_kind::reply: {
      // Accepted only while the call's monitor is held (OTP's alias): a late reply is dropped.
      const auto* ext = static_cast<const reply_ext*>(n->type->ext);
      if (p->exiting || !p->monitors.contains(ext->tag(n))) return false;
      n->type = ext->message_form;
      p->queue.push_back(n);
      return true;
    }
    case signal_kind::priority: {
      auto& s = payload<priority_signal>(n);
      // Only an active alias delivers (EEP 76): otherwise dropped, with what it carries.
      if (p->exiting || p->urgent() == nullptr || !p->urgent()->active(s.alias)) return false;
      if (s.inner->type->kind == node_kind::message) {
        p->urgent()->queue.push_back(std::exchange(s.inner, nullptr));
      } else {
        handle_exit_signal(p, s.inner, /*priority=*/true);
      }
      return false;
    }
    case signal_kind::timeout:
      if (p->timer_armed && payload<timeout_signal>(n).seq == p->receive_seq) {
        p->timer_armed = false;
        p->timeout_fired = true;
      }
      return false;
    case signal_kind::resume:
      if (const auto held = p->pauses.load(std::memory_order_relaxed); held != 0)
        p->pauses.store(static_cast<std::uint16_t>(held - 1), std::memory_order_relaxed);
      return false;
    case signal_kind::none:
      break;
  }
  return false;
}

// push() past max_count undrained nodes (a pathological backlog): the word's count stays
// saturated and the surplus is counted in inbox_overflow, which the owner takes back when it
// drains, so queue lengths stay exact.
bool push_saturated(proc* p, message_node* n) noexcept {
  namespace w = inbox_word;
  const auto addr = reinterpret_cast<std::uintptr_t>(n);
  p->inbox_overflow.fetch_add(1, std::memory_order_relaxed);
  std::uintptr_t old = p->inbox.load(std::memory_order_relaxed);
  for (;;) {
    if (old == w::closed) {
      p->inbox_overflow.fetch_sub(1, std::memory_order_relaxed);
      destroy_node(n);
      return false;
    }
    // A drain may have reset the count meanwhile: then this message counts in the word.
    const bool saturated = w::count(old) == w::max_count;
    n->next = w::link_of(old);
    const std::uintptr_t count = saturated ? w::max_count : w::count(old) + 1;
    if (p->inbox.compare_exchange_weak(old, addr | (count << w::count_shift),
                                       std::memory_order_acq_rel, std::memory_order_relaxed)) {
      if (!saturated) p->inbox_overflow.fetch_sub(1, std::memory_order_relaxed);
      break;
    }
  }
  if (old == w::blocked) wake(p);
  return true;
}

// A message or signal for a process on another node: handed to the distribution layer, which
// speaks the signal's wire form.
bool deliver_remote(runtime_core& rt, pid to, message_node* n) noexcept {
  remote_hooks* h = rt.hooks.remote.load(std::memory_order_acquire);
  if (h == nullptr) {
    destroy_node(n);
    return false;
  }
  if (n->type->kind == node_kind::message) return h->send(to, n) != send_status::no_process;
  bool taken = true;
  switch (kind_of(n)) {
    case signal_kind::link:
      taken = h->link(payload<link_signal>(n).from, to);
      break;
    case signal_kind::unlink:
      h->unlink(payload<unlink_signal>(n).from, to);
      break;
    case signal_kind::exit: {
      const auto& s = payload<exit_signal>(n);
      taken = h->exit(s.from, to, s.reason, s.via_link);
      break;
    }
    case signal_kind::down: {
      const auto& d = payload<down>(n);
      h->down(to, d.pid, d.ref.value(), d.reason);
      break;
    }
    default:  // timeouts, replies and priority signals only ever target local processes
      taken = false;
      break;
  }
  destroy_node(n);
  return taken;
}

}  // namespace

namespace {

// -- sender lanes (inbox_lanes.hpp) --------------------------------------------------------------

constinit thread_local proc* tls_sending_as = nullptr;

void destroy_doorbell(message_node*) noexcept {
  // The doorbell lives in its inbox_lanes: a push that fails or an exit that settles it drops it
  // here, and nothing is freed.
}

// The lane this thread's send takes: the sending process's, or the thread's own outside one.
unsigned sender_lane() noexcept {
  std::uint64_t key;
  if (const proc* s = tls_sending_as)
    key = s->id().serial();
  else if (const proc* r = running_proc())
    key = r->id().serial();
  else
    key = reinterpret_cast<std::uintptr_t>(&tls_sending_as) >> 6;  // one per thread
  static_assert(inbox_lanes::count == 16);
  return static_cast<unsigned>((key * 0x9E3779B97F4A7C15ULL) >> 60);
}

// The inbox word's push; `add` is what the node adds to the word's count (the doorbell adds
// nothing: it is not a message). With `contended`, gives up when the CAS has failed twice,
// sets it and leaves n with the caller.
bool push_word(proc* p, message_node* n, std::uintptr_t add, bool* contended) noexcept {
  namespace w = inbox_word;
  const auto addr = reinterpret_cast<std::uintptr_t>(n);
  assert((addr & ~w::pointer_mask) == 0);  // user-space addresses fit in 48 bits
  std::uintptr_t old = p->inbox.load(std::memory_order_relaxed);
  for (int failures = 0;; ++failures) {
    if (old == w::closed) {
      destroy_node(n);
      return false;
    }
    if (old >= w::saturated && add != 0) [[unlikely]]
      return push_saturated(p, n);
    if (failures == 2 && contended != nullptr) [[unlikely]] {
      *contended = true;
      return false;
    }
    n->next = w::link_of(old);  // a mark (or null) ends the chain
    if (p->inbox.compare_exchange_weak(old, addr | ((old & ~w::pointer_mask) + add),
                                       std::memory_order_acq_rel, std::memory_order_relaxed))
      break;
  }
  // Only the push that ends a park reschedules; over an inspection the inspector does it.
  if (old == w::blocked) wake(p);
  return true;
}

bool push_lane(proc* p, inbox_lanes& l, message_node* n) noexcept {
  namespace w = inbox_word;
  const unsigned i = sender_lane();
  std::atomic<std::uintptr_t>& word = l.lanes[i].word;
  const auto addr = reinterpret_cast<std::uintptr_t>(n);
  std::uintptr_t old = word.load(std::memory_order_relaxed);
  for (;;) {
    if (old == inbox_lanes::closed_mark) {
      destroy_node(n);
      return false;
    }
    n->next = w::link_of(old);  // null for an empty lane
    const std::uintptr_t counted = w::count(old) == w::max_count
                                       ? (old & ~w::pointer_mask)
                                       : (old & ~w::pointer_mask) + w::one;
    if (word.compare_exchange_weak(old, addr | counted, std::memory_order_acq_rel,
                                   std::memory_order_relaxed))
      break;
  }
  // Past the count's range the surplus is counted where the word's is (see push_saturated).
  if (w::count(old) == w::max_count) [[unlikely]]
    p->inbox_overflow.fetch_add(1, std::memory_order_relaxed);
  if ((old & w::pointer_mask) == 0) {
    // This push made the lane non-empty: say so, and ring unless the doorbell is already out.
    // Loads first: with many senders the bit is often set and the doorbell out already, and a
    // load shares the line where an RMW would take it. (A bit seen set is one the owner has yet
    // to clear, and it takes the lane after clearing it: all seq_cst, so it finds this push.)
    const std::uint32_t bit = 1U << i;
    if ((l.ready.load(std::memory_order_seq_cst) & bit) == 0)
      l.ready.fetch_or(bit, std::memory_order_seq_cst);
    if (!l.rung.load(std::memory_order_seq_cst) &&
        !l.rung.exchange(true, std::memory_order_seq_cst))
      push_word(p, &l.doorbell, 0, nullptr);  // (a closed inbox drops it)
  }
  return true;
}

// Gives p its lanes; returns them (or null when out of memory).
inbox_lanes* install_lanes(proc* p) noexcept {
  auto* fresh = new (std::nothrow) inbox_lanes();
  if (fresh == nullptr) return nullptr;
  inbox_lanes* seen = nullptr;
  if (p->lanes.compare_exchange_strong(seen, fresh, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
    return fresh;
  delete fresh;
  return seen;  // another sender's, or closed_lanes() after an exit
}

}  // namespace

const type_descriptor inbox_lanes::doorbell_type{
    &destroy_doorbell, &typeid(inbox_lanes), node_kind::signal, 0, nullptr, 0};

inbox_lanes::inbox_lanes() noexcept : doorbell{nullptr, &doorbell_type} {}

inbox_lanes* closed_lanes() noexcept {
  static inbox_lanes* const closed = [] {
    static inbox_lanes l;
    for (auto& lane : l.lanes) lane.word.store(inbox_lanes::closed_mark, std::memory_order_relaxed);
    return &l;
  }();
  return closed;
}

sending_as::sending_as(proc* p) noexcept : previous_(tls_sending_as) {
  tls_sending_as = p;
}
sending_as::~sending_as() {
  tls_sending_as = previous_;
}

bool push(proc* p, message_node* n) noexcept {
  if (inbox_lanes* l = p->lanes.load(std::memory_order_acquire)) [[unlikely]]
    return push_lane(p, *l, n);
  bool contended = false;
  if (const bool pushed = push_word(p, n, inbox_word::one, &contended); !contended) [[likely]]
    return pushed;
  // Senders collide on the word: give the process lanes. A mailbox thread and a bounded mailbox
  // keep the word, whose protocols they extend.
  if (!p->external && !p->bounded) {
    if (inbox_lanes* l = install_lanes(p)) return push_lane(p, *l, n);
  }
  return push_word(p, n, inbox_word::one, nullptr);
}

bool deliver(runtime_core& rt, pid to, message_node* n) noexcept {
  if (to.is_remote()) [[unlikely]]
    return deliver_remote(rt, to, n);
  proc* p = rt.table.lookup(to);
  if (p == nullptr) {
    destroy_node(n);
    return false;
  }
  // Every ordinary message (sent, fired by a timer, an alarm) counts against a bounded mailbox.
  if (p->bounded) [[unlikely]]
    return push_bounded(p, n, nullptr) != send_status::no_process;
  return push(p, n);
}

namespace {

// Would acting on this exit signal end the process? (Mirrors handle_exit_signal.)
bool kills(proc* p, message_node* n) {
  if (kind_of(n) == signal_kind::priority) {
    // A priority exit signal counts only through an active alias.
    const auto& s = payload<priority_signal>(n);
    if (p->urgent() == nullptr || s.inner->type->kind != node_kind::signal ||
        !p->urgent()->active(s.alias))
      return false;
    n = s.inner;
  }
  if (kind_of(n) != signal_kind::exit || p->exiting) return false;
  const auto& sig = payload<exit_signal>(n);
  if (sig.via_link && !p->links.contains(sig.from.serial())) return false;
  const auto k = sig.reason.which();
  if (!sig.via_link && k == exit_reason::kind::kill) return true;
  if (p->trap) return false;
  if (k == exit_reason::kind::normal) return !sig.via_link && sig.from == p->id();
  return true;
}

// A chain of nodes in arrival order.
struct chain {
  message_node* first = nullptr;
  message_node* last = nullptr;
  std::size_t nodes = 0;

  void append(const chain& c) noexcept {
    if (c.first == nullptr) return;
    if (first == nullptr)
      first = c.first;
    else
      last->next = c.first;
    last = c.last;
    nodes += c.nodes;
  }
};

// Takes `word` (the inbox word, or a lane's) and counts what it held in the queue's length at
// once (message_queue::add_arriving), before the walk, which takes time on a long chain.
chain take_chain(proc* p, std::atomic<std::uintptr_t>& word) {
  namespace w = inbox_word;
  chain c;
  if (word.load(std::memory_order_relaxed) == w::empty) return c;
  p->queue.begin_arrival();
  const std::uintptr_t taken_word = word.exchange(w::empty, std::memory_order_acq_rel);
  std::size_t taken = w::count(taken_word);
  if (taken == w::max_count) [[unlikely]]  // the rest are in inbox_overflow: a guess
    taken += static_cast<std::size_t>(
        std::max<std::int64_t>(0, p->inbox_overflow.load(std::memory_order_relaxed)));
  p->queue.add_arriving(taken);
  p->queue.end_arrival();
  if (!w::is_mark(taken_word)) c.last = w::link_of(taken_word);  // the newest ends up last
  c.first = in_arrival_order(taken_word);
  if (w::count(taken_word) == w::max_count) [[unlikely]] {
    // Count them exactly, correct the guess (a push may have been between its two steps) and
    // take them back from inbox_overflow. A doorbell is no message.
    std::size_t nodes = 0;
    for (message_node* n = c.first; n != nullptr; n = n->next)
      nodes += n->type == &inbox_lanes::doorbell_type ? 0 : 1;
    if (nodes > taken)
      p->queue.add_arriving(nodes - taken);
    else
      p->queue.drop_arriving(taken - nodes);
    p->inbox_overflow.fetch_sub(static_cast<std::int64_t>(nodes - w::max_count),
                                std::memory_order_relaxed);
    taken = nodes;
  }
  c.nodes = taken;
  return c;
}

// Unlinks the doorbell from c; true if it was there.
bool take_doorbell(inbox_lanes& l, chain& c) noexcept {
  message_node* prev = nullptr;
  for (message_node* n = c.first; n != nullptr; prev = n, n = n->next) {
    if (n != &l.doorbell) continue;
    (prev == nullptr ? c.first : prev->next) = n->next;
    if (c.last == n) c.last = prev;
    return true;
  }
  return false;
}

// With lanes: the lanes that hold something, and the word again after them, so that whatever
// a sender pushed to the word before turning to its lane comes first (see inbox_lanes.hpp).
// `from_word` is what the first take of the word brought; the result is everything, in order.
chain take_lanes(proc* p, inbox_lanes& l, chain from_word) {
  bool rang = take_doorbell(l, from_word);
  chain from_lanes;
  for (bool first_round = true;; first_round = false) {
    // Cleared before `ready` is read: a lane filled after the read rings again.
    if (rang) l.rung.store(false, std::memory_order_seq_cst);
    if (!first_round && !rang) break;
    if (l.ready.load(std::memory_order_seq_cst) != 0) {
      for (std::uint32_t mask = l.ready.exchange(0, std::memory_order_seq_cst); mask != 0;
           mask &= mask - 1)
        from_lanes.append(take_chain(p, l.lanes[std::countr_zero(mask)].word));
    }
    if (from_lanes.first == nullptr) break;  // no order to keep
    chain again = take_chain(p, p->inbox);
    rang = take_doorbell(l, again);
    from_word.append(again);
  }
  from_word.append(from_lanes);
  return from_word;
}

// Takes the inbox (and the lanes, if the process has them) and any signals held back by the
// last drain, in arrival order, and counts them in the queue's length.
chain take_arrivals(proc* p) {
  chain c = take_chain(p, p->inbox);
  if (inbox_lanes* l = p->lanes.load(std::memory_order_acquire)) [[unlikely]]
    c = take_lanes(p, *l, c);
  if (p->deferred == nullptr) return c;
  chain held;
  held.first = std::exchange(p->deferred, nullptr);
  held.nodes = 1;
  for (held.last = held.first; held.last->next != nullptr; held.last = held.last->next)
    ++held.nodes;
  p->queue.add_arriving(held.nodes);
  held.append(c);
  return held;
}

// drop_oldest: the oldest ordinary messages in the queue go until `capacity` are left. Only the
// owner's own count is used: messages still in the inbox are judged when they are taken in, so
// the owner always keeps the newest `capacity` it has seen.
void trim_oldest(proc* p) noexcept {
  mailbox_bound& b = *p->bound;
  std::int64_t excess = p->queue.counted() - b.capacity;
  message_node* prev = p->queue.head();
  while (excess > 0 && prev->next != nullptr) {
    message_node* n = prev->next;
    if (!counted_message(n)) {
      prev = n;
      continue;
    }
    // A parked receive remembers the last message it examined: keep that position valid.
    if (p->op != nullptr && p->op->position == n) p->op->position = prev;
    message_node* gone = p->queue.unlink_after(prev);
    p->queue.release(gone);
    destroy_node(gone);
    b.dropped.fetch_add(1, std::memory_order_relaxed);
    p->rt()->messages_dropped.fetch_add(1, std::memory_order_relaxed);
    --excess;
  }
}

}  // namespace

void self_deliver(proc* p, message_node* n) noexcept {
  if (p->lanes.load(std::memory_order_relaxed) != nullptr) [[unlikely]] {
    // A drain puts the word's chains before the lanes', so a push onto the word could overtake
    // what is in the lanes. Take everything in instead and hold it back, as drain(until_kill)
    // holds back what it must not act on yet, with n after it; the next drain starts there.
    chain held = take_arrivals(p);
    p->queue.drop_arriving(held.nodes);
    n->next = nullptr;
    held.append(chain{n, n, 1});
    p->deferred = held.first;
    return;
  }
  push(p, n);
}

send_status push_bounded(proc* p, message_node* n, message_node** give_back) noexcept {
  mailbox_bound& b = *p->bound;
  // drop_oldest reserves nothing: its owner trims what it takes in.
  if (!counted_message(n) || b.policy == overflow_policy::drop_oldest)
    return push(p, n) ? send_status::queued : send_status::no_process;
  // Reserve a place first, so the mailbox never holds more than its capacity.
  std::int64_t c = b.count.load(std::memory_order_relaxed);
  do {
    if (c >= b.capacity) {
      if (p->inbox.load(std::memory_order_acquire) == inbox_word::closed) {
        destroy_node(n);
        return send_status::no_process;  // a dead process is not a full one
      }
      b.dropped.fetch_add(1, std::memory_order_relaxed);
      p->rt()->messages_dropped.fetch_add(1, std::memory_order_relaxed);
      if (give_back != nullptr && b.policy == overflow_policy::reject)
        *give_back = n;
      else
        destroy_node(n);
      return send_status::full;
    }
  } while (!b.count.compare_exchange_weak(c, c + 1, std::memory_order_relaxed));
  if (!push(p, n)) {
    b.count.fetch_sub(1, std::memory_order_relaxed);
    return send_status::no_process;
  }
  return send_status::queued;
}

bool scan_priority_first(proc* p, receive_op& op) {
  // The priority queue has its own save position, so a receive that is woken again and again
  // looks at each priority message once, as it does at each ordinary one.
  message_node* const saved = op.position;
  op.position = op.priority_position != nullptr ? op.priority_position : p->urgent()->queue.head();
  if (op.scan(p->urgent()->queue)) {
    op.priority_position = nullptr;
    return true;
  }
  op.priority_position = op.position;
  op.position = saved;
  return op.scan(p->queue);
}

void drain_arrivals(proc* p, drain_mode mode) {
  const chain arrived = take_arrivals(p);
  const std::size_t taken = arrived.nodes;
  message_node* const first = arrived.first;
  std::size_t queued = 0;  // of the taken nodes, those appended as messages
  // Consecutive messages are appended as one chain; a signal flushes the chain first so any
  // message the signal produces (EXIT, DOWN) keeps its place in arrival order.
  message_node* run_first = nullptr;
  message_node* run_last = nullptr;
  std::size_t run_count = 0;
  std::size_t run_bytes = 0;
  const bool bounded = p->queue.tracking();
  std::int64_t run_counted = 0;  // ordinary messages in the run, for a bounded mailbox
  auto flush_run = [&] {
    if (run_first != nullptr) {
      p->queue.append_arrived(run_first, run_last, run_count, run_bytes);
      messages_moved += run_count;
      queued += run_count;
      if (bounded) [[unlikely]] {
        p->queue.add_counted(run_counted);
        run_counted = 0;
      }
      run_first = run_last = nullptr;
      run_count = 0;
      run_bytes = 0;
    }
  };
  for (message_node* n = first; n != nullptr;) {
    message_node* next = n->next;
    if (n->type->kind == node_kind::message) {
      if (p->exiting) {
        destroy_node(n);
      } else {
        if (run_first == nullptr)
          run_first = n;
        else
          run_last->next = n;
        run_last = n;
        ++run_count;
        run_bytes += n->type->node_size;
        if (bounded) [[unlikely]]
          run_counted += counted_message(n) ? 1 : 0;
      }
    } else {
      flush_run();
      if (mode == drain_mode::until_kill && kills(p, n)) {
        p->deferred = n;  // n and everything after it, still linked in order
        p->queue.drop_arriving(taken - queued);
        return;
      }
      bool kept = false;
      try {
        kept = handle_signal(p, n);
      } catch (...) {
        // Out of memory while recording a link or trapping an exit: the process cannot keep
        // its guarantees any more, so it ends, as a BEAM process would on a failed allocation.
        begin_exit(p, exit_reason::from_exception(std::current_exception()));
      }
      if (!kept) destroy_node(n);
    }
    n = next;
  }
  flush_run();
  p->queue.drop_arriving(taken - queued);
  if (p->bounded && p->bound->policy == overflow_policy::drop_oldest) [[unlikely]]
    trim_oldest(p);
  // The owner sees its queue grow here, as it takes arrivals in (a load, no store, per batch;
  // the send path pays nothing): a busy process is caught at its next receive.
  if ((p->rt()->monitor.active.load(std::memory_order_relaxed) & monitor_queue) != 0) [[unlikely]]
    check_queue_alarm(p);
}

void drop_monitor(runtime_core& rt, pid watcher, std::uint64_t r, const monitor_entry& e) noexcept {
  if (e.target.is_remote()) [[unlikely]] {
    if (remote_hooks* h = rt.hooks.remote.load(std::memory_order_acquire))
      h->demonitor(watcher, e.target, r);
    return;
  }
  proc* t = rt.table.lookup(e.target);
  // A target that left the table has already closed its watcher set.
  if (t == nullptr) return;
  detail::lock_guard lock(t->watchers_lock);
  if (!t->watchers_closed) t->watchers.remove(e.slot, r);
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
