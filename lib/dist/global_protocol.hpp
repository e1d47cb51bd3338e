// What the global name server (global_server.cpp), its locker (global_locker.cpp) and the
// registrar functions of the API (global.cpp) share: the messages between server and locker,
// and the lock operations, which all three run against the servers of a list of nodes as
// OTP's gen_server:multi_call does.
#pragma once

#include <beamlet/core/config.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

class node_state;

inline constexpr const char* global_server_name = "global_name_server";
/// The protocol version this server speaks (OTP 25's).
inline constexpr int global_vsn = 8;

// -- server to locker -------------------------------------------------------------------------
/// A node's locker, to negotiate the `global` lock with (OTP's his_the_locker).
struct locker_his {
  std::string node;
  pid locker;
  int vsn = 0;
  term his_tag;
  term my_tag;
};
/// Stop negotiating with `node` (under `tag`, if any); a lock held for it is released after
/// `then` has run (OTP runs the new_nodes broadcast there, while the lock still stands).
struct locker_cancel {
  std::string node;
  std::optional<term> tag;
  std::function<void(process&)> then;
};
/// Nodes that became known, or one that is gone.
struct locker_known {
  std::vector<std::string> add;
  std::optional<std::string> remove;
};

// -- locker to server -------------------------------------------------------------------------
/// The `global` lock is set on every node concerned: the server exchanges names with `node`.
struct locker_lock_set {
  std::string node;
  term my_tag;
  term lock_id;
};

/// The locker's body (spawned and linked by the server).
task<> global_locker_body(process& self, node_state& node, pid server);

// -- locks ------------------------------------------------------------------------------------
/// Whether this node's table lets `id` ({ResourceId, LockRequesterId}) be set now.
bool can_set_lock_here(node_state& node, const term& id);
/// Sets `id` on the servers of `nodes` (OTP's set_lock_on_nodes, no retries): true if every
/// server that answered granted it; if one refused, the grants are taken back. A node that does
/// not answer (gone) is left out, as multi_call leaves out bad nodes.
task<bool> set_lock_on_nodes(process& self, node_state& node, const term& id,
                             std::vector<std::string> nodes);
/// Releases `id` on the servers of `nodes`.
task<> del_lock(process& self, node_state& node, const term& id, std::vector<std::string> nodes);
/// Releases `id` on `nodes`, the boss (the greatest name) last.
task<> delete_global_lock(process& self, node_state& node, const term& id,
                          std::vector<std::string> nodes);
/// gen_server:multi_call(Nodes, global_name_server, Request): the replies of those that
/// answered, by node.
task<std::vector<std::pair<std::string, term>>> multi_call(process& self,
                                                           std::vector<std::string> nodes,
                                                           term request);
/// The node of `p` (this node's name for a local pid).
std::string node_name_of(const node_state& node, pid p);
/// `fun global:Name/3` (the resolvers of name conflicts are such funs).
term global_fun(std::string_view name);
/// The boss of `nodes`: the greatest name (lists:max of atoms).
std::string boss_of(const std::vector<std::string>& nodes);
/// Erlang's order of two pids (serial, number, node name, creation), which both lockers use
/// to name their lock the same: `{global, lists:sort([Locker1, Locker2])}`.
bool pid_less(node_state& node, pid a, pid b);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
