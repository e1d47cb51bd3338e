// The API of global names (global.hpp): the registrar's transactions, run in the calling
// process, and the reads of the local table.
#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/global.hpp>
#include <beamlet/dist/node.hpp>

#include <algorithm>
#include <random>

#include "global_protocol.hpp"
#include "node_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::global {

namespace {

using detail::node_state;

node_state* visible_node(basic_process& self) {
  auto& st = extension<node_state>(self);
  return st.running() && !st.opts.hidden ? &st : nullptr;
}

// OTP's random_sleep: longer and longer, at most 8 s.
task<> random_sleep(process& self, int times) {
  static thread_local std::minstd_rand rng{std::random_device{}()};
  const int tmax = times > 5 ? 8000 : (1 << times) * 1000 / 8;
  std::uniform_int_distribution<int> d(1, std::max(tmax, 1));
  co_await self.sleep(std::chrono::milliseconds(d(rng)));
}

// trans_all_known: the lock {global, self()} on this node and every known one, the boss
// first; the nodes it was set on.
task<std::vector<std::string>> lock_all_known(process& self, node_state& st, const term& id) {
  for (int times = 0;; ++times) {
    std::vector<std::string> known;
    {
      std::shared_lock lock(st.global.mu);
      known = st.global.known;
    }
    std::vector<std::string> nodes = known;
    nodes.insert(nodes.begin(), st.self.name);
    const std::string boss = detail::boss_of(nodes);
    if (co_await detail::set_lock_on_nodes(self, st, id, std::vector<std::string>(1, boss))) {
      bool all = co_await detail::set_lock_on_nodes(self, st, id, nodes);
      if (all) {
        std::shared_lock lock(st.global.mu);
        for (const std::string& n : st.global.known)
          if (std::find(known.begin(), known.end(), n) == known.end()) all = false;
      }
      if (all) co_return nodes;
      co_await detail::del_lock(self, st, id, std::vector<std::string>(1, boss));
    }
    co_await random_sleep(self, times);
  }
}

term lock_id(process& self) {
  return term::make_tuple({term::make_atom("global"), term(self.self())});
}

}  // namespace

task<expected<bool, std::error_code>> register_name(process& self, term name, pid p) {
  node_state* st = visible_node(self);
  if (!st) co_return unexpected(std::error_code(dist_errc::not_visible));
  const term id = lock_id(self);
  std::vector<std::string> nodes = co_await lock_all_known(self, *st, id);
  if (!st->running()) co_return unexpected(std::error_code(dist_errc::not_visible));  // stopped
  bool free;
  {
    std::shared_lock lock(st->global.mu);
    free = st->global.names.count(detail::global_tables::key(name)) == 0 &&
           std::none_of(st->global.names.begin(), st->global.names.end(),
                        [&](const auto& e) { return e.second.owner == p; });
  }
  if (free) {
    term request = term::make_tuple(
        {term::make_atom("register"), name, term(p), detail::global_fun("random_exit_name")});
    (void)co_await detail::multi_call(self, nodes, std::move(request));
  }
  co_await detail::delete_global_lock(self, *st, id, std::move(nodes));
  co_return free;
}

task<expected<void, std::error_code>> unregister_name(process& self, term name) {
  node_state* st = visible_node(self);
  if (!st) co_return unexpected(std::error_code(dist_errc::not_visible));
  {
    std::shared_lock lock(st->global.mu);
    if (st->global.names.count(detail::global_tables::key(name)) == 0)
      co_return expected<void, std::error_code>();
  }
  const term id = lock_id(self);
  std::vector<std::string> nodes = co_await lock_all_known(self, *st, id);
  term request = term::make_tuple({term::make_atom("unregister"), name});
  (void)co_await detail::multi_call(self, nodes, std::move(request));
  co_await detail::delete_global_lock(self, *st, id, std::move(nodes));
  co_return expected<void, std::error_code>();
}

std::optional<pid> whereis_name(runtime& rt, const term& name) {
  auto& st = extension<node_state>(rt);
  if (!st.running()) return std::nullopt;
  const std::optional<pid> p = st.global.owner_of(name);
  // A local owner that has just ended is not returned (its DOWN may still be on its way).
  if (p && !p->is_remote() && !rt.is_alive(*p)) return std::nullopt;
  return p;
}

std::vector<term> registered_names(runtime& rt) {
  auto& st = extension<node_state>(rt);
  std::vector<term> out;
  std::shared_lock lock(st.global.mu);
  for (const auto& [k, e] : st.global.names) out.push_back(e.name);
  return out;
}

bool send(basic_process& self, const term& name, term msg) {
  const std::optional<pid> p = extension<node_state>(self).global.owner_of(name);
  if (!p) return false;
  self.send(*p, std::move(msg));
  return true;
}

}  // namespace dist::global
BEAMLET_END_PRIVATE_NAMESPACE
