// The lock operations of `global` (global_protocol.hpp), run against the name servers of a
// list of nodes, and the order of pids both sides of a lock negotiation must agree on.
#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/gen_call.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <tuple>

#include "global_protocol.hpp"
#include "node_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

std::string global_tables::key(const term& t) {
  auto b = to_binary(t);
  return b ? std::move(*b) : std::string();
}

const std::string& global_tables::global_key() {
  static const std::string k = key(term::make_atom("global"));
  return k;
}

std::optional<pid> global_tables::owner_of(const term& name) const {
  std::shared_lock lock(mu);
  auto it = names.find(key(name));
  if (it == names.end()) return std::nullopt;
  return it->second.owner;
}

std::string node_name_of(const node_state& node, pid p) {
  auto n = node_of(p);
  return n ? n->name : node.self.name;
}

bool can_set_lock_here(node_state& node, const term& id) {
  if (!id.is_tuple() || id.size() != 2) return false;
  const std::string key = global_tables::key(id[0]);
  if (key.empty()) return false;
  std::shared_lock lock(node.global.mu);
  auto it = node.global.locks.find(key);
  return it == node.global.locks.end() || it->second.requester == id[1];
}

task<std::vector<std::pair<std::string, term>>> multi_call(process& self,
                                                           std::vector<std::string> nodes,
                                                           term request) {
  std::vector<std::pair<std::string, term>> replies;
  // One at a time: the clusters `global` serves are small, and each call ends with a reply or
  // with its node's loss (the monitor's DOWN), as multi_call's do.
  for (std::string& n : nodes) {
    auto r = co_await call(self, global_server_name, n, request, infinity);
    if (r) replies.emplace_back(std::move(n), std::move(*r));
  }
  co_return replies;
}

task<bool> set_lock_on_nodes(process& self, node_state& node, const term& id,
                             std::vector<std::string> nodes) {
  if (nodes.empty()) co_return true;
  // With more than this node asked, this node's own table is looked at first.
  if (nodes.size() > 1 && std::find(nodes.begin(), nodes.end(), node.self.name) != nodes.end() &&
      !can_set_lock_here(node, id))
    co_return false;
  term request = term::make_tuple({term::make_atom("set_lock"), id});
  auto replies = co_await multi_call(self, std::move(nodes), std::move(request));
  std::vector<std::string> granted;
  bool refused = false;
  for (auto& [n, v] : replies) {
    if (v.is_atom("true"))
      granted.push_back(n);
    else
      refused = true;
  }
  if (!refused) co_return true;
  if (replies.size() > 1 && !granted.empty()) co_await del_lock(self, node, id, std::move(granted));
  co_return false;
}

task<> del_lock(process& self, node_state&, const term& id, std::vector<std::string> nodes) {
  if (nodes.empty()) co_return;
  term request = term::make_tuple({term::make_atom("del_lock"), id});
  (void)co_await multi_call(self, std::move(nodes), std::move(request));
}

// `fun global:Name/3`, as Erlang encodes it.
term global_fun(std::string_view name) {
  std::string b = "\x83\x71";  // 131, EXPORT_EXT
  for (const std::string_view a : {std::string_view("global"), name}) {
    b += '\x77';  // SMALL_ATOM_UTF8_EXT
    b += static_cast<char>(a.size());
    b += a;
  }
  b += "\x61\x03";  // SMALL_INTEGER_EXT 3
  auto t = from_binary(b);
  return t ? std::move(*t) : term();
}

std::string boss_of(const std::vector<std::string>& nodes) {
  return nodes.empty() ? std::string() : *std::max_element(nodes.begin(), nodes.end());
}

task<> delete_global_lock(process& self, node_state& node, const term& id,
                          std::vector<std::string> nodes) {
  const std::string boss = boss_of(nodes);
  std::erase(nodes, boss);
  co_await del_lock(self, node, id, std::move(nodes));
  co_await del_lock(self, node, id, std::vector<std::string>(1, boss));
}

namespace {

// A pid's fields as NEW_PID_EXT carries them.
struct pid_fields {
  std::string node;
  std::uint32_t number = 0, serial = 0, creation = 0;
};

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

pid_fields fields_of(node_state& node, pid p) {
  pid_fields f;
  auto bin = to_binary(term(p), &node.self);
  if (!bin) return f;
  const std::string& s = *bin;
  // 131, NEW_PID_EXT (88), the node's atom, then ID, Serial, Creation (4 bytes each).
  if (s.size() < 4 || static_cast<unsigned char>(s[1]) != 88) return f;
  std::size_t at = 3, len = 0;
  switch (static_cast<unsigned char>(s[2])) {
    case 119:  // SMALL_ATOM_UTF8_EXT
    case 115:  // SMALL_ATOM_EXT
      len = static_cast<unsigned char>(s[3]);
      at = 4;
      break;
    case 118:  // ATOM_UTF8_EXT
    case 100:  // ATOM_EXT
      if (s.size() < 5) return f;
      len = (std::size_t{static_cast<unsigned char>(s[3])} << 8) | static_cast<unsigned char>(s[4]);
      at = 5;
      break;
    default:
      return f;
  }
  if (s.size() < at + len + 12) return f;
  f.node = s.substr(at, len);
  f.number = be32(s, at + len);
  f.serial = be32(s, at + len + 4);
  f.creation = be32(s, at + len + 8);
  return f;
}

}  // namespace

bool pid_less(node_state& node, pid a, pid b) {
  const pid_fields x = fields_of(node, a), y = fields_of(node, b);
  return std::tie(x.serial, x.number, x.node, x.creation) <
         std::tie(y.serial, y.number, y.node, y.creation);
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
