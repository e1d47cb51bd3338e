// The workloads bench/peers runs on both runtimes. Each returns the wall time of its measured
// part in nanoseconds; the driver divides by the operation count.
//
// DOWN fan-out: N watchers monitor one process, which is killed; the time until every watcher
// has its DOWN (watchers stay alive afterwards). DOWN fan-in: one watcher monitors N processes,
// which the driver thread kills one exit signal each; the time until the watcher has every
// DOWN. (Not through links to one process: CAF keeps an actor's links in a list it scans on
// every link, so setting up 100k links to one actor is quadratic.)
#pragma once

#include <cstdint>

namespace peers {

struct sizes {
  std::int64_t spawns = 200000;     // spawn + exit
  std::int64_t messages = 2000000;  // one sender, one receiver
  std::int64_t round_trips = 500000;
  std::int64_t monitors = 1000000;  // monitor + demonitor
  int watchers = 100000;            // DOWN fan-out 1 x N and fan-in N x 1
};

namespace beamlet_side {
double spawn_exit(std::int64_t n);
double send_receive(std::int64_t n);
double ping_pong(std::int64_t n);
double monitor(std::int64_t n);
double down_fan_out(int watchers);
double down_fan_in(int dying);
}  // namespace beamlet_side

namespace caf_side {
/// CAF's scheduler policies (caf.scheduler.policy): `stealing` is CAF's default.
enum class policy { stealing, sharing };
/// Used by every workload below; set it before calling one.
extern policy scheduler_policy;
double spawn_exit(std::int64_t n);
double send_receive(std::int64_t n);
double ping_pong(std::int64_t n);
double monitor(std::int64_t n);
double down_fan_out(int watchers);
double down_fan_in(int dying);
}  // namespace caf_side

/// Senders wait for an acknowledgement every `window` messages on both sides, so a receiver's
/// backlog stays bounded however the two are scheduled.
inline constexpr std::int64_t window = 1024;

}  // namespace peers
