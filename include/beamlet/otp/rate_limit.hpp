/// @file
/// beamlet/otp/rate_limit.hpp: token buckets, for start-rate limits and any process that wants one.
///
/// A token_bucket admits `per_second` events per second on average and `burst` at once. It is the
/// generic cell rate algorithm: one 64-bit word holds the time at which the bucket will be full
/// again, so try_acquire is a load and a compare-exchange, thread-safe without a lock, and
/// costs nothing while no one calls it. Time is passed in, so a bucket follows whatever clock
/// its user lives in (a process passes self.now(); with a manual_clock, tests are exact).
///
/// Bad parameters (rate not positive or not finite, burst below 1 or not finite) throw
/// std::invalid_argument from the constructor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// A rate: `per_second` on average, up to `burst` back to back.
struct rate_limit {
  double per_second = 0;  ///< events per second on average; must be positive and finite
  double burst = 1;       ///< events admitted back to back; must be >= 1 and finite
};

/// A token bucket enforcing one rate_limit; starts full. Shared by any number of threads without a
/// lock; not copyable.
class token_bucket {
 public:
  /// The time callers pass in: the runtime clock's (clock_time, what a process's self.now()
  /// returns).
  using time_point = std::chrono::steady_clock::time_point;

  /// A full bucket for `limit`. Throws std::invalid_argument for bad parameters, or for a rate so
  /// low that `burst` tokens would take longer than about 285 years to come back.
  explicit token_bucket(rate_limit limit);
  token_bucket(const token_bucket&) = delete;
  token_bucket& operator=(const token_bucket&) = delete;

  /// Takes one token if there is one at `now`. Thread-safe.
  bool try_acquire(time_point now) noexcept;
  /// Tokens available at `now` (fractional).
  double available(time_point now) const noexcept;
  /// The rate it was made with.
  rate_limit limit() const noexcept { return limit_; }

 private:
  rate_limit limit_;
  std::int64_t interval_ns_;  ///< time one token takes to come back
  std::int64_t window_ns_;    ///< burst * interval: how far ahead the bucket may be drawn
  /// The "theoretical arrival time": when the bucket will be full again, in ns of the clock's
  /// epoch. A token is available while it is at most window - interval ahead of now.
  std::atomic<std::int64_t> full_at_ns_{0};
};

BEAMLET_END_NAMESPACE
