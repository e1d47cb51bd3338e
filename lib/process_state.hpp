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
//  * The registry guards `reg_name` and `reg_closed` with its own mutex.
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

#include "flat_map.hpp"
#include "spinlock.hpp"
#include "timer_service.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

inline message_node* const blocked_mark = reinterpret_cast<message_node*>(std::uintptr_t{1});
inline message_node* const closed_mark = reinterpret_cast<message_node*>(std::uintptr_t{2});

inline bool is_mark(const message_node* n) noexcept {
  return reinterpret_cast<std::uintptr_t>(n) <= 2;
}

enum class run_state : std::uint8_t {
  fresh,    ///< spawned, body not started
  ready,    ///< runnable: resume `resume_point`
  waiting,  ///< suspended in a receive; scheduled again only by a push onto `inbox`
  dead,
};

enum class suspend_kind : std::uint8_t { none, receive, yield, exit };

/// One monitor, held on the monitored process's watcher list.
struct monitor_record {
  monitor_record* prev;
  monitor_record* next;
  std::uint64_t ref;
  pid watcher;
};

/// One monitor as its owner (the watcher) knows it.
struct monitor_entry {
  pid target;
  monitor_record* record = nullptr;  ///< null for monitors that never reached a live target
  std::string* name = nullptr;       ///< set for monitors by name
};

/// Blocking state of an outside-thread mailbox.
struct external_wait {
  std::mutex mu;
  std::condition_variable cv;
};

struct proc {
  proc(runtime_core& rt, std::uint32_t alloc_size, std::uint32_t body_offset) noexcept;
  ~proc();
  proc(const proc&) = delete;
  proc& operator=(const proc&) = delete;

  // -- written by other threads ------------------------------------------------------------------
  std::atomic<message_node*> inbox{nullptr};

  // -- immutable after publication ---------------------------------------------------------------
  pid id;
  runtime_core* rt;
  bool external = false;

  // -- owner only ----------------------------------------------------------------------------------
  run_state state = run_state::fresh;
  suspend_kind suspend = suspend_kind::none;
  bool exiting = false;
  bool trap = false;
  bool timer_armed = false;
  bool timeout_fired = false;
  int reductions = 0;
  std::uint32_t receive_seq = 0;
  std::uint32_t alloc_size;
  std::uint32_t body_offset;
  message_queue queue;
  receive_op* op = nullptr;
  std::coroutine_handle<> resume_point;
  std::coroutine_handle<task_promise<void>> body;
  void (*destroy_body)(void*) noexcept = nullptr;
  exit_reason reason;  ///< the exit reason once `exiting`
  flat_map<empty_value>* links = nullptr;
  flat_map<monitor_entry>* monitors = nullptr;
  timer_entry timer;  ///< the receive timeout, armed while blocked in a receive with `after`
  external_wait* ext = nullptr;

  // -- guarded by watchers_lock ------------------------------------------------------------------
  spinlock watchers_lock;
  bool watchers_closed = false;
  monitor_record* watchers = nullptr;

  // -- guarded by the registry mutex -----------------------------------------------------------
  const std::string* reg_name = nullptr;
  bool reg_closed = false;

  // -- scheduler ---------------------------------------------------------------------------------
  proc* next_runnable = nullptr;

  process facade;

  void set_pid_in_facade() noexcept { facade.self_ = id; }

  void* body_ptr() noexcept { return reinterpret_cast<char*>(this) + body_offset; }

  flat_map<empty_value>& link_set() {
    if (links == nullptr) links = new flat_map<empty_value>;
    return *links;
  }
  flat_map<monitor_entry>& monitor_map() {
    if (monitors == nullptr) monitors = new flat_map<monitor_entry>;
    return *monitors;
  }
};

/// Frees a process's memory (its retirement callback).
void free_proc(void* p) noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
