// The locker of the global name server (OTP's the_locker): before two nodes exchange their
// names, their lockers take the `global` lock on both, on the cluster's boss (the greatest
// node name) and on every node either knows, so that no registration runs anywhere meanwhile.
//
// Each node the server is connecting to is a candidate ("him"). After a pause (200 ms alone, a
// second or more in a cluster), and when no `global` lock is set here, the locker picks one,
// sets the lock (boss first, then both nodes, then the known ones), and tells his locker, which
// sets it on its side in turn and answers. Once both hold it, each tells its server, which
// exchanges names, and the lock is released when the server says the exchange is over (or the
// node is gone). A side that finds the lock taken releases what it has and tries later.
#include <beamlet/core/receive.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/dist/gen_call.hpp>
#include <beamlet/dist/node.hpp>

#include <algorithm>
#include <chrono>
#include <random>

#include "global_protocol.hpp"
#include "node_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace {

term atom_list(const std::vector<std::string>& names) {
  term_list out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(term::make_atom(n));
  return term::make_list(std::move(out));
}

// {lock_set, Pid, Set, HisKnown} or {lock_set, Pid, Set, HisKnown, Tag}.
bool is_lock_set(const term& t) {
  return t.is_tuple() && (t.size() == 4 || t.size() == 5) && t[0].is_atom("lock_set") &&
         t[1].is_pid() && (t[2].is_atom("true") || t[2].is_atom("false"));
}

class locker {
 public:
  locker(process& self, node_state& node, pid server)
      : self_(self), node_(node), server_(server), me_(node.self.name), boss_(me_) {}

  task<> run() {
    for (;;) {
      using namespace std::chrono;
      timeout_value wait = infinity;
      if (!him_.empty())
        wait = just_synced_ ? milliseconds(0)
               : known_.empty()
                   ? milliseconds(200)
                   : milliseconds(std::min<std::size_t>(1000 + 100 * known_.size(), 3000));
      just_synced_ = false;
      auto m = co_await self_.receive(on<locker_his>(), on<locker_cancel>(), on<locker_known>(),
                                      on<term>(), on_any(), after(wait));
      if (!m) {
        bool busy;
        {
          std::shared_lock lock(node_.global.mu);
          busy = node_.global.global_lock_set();
        }
        if (!busy) co_await select();
      } else if (m.is<locker_his>()) {
        him_.push_back(std::move(m.get<locker_his>()));
      } else if (m.is<locker_cancel>()) {
        auto& c = m.get<locker_cancel>();
        if (c.then) c.then(self_);
        if (c.tag) remove(c.node, *c.tag);
      } else if (m.is<locker_known>()) {
        update(m.get<locker_known>());
      } else if (m.is<term>() && is_lock_set(m.get<term>())) {
        co_await lock_set_from_him(m.get<term>());
      }
    }
  }

 private:
  // {lock_set, Pid, true, ...} from a locker that has set the lock on its side first.
  task<> lock_set_from_him(const term& t) {
    if (!t[2].is_atom("true")) co_return;
    const pid his = t[1].pid();
    const std::string node = node_name_of(node_, his);
    auto h = find(node);
    if (h == him_.end() || (t.size() == 5 && !(t[4] == h->my_tag))) {
      send_lock_set(false, his, 5, term(std::int64_t{0}));  // a stranger: refused, old style
      co_return;
    }
    const locker_his him = *h;
    const term id = lock_id(his);
    const bool set = co_await lock_nodes_safely(id, std::vector<std::string>());
    send_lock_set(set, his, him.vsn, him.his_tag);
    if (!set) co_return;
    std::vector<std::string> known = known_;
    known.insert(known.begin(), me_);
    self_.send(server_, locker_lock_set{node, him.my_tag, id});
    co_await wait_cancel(node, id, him.my_tag, std::move(known));
    just_synced_ = true;
    remove(node, him.my_tag);
  }

