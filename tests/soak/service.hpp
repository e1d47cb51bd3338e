// The service the soak runs: a supervision tree of a few thousand processes.
//
//   soak_top (one_for_one)
//   ├── counters  PartitionSupervisor: 8 seq servers, a call on key K reaches K's partition
//   ├── sessions  DynamicSupervisor: session workers (permanent), started and stopped by the load
//   ├── sinks     Supervisor: stream sinks, each checks the sequence numbers of every sender
//   └── echo      acceptor pool: a TCP echo server, a process per connection
//
// Every worker links to the witness, so a kill shows up there as EXIT(killed). The supervisors'
// intensities are high: the chaos kills far more often than a real service would crash, and
// the point is the bookkeeping of restarts, not giving up.
#pragma once

#include "world.hpp"

#include <beamlet/beamlet.hpp>

#include <cstdint>

namespace soak {

// -- the protocol -------------------------------------------------------------------------------

struct bump {  ///< seq server: answers n + 1
  std::uint64_t n;
  using reply_type = std::uint64_t;
};
struct ping {  ///< session: answers n
  std::uint64_t n;
  using reply_type = std::uint64_t;
};
struct stream_msg {  ///< sender -> sink, seq = 0, 1, 2... per (sender, sink) pair
  beamlet::pid from;
  std::uint64_t seq;
};
struct stream_ack {  ///< sink -> sender: everything below `upto` arrived
  beamlet::pid sink;
  std::uint64_t upto;
};
struct stream_fin {  ///< sender -> sink at the end: `total` were sent to this sink
  beamlet::pid from;
  std::uint64_t total;
};
struct fin_ack {
  bool complete;
  std::uint64_t received;
};

// -- the workers (each links to the witness in its init) ------------------------------------

class seq_server : public beamlet::gen_server<seq_server> {
 public:
  explicit seq_server(world* w) : w_(w) {}
  void init() { self().link(w_->witness); }
  std::uint64_t handle_call(const bump& b, beamlet::from<std::uint64_t>) { return b.n + 1; }

 private:
  world* w_;
};

class session : public beamlet::gen_server<session> {
 public:
  explicit session(world* w) : w_(w) {}
  void init() { self().link(w_->witness); }
  std::uint64_t handle_call(const ping& p, beamlet::from<std::uint64_t>) { return p.n; }

 private:
  world* w_;
};

inline constexpr int partitions = 8;
inline constexpr std::uint64_t ack_every = 64;
inline const char* const pool_name = "soak_echo";
inline const char* const top_name = "soak_top";
inline const char* const counters_name = "soak_counters";
inline const char* const sessions_name = "soak_sessions";
inline const char* const sinks_name = "soak_sinks";

std::string sink_name(int i);

/// Starts soak_top linked to `me`; the tree's pids are found by name from then on.
beamlet::start_result start_service(beamlet::scoped_process& me, world& w);

/// Sessions are split between the churn, which may terminate_child those with an even pid
/// serial, and the chaos, which may kill those with an odd one. A session both killed and
/// terminated at once would be restarted or not depending on which signal its supervisor saw
/// first (both are correct), and the restart count could not be checked exactly.
inline bool churn_may_terminate(beamlet::pid p) {
  return p.serial() % 2 == 0;
}
inline bool chaos_may_kill(beamlet::pid p) {
  return !churn_may_terminate(p);
}

/// The session worker's start, for DynamicSupervisor.start_child.
beamlet::child_spec session_spec(world& w);

}  // namespace soak
