// The global name server of a visible node, registered as `global_name_server`, speaking OTP
// 25's protocol (version 8) with the servers of the other visible nodes:
//   nodeup            {init_connect, {8, MyTag}, node(), {locker, _, _, Locker}} to the peer;
//                     the peer's own init_connect hands its locker to ours, and is acked
//                     ({init_connect_ack, node(), HisTag, MyTag});
//   lockers           negotiate the `global` lock (global_locker.cpp), then each tells its
//                     server, which sends {exchange, node(), Names, [], HisTag};
//   both exchanges    the names are merged (ops for each side) and {resolved, node(), Ops,
//                     Known, unused, [], HisTag} crosses; each side applies both sides' ops,
//                     tells the nodes it knew ({new_nodes, ...}) while the lock still stands,
//                     and adds the peer and the peer's nodes to its known nodes, connecting to
//                     those ({in_sync, node(), true} once connected);
//   nodedown          {lost_connection, node(), XCreation, OpId, Node} to the known nodes,
//                     which then ask the lost node to disconnect from them
//                     ({remove_connection, Node}), as OTP 25 does to prevent overlapping
//                     partitions; a tag that no longer matches cancels and starts over
//                     ({cancel_connect, ...}).
// Calls from other nodes' lockers and registrars: {set_lock, Id}, {del_lock, Id}, {register,
// Name, Pid, Method}, {register_ext, ...}, {unregister, Name}.
#include <beamlet/core/receive.hpp>
#include <beamlet/dist/gen_call.hpp>
#include <beamlet/dist/node.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <variant>

#include "global_protocol.hpp"
#include "node_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace {

/// A node that global_sync could not connect to (OTP's extra_nodedown).
struct sync_failed {
  std::string node;
};

term atom_term(std::string_view s) {
  return term::make_atom(std::string(s));
}

std::optional<std::string> atom_text(const term& t) {
  if (!t.is_atom()) return std::nullopt;
  return t.atom_name();
}

bool tagged_tuple(const term& t, std::size_t n, const char* tag) {
  return t.is_tuple() && t.size() == n && t[0].is_atom(tag);
}

// Connects to `n` and tells its server this node is in sync (OTP's sync_other), or tells ours
// that it could not.
task<> sync_other(process& self, std::string n, pid srv, std::string me) {
  if (co_await connect_node(self, n)) {
    term msg = term::make_tuple({atom_term("in_sync"), atom_term(me), atom_term("true")});
    cast(self, global_server_name, n, std::move(msg));
  } else {
    self.send(srv, sync_failed{n});
  }
}

class server {
 public:
  server(process& self, node_state& node)
      : self_(self), node_(node), g_(node.global), me_(node.self.name) {
    // OTP's creation extension: lost_connection reports of a restarted node are new ones.
    std::mt19937_64 r{std::random_device{}()};
    xcreation_ = static_cast<std::int64_t>(r() & ((std::uint64_t{1} << 58) - 1)) +
                 node.self.creation + (std::int64_t{1} << 59);
  }

  void start_locker() {
    node_state* np = &node_;
    const pid me = self_.self();
    locker_ = self_.spawn_link([np, me](process& p) { return global_locker_body(p, *np, me); });
  }

  // -- connections ------------------------------------------------------------------------------
  void nodeup(const std::string& n) {
    if (!node_.is_visible(n)) return;  // global syncs with visible nodes only
    up_.insert(n);
    handle_nodeup(n);
  }
  void nodedown(const std::string& n) {
    if (up_.erase(n) == 0) {
      sync_.erase(n);  // what a hidden peer's global messages may have left
      return;
    }
    handle_nodedown(n, down_kind::disconnected);
  }
  void sync_failed_for(const std::string& n) {
    lost(n);
    handle_nodedown(n, down_kind::disconnected);
  }

