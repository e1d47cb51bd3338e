/// @file
/// beamlet/core/process_info.hpp: erlang:process_info/1 and erlang:processes/0 for beamlet
/// processes.
///
/// process_info reads a process from any thread without its cooperation: a process that is busy
/// running, or parked with a million messages queued, answers in microseconds, because nothing it
/// owns is walked. Its counters (queue length, including messages not yet taken from the inbox;
/// messages received and examined; reductions; memory) are read at any time. Its lists (links,
/// monitors, what it is waiting for, the types of its oldest queued messages) belong to it;
/// another thread can read them only while the process is parked in a receive, which is held
/// for the few microseconds of the read (a message arriving meanwhile is queued and the process
/// woken right after). For a process caught running,
/// the lists are left empty and `complete` is false; a process asking about itself always gets
/// them. The answer is a snapshot: by the time it is read, the process may have moved on (and
/// a queue length read while the process moves a batch of arrivals from its inbox to its queue
/// may be off by that batch).
///
/// Results are values; a pid that is not alive (or the null pid) gives std::nullopt. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class basic_process;

/// What a process is doing at the moment it was looked at.
enum class process_status : std::uint8_t {
  running,   ///< on a scheduler thread now
  runnable,  ///< queued to run
  waiting,   ///< parked in a receive (or a scoped_process's wait)
  exiting,   ///< ending: its links and monitors are being told
  /// held back: it sent to a busy distribution connection (OTP's busy_dist_port) and goes on
  /// when that connection has drained
  suspended,
};
/// "running", "runnable", "waiting", "exiting", "suspended" (OTP's words).
std::string_view to_string(process_status s) noexcept;

/// How many of the oldest queued messages process_details::queued_types names.
inline constexpr std::size_t queued_types_shown = 10;

/// One process as process_info() found it (the items of Erlang's process_info/1): a snapshot,
/// see the header comment for what is read when.
struct process_details {
  /// The process looked at.
  beamlet::pid pid;
  /// What it was doing at that moment.
  process_status status = process_status::runnable;
  /// The lists (links, monitors, monitored_names, waiting_for, queued_types) were read: the
  /// process was parked, or asked about itself. Everything else is always filled in.
  bool complete = false;
  /// The identity of an outside thread (a scoped_process, beamlet/core/scoped_process.hpp).
  bool outside_thread = false;
  /// Messages queued and not yet received, priority messages included, and those not yet moved
  /// out of the inbox (where exit and monitor signals in flight count too: telling them apart
  /// would cost every send a look at the node's type).
  std::size_t message_queue_len = 0;
  std::uint64_t messages_received = 0;  ///< messages ever queued
  std::uint64_t messages_examined = 0;  ///< messages looked at by receives (the scan cost)
  /// A bounded mailbox's capacity (0: unbounded), and the messages its limit refused or
  /// dropped (beamlet/core/mailbox_limit.hpp).
  std::size_t mailbox_capacity = 0;
  std::uint64_t messages_dropped = 0;  ///< see mailbox_capacity; 0 for an unbounded mailbox
  /// Work done so far, in reductions (completed receives, the unit of
  /// runtime_options::reductions), added up at the end of each run.
  std::uint64_t reductions = 0;
  /// Whether it traps exits (basic_process::trap_exit).
  bool trap_exit = false;
  std::string registered_name;  ///< "" if none
  /// The processes it is linked to, sorted; see `complete`.
  std::vector<beamlet::pid> links;
  std::vector<beamlet::pid> monitors;        ///< processes it monitors by pid
  std::vector<std::string> monitored_names;  ///< names it monitors by name
  /// The processes monitoring it, one entry per monitor, sorted; always filled in.
  std::vector<beamlet::pid> monitored_by;
  /// What the current receive waits for: "init ack from <0.7.0>", "call to <0.9.0>",
  /// "a message" for an unlabelled receive; "" when not waiting.
  std::string waiting_for;
  /// The types of the first queued messages (at most queued_types_shown), oldest first,
  /// demangled: what a backlog is made of. Read with the lists (see `complete`).
  std::vector<std::string> queued_types;
  /// Its labels (basic_process::set_label), sorted by key; always filled in.
  std::vector<std::pair<std::string, std::string>> labels;
  /// The body's type (for a gen_server, the server class), demangled.
  std::string initial_call;
  beamlet::pid parent;                  ///< the spawner (null for a scoped_process)
  std::vector<beamlet::pid> ancestors;  ///< parent, its parent... while they are alive
  /// Bytes: the process record and body, its coroutine frames, and its queued messages.
  std::size_t memory = 0;
  /// The queued messages' share of `memory`: the queue length times the average size of the
  /// messages the process has received (counting each removal's size would cost every receive).
  std::size_t queue_bytes = 0;
};

/// The state of `p`, or nullopt if it is not alive.
std::optional<process_details> process_info(runtime& rt, pid p);
/// The same, asked from inside a process (of `self`'s runtime); `p == self.self()` gets the
/// lists whatever the process is doing.
std::optional<process_details> process_info(basic_process& self, pid p);
/// Every live pid, scoped processes included, in pid (creation) order.
std::vector<pid> processes(runtime& rt);
/// The same, for the runtime `self` runs in.
std::vector<pid> processes(basic_process& self);

BEAMLET_END_NAMESPACE
