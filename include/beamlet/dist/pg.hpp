/// @file
/// beamlet/dist/pg.hpp: process groups shared with Erlang's `pg` (OTP 23+), in its default scope.
///
/// A started node runs a pg scope process, registered as `pg` as in kernel, which speaks pg's
/// protocol with the `pg` scope of every node it connects to: Erlang and Elixir nodes that run
/// pg (`-kernel start_pg true`, or `pg:start(pg)`), and other beamlet nodes. A group is any
/// term (usually an atom); local processes join and leave it here, and Erlang's
/// pg:get_members/1 lists them; get_members() here lists the members on every connected node.
///
/// Semantics are pg's: a process may join a group more than once and then leaves it as many
/// times; a member that ends leaves all its groups; a lost connection drops that node's members.
/// Membership is eventually consistent across nodes: a join is seen here at once and on other
/// nodes when its message arrives. The node is hidden, so it introduces itself to each peer's
/// scope (Erlang's pg discovers only visible nodes by itself); nothing else differs.
///
/// Thread-safety: every function may be called from any thread or process; reads take a shared
/// lock and do not wait for the scope process.
#pragma once

#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist::pg {

/// Joins local process `p` to `group` (pg:join/2). False when the node is not started, `p` is
/// not a local pid, or `group` cannot be encoded.
bool join(runtime& rt, const term& group, pid p);
/// `p` leaves `group` once (pg:leave/2). False when it was not a member (pg's `not_joined`) or
/// the node is not started.
bool leave(runtime& rt, const term& group, pid p);
/// The members of `group` on this node and every connected node (pg:get_members/1), local ones
/// first; a process that joined twice is listed twice.
std::vector<pid> get_members(runtime& rt, const term& group);
/// The members of `group` on this node (pg:get_local_members/1).
std::vector<pid> get_local_members(runtime& rt, const term& group);
/// The groups with members anywhere (pg:which_groups/0).
std::vector<term> which_groups(runtime& rt);

}  // namespace dist::pg
BEAMLET_END_NAMESPACE
