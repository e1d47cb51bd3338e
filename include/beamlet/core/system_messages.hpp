/// @file
/// beamlet/core/system_messages.hpp: the messages the runtime itself delivers.
///
/// `down` is Erlang's {'DOWN', Ref, process, Object, Reason}: exactly one per monitor, after every
/// message the dead process sent to the watcher (spec §3 rule 2, §1.1 rule 3).
/// `exit_message` is {'EXIT', From, Reason}: what an exit signal becomes in a process that traps
/// exits (spec §2 rule 6). Both are ordinary message types: match them with on<down>() and
/// on<exit_message>().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

/// A monitored process ended, or was not alive when monitored: Erlang's
/// {'DOWN', Ref, process, Object, Reason}. Exactly one per monitor, after every message the
/// dead process sent to the watcher; none once demonitor has returned.
struct down {
  beamlet::ref ref;    ///< the monitor this DOWN is for
  beamlet::pid pid;    ///< the monitored process (null if a monitored name was unregistered)
  exit_reason reason;  ///< why it ended; `noproc` if it was not alive when monitored
  std::string name;    ///< the registered name, for monitors set by name; empty otherwise
};

/// An exit signal received while trapping exits: Erlang's {'EXIT', From, Reason}. A linked
/// process's death arrives this way too, with its exit reason (`normal` included).
struct exit_message {
  beamlet::pid from;  ///< the sender of the exit signal (the null pid: from outside)
  /// The signal's reason: the linked process's exit reason, or the one given to exit() (an
  /// exit(P, kill) is never trapped: it kills).
  exit_reason reason;
};

namespace detail {
// Made by the runtime for the process itself: a bounded mailbox never counts or drops them.
template <>
inline constexpr bool is_control_message<down> = true;
template <>
inline constexpr bool is_control_message<exit_message> = true;
}  // namespace detail

/// What the system monitor (beamlet/core/system_monitor.hpp) sends its subscriber:
/// {monitor, Pid, long_message_queue, Bool}, {monitor, Pid, long_schedule, Info} and
/// {monitor, SusPid, busy_dist_port, Port} in OTP.
struct monitor_alarm {
  /// Which alarm this is (the tag of OTP's tuple).
  enum class kind : std::uint8_t {
    long_message_queue,  ///< `on`: the queue crossed the enable mark; off: back under disable
    long_schedule,       ///< the process ran `ran` without suspending
    busy_dist_port,      ///< the process was suspended: it sent to `port`'s busy connection
  };
  /// Which alarm this is.
  kind which;
  /// The process the alarm is about (for busy_dist_port, the one suspended).
  beamlet::pid pid;
  /// long_message_queue: true when the alarm is raised, false when it is cleared. Always true
  /// for the other kinds.
  bool on = true;
  /// The process's queue length when the alarm was made (0 for busy_dist_port).
  std::size_t queue_len = 0;
  /// long_schedule: how long the run lasted; zero for the other kinds.
  std::chrono::nanoseconds ran{0};
  beamlet::pid port;  ///< busy_dist_port: the process of the busy connection
};

BEAMLET_END_NAMESPACE
