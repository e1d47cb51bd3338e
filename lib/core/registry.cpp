#include "registry.hpp"

#include <algorithm>

#include <beamlet/core/error.hpp>

#include "process_state.hpp"
#include "process_table.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

std::error_code registry::register_name(std::string_view name, proc* p) {
  // `undefined` is what whereis answers for a free name in Erlang, so it cannot be a name
  // (spec §9 rule 1).
  if (name.empty() || name == "undefined") return errc::invalid_name;
  lock_guard lock(mu_);
  if (p == nullptr) return errc::not_alive;
  const reg_state st = p->registration.load(std::memory_order_acquire);
  if (st == reg_state::closed) return errc::not_alive;
  if (st == reg_state::named) return errc::already_named;
  auto [it, inserted] = names_.try_emplace(std::string(name), p->id());
  if (!inserted) return errc::name_taken;
  // Races only with the owner's exit (open -> closed, lock-free): whoever moves first wins.
  reg_state expected = reg_state::open;
  if (!p->registration.compare_exchange_strong(expected, reg_state::named,
                                               std::memory_order_acq_rel)) {
    names_.erase(it);
    return errc::not_alive;
  }
  p->reg_name = &it->first;  // node-based map: the key's address is stable
  return {};
}

std::error_code registry::unregister_name(std::string_view name, const process_table& table) {
  lock_guard lock(mu_);
  auto it = names_.find(name);
  if (it == names_.end()) return errc::not_registered;
  // The holder cannot finish exiting while we hold the lock (release() takes it), so it is
  // still in the table.
  if (proc* p = table.lookup(it->second)) {
    p->reg_name = nullptr;
    p->registration.store(reg_state::open, std::memory_order_release);
  }
  names_.erase(it);
  return {};
}

std::optional<pid> registry::whereis(std::string_view name) const {
  lock_guard lock(mu_);
  auto it = names_.find(name);
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> registry::names() const {
  lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(names_.size());
  for (const auto& [name, p] : names_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, pid>> registry::entries() const {
  lock_guard lock(mu_);
  std::vector<std::pair<std::string, pid>> out(names_.begin(), names_.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> registry::name_of(const proc* p) const {
  if (p == nullptr || p->registration.load(std::memory_order_acquire) != reg_state::named)
    return std::nullopt;
  lock_guard lock(mu_);
  if (p->reg_name == nullptr) return std::nullopt;
  return *p->reg_name;
}

void registry::release(proc* p) noexcept {
  // Never named (the common case): close without the lock.
  reg_state expected = reg_state::open;
  if (p->registration.compare_exchange_strong(expected, reg_state::closed,
                                              std::memory_order_acq_rel))
    return;
  lock_guard lock(mu_);
  // Named, or unregistered meanwhile (then open again).
  p->registration.store(reg_state::closed, std::memory_order_release);
  if (p->reg_name != nullptr) {
    auto it = names_.find(std::string_view(*p->reg_name));
    if (it != names_.end()) names_.erase(it);
    p->reg_name = nullptr;
  }
}

}  // namespace detail
BEAMLET_END_NAMESPACE
