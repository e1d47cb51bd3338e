/// @file
/// beamlet/observe/top.hpp: recon-style views of the processes that stand out.
///
///   for (const auto& e : beamlet::top(rt, 10, beamlet::top_by::message_queue_len)) ...
///   std::cout << beamlet::format_top(beamlet::top(rt, 10, beamlet::top_by::memory));
///   auto busiest = co_await beamlet::top_window(self, 5, beamlet::top_by::reductions, 1s);
///
/// top(n, by) is recon:proc_count/2: the n processes with the largest value now. top_window is
/// recon:proc_window/3: the n processes whose value grew most over `interval` (a process born
/// during the interval counts from zero). Both read every process without its cooperation (see
/// beamlet/core/process_info.hpp), so they answer while the system is overloaded; a pass costs
/// about 60 ms per million processes (2 cores). Entries are ordered largest first, ties by pid.
/// Thread-safe. top_window from a process waits in a receive (the process can still be killed);
/// from an outside thread it sleeps.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process_info.hpp>
#include <beamlet/core/task.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class process;

/// What to rank processes by: message_queue_len (messages queued), memory (bytes, as
/// process_info reports them) or reductions (work done).
enum class top_by : std::uint8_t { message_queue_len, memory, reductions };
/// "message_queue_len", "memory", "reductions"
std::string_view to_string(top_by b) noexcept;

/// One process in a top or top_window answer. Apart from `value`, the fields are read when
/// the answer is put together, just after the ranking pass.
struct top_entry {
  beamlet::pid pid;  ///< the process
  /// The value ranked (for top_window: its increase over the interval).
  std::int64_t value = 0;
  std::string registered_name;  ///< "" if none
  std::string initial_call;     ///< the body's type (a gen_server's server class), demangled
  process_status status = process_status::runnable;  ///< running, runnable, waiting...
  std::size_t message_queue_len = 0;                 ///< messages queued
  std::string waiting_for;  ///< when the process was parked in a labelled receive
};

/// recon:proc_count/2: the `n` processes with the largest `by` now (fewer if fewer are
/// alive), largest first. Waits for no process.
std::vector<top_entry> top(runtime& rt, std::size_t n, top_by by);
/// As top(runtime&, ...), in the runtime of process `self`.
std::vector<top_entry> top(basic_process& self, std::size_t n, top_by by);
/// Blocks the calling (outside) thread for `interval`.
std::vector<top_entry> top_window(runtime& rt, std::size_t n, top_by by,
                                  std::chrono::milliseconds interval);
/// From a process: waits `interval` in a receive that takes nothing.
task<std::vector<top_entry>> top_window(process& self, std::size_t n, top_by by,
                                        std::chrono::milliseconds interval);

/// A fixed-width table an operator reads at a glance:
///   pid       message_queue_len  name          initial call                 status   waiting for
///   <0.42.0>            1000000  sessions_sup  beamlet::dynamic_supervisor  waiting  init ack from
///   <0.9.0>
std::string format_top(const std::vector<top_entry>& entries, top_by by);

BEAMLET_END_NAMESPACE
