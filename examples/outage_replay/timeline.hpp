// The replay's record: one row per second (what an operator's dashboard would have shown), the
// events (fault, recovery actions), and the verdict computed from them at the end.
//
// The rows are written by the driver thread and read by the live page's renderer (in the HTTP
// endpoint's process), so they sit behind a mutex; neither side holds it for long.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "model.hpp"

namespace replay {

struct row {
  double t = 0;                     ///< seconds since the replay began
  std::vector<std::size_t> queues;  ///< per provisioned instance: its longest message queue
  std::uint32_t members = 0;        ///< ring membership (bit i: instance i)
  int provisioned = 0;
  std::int64_t rpc_ok = 0, rpc_failed = 0;  ///< in this second
  std::int64_t conn_starts = 0, reconnects = 0, downs = 0;
  std::int64_t unplaced = 0;  ///< connected participants whose call is not placed, now
  std::string event;          ///< what happened during this second, if anything

  std::size_t max_queue() const;
  int ring_size() const;
  /// RPC attempts that succeeded in this second; -1 without any.
  double rpc_success() const;
};

struct verdict {
  std::int64_t placements = 0;  ///< participants placed on a media server after the fault
  std::int64_t unplaced_at_end = 0;
  std::size_t peak_queue = 0;
  double peak_at = 0;
  int ring_min = 0, provisioned = 0;
  std::int64_t lease_expiries = 0, gateway_ooms = 0;
  std::int64_t sessions_killed = 0, downs = 0, reconnects = 0;
  std::int64_t shed = 0, rate_limited = 0;  ///< pool starts refused by the overload controls
  std::int64_t expired = 0;     ///< placements and connections dropped past their caller's deadline
  double recovered_after = -1;  ///< seconds after the fault until the end stays healthy; -1: never
  bool cascade = false;         ///< backlog, lease expiry and ring dropout all happened
  int relapses = 0;             ///< recovery actions that helped, then did not last
  bool healthy = false;         ///< the ring never shrank and no backlog built up
};

class timeline {
 public:
  explicit timeline(cluster_context& cx) : cx_(cx) {}

  /// Takes this second's row (differences of the counters since the last one).
  const row& record(double t);
  /// Notes an event in the row being built.
  void mark(const std::string& what);
  /// Instances a recovery action restarted at time t (for the relapse check).
  void restarted(double t, std::vector<int> instances);

  verdict judge() const;
  std::string csv() const;
  /// The live page's data: the scenario, every row so far, the events.
  std::string json(bool done) const;
  void set_done() { done_ = true; }
  bool done() const { return done_; }

  static std::string format_header(int instances);
  static std::string format_row(const row& r);

 private:
  cluster_context& cx_;
  mutable std::mutex mu_;
  std::vector<row> rows_;
  std::string pending_event_;
  std::vector<std::pair<double, std::vector<int>>> restarts_;
  std::int64_t last_ok_ = 0, last_failed_ = 0, last_conn_ = 0, last_reconnects_ = 0,
               last_downs_ = 0;
  bool done_ = false;
};

/// One line per verdict item, then `verdict: cascade=yes|no relapse=yes|no healthy=yes|no`.
std::string format_verdict(const verdict& v, const scenario& sc);

}  // namespace replay
