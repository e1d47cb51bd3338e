// Operations on process state used across the runtime: delivery into inboxes, draining an
// inbox (which acts on signals), running a process for one scheduling slot, and ending one.
#pragma once

#include <beamlet/detail/message.hpp>
#include <beamlet/exit_reason.hpp>
#include <beamlet/ids.hpp>

#include "process_state.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

class worker;

// -- delivery (any thread; the caller must be pinned) ---------------------------------------------

/// Pushes `n` onto p's inbox and reschedules p if it was parked. Returns false (and destroys
/// `n`) when p has exited.
bool push(proc* p, message_node* n) noexcept;
/// push() to the process with pid `to`; false (node destroyed) if there is none.
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
void drain(proc* p, drain_mode mode = drain_mode::all);
/// Parks p in its current receive unless something arrived. True when parked: from then on
/// another thread may own p.
inline bool try_block(proc* p) noexcept {
  message_node* expected = nullptr;
  return p->inbox.compare_exchange_strong(expected, blocked_mark, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
}
/// Runs p for one scheduling slot on worker `w`.
void run_process(worker& w, proc* p);
/// Ends p with `reason`: destroys its frames, closes its inbox, releases its name, signals its
/// links and watchers, drops its own monitors and retires its memory.
void exit_process(proc* p, exit_reason reason) noexcept;
/// Removes one of p's own monitors (ref `r`) from its target's watcher set.
void drop_monitor(runtime_core& rt, std::uint64_t r, const monitor_entry& e) noexcept;
/// allocate_proc() for a coroutine process (external = false) or a mailbox.
proc* allocate_proc_for(runtime_core& rt, std::size_t body_size, std::size_t body_align,
                        bool external);
/// Delivers a message to p itself (after anything already in its inbox).
void self_deliver(proc* p, message_node* n) noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
