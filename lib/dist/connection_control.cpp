// The control messages a peer sends, each turned into what OTP does with it on a local process:
// a message, a link, an exit signal, a monitor or a DOWN. A control tuple of the wrong shape is
// a protocol error: the connection closes (and nothing else happens).
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/detail/message.hpp>

#include "connection_tables.hpp"
#include "node_state.hpp"
#include "node_table.hpp"
#include "term_access.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace {

namespace core = beamlet::detail;

void queue(std::string& out, const node_incarnation& me, const term& control,
           const term* msg = nullptr) {
  // Only terms the peer sent are echoed here (refs, names): they encode as they came.
  (void)append_packet(out, control, msg, me);
}

// Pids are looked at without pinning their node's slot (term_access::raw_pid): a peer may name
// any node it likes, and only what is kept as a plain pid pins (node_table.cpp).
pid raw(const term& t) {
  return term_access::raw_pid(t);
}
bool local_pid(const term& t) {
  return t.is_pid() && !raw(t).is_remote() && raw(t);
}
bool remote_pid(const term& t) {
  return t.is_pid() && raw(t).is_remote();
}
/// A pid of the peer itself (any incarnation): what a link, an exit or a monitor from it
/// must name as its sender.
bool peer_pid(const term& t, const std::string& peer) {
  if (!remote_pid(t)) return false;
  const node_incarnation* n = node_entry(raw(t).node_slot());
  return n != nullptr && n->name == peer;
}

void deliver(node_state& node, const node_incarnation& me, pid to, term* msg) {
  if (msg == nullptr) return;
  deliver_to_local(node.rt(), me, to, std::move(*msg));
}

// net_kernel's {is_auth, Node} call, which net_adm:ping makes on connecting: answered `yes`.
bool kernel_call(node_state& node, const node_incarnation& me, std::string& out, term* msg) {
  if (msg == nullptr || !msg->is_tuple() || msg->size() != 3 || !(*msg)[0].is_atom("$gen_call"))
    return false;
  const term& from = (*msg)[1];
  if (!from.is_tuple() || from.size() != 2 || !remote_pid(from[0])) return false;
  const term& request = (*msg)[2];
  if (!request.is_tuple() || request.size() != 2 || !request[0].is_atom("is_auth")) return false;
  const term reply = term::make_tuple({from[1], term::make_atom("yes")});
  queue(out, me, term::make_tuple({term(ctl::send), term::make_atom(""), from[0]}), &reply);
  (void)node;
  return true;
}

}  // namespace