  // The pause is over: try to lock with one of the candidates not known yet.
  task<> select() {
    std::erase_if(him_, [&](const locker_his& h) {
      return std::find(known_.begin(), known_.end(), h.node) != known_.end();
    });
    if (him_.empty()) co_return;
    std::uniform_int_distribution<std::size_t> pick(0, him_.size() - 1);
    const locker_his him = him_[pick(rng_)];
    const term id = lock_id(him.locker);
    if (!co_await lock_nodes_safely(id, std::vector<std::string>(1, him.node))) co_return;
    std::vector<std::string> known = {me_, him.node};
    known.insert(known.end(), known_.begin(), known_.end());
    send_lock_set(true, him.locker, him.vsn, him.his_tag);
    // His answer, or the server's cancel.
    for (;;) {
      const auto from_him = [&](const term& t) {
        return is_lock_set(t) && node_name_of(node_, t[1].pid()) == him.node;
      };
      const auto cancel = [&](const locker_cancel& c) {
        return c.node == him.node && c.tag && *c.tag == him.my_tag;
      };
      auto m = co_await self_.receive(on<term>().when(from_him), on<locker_cancel>().when(cancel));
      if (m.is<locker_cancel>()) {
        if (m.get<locker_cancel>().then) m.get<locker_cancel>().then(self_);
        co_await delete_global_lock(self_, node_, id, known);
        remove(him.node, him.my_tag);
        co_return;
      }
      const term& t = m.get<term>();
      const bool current = t.size() == 4 || t[4] == him.my_tag;
      if (!current) continue;  // an answer to an earlier attempt
      if (t[2].is_atom("false")) {
        co_await delete_global_lock(self_, node_, id, known);
        co_return;
      }
      self_.send(server_, locker_lock_set{him.node, him.my_tag, id});
      co_await wait_cancel(him.node, id, him.my_tag, std::move(known));
      just_synced_ = true;
      remove(him.node, him.my_tag);
      co_return;
    }
  }

  // Held until the server is done with `node` (or it is gone); then released everywhere.
  task<> wait_cancel(const std::string& node, const term& id, const term& tag,
                     std::vector<std::string> known) {
    auto m = co_await self_.receive(on<locker_cancel>().when(
        [&](const locker_cancel& c) { return c.node == node && c.tag && *c.tag == tag; }));
    if (m.get<locker_cancel>().then) m.get<locker_cancel>().then(self_);
    co_await delete_global_lock(self_, node_, id, std::move(known));
  }

  // The boss first (alone, so that two lockers meet there), then this node and `extra`, then
  // every known node; what was set is released if a later step fails.
  task<bool> lock_nodes_safely(const term& id, std::vector<std::string> extra) {
    const std::vector<std::string> first = {boss_};
    if (boss_ != me_ && !can_set_lock_here(node_, id)) co_return false;
    if (!co_await set_lock_on_nodes(self_, node_, id, first)) co_return false;
    // Known nodes reported meanwhile count.
    for (;;) {
      auto k = co_await self_.receive(on<locker_known>(), after(std::chrono::milliseconds(0)));
      if (!k) break;
      update(k.get<locker_known>());
    }
    std::vector<std::string> second = {me_};
    second.insert(second.end(), extra.begin(), extra.end());
    std::erase(second, first[0]);
    if (!co_await set_lock_on_nodes(self_, node_, id, second)) {
      co_await del_lock(self_, node_, id, first);
      co_return false;
    }
    std::vector<std::string> rest = known_;
    std::erase(rest, first[0]);
    if (!co_await set_lock_on_nodes(self_, node_, id, rest)) {
      std::vector<std::string> so_far = first;
      so_far.insert(so_far.end(), second.begin(), second.end());
      co_await del_lock(self_, node_, id, std::move(so_far));
      co_return false;
    }
    co_return true;
  }

  void send_lock_set(bool set, pid his, int vsn, const term& his_tag) {
    term_list items = {term::make_atom("lock_set"), term(self_.self()),
                       term::make_atom(set ? "true" : "false"), atom_list(known_)};
    if (vsn >= global_vsn) items.push_back(his_tag);
    term msg = term::make_tuple(std::move(items));
    if (vsn < 6)
      self_.send(his, std::move(msg));
    else
      cast(self_, global_server_name, node_name_of(node_, his), std::move(msg));
  }

  // {global, lists:sort([self(), His])}: the same term on both sides.
  term lock_id(pid his) {
    pid a = self_.self(), b = his;
    if (pid_less(node_, b, a)) std::swap(a, b);
    return term::make_tuple({term::make_atom("global"), term::make_list({term(a), term(b)})});
  }

  std::vector<locker_his>::iterator find(const std::string& node) {
    return std::find_if(him_.begin(), him_.end(),
                        [&](const locker_his& h) { return h.node == node; });
  }
  void remove(const std::string& node, const term& tag) {
    std::erase_if(him_, [&](const locker_his& h) { return h.node == node && h.my_tag == tag; });
  }
  void update(const locker_known& k) {
    for (const std::string& n : k.add)
      if (std::find(known_.begin(), known_.end(), n) == known_.end()) known_.push_back(n);
    if (k.remove) std::erase(known_, *k.remove);
    std::vector<std::string> all = known_;
    all.push_back(me_);
    boss_ = boss_of(all);
  }

  process& self_;
  node_state& node_;
  const pid server_;
  const std::string me_;
  std::vector<locker_his> him_;
  std::vector<std::string> known_;
  std::string boss_;
  bool just_synced_ = false;
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace

task<> global_locker_body(process& self, node_state& node, pid server) {
  locker l(self, node, server);
  co_await l.run();
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
