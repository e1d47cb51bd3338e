// What every part of the outage replay shares: the scenario, the counters the timeline reads,
// and the service-discovery state (leases and the consistent-hash ring).
//
// Time is scaled: one second of the replay stands for twenty seconds of the outage, so the 60 s
// discovery lease is 3 s here and the three hours fit in well under a minute.
//
// Counters are atomics: the parts run on both schedulers and the timeline reads them from an
// outside thread. Nothing here blocks a process.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace replay {

/// The fixes that followed the outage; `--fix all` is all of them.
struct fixes {
  bool partition = false;          ///< the pool is a PartitionSupervisor, not one supervisor
  bool marker = false;             ///< supervisors wait for init acks with a marked ref
  bool single_supervisor = false;  ///< no HTTP-client connection supervisor behind the pool
  bool rate_limit = false;         ///< limits re-tuned to the topology, plus connection creation
  bool shed = false;               ///< the pool sheds start requests over a queue threshold
  bool deadline = false;  ///< requests carry the caller's deadline; work past it is dropped
};

enum class recovery_plan { none, one, cluster, limits_then_restart };

struct scenario {
  fixes fix;
  std::string fix_name = "none";
  recovery_plan recovery = recovery_plan::none;
  std::string recovery_name = "none";

  int instances = 6;       ///< voice-syncer instances at the start
  int max_instances = 12;  ///< "add instances" doubles them
  int hosts = 8;           ///< gateway hosts (after the move to more, smaller pods)
  int tuned_hosts = 2;     ///< the host count the per-host reconnect limit was tuned for
  int sessions = 20'000;   ///< devices, one session process each
  int call_size = 10;      ///< devices per call
  double fault_fraction = 0.17;
  double seconds = 36;              ///< run length
  double fault_at = 3;              ///< when the fault strikes
  double lease_ttl = 3;             ///< the 60 s lease, scaled
  double rpc_timeout = 0.5;         ///< one RPC attempt
  int rpc_attempts = 3;             ///< attempts per placement before the call owner backs off
  double reconnect_limit = 1'500;   ///< per host, per second: the limit tuned for big hosts
  double gateway_capacity = 1'500;  ///< reconnect starts per second a big host survives
  double upstream_limit = 3'000;    ///< placement attempts per second, with the rate-limit fix
  double lowered_limit = 2'000;     ///< what the "lower upstream rate limits" recovery sets
  int partitions = 8;
  std::size_t shed_above = 8'000;           ///< per instance, spread over its partitions
  double pool_start_rate = 4'000;           ///< per instance, with the rate-limit fix
  std::uint16_t media_connections = 2'000;  ///< the media-server stub's connection bound

  /// A gateway host's survivable reconnect rate: big hosts were split into smaller ones.
  double host_capacity() const { return gateway_capacity * tuned_hosts / hosts; }
  /// The per-host limit in force: as tuned for big hosts, or re-tuned with the fix.
  double host_limit() const { return fix.rate_limit ? 0.8 * host_capacity() : reconnect_limit; }
};

/// Everything the timeline counts. Monotonic totals; the timeline takes per-second differences.
struct counters {
  std::atomic<std::int64_t> rpc_ok{0}, rpc_failed{0};  ///< RPC attempts by outcome
  std::atomic<std::int64_t> conn_starts{0};            ///< connection processes started
  std::atomic<std::int64_t> placed{0};                 ///< participants placed on a media server
  std::atomic<std::int64_t> unplaced{0};  ///< connected participants whose call is not placed
  std::atomic<std::int64_t> lease_expiries{0};
  std::atomic<std::int64_t> sessions_killed{0}, reconnects{0};
  std::atomic<std::int64_t> downs{0};  ///< DOWNs of sessions, at gateways and call owners
  std::atomic<std::int64_t> gateway_ooms{0};
  std::atomic<std::int64_t> shed{0}, rate_limited{0};  ///< pool starts refused by a control
  std::atomic<std::int64_t> expired{0};  ///< connections that ended unmade: their caller gave up
};

/// Service discovery: a lease per instance, and the ring built from the live leases.
///
/// Each instance owns 64 points on a hash ring; an entity (a call) is placed on the first three
/// distinct provisioned instances clockwise from its hash (primary, secondary, tertiary) and
/// served by the first of them that holds a lease. An instance whose lease expires drops out of
/// the ring and gets no new work until it renews.
class discovery {
 public:
  static constexpr int max_instances = 32;

  explicit discovery(int provisioned, int max_provisioned);

  /// Instances 0..provisioned()-1 exist; "add instances" raises it.
  int provisioned() const { return provisioned_.load(std::memory_order_acquire); }
  void provision(int n) { provisioned_.store(n, std::memory_order_release); }

  /// The registrar of `instance` renewed its lease at `now`.
  void renew(int instance, std::chrono::steady_clock::time_point until);
  /// Recomputes membership from the leases; counts expiries. One caller (the keeper).
  void tick(std::chrono::steady_clock::time_point now, counters& c);
  bool member(int instance) const {
    return (members_.load(std::memory_order_acquire) >> instance) & 1u;
  }
  int member_count() const;
  std::uint32_t members() const { return members_.load(std::memory_order_acquire); }

  /// The instance that serves `key` now, or -1 when none of its three placements is in the ring.
  int serving(std::uint64_t key) const;
  /// Primary, secondary, tertiary (-1 when fewer instances exist).
  std::array<int, 3> placement(std::uint64_t key) const;

 private:
  std::vector<std::pair<std::uint64_t, int>> points_;  // sorted by hash
  std::atomic<int> provisioned_;
  std::array<std::atomic<std::int64_t>, max_instances> lease_until_{};  // steady ns; 0: none
  std::atomic<std::uint32_t> members_{0};
};

/// A 64-bit mix (splitmix64's finaliser): spreads keys and ring points.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline std::int64_t to_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace replay
