// The token bucket (beamlet/otp/rate_limit.hpp).
#include <beamlet/otp/rate_limit.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {
std::int64_t ns_of(token_bucket::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

token_bucket::token_bucket(rate_limit limit) : limit_(limit) {
  if (!std::isfinite(limit.per_second) || limit.per_second <= 0)
    throw std::invalid_argument("token_bucket: the rate must be a positive number per second");
  if (!std::isfinite(limit.burst) || limit.burst < 1)
    throw std::invalid_argument("token_bucket: the burst must be a number >= 1");
  const double interval = 1e9 / limit.per_second;
  if (interval * limit.burst > 9e18)
    throw std::invalid_argument("token_bucket: rate too low for its burst");
  interval_ns_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(interval));
  // At least one token, however fine the rate (above 1e9/s an interval rounds to 1 ns).
  window_ns_ = std::max(interval_ns_, static_cast<std::int64_t>(interval * limit.burst));
  full_at_ns_.store(std::numeric_limits<std::int64_t>::min(), std::memory_order_relaxed);
}

bool token_bucket::try_acquire(time_point now) noexcept {
  const std::int64_t t = ns_of(now);
  std::int64_t full_at = full_at_ns_.load(std::memory_order_relaxed);
  for (;;) {
    const std::int64_t next = std::max(full_at, t) + interval_ns_;
    if (next - t > window_ns_) return false;
    if (full_at_ns_.compare_exchange_weak(full_at, next, std::memory_order_relaxed)) return true;
  }
}

double token_bucket::available(time_point now) const noexcept {
  const std::int64_t t = ns_of(now);
  const std::int64_t full_at = std::max(full_at_ns_.load(std::memory_order_relaxed), t);
  const double used = static_cast<double>(full_at - t) / static_cast<double>(interval_ns_);
  return std::max(0.0, limit_.burst - used);
}

BEAMLET_END_PRIVATE_NAMESPACE
