/// @file
/// beamlet/core/error.hpp: error codes and exceptions.
///
/// Expected failures (a name already taken, a name not registered) come back as
/// std::error_code values in the `beamlet` category; they are part of normal operation and
/// cheap to test. Misuse and resource exhaustion throw the exception types below, each derived
/// from a standard exception so generic handlers keep working.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// The expected failures, as std::error_code values of error_category(); an errc compares
/// equal to its std::error_code (std::is_error_code_enum is specialised below).
enum class errc {
  not_registered = 1,  ///< send/whereis/unregister of a name nobody holds (Erlang: badarg)
  name_taken,          ///< register_name: another process holds the name
  not_alive,           ///< register_name, try_send: the process is not alive
  already_named,       ///< register_name: the process already has a name
  invalid_name,        ///< empty name, or the reserved `undefined`
  mailbox_full,        ///< try_send: the target's bounded mailbox refused the message
  /// try_send to a process on another node: the message cannot be written in the distribution
  /// format (an atom over 255 characters, a NaN...); it was not sent, and the error is logged
  not_encodable,
};

/// The `beamlet` error category: one instance for the program, whose message() describes each
/// errc in words.
const std::error_category& error_category() noexcept;

/// The std::error_code for `e` in error_category(); found by argument-dependent lookup, so
/// `std::error_code ec = errc::name_taken;` works.
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// A resource limit was hit: the process table is full, or the runtime is shutting down and
/// accepts no new processes (Erlang: system_limit).
class system_limit_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A receive timeout that is not a non-negative duration (Erlang: timeout_value,
/// spec §1.2 rule 11).
class timeout_value_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// `received::get<T>()` on a result that does not hold a T.
class bad_message_access : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

BEAMLET_END_NAMESPACE

template <>
struct std::is_error_code_enum<beamlet::errc> : std::true_type {};
