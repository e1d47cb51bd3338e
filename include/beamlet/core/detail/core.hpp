// beamlet/core/detail/core.hpp: the runtime entry points that public templates call.
//
// Templates in the public headers (send<T>, spawn<F>, receive<...>) do the typed work (build a
// node, construct a body, compile a scan loop) and hand the result to these non-template
// functions, which own all synchronisation. Nothing here is stable API.
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>
#include <utility>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/layer_hooks.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/receive_op.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/log_event.hpp>
#include <beamlet/core/mailbox_limit.hpp>
#include <beamlet/core/priority.hpp>
#include <beamlet/core/process_info.hpp>
#include <beamlet/core/system_monitor.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE

class process;
class basic_process;
struct spawn_options;

namespace detail {

struct proc;         // a process (lib/core/process_state.hpp)
class runtime_core;  // a runtime (lib/core/runtime_core.hpp)

/// Gives back one reference to a runtime's shared state (the runtime object holds one, each
/// mailbox another; the last one frees it): the deleter of the runtime's handle to it.
struct core_release {
  void operator()(runtime_core* rt) const noexcept;
};

// -- messaging (any thread) ----------------------------------------------------------------------

/// Delivers `n` to `to`, or destroys it if `to` is not alive. Never throws.
void send_node(runtime_core& rt, pid to, message_node* n) noexcept;
/// What became of a message handed to send_node_checked.
enum class send_status : std::uint8_t {
  queued,      ///< in the target's inbox
  full,        ///< refused or dropped by the target's bounded mailbox
  no_process,  ///< the target is not alive
  refused,     ///< a remote target: the distribution layer cannot encode the message
};
/// As send_node, and says what became of the message. A message a `reject` mailbox refused is
/// handed back through `give_back` when it is not null (else destroyed).
send_status send_node_checked(runtime_core& rt, pid to, message_node* n,
                              message_node** give_back) noexcept;
/// The error try_send reports for a status.
std::error_code status_error(send_status s) noexcept;
/// Sends `n` through a priority alias (dropped when the alias is not active).
send_status send_priority_node(runtime_core& rt, const priority_alias& to,
                               message_node* n) noexcept;
/// Forgets the receive marker of `r` in self's queue (a marked ref whose receive will not run).
void clear_marker(basic_process& self, ref r) noexcept;
/// The alias `p` published (process::make_priority_alias(true)), if it is alive and has one.
std::optional<priority_alias> published_priority_alias(runtime_core& rt, pid p) noexcept;
/// Delivers `n` to the process registered as `name`; destroys it and returns
/// errc::not_registered when nobody holds the name.
std::error_code send_node_named(runtime_core& rt, std::string_view name, message_node* n) noexcept;
/// `{name, node} ! msg` through the runtime's remote hooks (dropped when no node runs).
void send_node_remote_named(runtime_core& rt, pid from, std::string_view name,
                            std::string_view node, message_node* n) noexcept;
/// Starts a timer that delivers `n` to `to` after `delay`; returns its reference.
ref send_node_after(runtime_core& rt, pid to, message_node* n, timeout_value delay);

/// The pid registered under `name`, or the null pid.
pid whereis_in(runtime_core& rt, std::string_view name);
/// The name `p` is registered under ("" if none, or not alive).
std::string registered_name_of(runtime_core& rt, pid p);
/// erlang:is_process_alive/1 (false for the null pid). The one implementation behind
/// runtime::is_alive and basic_process::is_alive.
bool is_alive_in(runtime_core& rt, pid p) noexcept;
// -- what the core tells the layers above (observability) ---------------------------------------

/// The runtime's event sink (a logger): receives every event the runtime and the layers make.
/// Installed with install_hook (detail/layer_hooks.hpp).
class event_sink {
 public:
  virtual void emit(log_event&& e) noexcept = 0;

