/// @file
/// beamlet/dist/global.hpp: names shared by a whole cluster, as Erlang's `global` keeps them.
///
/// A visible node (node_options::hidden = false) runs a global name server that speaks OTP 25's
/// protocol (version 8) with every visible node it connects to: the two lockers take the
/// cluster-wide `global` lock, the servers exchange their names (a name held on both sides with
/// different pids is resolved as OTP does, keeping the pid on the node that sorts first and
/// killing the other), and each tells the nodes it knew about the other, which then connect to
/// it (the cluster stays fully connected). A lost connection is reported to the others, which
/// drop the node that lost it, as OTP 25 does to prevent overlapping partitions.
///
/// Registration is OTP's too: register_name takes the `global` lock on every known node, checks
/// that neither the name nor the pid is registered, and tells every node; a name goes when its
/// process ends or its node is lost. Reads (whereis_name, registered_names, send) are local and
/// do not wait.
///
/// Errors: on a node that is not started or is hidden, register_name and unregister_name fail
/// with dist_errc::not_visible, and the reads find nothing. Thread-safety: the reads may be
/// called from any thread; register_name and unregister_name run in the calling process (they
/// wait for the other nodes).
#pragma once

#include <optional>
#include <system_error>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist::global {

/// global:register_name(Name, Pid): true (yes) once every known node has the name; false (no)
/// when the name is taken or `p` already has a global name.
task<expected<bool, std::error_code>> register_name(process& self, term name, pid p);
/// global:unregister_name(Name): the name is gone from every known node (nothing to do when it
/// is not registered).
task<expected<void, std::error_code>> unregister_name(process& self, term name);
/// global:whereis_name(Name).
std::optional<pid> whereis_name(runtime& rt, const term& name);
/// global:registered_names().
std::vector<term> registered_names(runtime& rt);
/// global:send(Name, Msg), without the exit: false when the name is not registered.
bool send(basic_process& self, const term& name, term msg);

}  // namespace dist::global
BEAMLET_END_NAMESPACE
