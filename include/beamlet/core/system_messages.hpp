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

struct down {
  beamlet::ref ref;    ///< the monitor this DOWN is for
  beamlet::pid pid;    ///< the monitored process (null if a monitored name was unregistered)
  exit_reason reason;  ///< why it ended; `noproc` if it was not alive when monitored
  std::string name;    ///< the registered name, for monitors set by name; empty otherwise
};

struct exit_message {
  beamlet::pid from;  ///< the sender of the exit signal (the null pid: from outside)
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
  enum class kind : std::uint8_t {
    long_message_queue,  ///< `on`: the queue crossed the enable mark; off: back under disable
    long_schedule,       ///< the process ran `ran` without suspending
    busy_dist_port,      ///< the process was suspended: it sent to `port`'s busy connection
  };
  kind which;
  beamlet::pid pid;
  bool on = true;
  std::size_t queue_len = 0;
  std::chrono::nanoseconds ran{0};
  beamlet::pid port;  ///< busy_dist_port: the process of the busy connection
};

BEAMLET_END_NAMESPACE