  // -- from the locker --------------------------------------------------------------------------
  void lock_is_set(const locker_lock_set& l) {
    auto& s = sync_[l.node];
    if (!s.my_tag || !(*s.my_tag == l.my_tag)) {
      cancel_locker(l.node, l.my_tag);
      return;
    }
    cast(self_, global_server_name, l.node,
         term::make_tuple({atom_term("exchange"), atom_term(me_), get_names(), term::make_list({}),
                           s.his_tag.value_or(atom_term("undefined"))}));
    s.lock_id = l.lock_id;
    if (auto* w = std::get_if<exchange_wait>(&s.wait)) {
      term names = std::move(w->names);
      s.wait = lock_set_wait{};
      exchange(l.node, std::move(names));
    } else {
      s.wait = lock_set_wait{};
    }
  }

  // -- DOWN of a name's owner or of a lock holder -----------------------------------------------
  void down_of(const down& d) {
    auto it = watches_.find(d.ref.value());
    if (it == watches_.end()) return;
    const watch w = std::move(it->second);
    watches_.erase(it);
    if (w.is_name) {
      auto r = name_refs_.find(w.key);
      if (r != name_refs_.end() && r->second == d.ref) {
        name_refs_.erase(r);
        std::unique_lock lock(g_.mu);
        g_.names.erase(w.key);
      }
    } else {
      lock_refs_.erase({w.key, w.owner});
      if (remove_holder(w.key, w.owner) && w.key == global_tables::global_key())
        global_lock_down_ = true;
    }
  }

  // -- messages from other nodes ----------------------------------------------------------------
  void from_peer(const term& t) {
    if (auto c = as_gen_call(t)) {
      handle_call(*c);
    } else if (auto r = as_gen_cast(t)) {
      handle_cast(*r);
    } else if (tagged_tuple(t, 3, "cancel_connect")) {
      auto n = atom_text(t[1]);
      if (!n) return;
      auto& s = sync_[*n];
      if (s.my_tag && *s.my_tag == t[2]) {
        const term tag = *s.my_tag;
        cancel_locker(*n, tag);
        sync_.erase(*n);
        pending_.erase(*n);
        restart_connect(*n, tag);
      }
    } else if (tagged_tuple(t, 4, "init_connect_ack")) {
      auto n = atom_text(t[1]);
      if (!n) return;
      auto& s = sync_[*n];
      const bool same = s.my_tag && *s.my_tag == t[2] && s.his_tag && *s.his_tag == t[3];
      if (!same) {
        send_cancel_connect_message(*n, t[3]);
        if (s.my_tag) restart_connect(*n, *s.my_tag);
      }
    } else if (tagged_tuple(t, 5, "lost_connection")) {
      lost_connection(t);
    } else if (tagged_tuple(t, 2, "remove_connection")) {
      auto n = atom_text(t[1]);
      if (!n || !potentially_known(*n)) return;
      node_.log(log_level::warning, "distribution: 'global' at node " + me_ +
                                        " disconnected node " + *n +
                                        " in order to prevent overlapping partitions");
      handle_nodedown(*n, down_kind::remove_connection);
      disconnect_node_async(*n);
    }
  }

 private:
  enum class down_kind { disconnected, remove_connection };

  // OTP's per-node process dictionary entries (reset_node_state erases them all).
  struct pre_connect {
    int vsn = 0;
    term init;
    term his_tag;
  };
  struct lock_set_wait {};
  struct exchange_wait {
    term names;
  };
  struct resolved_early {
    term his_known;
    term names_ext;
    term his_resolved;
  };
  struct node_sync {
    std::optional<term> my_tag;
    std::optional<term> his_tag;
    int vsn = 0;
    std::optional<pre_connect> pre;
    std::variant<std::monostate, lock_set_wait, exchange_wait> wait;
    std::optional<term> lock_id;
    std::variant<std::monostate, term_list, resolved_early> save_ops;
  };
  struct watch {
    bool is_name = false;
    std::string key;
    pid owner;
  };

  // -- the connect protocol ---------------------------------------------------------------------
  void handle_nodeup(const std::string& n) {
    if (known_.count(n) != 0 || resolvers_.count(n) != 0) return;
    const term tag(next_tag_++);
    sync_[n].my_tag = tag;
    cast(self_, global_server_name, n,
         term::make_tuple({atom_term("init_connect"),
                           term::make_tuple({term(std::int64_t{global_vsn}), tag}), atom_term(me_),
                           term::make_tuple({atom_term("locker"), atom_term("no_longer_a_pid"),
                                             term::make_map({}), term(locker_)})}));
    resolvers_[n] = tag;
    // An init_connect that came before our nodeup.
    if (auto& s = sync_[n]; s.pre) {
      pre_connect p = std::move(*s.pre);
      s.pre.reset();
      init_connect(n, p.vsn, p.vsn, p.his_tag, p.init);
    }
  }