bool handle_control(node_state& node, process& self, const node_incarnation& me,
                    const std::string& peer, connection_tables& tables, std::string& out,
                    const term& ct, term* msg, std::string& error) {
  auto bad = [&](const char* what) {
    error = std::string("a malformed control message (") + what + "): " + ct.to_string();
    return false;
  };
  if (!ct.is_tuple() || ct.size() < 1 || !ct[0].is_integer()) return bad("not {Op, ...}");
  const auto op = ct[0].integer();
  core::runtime_core& rt = node.rt();
  switch (op) {
    case ctl::send:
    case ctl::send_tt:
    case ctl::send_sender: {
      const std::size_t to = 2;  // {22, From, To} and {12, Cookie, To, Token} alike
      if (ct.size() < 3 || !ct[to].is_pid()) return bad("send");
      if (raw(ct[to]).is_remote()) return true;  // not ours: dropped, as by a router
      deliver(node, me, raw(ct[to]), msg);
      return true;
    }
    case ctl::reg_send:
    case ctl::reg_send_tt: {
      if (ct.size() < 4 || !ct[3].is_atom()) return bad("reg_send");
      const std::string& name = ct[3].atom_name();
      if (name == "net_kernel" && kernel_call(node, me, out, msg)) return true;
      if (msg == nullptr) return true;
      (void)core::send_node_named(rt, name, core::make_message(std::move(*msg)));
      return true;
    }
    case ctl::link: {
      if (ct.size() != 3 || !peer_pid(ct[1], peer) || !ct[2].is_pid()) return bad("link");
      const pid from = ct[1].pid();
      const pid to = ct[2].pid();
      if (core::remote_link_in(rt, from, to)) {
        tables.links.insert({to, from});
      } else {
        queue(out, me,
              term::make_tuple({term(ctl::exit), term(to), term(from), term::make_atom("noproc")}));
      }
      return true;
    }
    case ctl::exit:
    case ctl::exit_tt:
    case ctl::exit2:
    case ctl::exit2_tt: {
      const bool tt = op == ctl::exit_tt || op == ctl::exit2_tt;
      if (ct.size() != (tt ? 5u : 4u) || !peer_pid(ct[1], peer) || !ct[2].is_pid())
        return bad("exit");
      const pid from = ct[1].pid();
      const pid to = ct[2].pid();
      const bool via_link = op == ctl::exit || op == ctl::exit_tt;
      if (via_link) tables.links.erase({to, from});
      core::remote_exit_in(rt, from, to, reason_from_term(ct[tt ? 4 : 3]), via_link);
      return true;
    }
    case ctl::unlink: {
      if (ct.size() != 3 || !peer_pid(ct[1], peer) || !ct[2].is_pid()) return bad("unlink");
      tables.links.erase({ct[2].pid(), ct[1].pid()});
      core::remote_unlink_in(rt, ct[1].pid(), ct[2].pid());
      return true;
    }
    case ctl::unlink_id: {
      if (ct.size() != 4 || !peer_pid(ct[2], peer) || !ct[3].is_pid()) return bad("unlink_id");
      const pid from = ct[2].pid();
      const pid to = ct[3].pid();
      tables.links.erase({to, from});
      core::remote_unlink_in(rt, from, to);
      queue(out, me, term::make_tuple({term(ctl::unlink_id_ack), ct[1], term(to), term(from)}));
      return true;
    }
    case ctl::unlink_id_ack:
      return true;
    case ctl::monitor_p: {
      if (ct.size() != 4 || !peer_pid(ct[1], peer) || ct[3].which() != term::type::reference)
        return bad("monitor");
      const pid watcher = ct[1].pid();
      const term& target_term = ct[2];
      pid target;
      std::string name;
      if (target_term.is_atom()) {
        name = target_term.atom_name();
        target = core::whereis_in(rt, name);
      } else if (local_pid(target_term)) {
        target = target_term.pid();
      } else if (!target_term.is_pid()) {
        return bad("monitor target");
      }
      const std::uint64_t r = self.make_ref().value();
      std::uint32_t slot = 0;
      if (target && core::remote_monitor_in(rt, watcher, target, r, &slot)) {
        tables.watched_by_ref[connection_tables::key_of(ct[3])] = r;
        tables.watched[r] = watched_by{watcher, ct[3], target, std::move(name), slot};
      } else {
        queue(out, me,
              term::make_tuple({term(ctl::monitor_p_exit), target_term, term(watcher), ct[3],
                                term::make_atom("noproc")}));
      }
      return true;
    }
    case ctl::demonitor_p: {
      if (ct.size() != 4 || ct[3].which() != term::type::reference) return bad("demonitor");
      auto k = tables.watched_by_ref.find(connection_tables::key_of(ct[3]));
      if (k == tables.watched_by_ref.end()) return true;
      auto it = tables.watched.find(k->second);
      if (it != tables.watched.end()) {
        core::remote_demonitor_in(rt, it->second.target, it->first, it->second.slot);
        tables.forget_watched(it);
      } else {
        tables.watched_by_ref.erase(k);
      }
      return true;
    }
    case ctl::monitor_p_exit: {
      if (ct.size() != 5 || !local_pid(ct[2])) return bad("monitor_p_exit");
      const std::uint64_t r = ref_of(ct[3], me);
      auto it = tables.watching.find(r);
      if (it == tables.watching.end()) return true;  // demonitored meanwhile
      watch w = std::move(it->second);
      tables.watching.erase(it);
      const pid target = peer_pid(ct[1], peer) ? ct[1].pid() : w.target;
      core::remote_down_in(rt, w.watcher, r, target, reason_from_term(ct[4]), std::move(w.name));
      return true;
    }
    case ctl::spawn_request:
      if (ct.size() != 6 || !peer_pid(ct[2], peer)) return bad("spawn_request");
      return handle_spawn_request(node, self, me, out, peer, ct, msg);
    default:
      // Operations this node never advertised (aliases, payload exits): ignored.
      return true;
  }
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
