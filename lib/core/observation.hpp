// What the core computes for the observability layer: crash reports, system monitor alarms,
// process inspection. The public entry points are in beamlet/core/detail/core.hpp; these are the
// core's internal helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

#include "process_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// Messages queued and not yet received: the queue plus the undrained inbox.
std::size_t queue_length(const proc* p) noexcept;
/// The live chain of parents of `p`: parent, its parent... (stops at a dead one).
std::vector<pid> ancestors_of(runtime_core& rt, const proc* p);
/// `[<0.1.0>,<0.2.0>]`
std::string pid_list(const std::vector<pid>& pids);
/// As pid_list, with each registered process by its name (proc_lib's ancestors list).
std::string named_list(runtime_core& rt, const std::vector<pid>& pids);

/// runtime_core::monitor_state::active bits.
inline constexpr std::uint8_t monitor_queue = 1;
inline constexpr std::uint8_t monitor_schedule = 2;
inline constexpr std::uint8_t monitor_busy_dist = 4;

/// A busy_dist_port alarm, if the subscriber asked for them: `suspended` sent to the busy
/// connection served by `port`.
void busy_port_alarm(runtime_core& rt, pid suspended, pid port) noexcept;

/// At the end of p's run (or a scoped_process's receive), while the long_message_queue alarm is on:
/// raises p's alarm once its queue has reached the enable mark, lowers it once the queue is at
/// the disable mark or below.
void check_queue_alarm(proc* p) noexcept;
/// Sends the long_message_queue alarm (on or off) for p, if the state changes.
void alarm_queue(proc* p, bool on) noexcept;
/// p ran `ns` without suspending: a long_schedule alarm if over the threshold.
void check_long_schedule(proc* p, std::int64_t ns) noexcept;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