  void init_connect(const std::string& n, int vsn, int his_vsn, const term& his_tag,
                    const term& init) {
    if (pending_.count(n) != 0) {
      // A connect already under way crossed a new one: both start over.
      send_cancel_connect_message(n, his_tag);
      auto& s = sync_[n];
      if (s.my_tag) restart_connect(n, *s.my_tag);
    }
    auto& s = sync_[n];
    s.vsn = vsn;
    s.his_tag = his_tag;
    auto r = resolvers_.find(n);
    if (r == resolvers_.end()) {
      s.pre = pre_connect{vsn, init, his_tag};
      return;
    }
    if (!tagged_tuple(init, 4, "locker") || !init[3].is_pid()) return;
    self_.send(locker_, locker_his{n, init[3].pid(), vsn, his_tag, r->second});
    if (his_vsn >= 8)
      volatile_send(
          n, term::make_tuple({atom_term("init_connect_ack"), atom_term(me_), his_tag, r->second}));
    pending_[n] = his_vsn;
  }

  void restart_connect(const std::string& n, term my_tag) {  // a copy: sync_[n] goes
    cancel_locker(n, my_tag);
    sync_.erase(n);
    pending_.erase(n);
    if (my_tag.is_integer()) handle_nodeup(n);
  }

  void cancel_locker(const std::string& n, std::optional<term> tag,
                     std::function<void(process&)> then = {}) {
    self_.send(locker_, locker_cancel{n, tag, std::move(then)});
    send_cancel_connect(n, tag);
    if (auto r = resolvers_.find(n); r != resolvers_.end() && tag && r->second == *tag)
      resolvers_.erase(r);
  }

  void send_cancel_connect(const std::string& n, const std::optional<term>& my_tag) {
    auto p = pending_.find(n);
    if (p == pending_.end() || p->second < 8) return;
    auto& s = sync_[n];
    if (!s.my_tag || !my_tag || !(*s.my_tag == *my_tag) || !s.his_tag) return;
    send_cancel_connect_message(n, *s.his_tag);
  }

  void send_cancel_connect_message(const std::string& n, const term& his_tag) {
    volatile_send(n, term::make_tuple({atom_term("cancel_connect"), atom_term(me_), his_tag}));
  }

  void exchange(const std::string& n, term names) {
    auto& s = sync_[n];
    if (!std::holds_alternative<lock_set_wait>(s.wait)) {
      s.wait = exchange_wait{std::move(names)};
      return;
    }
    s.wait = std::monostate{};
    if (resolvers_.count(n) == 0) return;
    auto [ops, res] = exchange_names(n, names);
    exchange_ops(n, resolvers_[n], std::move(ops), std::move(res));
  }

