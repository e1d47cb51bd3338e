// The user side of the replay: devices, their sessions, the gateways that host them and the
// call owners that keep their calls placed.
//
//   gateways (supervisor, one_for_one)
//   └── host_G (supervisor, one_for_all): sessions_G, a DynamicSupervisor of session processes
//                                         (one per connected device), and gateway_G
//   calls (DynamicSupervisor): one call-owner process per call
//
// gateway_G and the call owner of a device's call both monitor its session. When a session
// ends, the gateway tells the device to reconnect and starts a new session for it, at most
// scenario::host_limit() per second: a per-host limit, tuned when there were fewer, bigger
// hosts. A host that starts more sessions in a second than it has memory for (host_capacity())
// runs out of memory: all its sessions end, and their devices reconnect through the other
// hosts. The call owner recreates its call whenever a participant rejoins: one RPC per present
// participant to the voice syncer serving the call, retried after a backoff until it succeeds.
#pragma once

#include <beamlet/beamlet.hpp>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>

#include "cluster.hpp"
#include "model.hpp"

namespace replay {

struct users_context {
  users_context(cluster_context& c);

  cluster_context* cx;
  const scenario* sc;
  counters* c;
  /// The upstream RPC limiter in force (null: none); set by the scenario and by the "lower
  /// upstream rate limits" recovery.
  std::atomic<beamlet::token_bucket*> upstream{nullptr};
  /// Lowers (or sets) the upstream limit: RPCs per second, all call owners together.
  void set_upstream_limit(double per_second);

  int zone_hosts() const { return sc->hosts >= 3 ? sc->hosts / 3 : 1; }
  std::string gateway_name(int g) const { return "gateway_" + std::to_string(g); }

 private:
  std::mutex mu_;
  std::deque<std::unique_ptr<beamlet::token_bucket>> buckets_;  // never freed while running
};

/// The gateways tree and the calls supervisor (see the top of this file), as start functions
/// for the replay's top supervisor.
beamlet::start_function gateways_start(users_context& u);
beamlet::start_function calls_start(users_context& u);
/// Starts every call owner and every device's first session; blocks until they are up.
void populate(beamlet::scoped_process& me, users_context& u);

/// The fault: ends scenario::fault_fraction of all sessions at once, all on the first zone's
/// hosts (a deploy halved that zone's session pods).
void inject_fault(beamlet::scoped_process& me, users_context& u);
/// Every call lost its media state (the whole cluster restarted): every participant's client
/// rejoins within a second, and each rejoin recreates its call.
void lose_all_calls(beamlet::scoped_process& me, users_context& u);

}  // namespace replay
