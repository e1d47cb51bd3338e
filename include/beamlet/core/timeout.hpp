/// @file
/// beamlet/core/timeout.hpp: how long to wait, or forever (Erlang's `timeout() :: non_neg_integer()
/// | infinity`).
///
/// Every beamlet operation that waits takes its limit as a `timeout_value`: receive's `after`,
/// `call`, `stop`, `receive_response`, `send_after`, start and shutdown timeouts. It converts
/// implicitly from any std::chrono::duration and from `infinity`, so call sites write `2s`,
/// `250ms`, `1.5s` or `infinity`, and the same rules hold everywhere:
///  * a negative duration, or a floating-point NaN, is rejected at once with timeout_value_error,
///    before the operation has done anything (no message sent, no monitor taken);
///  * a duration too long to represent in nanoseconds (`milliseconds::max()`, `hours::max()`,
///    anything past ~292 years) and a floating-point +infinity mean infinity, never a wrapped
///    negative value;
///  * `std::nullopt` also means infinity, the spelling of earlier beamlet versions.
///
/// A timeout_value is a trivially copyable value type; it never allocates.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include <beamlet/core/clock.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/error.hpp>

BEAMLET_BEGIN_NAMESPACE

/// `infinity`: wait forever (`after(infinity)`, `call(..., infinity)`).
struct infinity_t {
  explicit constexpr infinity_t() = default;
};
/// Erlang's `infinity`: pass it wherever a timeout_value is taken to wait without limit.
inline constexpr infinity_t infinity{};

/// How long an operation may wait: a finite, non-negative duration in nanoseconds, or
/// infinity. Converts implicitly from durations, `infinity` and `std::nullopt`; see the header
/// comment for the rules every conversion follows.
class timeout_value {
 public:
  /// Infinity.
  constexpr timeout_value() noexcept = default;
  /// Infinity: `after(infinity)`.
  constexpr timeout_value(infinity_t) noexcept {}
  /// Infinity (the spelling of earlier beamlet versions).
  constexpr timeout_value(std::nullopt_t) noexcept {}
  /// A finite wait of `d`; see the header comment for negative, NaN and overlong values.
  template <class Rep, class Period>
  constexpr timeout_value(std::chrono::duration<Rep, Period> d) : ns_(to_nanoseconds(d)) {}
  /// nullopt is infinity.
  template <class Rep, class Period>
  constexpr timeout_value(const std::optional<std::chrono::duration<Rep, Period>>& d)
      : ns_(d ? to_nanoseconds(*d) : infinite_ns) {}

  /// True for a finite wait (zero included), false for infinity.
  constexpr bool finite() const noexcept { return ns_ != infinite_ns; }
  /// True for infinity: the opposite of finite().
  constexpr bool is_infinity() const noexcept { return ns_ == infinite_ns; }
  /// The duration; clock_time::duration::max() for infinity.
  constexpr clock_time::duration duration() const noexcept { return clock_time::duration(ns_); }
  /// Whole milliseconds, rounded up (Erlang prints timeouts in ms); nullopt for infinity.
  constexpr std::optional<std::int64_t> milliseconds() const noexcept {
    if (!finite()) return std::nullopt;
    return (ns_ + 999'999) / 1'000'000;
  }

  /// Equal when both are infinity or both wait the same number of nanoseconds.
  friend constexpr bool operator==(timeout_value, timeout_value) noexcept = default;

 private:
  using rep = clock_time::duration::rep;
  static constexpr rep infinite_ns = std::numeric_limits<rep>::max();
  // Durations at or past this many nanoseconds are infinity: far enough below the maximum that
  // a deadline computed from one (now + timeout) cannot overflow either.
  static constexpr rep limit_ns = infinite_ns / 2;

  template <class Rep, class Period>
  static constexpr rep to_nanoseconds(std::chrono::duration<Rep, Period> d) {
    if constexpr (std::is_floating_point_v<Rep>) {
      if (std::isnan(d.count()))
        throw timeout_value_error("beamlet: timeout is NaN (timeout_value)");
    }
    if (d.count() < Rep(0))
      throw timeout_value_error("beamlet: timeout must not be negative (timeout_value)");
    // Compare in long double, which holds any 64-bit count exactly enough for this bound.
    const long double ns = static_cast<long double>(d.count()) *
                           static_cast<long double>(Period::num) * 1e9L /
                           static_cast<long double>(Period::den);
    if (!(ns < static_cast<long double>(limit_ns))) return infinite_ns;  // also +inf
    if constexpr (std::is_floating_point_v<Rep>) {
      return static_cast<rep>(std::llround(ns));  // nearest: binary fractions are inexact
    } else {
      return std::chrono::ceil<std::chrono::nanoseconds>(d).count();
    }
  }

  rep ns_ = infinite_ns;
};

namespace detail {

/// `from + t`, or time_point::max() for infinity (never overflows: finite timeouts are bounded
/// well below the clock's range).
constexpr clock_time deadline_after(clock_time from, timeout_value t) noexcept {
  if (!t.finite()) return clock_time::max();
  if (from.time_since_epoch() > clock_time::duration::max() - t.duration())
    return clock_time::max();
  return from + t.duration();
}

}  // namespace detail

BEAMLET_END_NAMESPACE