  // The resolver's work: what to insert here (ops) and there (res) for each of his names.
  std::pair<term_list, term_list> exchange_names(const std::string& n, const term& names) {
    term_list ops, res;
    if (!names.is_list()) return {ops, res};
    for (const term& e : names.elements()) {
      if (!e.is_tuple() || e.size() != 3 || !e[1].is_pid()) continue;
      std::optional<global_tables::name_entry> mine;
      {
        std::shared_lock lock(g_.mu);
        if (auto it = g_.names.find(global_tables::key(e[0])); it != g_.names.end())
          mine = it->second;
      }
      const term insert = term::make_tuple({atom_term("insert"), e});
      if (!mine) {
        ops.push_back(insert);
        continue;
      }
      if (mine->owner == e[1].pid() || !(me_ < n)) continue;  // the same, or his to resolve
      // A conflict, resolved here by the name's resolver on our side, as OTP resolves it on
      // the node of our pid: the three of the global module are known; any other (an Erlang
      // fun cannot run here) deletes the name, as OTP does when a resolver returns none.
      const pid his = e[1].pid(), ours = mine->owner;
      const bool his_first = node_name(his) < node_name(ours);
      const pid keep = his_first ? his : ours, other = his_first ? ours : his;
      std::optional<pid> winner;
      if (mine->method == global_fun("random_exit_name")) {
        self_.exit(other, exit_reason::kill());
        winner = keep;
      } else if (mine->method == global_fun("random_notify_name")) {
        self_.send(other, term::make_tuple({atom_term("global_name_conflict"), e[0]}));
        winner = keep;
      } else {
        if (mine->method == global_fun("notify_all_name")) {
          self_.send(his, term::make_tuple({atom_term("global_name_conflict"), e[0], term(ours)}));
          self_.send(ours, term::make_tuple({atom_term("global_name_conflict"), e[0], term(his)}));
        }
      }
      node_.log(log_level::notice,
                "distribution: global: name conflict on " + e[0].to_string() +
                    (winner ? ", kept by " + term(*winner).to_string() : std::string(", deleted")));
      if (!winner) {
        const term del = term::make_tuple({atom_term("delete"), e[0]});
        ops.push_back(del);
        res.push_back(del);
      } else if (*winner == his) {
        ops.push_back(insert);
      } else {
        res.push_back(term::make_tuple(
            {atom_term("insert"), term::make_tuple({mine->name, term(ours), mine->method})}));
      }
    }
    return {ops, res};
  }

  void exchange_ops(const std::string& n, const term& tag, term_list ops, term_list res) {
    auto& s = sync_[n];
    if (!s.my_tag || !(*s.my_tag == tag)) {
      cancel_locker(n, tag);
      return;
    }
    cast(self_, global_server_name, n,
         term::make_tuple({atom_term("resolved"), atom_term(me_), term::make_list(std::move(res)),
                           known_list(), atom_term("unused"), term::make_list({}),
                           s.his_tag.value_or(atom_term("undefined"))}));
    if (auto* early = std::get_if<resolved_early>(&s.save_ops)) {
      resolved_early r = std::move(*early);
      s.save_ops = std::move(ops);
      resolved(n, r.his_resolved, r.his_known, r.names_ext);
    } else {
      s.save_ops = std::move(ops);
    }
  }

  void resolved(const std::string& n, const term& his_resolved, const term& his_known,
                const term& names_ext) {
    auto& s = sync_[n];
    term_list ops;
    if (auto* saved = std::get_if<term_list>(&s.save_ops)) ops = std::move(*saved);
    s.save_ops = std::monostate{};
    if (his_resolved.is_list())
      for (const term& o : his_resolved.elements()) ops.push_back(o);
    const std::map<std::string, int> known_before = known_;
    // [{Node, Vsn} | HisKnown]
    std::vector<std::pair<std::string, int>> new_nodes = {{n, vsn_of(n)}};
    std::vector<std::string> his_nodes;
    for (auto& [name, v] : node_vsn_list(his_known)) {
      new_nodes.emplace_back(name, v);
      his_nodes.push_back(name);
    }
    sync_others(his_nodes);
    const term extra = term::make_list(
        {term::make_tuple({atom_term("vsn"), term(std::int64_t{s.vsn})}),
         term::make_tuple({atom_term("lock"), s.lock_id.value_or(atom_term("undefined"))})});
    do_ops(ops, extra);
    for (const std::string& c : his_nodes) {
      std::optional<term> tag = sync_[c].my_tag;
      pending_.erase(c);
      cancel_locker(c, tag);
      sync_.erase(c);
    }
    // The nodes known before hear of the new ones from the locker, while the lock stands.
    term_list nn;
    for (auto& [name, v] : new_nodes)
      nn.push_back(term::make_tuple({atom_term(name), term(std::int64_t{v})}));
    const term msg = term::make_tuple({atom_term("new_nodes"), atom_term(me_), term::make_list(ops),
                                       names_ext, term::make_list(std::move(nn)), extra});
    std::vector<std::string> tell;
    tell.reserve(known_before.size());
    for (auto& [name, v] : known_before) tell.push_back(name);
    std::optional<term> tag = sync_[n].my_tag;
    pending_.erase(n);
    cancel_locker(n, tag, [tell, msg](process& p) {
      for (const std::string& to : tell) cast(p, global_server_name, to, msg);
    });
    sync_.erase(n);
    add_to_known(new_nodes);
    if (std::find(synced_.begin(), synced_.end(), n) == synced_.end()) synced_.push_back(n);
  }

