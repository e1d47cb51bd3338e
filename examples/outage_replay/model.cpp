#include "model.hpp"

#include <algorithm>
#include <bit>

namespace replay {

namespace {
constexpr int points_per_instance = 64;
}  // namespace

discovery::discovery(int provisioned, int max_provisioned) : provisioned_(provisioned) {
  points_.reserve(static_cast<std::size_t>(max_provisioned) * points_per_instance);
  for (int i = 0; i < max_provisioned && i < max_instances; ++i)
    for (int v = 0; v < points_per_instance; ++v)
      points_.emplace_back(mix(static_cast<std::uint64_t>(i) * 1'000'003u + v), i);
  std::sort(points_.begin(), points_.end());
}

void discovery::renew(int instance, std::chrono::steady_clock::time_point until) {
  if (instance >= 0 && instance < max_instances)
    lease_until_[static_cast<std::size_t>(instance)].store(to_ns(until), std::memory_order_release);
}

void discovery::tick(std::chrono::steady_clock::time_point now, counters& c) {
  const std::int64_t t = to_ns(now);
  std::uint32_t m = 0;
  for (int i = 0; i < provisioned(); ++i)
    if (lease_until_[static_cast<std::size_t>(i)].load(std::memory_order_acquire) > t) m |= 1u << i;
  const std::uint32_t old = members_.exchange(m, std::memory_order_acq_rel);
  c.lease_expiries.fetch_add(std::popcount(old & ~m), std::memory_order_relaxed);
}

int discovery::member_count() const {
  return std::popcount(members());
}

std::array<int, 3> discovery::placement(std::uint64_t key) const {
  std::array<int, 3> out{-1, -1, -1};
  if (points_.empty()) return out;
  const int n = provisioned();
  const std::pair<std::uint64_t, int> probe{mix(key), -1};
  std::size_t at = static_cast<std::size_t>(
      std::lower_bound(points_.begin(), points_.end(), probe) - points_.begin());
  int found = 0;
  for (std::size_t step = 0; step < points_.size() && found < 3; ++step) {
    const int inst = points_[(at + step) % points_.size()].second;
    if (inst >= n || std::find(out.begin(), out.begin() + found, inst) != out.begin() + found)
      continue;
    out[static_cast<std::size_t>(found++)] = inst;
  }
  return out;
}

int discovery::serving(std::uint64_t key) const {
  for (const int inst : placement(key))
    if (inst >= 0 && member(inst)) return inst;
  return -1;
}

}  // namespace replay
