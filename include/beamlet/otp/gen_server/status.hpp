/// @file
/// beamlet/otp/gen_server/status.hpp: what sys-style debugging (beamlet/otp/sys.hpp) reads from a
/// gen_server, and the system request that carries it. The server answers these between two
/// messages, in its own process, so what it reports is consistent.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

/// sys:get_status/1, as a value.
struct server_status {
  beamlet::pid pid;             ///< the server's pid
  std::string registered_name;  ///< "" if none
  std::string server_type;      ///< the server class, demangled
  bool suspended = false;       ///< between sys::suspend and sys::resume
  beamlet::pid parent;          ///< the process that started it
  bool tracing = false;         ///< sys::trace is on
  /// Whether sys::statistics is on.
  bool collecting_statistics = false;
  /// The state, formatted by the server's format_status() if it has one, else by
  /// operator<< if the server class has one, else "<ServerType>".
  std::string state;
};
/// The status block sys:get_status prints: "Status for generic server counter (<0.9.0>)" and
/// one indented line per field.
std::string to_string(const server_status& s);

/// sys:statistics/2's answer: totals since statistics were switched on.
struct server_statistics {
  /// When statistics were switched on.
  std::chrono::system_clock::time_point start_time;
  /// When this answer was made.
  std::chrono::system_clock::time_point current_time;
  std::uint64_t reductions = 0;    ///< the process's reductions since then
  std::uint64_t messages_in = 0;   ///< messages the server took (system messages excepted)
  std::uint64_t messages_out = 0;  ///< replies it sent
};

namespace detail {

/// A system message ({system, From, Msg} in OTP). Answered with a call reply on `tag`.
struct sys_request {
  enum class op : std::uint8_t {
    get_state,
    get_status,
    suspend,
    resume,
    trace_on,
    trace_off,
    statistics_on,
    statistics_off,
    statistics_get,
  };
  op what = op::get_status;
  pid from;
  ref tag;
  /// get_state: the server class the caller expects, and how to build the reply from the
  /// server object (null when the server is of another class: the reply says so).
  const void* server_type = nullptr;
  std::function<message_node*(const void* server, ref tag)> project;
};
/// System messages always get through a bounded mailbox, as an operator's sys call must.
template <>
inline constexpr bool is_control_message<sys_request> = true;

}  // namespace detail
BEAMLET_END_NAMESPACE