  std::vector<std::string> add_to_known(const std::vector<std::pair<std::string, int>>& nodes) {
    std::vector<std::string> added;
    for (const auto& [n, v] : nodes) {
      if (n == me_ || known_.count(n) != 0) continue;
      known_[n] = v;
      added.push_back(n);
    }
    if (!added.empty()) {
      publish_known();
      self_.send(locker_, locker_known{added, std::nullopt});
    }
    return added;
  }

  // Connects to each node and tells its server we are in sync (OTP's sync_other).
  void sync_others(const std::vector<std::string>& nodes) {
    const pid srv = self_.self();
    const std::string me = me_;
    for (const std::string& n : nodes) {
      if (n == me_) continue;
      self_.spawn([n, srv, me](process& p) { return sync_other(p, n, srv, me); });
    }
  }

  void handle_nodedown(const std::string& n, down_kind kind) {
    std::optional<term> tag = sync_[n].my_tag;
    cancel_locker(n, tag);
    self_.send(locker_, locker_known{{}, n});
    sync_.erase(n);
    if (kind == down_kind::remove_connection) {
      removing_.insert(n);
    } else if (removing_.erase(n) == 0) {
      inform_connection_loss(n);
    }
    pending_.erase(n);
    if (known_.erase(n) != 0) publish_known();
    std::erase(synced_, n);
  }

  void inform_connection_loss(const std::string& n) {
    const term msg = term::make_tuple({atom_term("lost_connection"), atom_term(me_),
                                       term(xcreation_), term(next_op_++), atom_term(n)});
    multicast(msg, n);
  }

  // To the known and pending nodes of version 7 and up, but `except`.
  void multicast(const term& msg, const std::string& except) {
    for (auto& [name, v] : known_)
      if (name != except && v >= 7) volatile_send(name, msg);
    for (auto& [name, v] : pending_)
      if (name != except && v >= 7 && known_.count(name) == 0) volatile_send(name, msg);
  }

  void lost_connection(const term& t) {
    auto a = atom_text(t[1]), b = atom_text(t[4]);
    if (!a || !b || !t[3].is_integer()) return;
    const auto key = std::make_pair(*a, *b);
    const auto now = std::chrono::steady_clock::now();
    // Reports are kept an hour, as OTP keeps them.
    std::erase_if(lost_, [&](const auto& e) { return now - e.second.at > std::chrono::hours(1); });
    if (auto it = lost_.find(key);
        it != lost_.end() && it->second.xcreation == t[2] && t[3].integer() <= it->second.op)
      return;  // heard already
    multicast(t, *a);
    lost_[key] = lost_report{t[2], t[3].integer(), now};
    const std::string rm = me_ == *b ? *a : *b;
    if (!potentially_known(rm)) return;
    volatile_send(rm, term::make_tuple({atom_term("remove_connection"), atom_term(me_)}));
    node_.log(log_level::warning, "distribution: 'global' at node " + me_ +
                                      " requested disconnect from node " + rm +
                                      " in order to prevent overlapping partitions");
    handle_nodedown(rm, down_kind::remove_connection);
  }

  bool potentially_known(const std::string& n) const {
    return known_.count(n) != 0 || pending_.count(n) != 0;
  }

