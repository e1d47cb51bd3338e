// The internal state of a process (and of a scoped_process, an outside thread, which is a process
// without a coroutine).
//
// Who touches what:
//  * `inbox` is the only field other threads write. It is a lock-free LIFO stack of nodes whose
//    head word also encodes the process state for senders: `blocked` (the owner is parked in a
//    receive; the sender that replaces the mark must reschedule it), `closed` (the process has
//    exited; pushes fail) and `inspected` (parked, and being read by process_info: a push does
//    not reschedule, the inspector does when it is done). One CAS per send covers delivery,
//    wake-up detection, the dead-process check and counting: the word's high 16 bits hold the
//    number of nodes in the chain, so the length of the not-yet-drained part of a mailbox is
//    known without walking it. A process that many threads send to at once also gets sender
//    lanes (inbox_lanes.hpp), installed once by a sender into `lanes`.
//  * The counters a process_info reads from any thread (`received`, `reductions`,
//    `queue_bytes`...) are atomics written by the owner with plain relaxed stores.
//  * `watchers` (the monitors other processes hold on this one) are guarded by
//    `watchers_lock`, so monitor/demonitor never wake the target and the exit fan-out takes the
//    lock once for all watchers.
//  * The registry writes `reg_name` under the name's shard lock (readers pin instead);
//    `registration` moves from open to named and back under that lock, and from open to closed
//    (at exit) without it.
//  * Everything else belongs to the thread currently running the process.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/detail/message_queue.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/process.hpp>

#include "id_table.hpp"
#include "inbox_lanes.hpp"
#include "spinlock.hpp"
#include "timer_service.hpp"
#include "watcher_set.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct registered_name;  // registry.hpp

/// The inbox word (see the header comment). Node addresses fit in 48 bits on the platforms
/// beamlet supports (x86-64 and AArch64 user space); push() checks it.
namespace inbox_word {
inline constexpr std::uintptr_t empty = 0;
inline constexpr std::uintptr_t blocked = 1;
inline constexpr std::uintptr_t closed = 2;
inline constexpr std::uintptr_t inspected = 3;
inline constexpr int count_shift = 48;
inline constexpr std::uintptr_t pointer_mask = (std::uintptr_t{1} << count_shift) - 1;
inline constexpr std::uint32_t max_count = 0xFFFF;
/// One more node in the word's count.
inline constexpr std::uintptr_t one = std::uintptr_t{1} << count_shift;
/// Words at or above this hold a saturated count.
inline constexpr std::uintptr_t saturated = std::uintptr_t{max_count} << count_shift;

/// True for the marks (and empty): no chain.
constexpr bool is_mark(std::uintptr_t w) noexcept {
  return (w & pointer_mask) <= inspected;
}
/// The word without its count: the newest node of the chain, or a mark. A push links its node
/// to this as it is (so the oldest node of a chain points at a mark, not at null).
inline message_node* link_of(std::uintptr_t w) noexcept {
  // The word was made from a node's address (or a mark), so the cast gives back that address.
  return reinterpret_cast<message_node*>(w & pointer_mask);  // NOLINT(performance-no-int-to-ptr)
}
/// True for the marks and null: the end of a chain.
inline bool chain_end(const message_node* n) noexcept {
  return reinterpret_cast<std::uintptr_t>(n) <= inspected;
}
/// Nodes in the chain (saturates at max_count). Signals count too: an exact message count
/// would cost every send a look at the node's type, and signals in flight are few.
constexpr std::uint32_t count(std::uintptr_t w) noexcept {
  return static_cast<std::uint32_t>(w >> count_shift);
}
}  // namespace inbox_word

