/// @file
/// beamlet/net/acceptor_pool.hpp: a supervised listener, as ranch makes one in Erlang.
///
/// acceptor_pool_start(opts) is the start function of a supervisor (rest_for_one) with three
/// children, started in this order:
///   "connections" a DynamicSupervisor of connection processes (max_children =
///                 max_connections), or with `partitions` > 0 a PartitionSupervisor of that many
///                 (registered as opts.name + ".connections"; acceptor i routes to partition i);
///   "listener"    a process that owns the listening socket (a bind error is its start error,
///                 {listen_error, "..."}), and registers the pool under opts.name;
///   "acceptors"   a supervisor of `acceptors` processes, each looping: accept, start a
///                 connection process (a temporary child of "connections"), hand it the socket
///                 (controlling_process), accept again.
/// A connection process runs opts.handler(self, socket) and ends when it returns.
///
/// Limits and faults: over max_connections an accepted connection is closed at once (counted as
/// refused); the listen backlog holds the rest. Peers that open a connection and then send
/// nothing are cut off by listen.accepted.idle_timeout (tcp.hpp), for every handler at once.
/// The pool's counters are also in the runtime's metrics (beamlet_net_pool_*{pool="name"}). An
/// accept that fails for want of descriptors (EMFILE, ENFILE) or memory makes that acceptor back
/// off (10 ms doubling to 1 s) and try again; the other acceptors and every connection carry on. A
/// crashing acceptor is restarted; a crashing listener restarts the acceptors with it
/// (rest_for_one), not the connections. Stopped in reverse order: acceptors, then the listener
/// (nothing more is accepted), then the connections.
///
/// Stopping: drain() stops accepting (the listening socket closes) and waits up to a timeout for
/// the connections to end by themselves; stopping the pool's supervisor (terminate_child in its
/// parent) then stops what is left, each connection getting `connection_shutdown` to finish if
/// it traps exits, as any supervised child.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/net/tcp.hpp>
#include <beamlet/otp/child_spec.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace net {

/// What acceptor_pool_start() needs: the pool's name, where to listen, how many acceptors and
/// connections, and the handler every connection runs.
struct acceptor_pool_options {
  /// Required: the pool is known by it (acceptor_pool::stats, drain).
  std::string name{};
  /// Where to listen, and (listen.accepted) the options of every accepted socket.
  listen_options listen{};
  int acceptors = 4;                    ///< 1..1024
  std::int64_t max_connections = 1024;  ///< >= 1
  int partitions = 0;  ///< 0: one DynamicSupervisor; 1..1024: a PartitionSupervisor
  /// The connections' child-spec shutdown: how long a trapping connection gets to finish.
  timeout_value connection_shutdown = std::chrono::seconds(5);
  /// Required: the body of every connection process; it owns the socket.
  std::function<task<>(process& self, tcp_socket socket)> handler{};
};

/// The pool as a supervisor child:
/// `child_spec("echo", acceptor_pool_start(opts)).with_type(child_type::supervisor)`.
/// Bad options throw std::invalid_argument here, before anything starts.
start_function acceptor_pool_start(acceptor_pool_options opts);

/// The running pools of a runtime, found by name: their counters, and drain().
class acceptor_pool {
 public:
  /// A pool's counters at one moment (the runtime's metrics export them too).
  struct statistics {
    std::uint16_t port = 0;           ///< the listening port (useful with port 0)
    bool accepting = false;           ///< false once drained or while the listener restarts
    std::uint64_t accepted = 0;       ///< connections handed to a connection process
    std::uint64_t refused = 0;        ///< closed at once: over max_connections, or no start
    std::uint64_t accept_errors = 0;  ///< failed accepts (EMFILE...), each followed by a backoff
    std::int64_t active = 0;          ///< connection processes alive now
  };
  /// The pool registered as `name`, if it is running.
  static std::optional<statistics> stats(runtime& rt, std::string_view name);
  /// The same, from a process.
  static std::optional<statistics> stats(basic_process& self, std::string_view name);
  /// Stops accepting and waits, up to `timeout`, for the connections to end; true if none is
  /// left. False at once if no pool is registered as `name`.
  static task<bool> drain(process& self, std::string_view name, timeout_value timeout);
};

}  // namespace net
BEAMLET_END_NAMESPACE
