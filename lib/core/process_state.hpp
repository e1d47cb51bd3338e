// The internal state of a process (and of an outside-thread mailbox, which is a process without
// a coroutine).
//
// Who touches what:
//  * `inbox` is the only field other threads write. It is a lock-free LIFO stack of nodes whose
//    head also encodes the process state for senders: `blocked_mark` (the owner is parked in a
//    receive; the sender that replaces the mark must reschedule it) and `closed_mark` (the
//    process has exited; pushes fail). One CAS per send covers delivery, wake-up detection and
//    the dead-process check.
//  * `watchers` (the monitors other processes hold on this one) are guarded by
//    `watchers_lock`, so monitor/demonitor never wake the target and the exit fan-out takes the
//    lock once for all watchers.
//  * The registry guards `reg_name` with its own mutex; `registration` moves from open to named
//    and back under that mutex, and from open to closed (at exit) without it.
//  * Everything else belongs to the thread currently running the process.
#pragma once

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <mutex>
#include <string>

#include <beamlet/detail/core.hpp>
#include <beamlet/detail/message_queue.hpp>
#include <beamlet/exit_reason.hpp>
#include <beamlet/process.hpp>

#include "id_table.hpp"
#include "spinlock.hpp"
#include "timer_service.hpp"
#include "watcher_set.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

inline message_node* const blocked_mark = reinterpret_cast<message_node*>(std::uintptr_t{1});
inline message_node* const closed_mark = reinterpret_cast<message_node*>(std::uintptr_t{2});

inline bool is_mark(const message_node* n) noexcept {
  return reinterpret_cast<std::uintptr_t>(n) <= 2;
}

/// The inbox is a stack (newest first): returns the chain taken from it in arrival order. A
/// mark (or null) stands for no messages.
inline message_node* in_arrival_order(message_node* newest_first) noexcept {
  if (is_mark(newest_first)) return nullptr;
  message_node* first = nullptr;
  while (newest_first != nullptr) {
    message_node* next = newest_first->next;
    newest_first->next = first;
    first = newest_first;
    newest_first = next;
  }
  return first;
}

enum class run_state : std::uint8_t {
  fresh,    ///< spawned, body not started
  ready,    ///< runnable: resume `resume_point`
  waiting,  ///< suspended in a receive; scheduled again only by a push onto `inbox`
  dead,
};

enum class suspend_kind : std::uint8_t { none, receive, yield, exit };

/// One monitor as its owner (the watcher) knows it; keyed by ref in the owner's map.
struct monitor_entry {
  pid target;
  std::uint32_t slot = 0;       ///< its index in the target's watcher_set
  std::string* name = nullptr;  ///< set for monitors by name
};

/// Blocking state of an outside-thread mailbox.
struct external_wait {
  std::mutex mu;
  std::condition_variable cv;
};

/// Registration state, so that exit can skip the registry lock for processes that never had a
/// name: only open -> closed happens without the lock.
enum class reg_state : std::uint8_t { open, named, closed };

// Field order follows access frequency: the first two cache lines hold what a send, a wake-up
// and a run touch; the rest is rarely used.
struct proc {
  proc(runtime_core& rt, std::uint32_t alloc_size) noexcept;
  ~proc();
  proc(const proc&) = delete;
  proc& operator=(const proc&) = delete;

  // -- written by other threads ------------------------------------------------------------------
  std::atomic<message_node*> inbox{nullptr};

  // -- immutable after publication: the handle passed to the body, which also carries the pid
  // and the runtime (sent-to processes are looked up by pid, so this stays on the hot line) ---
  process facade;
  pid id() const noexcept { return facade.self_; }
  pid& id_slot() noexcept { return facade.self_; }  // written once, before publication
  runtime_core* rt() const noexcept { return facade.rt_; }

  // -- owner only (hot) --------------------------------------------------------------------------
  run_state state = run_state::fresh;
  suspend_kind suspend = suspend_kind::none;
  bool exiting = false;
  bool trap = false;
  bool timer_armed = false;
  bool timeout_fired = false;
  bool external = false;
  ack_wait ack_mode = ack_wait::scan;
  std::uint32_t receive_seq = 0;
  receive_op* op = nullptr;
  std::coroutine_handle<> resume_point;
  message_queue queue;
  message_node* deferred = nullptr;  ///< signals held back by drain(until_kill), in order
  id_table<monitor_entry> monitors;  ///< this process's monitors on others, by ref
  id_table<empty_value> links;       ///< linked pids
  std::coroutine_handle<task_promise<void>> body;
  exit_reason reason;  ///< the exit reason once `exiting`

  // -- guarded by watchers_lock ------------------------------------------------------------------
  spinlock watchers_lock;
  bool watchers_closed = false;
  watcher_set watchers;

  // -- registry (reg_name under the registry mutex) ----------------------------------------------
  std::atomic<reg_state> registration{reg_state::open};
  const std::string* reg_name = nullptr;

  // -- cold --------------------------------------------------------------------------------------
  /// Set (never cleared) once a send_after timer was aimed at this process: its exit then
  /// cancels those timers (timer_service::cancel_aimed_at).
  std::atomic<bool> timers_aimed{false};
  std::uint32_t alloc_size;
  void (*destroy_body)(void*) noexcept = nullptr;
  timer_entry timer;  ///< the receive timeout, armed while blocked in a receive with `after`

  /// The body (a copy of the callable) follows the process in the same allocation, at
  /// proc_body_offset.
  static constexpr std::size_t body_alignment = max_body_alignment;
  void* body_ptr() noexcept;
  /// A mailbox's blocking state, kept where a coroutine process keeps its body.
  external_wait& wait_state() noexcept { return *static_cast<external_wait*>(body_ptr()); }
};

inline constexpr std::size_t proc_body_offset =
    (sizeof(proc) + proc::body_alignment - 1) / proc::body_alignment * proc::body_alignment;

inline void* proc::body_ptr() noexcept {
  return reinterpret_cast<char*>(this) + proc_body_offset;
}

/// Frees a process's memory (its retirement callback).
void free_proc(void* p) noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