  // -- casts ------------------------------------------------------------------------------------
  void handle_cast(const term& r) {
    if (tagged_tuple(r, 4, "init_connect")) {
      auto n = atom_text(r[2]);
      const term& v = r[1];
      if (!n || !v.is_tuple() || v.size() < 2 || !v[0].is_integer()) {
        node_.log(log_level::notice,
                  "distribution: global: illegal protocol version " + v.to_string());
        return;
      }
      const int his = static_cast<int>(std::clamp<std::int64_t>(v[0].integer(), 0, 1000));
      init_connect(*n, std::min(his, global_vsn), his, v[1], r[3]);
    } else if (tagged_tuple(r, 5, "exchange")) {
      auto n = atom_text(r[1]);
      if (!n) return;
      auto& s = sync_[*n];
      if (s.my_tag && *s.my_tag == r[4])
        exchange(*n, r[2]);
      else
        cancel_locker(*n, r[4]);
    } else if (tagged_tuple(r, 7, "resolved")) {
      auto n = atom_text(r[1]);
      if (!n) return;
      auto& s = sync_[*n];
      if (!s.my_tag || !(*s.my_tag == r[6])) {
        cancel_locker(*n, r[6]);
      } else if (std::holds_alternative<term_list>(s.save_ops)) {
        resolved(*n, r[2], r[3], r[5]);
      } else {
        s.save_ops = resolved_early{r[3], r[5], r[2]};
      }
    } else if (tagged_tuple(r, 6, "new_nodes")) {
      auto added = add_to_known(node_vsn_list(r[4]));
      sync_others(added);
      if (r[2].is_list()) do_ops(r[2].elements(), r[5]);
    } else if (tagged_tuple(r, 3, "in_sync")) {
      auto n = atom_text(r[1]);
      if (!n) return;
      if (std::find(synced_.begin(), synced_.end(), *n) == synced_.end()) synced_.push_back(*n);
      pending_.erase(*n);
      cancel_locker(*n, sync_[*n].my_tag);
      sync_.erase(*n);
    } else if ((tagged_tuple(r, 5, "lock_set") || tagged_tuple(r, 4, "lock_set")) &&
               r[1].is_pid()) {
      if (r.size() == 5) {
        auto& s = sync_[node_name(r[1].pid())];
        if (!s.my_tag || !(*s.my_tag == r[4])) return;
      }
      self_.send(locker_, r);
    }
  }

  // -- calls ------------------------------------------------------------------------------------
  void handle_call(const gen_call& c) {
    const term& q = c.request;
    if (tagged_tuple(q, 2, "set_lock")) {
      reply(self_, c, atom_term(set_lock(q[1], c.from.pid()) ? "true" : "false"));
    } else if (tagged_tuple(q, 2, "del_lock")) {
      del_lock(q[1], c.from.pid());
      reply(self_, c, atom_term("true"));
    } else if ((tagged_tuple(q, 4, "register") || tagged_tuple(q, 5, "register_ext")) &&
               q[2].is_pid()) {
      ins_name(q[1], q[2].pid(), q[3]);
      if (!lock_held_by(c.from.pid()))
        delete_name(global_tables::key(q[1]));  // too late: the lock went
      reply(self_, c, atom_term("yes"));
    } else if (tagged_tuple(q, 2, "unregister")) {
      delete_name(global_tables::key(q[1]));
      reply(self_, c, atom_term("ok"));
    } else if (q.is_atom("get_known")) {
      reply(self_, c, known_list());
    } else if (q.is_atom("get_synced")) {
      term_list l;
      for (const std::string& n : synced_) l.push_back(atom_term(n));
      reply(self_, c, term::make_list(std::move(l)));
    } else if (q.is_atom("get_protocol_version")) {
      reply(self_, c, term(std::int64_t{global_vsn}));
    } else if (q.is_atom("get_names_ext")) {
      reply(self_, c, term::make_list({}));
    } else {
      node_.log(log_level::warning, "distribution: global: an unexpected call: " + q.to_string());
    }
  }

  // -- names and locks --------------------------------------------------------------------------
  term get_names() const {
    term_list out;
    std::shared_lock lock(g_.mu);
    for (const auto& [k, e] : g_.names)
      out.push_back(term::make_tuple({e.name, term(e.owner), e.method}));
    return term::make_list(std::move(out));
  }

  // `extra`: the sync's [{vsn, V}, {lock, LockId}]; names inserted while the `global` lock is
  // held for another sync are taken out again (OTP's lock_still_set).
  void do_ops(const term_list& ops, const term& extra) {
    const bool still = lock_still_set(extra);
    for (const term& o : ops) {
      if (tagged_tuple(o, 2, "insert") && o[1].is_tuple() && o[1].size() == 3 && o[1][1].is_pid()) {
        ins_name(o[1][0], o[1][1].pid(), o[1][2]);
        if (!still) delete_name(global_tables::key(o[1][0]));
      } else if (tagged_tuple(o, 2, "delete")) {
        delete_name(global_tables::key(o[1]));
      }
    }
  }

