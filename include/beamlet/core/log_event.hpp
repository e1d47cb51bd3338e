/// @file
/// beamlet/core/log_event.hpp: what the runtime and its layers report, and at which level.
///
/// Events are produced by the runtime itself (crash reports), by the behaviours (supervisor,
/// progress and gen_server reports) and by user code (beamlet::log in beamlet/observe/logger.hpp),
/// and consumed by the logger of the observability layer, which formats and writes them on its own
/// thread. This header only defines the event: a level, a time, the process it is about, and
/// either a plain message or a report (a kind and an ordered list of fields whose values are
/// written as Erlang terms, so the text looks like OTP's reports).
///
/// Producing an event never blocks on I/O and never throws out of the runtime: when no logger
/// is installed, or the level is below the logger's, nothing is built at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

/// OTP logger's levels, most severe first.
enum class log_level : std::uint8_t {
  emergency,
  alert,
  critical,
  error,
  warning,
  notice,
  info,
  debug,
};

/// "error", "warning"...
std::string_view to_string(log_level l) noexcept;

/// One event for the logger: a plain message or an OTP-style report (see the header comment).
struct log_event {
  log_level level = log_level::notice;  ///< its severity; the logger drops those below its own
  /// When it happened, in wall-clock time; left at the epoch, it is stamped when emitted.
  std::chrono::system_clock::time_point time{};
  /// The process the event is from or about (the null pid: none).
  beamlet::pid pid{};
  /// Its registered name when the event was made ("" if none).
  std::string registered_name;
  /// "" for a plain message; otherwise the report's kind: crash_report, supervisor_report,
  /// progress_report, gen_server_terminate, alarm, logger_dropped.
  std::string report;
  /// The plain message, or the report's one-line summary.
  std::string message;
  /// The report's fields in order, values written as Erlang terms.
  std::vector<std::pair<std::string, std::string>> fields;
};

BEAMLET_END_NAMESPACE
