// The voice-syncer side of the replay: the media-server stub, and one supervision tree per
// voice-syncer instance.
//
//   instance_I (supervisor, rest_for_one)
//   ├── http_I       the HTTP client's connection supervisor (a DynamicSupervisor; absent with
//   │                the single-supervisor fix): its children own the TCP connections
//   ├── pool_I       the connection pool: a DynamicSupervisor of connection processes (a
//   │                PartitionSupervisor with the partition fix)
//   ├── syncer_I     takes "place this participant" RPCs; one handler process per RPC
//   └── registrar_I  renews the instance's discovery lease through the same pool
//
// Every RPC (to a media server) and every lease renewal (to the discovery store) opens a new
// connection through the same pool: pool_I starts a connection process, whose init asks http_I
// for a socket-owning child, whose init connects to the server over loopback. Each of the two
// supervisors waits for its child's init ack with a selective receive that, in scan mode (OTP's),
// examines everything queued in it. That is the outage's bottleneck.
#pragma once

#include <beamlet/beamlet.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "model.hpp"

namespace replay {

struct cluster_context {
  cluster_context(beamlet::runtime& r, const scenario& s, counters& cn, discovery& d)
      : rt(&r), sc(&s), c(&cn), disc(&d) {}

  beamlet::runtime* rt;
  const scenario* sc;
  counters* c;
  discovery* disc;
  std::uint16_t media_port = 0;      ///< set before the instances start
  std::uint16_t discovery_port = 0;  ///< likewise

  /// Registered names live here: supervisor_options keeps a string_view.
  const std::string& name(const std::string& n);
  std::string http_name(int i) const { return "http_" + std::to_string(i); }
  std::string pool_name(int i) const { return "pool_" + std::to_string(i); }
  std::string syncer_name(int i) const { return "syncer_" + std::to_string(i); }
  std::string registrar_name(int i) const { return "registrar_" + std::to_string(i); }
  std::string instance_name(int i) const { return "instance_" + std::to_string(i); }
  /// The registered name of partition p of pool_I (partition fix).
  std::string partition_name(int i, int p) const { return pool_name(i) + "_p" + std::to_string(p); }

 private:
  std::mutex names_mu_;
  std::deque<std::string> names_;
};

/// A start function for a proc_lib child running `body` (copied for each start, and named in
/// the co_await: GCC 12 mishandles a temporary there, docs/gcc12-coroutines.md).
template <class Body>
beamlet::start_function proc_start(Body body) {
  return [body](beamlet::process& sup) -> beamlet::task<beamlet::start_result> {
    const Body b = body;
    co_return co_await beamlet::start_link(sup, b);
  };
}

/// A server stub: an acceptor pool on 127.0.0.1, registered as `name`, whose connections answer
/// one request line and close. Bounded in count (more than max_connections are closed at once)
/// and in time (a connection that sends nothing for a second is closed). The replay runs two:
/// "media" (the media servers, bounded by scenario::media_connections) and "discovery" (the
/// service-discovery store the registrars renew their leases with).
beamlet::start_function stub_start(std::string name, std::int64_t max_connections);
/// Service discovery's ring keeper: drops instances whose lease lapsed, adds renewed ones.
beamlet::start_function ring_keeper_start(cluster_context& cx);
/// The tree of instance `i` (see the top of this file).
beamlet::start_function instance_start(cluster_context& cx, int i);

/// One RPC attempt from a call owner: asks the instance serving `call` (per the ring) to place
/// participant `p` on a media server. False on any failure: no instance in the ring, no reply
/// within the RPC timeout, a refused or failed connection.
beamlet::task<bool> place_attempt(beamlet::process& self, cluster_context& cx, std::uint64_t call,
                                  int participant);

/// The longest message queue among instance i's supervisors and processes (0 if none is up).
std::size_t instance_queue(cluster_context& cx, int i);

}  // namespace replay
