// Operations on process state used across the runtime: delivery into inboxes, draining an
// inbox (which acts on signals), running a process for one scheduling slot, and ending one.
#pragma once

#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>

#include "process_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class worker;
struct event_counters;

// -- delivery (any thread; the caller must be pinned) ---------------------------------------------

/// Pushes `n` onto p's inbox and reschedules p if it was parked. Returns false (and destroys
/// `n`) when p has exited. Ignores a bounded mailbox's limit: for signals and control messages.
bool push(proc* p, message_node* n) noexcept;
/// push() for a process with a bounded mailbox (p->bound set): applies its policy to an ordinary
/// message. A message a reject mailbox refuses goes to *give_back when it is not null.
send_status push_bounded(proc* p, message_node* n, message_node** give_back) noexcept;
/// push() to the process with pid `to`, applying its mailbox limit (push_bounded); false (node
/// destroyed) if there is none.
bool deliver(runtime_core& rt, pid to, message_node* n) noexcept;

// -- owner side -------------------------------------------------------------------------------

/// How far drain goes when it meets an exit signal that would end the process.
enum class drain_mode {
  all,         ///< act on everything (the process is at a suspension point)
  until_kill,  ///< stop before such a signal and keep it, and all after it, for the next drain
};

/// Moves arrived messages to the queue in order and acts on signals. May set p->exiting.
///
/// A receive drains with until_kill: the messages that arrived before a killing exit signal are
/// delivered first (per-pair order), so a receive they satisfy completes, and the process dies
/// at its next suspension point. This is what makes a non-trapping starter die *after*
/// start_link has returned the {error, R} its child acked (spec §4.1 rule 3).
void drain_arrivals(proc* p, drain_mode mode);
/// (Inline: most calls find nothing to do, and should not pay for a call that saves six
/// registers to learn it.)
inline void drain(proc* p, drain_mode mode = drain_mode::all) {
  if (p->deferred != nullptr || p->inbox.load(std::memory_order_relaxed) != inbox_word::empty)
    drain_arrivals(p, mode);
}
/// The part of scan_mailbox for a process with priority messages queued.
bool scan_priority_first(proc* p, receive_op& op);
/// Runs op's scan over p's mailbox: the priority messages first (EEP 76), then the queue from
/// op.position.
inline bool scan_mailbox(proc* p, receive_op& op) {
  if (p->urgent() != nullptr && !p->urgent()->queue.empty()) [[unlikely]]
    return scan_priority_first(p, op);
  return op.scan(p->queue);
}
/// A receive ended: the message it took from the ordinary queue no longer counts against a
/// bounded mailbox (the priority queue keeps no tally). One test of a byte on the record's first
/// line when the mailbox is unbounded.
inline void release_matched(proc* p, const receive_op& op) noexcept {
  if (p->bounded && op.matched != nullptr && op.queue == &p->queue) [[unlikely]]
    p->queue.release(op.matched);
}
/// Parks p in its current receive unless something arrived. True when parked: from then on
/// another thread may own p.
inline bool try_block(proc* p) noexcept {
  std::uintptr_t expected = inbox_word::empty;
  return p->inbox.compare_exchange_strong(expected, inbox_word::blocked, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
}
/// Runs p for one scheduling slot on worker `w`.
void run_process(worker& w, proc* p);
/// Why a process ends: by itself (its body returned or threw, or it co_awaited exit), which gets
/// a crash report when the reason is abnormal (as OTP's proc_lib writes one), or because of an
/// exit signal or the runtime's shutdown, which does not.
enum class exit_cause : std::uint8_t { own, signal };

/// Ends p with `reason`: destroys its frames, closes its inbox, releases its name, signals its
/// links and watchers, drops its own monitors and retires its memory.
void exit_process(proc* p, exit_reason reason, exit_cause cause = exit_cause::signal) noexcept;
/// Removes one of `watcher`'s own monitors (ref `r`) from its target's watcher set (or tells
/// the target's node).
void drop_monitor(runtime_core& rt, pid watcher, std::uint64_t r, const monitor_entry& e) noexcept;
/// allocate_proc() for a coroutine process (external = false) or a mailbox.
proc* allocate_proc_for(runtime_core& rt, std::size_t body_size, std::size_t body_align,
                        bool external, const mailbox_limit& limit = {},
                        const proc* parent = nullptr);
/// Delivers a message to p itself (after anything already in its inbox).
void self_deliver(proc* p, message_node* n) noexcept;
/// The process running on this thread (null outside a process run).
proc* running_proc() noexcept;
/// While one lives, this thread's sends count as p's when they pick a sender lane
/// (inbox_lanes.hpp): exit_process sends p's EXITs and DOWNs from whatever thread ends p, and
/// they must take the lane p's messages took, or a DOWN could overtake them.
class sending_as {
 public:
  explicit sending_as(proc* p) noexcept;
  ~sending_as();
  sending_as(const sending_as&) = delete;
  sending_as& operator=(const sending_as&) = delete;

 private:
  proc* previous_;
};
/// The lanes of every exited process (all closed): exit_process puts them where a process
/// that never had lanes would have none, so no sender can give it lanes after its exit.
inbox_lanes* closed_lanes() noexcept;
/// This thread's record of the process it runs (for other threads: see worker::running_slot).
const std::atomic<proc*>* running_slot() noexcept;

// -- counters (runtime_stats) -------------------------------------------------------------------

// count(rt, field, n) is inline in runtime_core.hpp.
void count_exit(runtime_core& rt, const exit_reason& reason) noexcept;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