  // The `global` lock is held by `holder`, or by nobody with no holder lost meanwhile.
  bool lock_held_by(pid holder) {
    std::shared_lock lock(g_.mu);
    auto it = g_.locks.find(global_tables::global_key());
    if (it == g_.locks.end()) return !global_lock_down_;
    const auto& h = it->second.holders;
    return std::find(h.begin(), h.end(), holder) != h.end();
  }
  bool lock_still_set(const term& extra) {
    const term* lock_id = nullptr;
    if (extra.is_list())
      for (const term& e : extra.elements())
        if (tagged_tuple(e, 2, "lock")) lock_id = &e[1];
    std::shared_lock lock(g_.mu);
    auto it = g_.locks.find(global_tables::global_key());
    if (it == g_.locks.end()) return !global_lock_down_;
    return lock_id && lock_id->is_tuple() && lock_id->size() == 2 &&
           it->second.requester == (*lock_id)[1];
  }

  void ins_name(const term& name, pid owner, const term& method) {
    const std::string key = global_tables::key(name);
    if (key.empty()) return;
    delete_name(key);
    const ref r = self_.monitor(owner);
    name_refs_[key] = r;
    watches_[r.value()] = watch{true, key, owner};
    std::unique_lock lock(g_.mu);
    g_.names[key] = global_tables::name_entry{name, owner, method};
  }

  void delete_name(const std::string& key) {
    if (auto r = name_refs_.find(key); r != name_refs_.end()) {
      self_.demonitor(r->second, flush);
      watches_.erase(r->second.value());
      name_refs_.erase(r);
    }
    std::unique_lock lock(g_.mu);
    g_.names.erase(key);
  }

  bool set_lock(const term& id, pid holder) {
    if (!id.is_tuple() || id.size() != 2) return false;
    const std::string key = global_tables::key(id[0]);
    if (key.empty()) return false;
    {
      std::unique_lock lock(g_.mu);
      auto it = g_.locks.find(key);
      if (it == g_.locks.end()) {
        g_.locks.emplace(key, global_tables::lock_entry{id[0], id[1], {holder}});
      } else if (it->second.requester == id[1]) {
        auto& h = it->second.holders;
        if (std::find(h.begin(), h.end(), holder) != h.end()) return true;
        h.push_back(holder);
      } else {
        return false;
      }
    }
    const ref r = self_.monitor(holder);
    lock_refs_[{key, holder}] = r;
    watches_[r.value()] = watch{false, key, holder};
    return true;
  }

  void del_lock(const term& id, pid holder) {
    if (!id.is_tuple() || id.size() != 2) return;
    const std::string key = global_tables::key(id[0]);
    {
      std::shared_lock lock(g_.mu);
      auto it = g_.locks.find(key);
      if (it == g_.locks.end() || !(it->second.requester == id[1])) return;
    }
    if (auto r = lock_refs_.find({key, holder}); r != lock_refs_.end()) {
      self_.demonitor(r->second, flush);
      watches_.erase(r->second.value());
      lock_refs_.erase(r);
    }
    if (remove_holder(key, holder) && key == global_tables::global_key()) global_lock_down_ = false;
  }

  /// True if that was the last holder (the lock is gone).
  bool remove_holder(const std::string& key, pid holder) {
    std::unique_lock lock(g_.mu);
    auto it = g_.locks.find(key);
    if (it == g_.locks.end()) return false;
    std::erase(it->second.holders, holder);
    if (!it->second.holders.empty()) return false;
    g_.locks.erase(it);
    return true;
  }

  // -- helpers ----------------------------------------------------------------------------------
  int vsn_of(const std::string& n) const {
    if (n == me_) return global_vsn;
    if (auto it = known_.find(n); it != known_.end()) return it->second;
    if (auto it = pending_.find(n); it != pending_.end()) return it->second;
    return 0;
  }

