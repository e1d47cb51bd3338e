/// @file
/// beamlet/net.hpp: the network layer (sockets owned by processes, the acceptor pool).
/// Including it costs nothing at run time: a runtime gives its schedulers their event loops
/// when it first uses the layer.
#pragma once

#include <beamlet/net/acceptor_pool.hpp>
#include <beamlet/net/error.hpp>
#include <beamlet/net/tcp.hpp>
