/// @file
/// beamlet/core/system_monitor.hpp: runtime-wide alarms delivered as messages
/// (erlang:system_monitor).
///
/// One subscriber process per runtime receives monitor_alarm messages
/// (beamlet/core/system_messages.hpp):
///   - long_message_queue, with OTP 26 semantics: one alarm (`on`) when a process's queue grows
///     to the enable mark, and one (`on == false`) when it has fallen to the disable mark or below
///     (or the process ended); nothing in between, however the queue moves.
///   - long_schedule: a process ran longer than the limit without suspending (a busy loop, a
///     blocking call inside a process): the kind of bug that starves a scheduler.
///   - busy_dist_port: a process was suspended because it sent to a distribution connection
///     whose outbox was over its limit (beamlet/dist/node.hpp, node_options::busy_limit); `port`
///     is the connection's process. One alarm per suspension.
///
/// When: never on a send. A queue is checked by its owner as it takes new arrivals in (each
/// receive that finds some) and where it is scheduled out (the end of each run); a send to a
/// process parked in a receive makes it run, so only a process that waits for a busy scheduler
/// is seen late. long_schedule is checked at the end of each run.
///
/// Cost: when nobody subscribes, a send pays nothing, and a process run and each batch of
/// arrivals one relaxed load. Settings replace the previous ones atomically enough for alarms (a
/// send racing with the change may use the old thresholds once). Alarms to a subscriber that has
/// died are dropped. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class basic_process;

/// What erlang:system_monitor/2 is given: the subscriber and which alarms it wants. The
/// default value (no subscriber) is the monitor off.
struct system_monitor_settings {
  /// Who gets the alarms; the null pid turns the monitor off.
  pid subscriber;
  /// long_message_queue alarms: on at `enable` queued messages, off at `disable` or fewer.
  /// 0 disables them. `disable` must be below `enable`.
  std::size_t long_queue_enable = 0;
  std::size_t long_queue_disable = 0;  ///< see long_queue_enable
  /// long_schedule alarms when a run lasts longer than this; zero disables them.
  std::chrono::nanoseconds long_schedule{0};
  /// busy_dist_port alarms (OTP's option of the same name).
  bool busy_dist_port = false;
};

/// Replaces the runtime's settings. Throws std::invalid_argument (and changes nothing) when
/// long_queue_disable >= long_queue_enable with the alarm on, or long_schedule is negative.
void set_system_monitor(runtime& rt, const system_monitor_settings& s);
/// The same, from inside a process, for the runtime it runs in.
void set_system_monitor(basic_process& self, const system_monitor_settings& s);
/// The current settings.
system_monitor_settings system_monitor(runtime& rt);

BEAMLET_END_NAMESPACE