  // [{Node, Vsn}] (or bare node atoms) as pairs, this node left out.
  std::vector<std::pair<std::string, int>> node_vsn_list(const term& l) const {
    std::vector<std::pair<std::string, int>> out;
    if (!l.is_list()) return out;
    for (const term& e : l.elements()) {
      if (auto n = atom_text(e)) {
        if (*n != me_) out.emplace_back(*n, vsn_of(*n));
      } else if (e.is_tuple() && e.size() == 2 && e[1].is_integer()) {
        if (auto m = atom_text(e[0]); m && *m != me_)
          out.emplace_back(*m, static_cast<int>(e[1].integer()));
      }
    }
    return out;
  }

  term known_list() const {
    term_list l;
    for (auto& [n, v] : known_)
      l.push_back(term::make_tuple({atom_term(n), term(std::int64_t{v})}));
    return term::make_list(std::move(l));
  }

  void publish_known() {
    std::vector<std::string> names;
    for (auto& [n, v] : known_) names.push_back(n);
    std::unique_lock lock(g_.mu);
    g_.known = std::move(names);
  }

  std::string node_name(pid p) const { return node_name_of(node_, p); }

  // A send that never makes a connection (OTP's gns_volatile_send, noconnect).
  void volatile_send(const std::string& n, term msg) {
    {
      std::shared_lock lock(node_.mu);
      auto it = node_.conns.find(n);
      if (it == node_.conns.end() || !it->second.established) return;
    }
    self_.send(global_server_name, n, std::move(msg));
  }

  void lost(const std::string& n) {
    node_.log(log_level::warning,
              "distribution: 'global' at " + me_ + " failed to connect to " + n);
  }

  void disconnect_node_async(const std::string& n) { node_.post_stop(n, "remove_connection"); }

  process& self_;
  node_state& node_;
  global_tables& g_;
  const std::string me_;
  pid locker_;
  std::int64_t next_tag_ = 1;
  std::int64_t next_op_ = 1;
  std::int64_t xcreation_ = 0;
  bool global_lock_down_ = false;       // the last `global` lock ended with its holder
  std::set<std::string> up_;            // visible connections up, as nodeup said
  std::map<std::string, int> known_;    // synchronised nodes and their versions
  std::map<std::string, int> pending_;  // nodes being synchronised with
  std::set<std::string> removing_;      // asked to disconnect (no lost_connection for them)
  std::vector<std::string> synced_;
  std::map<std::string, term> resolvers_;  // node: the tag of our connect to it
  std::map<std::string, node_sync> sync_;
  std::unordered_map<std::uint64_t, watch> watches_;  // by monitor
  std::unordered_map<std::string, ref> name_refs_;
  std::map<std::pair<std::string, pid>, ref> lock_refs_;
  struct lost_report {
    term xcreation;
    std::int64_t op = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::pair<std::string, std::string>, lost_report> lost_;  // by reporter, lost node
};

}  // namespace

task<> global_body(process& self, node_state& node) {
  if (self.register_name(global_server_name)) {
    node.log(log_level::error,
             "distribution: the name `global_name_server` is taken; no global names");
    co_return;
  }
  monitor_nodes(self);
  server s(self, node);
  s.start_locker();
  std::vector<std::string> up;
  {
    std::shared_lock lock(node.mu);
    for (const auto& [name, e] : node.conns)
      if (e.established && e.visible) up.push_back(name);
  }
  for (const std::string& n : up) s.nodeup(n);
  for (;;) {
    auto m = co_await self.receive(on<down>(), on<nodeup>(), on<nodedown>(), on<locker_lock_set>(),
                                   on<sync_failed>(), on<term>(), on_any());
    if (m.is<down>()) {
      s.down_of(m.get<down>());
    } else if (m.is<nodeup>()) {
      s.nodeup(m.get<nodeup>().node);
    } else if (m.is<nodedown>()) {
      s.nodedown(m.get<nodedown>().node);
    } else if (m.is<locker_lock_set>()) {
      s.lock_is_set(m.get<locker_lock_set>());
    } else if (m.is<sync_failed>()) {
      s.sync_failed_for(m.get<sync_failed>().node);
    } else if (m.is<term>()) {
      s.from_peer(m.get<term>());
    }
  }
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
