// What the soak's parts share: the options, the stop flag, and the ledger of everything the
// invariants are checked against. Every process of the soak and the main thread read and write
// it, from any scheduler thread: counters are atomics, sets and maps sit behind one mutex.
#pragma once

#include <beamlet/core/ids.hpp>
#include <beamlet/core/runtime.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace soak {

using clock = std::chrono::steady_clock;

struct options {
  std::uint64_t seed = 0;
  std::chrono::seconds duration{60};
  int sessions = 2000;  ///< session workers kept under the DynamicSupervisor
  int callers = 16;
  int local_streams = 8;
  int socket_clients = 24;
  bool erl = true;       ///< an erl node joins (killed and restarted by the chaos)
  std::string peer_exe;  ///< the second beamlet node's program ("" = none)
  bool verbose = false;
};

/// One invariant's line in the final table.
struct check {
  std::atomic<std::uint64_t> checked{0};
  std::atomic<std::uint64_t> violations{0};
};

/// A named heartbeat: a load process stores the time of its last progress; the main thread
/// reports one that has made none for too long (a call or a receive that hangs).
struct heartbeat {
  std::atomic<std::int64_t> ms{0};
  void beat() {
    ms.store(std::chrono::duration_cast<std::chrono::milliseconds>(clock::now().time_since_epoch())
                 .count(),
             std::memory_order_relaxed);
  }
};

struct world {
  options opt;
  std::atomic<bool> stopping{false};
  beamlet::runtime* rt = nullptr;
  beamlet::pid witness;  ///< every supervised worker links to it (trap_exit, never killed)
  std::string node_name, cookie, peer_node, erl_node;

  // -- the invariants ---------------------------------------------------------------------------
  check calls;          ///< a reply with the right value, or a documented call_error
  check local_streams;  ///< in order, no gap, no duplicate, nothing lost at the end
  check remote_peer;    ///< the same over distribution to the beamlet peer, per connection
  check remote_erl;     ///< ... and to the erl node
  check rpc;            ///< rpc:call to erl: the node's name, or {badrpc, R}
  check sockets;        ///< every echoed byte is the byte sent
  check downs;          ///< each kill: the killer's monitor gets DOWN
  check links;          ///< each killed worker: its link to the witness fired (EXIT killed)
  check restarts;       ///< each live supervisor: restarts == the kills of its children
  check progress;       ///< no load process stuck (heartbeats)
  check baselines;      ///< processes, timers, sockets, connections back to where they began
  check memory;         ///< RSS bounded after the warm-up

  // -- what the load saw (documented outcomes, counted for the report) --------------------------
  std::atomic<std::uint64_t> call_errors_noproc{0}, call_errors_exited{0}, call_errors_timeout{0},
      call_errors_other{0};
  std::atomic<std::uint64_t> stream_resets{0}, remote_disconnects{0}, socket_resets{0},
      connect_failures{0}, sessions_started{0}, sessions_stopped{0}, start_child_errors{0};

  // -- the chaos' record ------------------------------------------------------------------------
  std::atomic<std::uint64_t> kills{0}, kills_missed{0}, supervisor_kills{0}, handler_kills{0},
      peer_stalls{0}, peer_disconnects{0}, erl_restarts{0};
  std::atomic<bool> peer_stalled{false};

  std::mutex mu;
  std::map<beamlet::pid, std::uint64_t> kills_by_supervisor;  ///< child kills that hit a live child
  std::vector<beamlet::pid> killed_workers;                   ///< those that link to the witness
  std::set<beamlet::pid> witness_saw_killed;                  ///< EXIT(killed) at the witness
  std::map<beamlet::pid, std::uint16_t>
      socket_handlers;             ///< server-side connections alive, by peer port
  std::vector<std::string> notes;  ///< the first violations, in words

  std::vector<std::unique_ptr<heartbeat>> beats;
  std::vector<std::string> beat_names;

  /// Records a violation of `c` with a line that says what happened (the first 20 are kept).
  void violate(check& c, std::string what) {
    c.violations.fetch_add(1);
    std::lock_guard<std::mutex> g(mu);
    if (notes.size() < 20) notes.push_back(std::move(what));
  }
  heartbeat& add_beat(std::string name) {
    std::lock_guard<std::mutex> g(mu);
    beats.push_back(std::make_unique<heartbeat>());
    beat_names.push_back(std::move(name));
    beats.back()->beat();
    return *beats.back();
  }
};

}  // namespace soak
