// The pg scope (pg.hpp): the API's local joins and leaves, and the scope process, which tells
// peer scopes about them and keeps what the peers tell it. pg's protocol, as OTP 25 speaks it:
//   {discover, Scope}                      a scope introduces itself (answered with a sync, and,
//                                          from a scope not known yet, a discover back)
//   {'$gen_cast', {sync, Scope, Groups}}   all of that scope's local members: [{Group, [Pid]}]
//   {join, Scope, Group, PidOrPids}        members joined
//   {leave, Scope, PidOrPids, Groups}      members left (one occurrence per group listed)
// Each scope monitors the others: a scope that goes away (or its node) takes its members along.
#include <beamlet/core/receive.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/dist/pg.hpp>

#include <algorithm>
#include <chrono>
#include <map>

#include "node_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {
namespace detail {

namespace {

std::optional<std::string> key_of(const term& group) {
  auto b = to_binary(group);
  if (!b) return std::nullopt;
  return std::move(*b);
}

bool remove_one(std::vector<pid>& v, pid p) {
  auto it = std::find(v.begin(), v.end(), p);
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

std::vector<pid> pids_of(const term& t) {  // a pid, or a list of them
  std::vector<pid> out;
  if (t.is_pid()) {
    out.push_back(t.pid());
  } else if (t.is_list()) {
    for (const term& e : t.elements())
      if (e.is_pid()) out.push_back(e.pid());
  }
  return out;
}

term pid_list(const std::vector<pid>& ps) {
  term_list items;
  items.reserve(ps.size());
  for (pid p : ps) items.emplace_back(p);
  return term::make_list(std::move(items));
}

bool is_tuple_of(const term& t, std::size_t n, const char* tag) {
  return t.is_tuple() && t.size() == n && t[0].is_atom(tag);
}

// The scope process's own state: who it watches.
class scope {
 public:
  scope(process& self, node_state& node) : self_(self), g_(node.pg), me_(self.self()) {}

  void local(pg_local&& l) {
    early_.emplace(l.seq, std::move(l));
    // In the order the API numbered them, whatever order they arrived in.
    for (auto it = early_.begin(); it != early_.end() && it->first == expect_;
         it = early_.erase(it), ++expect_)
      tell(it->second);
  }

  void down_of(const down& d) {
    if (auto it = members_.find(d.pid); it != members_.end() && it->second == d.ref) {
      members_.erase(it);
      {
        std::unique_lock lock(g_.mu);
        std::vector<std::string> keys;
        if (auto jt = g_.joined.find(d.pid); jt != g_.joined.end()) {
          keys = std::move(jt->second);
          g_.joined.erase(jt);
        }
        for (const std::string& k : keys) {
          auto gi = g_.local.find(k);
          if (gi == g_.local.end()) continue;
          remove_one(gi->second.members, d.pid);
          if (gi->second.members.empty()) g_.local.erase(gi);
        }
      }
      // The peers hear of the joins they heard of, no more (a leave of a group a pg scope
      // does not have crashes it).
      term_list groups;
      if (auto a = announced_.find(d.pid); a != announced_.end()) {
        for (const told& t : a->second) groups.push_back(t.group);
        announced_.erase(a);
      }
      if (!groups.empty())
        broadcast(term::make_tuple({term::make_atom("leave"), term(me_), term(d.pid),
                                    term::make_list(std::move(groups))}));
      return;
    }
    if (auto it = peers_.find(d.pid); it != peers_.end() && it->second == d.ref) {
      peers_.erase(it);
      std::unique_lock lock(g_.mu);
      g_.remote.erase(d.pid);
    }
  }

  void nodeup(const std::string& node) {
    // Erlang's pg discovers visible nodes by itself; this node is hidden, so it goes first. A
    // node may not run its `pg` yet (a connection can come up while it boots), so the discover
    // is sent again, less and less often, until that node's scope answers or the node goes.
    discover(node);
    awaiting_[node] = retry{clock::now() + first_retry, first_retry};
  }
  void nodedown(const std::string& node) { awaiting_.erase(node); }
  /// Sends the discovers that are due; returns how long until the next one, or infinity when
  /// no scope is awaited (no timer then: an idle scope holds none).
  timeout_value retry_due() {
    if (awaiting_.empty()) return infinity;
    const auto now = clock::now();
    auto next = std::chrono::milliseconds(std::chrono::hours(1));
    for (auto& [node, r] : awaiting_) {
      if (now >= r.at) {
        discover(node);
        r.backoff = std::min(r.backoff * 2, last_retry);
        r.at = now + r.backoff;
      }
      next = std::min(next, std::chrono::duration_cast<std::chrono::milliseconds>(r.at - now));
    }
    return timeout_value(std::max(next, std::chrono::milliseconds(1)));
  }

  void from_peer(const term& t) {
    if (is_tuple_of(t, 2, "discover") && t[1].is_pid()) {
      const pid peer = t[1].pid();
      self_.send(peer, term::make_tuple(
                           {term::make_atom("$gen_cast"),
                            term::make_tuple({term::make_atom("sync"), term(me_), all_local()})}));
      if (add_peer(peer))
        self_.send(peer, term::make_tuple({term::make_atom("discover"), term(me_)}));
    } else if (is_tuple_of(t, 2, "$gen_cast") && is_tuple_of(t[1], 3, "sync") && t[1][1].is_pid() &&
               t[1][2].is_list()) {
      const pid peer = t[1][1].pid();
      add_peer(peer);
      pg_groups::group_map groups;
      for (const term& e : t[1][2].elements()) {
        if (!e.is_tuple() || e.size() != 2) continue;
        auto k = key_of(e[0]);
        if (!k) continue;
        auto& grp = groups[*k];
        grp.name = e[0];
        for (pid p : pids_of(e[1])) grp.members.push_back(p);
      }
      std::unique_lock lock(g_.mu);
      g_.remote[peer] = std::move(groups);
    } else if (is_tuple_of(t, 4, "join") && t[1].is_pid() && peers_.count(t[1].pid()) != 0) {
      auto k = key_of(t[2]);
      if (!k) return;
      std::unique_lock lock(g_.mu);
      auto& grp = g_.remote[t[1].pid()][*k];
      grp.name = t[2];
      for (pid p : pids_of(t[3])) grp.members.push_back(p);
    } else if (is_tuple_of(t, 4, "leave") && t[1].is_pid() && peers_.count(t[1].pid()) != 0 &&
               t[3].is_list()) {
      const std::vector<pid> gone = pids_of(t[2]);
      std::unique_lock lock(g_.mu);
      auto& groups = g_.remote[t[1].pid()];
      for (const term& group : t[3].elements()) {
        auto k = key_of(group);
        if (!k) continue;
        auto gi = groups.find(*k);
        if (gi == groups.end()) continue;
        for (pid p : gone) remove_one(gi->second.members, p);
        if (gi->second.members.empty()) groups.erase(gi);
      }
    }
  }

 private:
  void tell(const pg_local& l) {
    bool member = false;
    bool in_group = false;
    const std::optional<std::string> key = key_of(l.group);
    {
      std::shared_lock lock(g_.mu);
      member = g_.joined.count(l.member) != 0;
      if (key && member) {
        auto gi = g_.local.find(*key);
        in_group = gi != g_.local.end() &&
                   std::find(gi->second.members.begin(), gi->second.members.end(), l.member) !=
                       gi->second.members.end();
      }
    }
    // A join its member's end (or a later leave) has undone already is not told, and a leave
    // only of what was told: the peers' tables follow announced_, which follows ours.
    if (l.joined && in_group) {
      announced_[l.member].push_back(told{l.group, *key});
      broadcast(term::make_tuple({term::make_atom("join"), term(me_), l.group, term(l.member)}));
    } else if (!l.joined && key) {
      if (auto a = announced_.find(l.member); a != announced_.end()) {
        auto t = std::find_if(a->second.begin(), a->second.end(),
                              [&](const told& x) { return x.key == *key; });
        if (t != a->second.end()) {
          a->second.erase(t);
          if (a->second.empty()) announced_.erase(a);
          broadcast(term::make_tuple(
              {term::make_atom("leave"), term(me_), term(l.member), term::make_list({l.group})}));
        }
      }
    }
    // Watch exactly the processes that are members.
    auto w = members_.find(l.member);
    if (member && w == members_.end()) {
      members_.emplace(l.member, self_.monitor(l.member));
    } else if (!member && w != members_.end()) {
      self_.demonitor(w->second);
      members_.erase(w);
    }
  }

  // What a new peer is sent: what the others have been told (joins and leaves still queued
  // reach it as they reach them).
  term all_local() const {
    std::map<std::string, std::pair<term, std::vector<pid>>> by_group;
    for (const auto& [p, list] : announced_)
      for (const told& t : list) {
        auto& e = by_group[t.key];
        e.first = t.group;
        e.second.push_back(p);
      }
    term_list out;
    for (auto& [k, e] : by_group) out.push_back(term::make_tuple({e.first, pid_list(e.second)}));
    return term::make_list(std::move(out));
  }

  void discover(const std::string& node) {
    self_.send("pg", node, term::make_tuple({term::make_atom("discover"), term(me_)}));
  }

  bool add_peer(pid peer) {
    if (auto n = node_of(peer)) awaiting_.erase(n->name);  // its scope answered
    if (peers_.count(peer) != 0) return false;
    peers_.emplace(peer, self_.monitor(peer));
    std::unique_lock lock(g_.mu);
    g_.remote.try_emplace(peer);
    return true;
  }

  void broadcast(const term& msg) {
    for (const auto& [peer, r] : peers_) self_.send(peer, msg);
  }

  process& self_;
  pg_groups& g_;
  const pid me_;
  std::unordered_map<pid, ref> members_;  // local members, watched
  std::unordered_map<pid, ref> peers_;    // peer scopes, watched
  std::map<std::uint64_t, pg_local> early_;
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds first_retry{250};
  static constexpr std::chrono::milliseconds last_retry{30000};
  struct retry {
    clock::time_point at;
    std::chrono::milliseconds backoff;
  };
  std::unordered_map<std::string, retry> awaiting_;  // nodes whose scope has not answered
  /// What the peers have been told of each local member: one entry per join.
  struct told {
    term group;
    std::string key;
  };
  std::unordered_map<pid, std::vector<told>> announced_;
  std::uint64_t expect_ = 0;
};

}  // namespace

task<> pg_body(process& self, node_state& node) {
  if (self.register_name("pg"))
    node.log(log_level::error, "distribution: pg: the name `pg` is taken; no process groups");
  dist::monitor_nodes(self);
  scope s(self, node);
  // Connections made before this ran (from now on, nodeup tells).
  std::vector<std::string> up;
  {
    std::shared_lock lock(node.mu);
    for (const auto& [name, e] : node.conns)
      if (e.established) up.push_back(name);
  }
  for (const std::string& n : up) s.nodeup(n);
  for (;;) {
    auto m = co_await self.receive(on<pg_local>(), on<down>(), on<nodeup>(), on<nodedown>(),
                                   on<term>(), on_any(), after(s.retry_due()));
    if (m.is<pg_local>()) {
      s.local(std::move(m.get<pg_local>()));
    } else if (m.is<down>()) {
      s.down_of(m.get<down>());
    } else if (m.is<nodeup>()) {
      s.nodeup(m.get<nodeup>().node);
    } else if (m.is<nodedown>()) {
      s.nodedown(m.get<nodedown>().node);
    } else if (m.is<term>()) {
      s.from_peer(m.get<term>());
    }
  }
}

}  // namespace detail

// -- the API ----------------------------------------------------------------------------------

namespace pg {

namespace {
detail::node_state* running(runtime& rt) {
  auto& st = extension<detail::node_state>(rt);
  return st.running() ? &st : nullptr;
}
}  // namespace

bool join(runtime& rt, const term& group, pid p) {
  detail::node_state* st = running(rt);
  if (st == nullptr || !p || p.is_remote()) return false;
  auto k = detail::key_of(group);
  if (!k) return false;
  detail::pg_local l{0, group, p, true};
  {
    std::unique_lock lock(st->pg.mu);
    auto& grp = st->pg.local[*k];
    if (grp.members.empty()) grp.name = group;
    grp.members.push_back(p);
    st->pg.joined[p].push_back(*k);
    l.seq = st->pg.next++;
  }
  rt.send(st->pg_scope, std::move(l));
  return true;
}

bool leave(runtime& rt, const term& group, pid p) {
  detail::node_state* st = running(rt);
  if (st == nullptr) return false;
  auto k = detail::key_of(group);
  if (!k) return false;
  detail::pg_local l{0, group, p, false};
  {
    std::unique_lock lock(st->pg.mu);
    auto gi = st->pg.local.find(*k);
    if (gi == st->pg.local.end() || !detail::remove_one(gi->second.members, p)) return false;
    if (gi->second.members.empty()) st->pg.local.erase(gi);
    auto j = st->pg.joined.find(p);
    if (j != st->pg.joined.end()) {
      auto ki = std::find(j->second.begin(), j->second.end(), *k);
      if (ki != j->second.end()) j->second.erase(ki);
      if (j->second.empty()) st->pg.joined.erase(j);
    }
    l.seq = st->pg.next++;
  }
  rt.send(st->pg_scope, std::move(l));
  return true;
}

std::vector<pid> get_local_members(runtime& rt, const term& group) {
  detail::node_state* st = running(rt);
  auto k = detail::key_of(group);
  if (st == nullptr || !k) return {};
  std::shared_lock lock(st->pg.mu);
  auto gi = st->pg.local.find(*k);
  return gi == st->pg.local.end() ? std::vector<pid>{} : gi->second.members;
}

std::vector<pid> get_members(runtime& rt, const term& group) {
  detail::node_state* st = running(rt);
  auto k = detail::key_of(group);
  if (st == nullptr || !k) return {};
  std::shared_lock lock(st->pg.mu);
  std::vector<pid> out;
  if (auto gi = st->pg.local.find(*k); gi != st->pg.local.end()) out = gi->second.members;
  for (const auto& [peer, groups] : st->pg.remote)
    if (auto gi = groups.find(*k); gi != groups.end())
      out.insert(out.end(), gi->second.members.begin(), gi->second.members.end());
  return out;
}

std::vector<term> which_groups(runtime& rt) {
  detail::node_state* st = running(rt);
  if (st == nullptr) return {};
  std::shared_lock lock(st->pg.mu);
  std::map<std::string, term> all;  // each group once, in a stable order
  for (const auto& [k, grp] : st->pg.local) all.emplace(k, grp.name);
  for (const auto& [peer, groups] : st->pg.remote)
    for (const auto& [k, grp] : groups)
      if (!grp.members.empty()) all.emplace(k, grp.name);
  std::vector<term> out;
  out.reserve(all.size());
  for (auto& [k, t] : all) out.push_back(std::move(t));
  return out;
}

}  // namespace pg
}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