/// The inbox is a stack (newest first): returns the chain taken from it in arrival order.
inline message_node* in_arrival_order(std::uintptr_t word) noexcept {
  message_node* newest_first = inbox_word::link_of(word);
  message_node* first = nullptr;
  while (!inbox_word::chain_end(newest_first)) {
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
  std::uint32_t slot = 0;             ///< its index in the target's watcher_set
  std::unique_ptr<std::string> name;  ///< set for monitors by name
};

/// Blocking state of a scoped_process.
struct external_wait {
  local_mutex mu;
  std::condition_variable cv;
};

/// A bounded mailbox (beamlet/core/mailbox_limit.hpp). Made before the process is published and
/// freed with its memory, so a sender that found the process may read it at any time.
struct mailbox_bound {
  std::int64_t capacity = 0;
  overflow_policy policy = overflow_policy::drop_newest;
  /// Ordinary messages in the inbox and the queue: senders add, the owner subtracts as they
  /// leave. Under drop_oldest it may pass capacity until the owner trims.
  std::atomic<std::int64_t> count{0};
  std::atomic<std::uint64_t> dropped{0};  ///< refused, dropped or trimmed
  queue_tally tally;                      ///< what the owner's queue counts
};

/// Priority messages (beamlet/core/priority.hpp), made by the first priority alias. Owner only.
struct priority_state {
  message_queue queue;                 ///< received ahead of proc::queue
  std::vector<std::uint64_t> aliases;  ///< the active priority aliases (a few at most)
  /// The alias published for others to find (0: none); written by the owner, read by anyone.
  std::atomic<std::uint64_t> published{0};

  bool active(std::uint64_t alias) const noexcept {
    return std::find(aliases.begin(), aliases.end(), alias) != aliases.end();
  }
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
  std::atomic<std::uintptr_t> inbox{inbox_word::empty};
  /// Sender lanes, made by the first sender that found the inbox word contended; freed with the
  /// process's memory. Read by every send, hence on the first line.
  std::atomic<inbox_lanes*> lanes{nullptr};

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
  ack_wait_mode ack_mode = ack_wait_mode::scan;
  std::uint32_t receive_seq = 0;
  /// The mailbox is bounded (`bound` is set). Immutable after publication and on the line a
  /// send touches anyway, so an unbounded target costs a sender one test of a byte.
  bool bounded = false;
  /// It has labels (basic_process::set_label) in runtime_core::labels, which its exit removes.
  /// Owner only; in the padding after `bounded`.
  bool labelled = false;
  /// Pauses a busy connection asked for and has not lifted yet (remote_pause_running): while
  /// not zero the body is not resumed. In the padding after `bounded`. Owner only; atomic
  /// (relaxed loads and stores) because process_info reads it for the `suspended` status.
  std::atomic<std::uint16_t> pauses{0};
  receive_op* op = nullptr;
  std::coroutine_handle<> resume_point;
  message_queue queue;
  /// Made by the first priority alias and freed with the process's memory. Atomic only because
  /// published_priority_alias and process_info read it from other threads: the owner's loads
  /// are plain ones (urgent()). Owned (~proc deletes it): a lazily published pointer has no
  /// smart-pointer form that keeps the owner's loads plain.
  std::atomic<priority_state*> prio{nullptr};
  priority_state* urgent() const noexcept { return prio.load(std::memory_order_relaxed); }
  message_node* deferred = nullptr;  ///< signals held back by drain(until_kill), in order
  // Read by process_info from any thread, written by the owner with relaxed stores: next to
  // the queue's counters, on a line a run touches anyway.
  std::atomic<bool> trap_flag{false};             ///< mirror of `trap`
  std::atomic<bool> queue_alarm{false};           ///< a long_message_queue alarm is on
  std::atomic<std::int32_t> frame_bytes{0};       ///< coroutine frames it holds
  std::atomic<std::uint64_t> reductions_done{0};  ///< reductions spent, all runs
  /// What the current (or next) receive waits for (set_waiting_for; cleared as a receive
  /// ends). Owner only; process_info reads it, as `op`, while the process is parked.
  const char* wait_what = nullptr;
  pid wait_who;
  id_table<monitor_entry> monitors;  ///< this process's monitors on others, by ref
  id_table<empty_value> links;       ///< linked pids
  std::coroutine_handle<task_promise<void>> body;
  exit_reason reason;  ///< the exit reason once `exiting`

  // -- guarded by watchers_lock ------------------------------------------------------------------
  spinlock watchers_lock;
  bool watchers_closed BEAMLET_GUARDED_BY(watchers_lock) = false;
  // (two fields of other groups, in the padding)
  std::atomic<reg_state> registration{reg_state::open};  ///< see the registry group below
  /// Where send_after timers aimed at this process were armed, one bit per owner (set, never
  /// cleared): its exit has those owners cancel them (timer_service::cancel_aimed_at).
  std::atomic<std::uint32_t> timer_owners{0};
  watcher_set watchers BEAMLET_GUARDED_BY(watchers_lock);

  // -- registry (written under the name's shard lock; read under a pin) -------------------------
  std::atomic<const registered_name*> reg_name{nullptr};

  // -- read by process_info from any thread; written before the table insert publishes it -----
  pid parent;  ///< who spawned it (null: an outside thread)

  // -- cold --------------------------------------------------------------------------------------
  std::uint32_t alloc_size;
  /// Messages pushed while the inbox word's count was saturated (more than max_count not yet
  /// drained: a pathological backlog), so queue lengths stay exact; the owner takes them back
  /// when it drains. Touched only past saturation, never on an ordinary send.
  std::atomic<std::int64_t> inbox_overflow{0};
  /// The body's type: its destructor, and its name for process_info's initial call.
  std::atomic<const body_descriptor*> body_type{nullptr};
  /// The receive timeout, armed while blocked in a receive with `after`; made on first use
  /// (most processes never wait with a timeout).
  timer_entry* timer = nullptr;
  /// A bounded mailbox's state (see `bounded`), made before publication, freed with the process.
  std::unique_ptr<mailbox_bound> bound;

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
BEAMLET_END_PRIVATE_NAMESPACE
