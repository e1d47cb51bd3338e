// The steady load, as processes outside the supervision tree (the chaos never kills them: they
// are what measures). Each loops until world::stopping, then ends; each keeps a heartbeat.
//
//   caller          calls a seq server by key through the PartitionSupervisor, checks n + 1
//   session_churn   keeps opts.sessions session workers, starts, stops and pings them
//   local_streamer  streams sequence numbers to one sink, with acks as flow control
//   remote_streamer streams to an echo on another node, checks the echoes' order per connection
//   socket_client   echo round trips over TCP, through the acceptor pool
#pragma once

#include "external_node.hpp"
#include "world.hpp"

#include <beamlet/beamlet.hpp>

#include <cstdint>
#include <string>

namespace soak {

beamlet::task<> caller(beamlet::process& self, world& w, int index, std::uint64_t seed);
beamlet::task<> session_churn(beamlet::process& self, world& w, std::uint64_t seed);
beamlet::task<> local_streamer(beamlet::process& self, world& w, int index);
/// `echo_name` registered on `node` answers {From, X} with {echoed, X, EchoPid}; `rpc` also
/// checks rpc:call(node, erlang, node, []) now and then.
beamlet::task<> remote_streamer(beamlet::process& self, world& w, std::string node,
                                std::string echo_name, check& c, bool rpc);
beamlet::task<> socket_client(beamlet::process& self, world& w, int index, std::uint64_t seed);

/// The witness: traps exits and records every EXIT(killed) it gets.
beamlet::task<> witness(beamlet::process& self, world& w);

}  // namespace soak