 protected:
  ~event_sink() = default;
};
/// Sets the levels of the installed sink: events down to `level`, and reports (crash,
/// supervisor, progress...) only if `reports`. Does nothing while no sink is installed.
void set_event_level(runtime_core& rt, log_level level, bool reports) noexcept;
/// True when a plain event of `level` would go somewhere: one relaxed load.
bool log_enabled(const runtime_core& rt, log_level level) noexcept;
/// True when a report of `level` would go somewhere: one relaxed load. Producers test this
/// before building a report.
bool report_enabled(const runtime_core& rt, log_level level) noexcept;
/// Hands `e` to the sink (stamps its time if unset). Never throws, never blocks on I/O.
void emit_event(runtime_core& rt, log_event&& e) noexcept;

void set_system_monitor(runtime_core& rt, const system_monitor_settings& s) noexcept;
system_monitor_settings system_monitor_of(const runtime_core& rt) noexcept;

/// The state of `p`, or nullopt if it is not alive (see beamlet/core/process_info.hpp). Any thread;
/// a few microseconds whatever the process holds (its queue is never walked).
std::optional<process_details> inspect(runtime_core& rt, pid p);
/// Every live pid (scoped processes included), in pid order.
std::vector<pid> process_list(runtime_core& rt);

/// The runtime's counters (the metrics layer renders them). Counters are totals since the
/// runtime started; each is summed over per-scheduler cells that their owner bumps without a
/// read-modify-write, so counting costs the hot paths a plain increment.
struct runtime_stats {
  std::size_t processes = 0;         ///< alive now, scoped processes included
  std::size_t scoped_processes = 0;  ///< outside threads' identities open now
  std::uint64_t spawns = 0;
  std::uint64_t exits_normal = 0;        ///< normal
  std::uint64_t exits_shutdown = 0;      ///< shutdown, {shutdown, _}
  std::uint64_t exits_killed = 0;        ///< killed
  std::uint64_t exits_error = 0;         ///< any other reason
  std::uint64_t messages_delivered = 0;  ///< messages that reached a process's queue
  std::uint64_t messages_dropped = 0;    ///< refused or dropped by bounded mailboxes
  std::size_t timers = 0;                ///< pending receive timeouts and send_after timers
  std::vector<std::size_t> run_queues;   ///< per scheduler: runnable processes queued there
  std::size_t global_queue = 0;          ///< runnable processes not yet given to a scheduler
  unsigned schedulers = 0;
};
runtime_stats stats_of(runtime_core& rt);

/// The counters of one process, read without its cooperation (see inspect).
struct process_sample {
  pid id;
  pid parent;
  std::size_t message_queue_len = 0;
  std::size_t memory = 0;
  std::uint64_t reductions = 0;
  /// The body's type (process_info's initial_call before demangling); null for a scoped
  /// process. Type names are demangled by whoever shows them, once per type.
  const std::type_info* initial_call = nullptr;
};
/// One sample per live process, in pid order: a pass over the process table that reads a few
/// atomics per process (a million processes in about 60 ms on 2 cores).
std::vector<process_sample> sample_processes(runtime_core& rt);
/// The same pass without the vector and the sort: `f` gets each live process's sample, in no
/// particular order (for a view that keeps a few of a million).
void visit_processes(runtime_core& rt, const std::function<void(const process_sample&)>& f);
/// The kernel's thread ids (gettid) of the runtime's scheduler threads, by scheduler index
/// (0 for one not started yet): where `/proc/self/task/TID` reads their CPU time.
std::vector<int> scheduler_threads(runtime_core& rt);
/// Every registered name and its pid, sorted by name.
std::vector<std::pair<std::string, pid>> registered_processes(runtime_core& rt);
/// Called by a process (or mailbox) right before a receive: what that receive waits for, for
/// process_info ("call to <0.9.0>"). It labels the process's next receive only (the label is
/// cleared when a receive ends). `what` must outlive the wait (a string literal); `who` may be
/// null.
void set_waiting_for(basic_process& self, const char* what, pid who) noexcept;

/// A C++ type's readable (demangled) name.
std::string demangled_name(const std::type_info& t);
/// The runtime's time (runtime_options::clock).
clock_time now_in(const runtime_core& rt) noexcept;
/// The runtime's scheduler thread count.
unsigned scheduler_count(const runtime_core& rt) noexcept;
std::error_code unregister_in(runtime_core& rt, std::string_view name);

// -- spawning ------------------------------------------------------------------------------------

/// The strictest alignment a process body (the callable spawn copies) may have.
inline constexpr std::size_t max_body_alignment = 16;
/// Reserves a process with room for a body of the given size, its mailbox bounded by `limit`
/// (capacity 0: unbounded), spawned by `parent` (null: from outside). The process is in the
/// process table (processes() lists it, process_info reads it) from here on, so everything
/// process_info reads without the process's cooperation is set before it is published.
/// Throws system_limit_error when the runtime is full or shutting down, std::bad_alloc when out
/// of memory, std::invalid_argument for a policy outside the enum.
proc* allocate_proc(runtime_core& rt, std::size_t body_size, std::size_t body_align,
                    const mailbox_limit& limit, const proc* parent);
void* body_storage(proc* p) noexcept;
struct body_descriptor;
void set_body_type(proc* p, const body_descriptor* d) noexcept;
/// Where the frames a process's coroutines allocate are counted (process_info's memory).
std::atomic<std::int32_t>* frame_counter(proc* p) noexcept;
process& process_of(proc* p) noexcept;
/// Releases a process that was allocated but never started (its body threw).
void discard_proc(proc* p) noexcept;
/// Publishes the process and makes it runnable. `parent` is null for a spawn from outside.
pid start_proc(proc* p, std::coroutine_handle<task_promise<void>> body, const spawn_options& flags,
               proc* parent, ref* monitor_ref) noexcept;

// -- receive (owner only) ------------------------------------------------------------------------

/// Starts a receive in a coroutine process. True when it completed at once (match, or an
/// `after(0)` timeout); false when the process must suspend.
bool receive_begin(proc* p, receive_op& op);
void receive_suspend(proc* p, receive_op& op, std::coroutine_handle<> h) noexcept;
void receive_end(proc* p, receive_op& op) noexcept;
/// A scoped_process's table entry: created by open_external, ended by close_external.
struct external_handle {
  proc* p;
  runtime_core* rt;
  pid self;
};
external_handle open_external(runtime_core& rt);
void close_external(proc* p) noexcept;

/// Runs a whole receive for a scoped_process (an outside thread), blocking the calling thread.
void receive_blocking(proc* p, receive_op& op);

void yield_suspend(proc* p, std::coroutine_handle<> h) noexcept;
/// The runtime a process (or mailbox) belongs to.
runtime_core* runtime_of(const basic_process& p) noexcept;
void exit_suspend(proc* p, std::coroutine_handle<> h, const exit_reason& reason) noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
