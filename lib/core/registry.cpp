#include "registry.hpp"

#include <algorithm>
#include <functional>
#include <thread>

#include <beamlet/core/error.hpp>

#include "process_state.hpp"
#include "process_table.hpp"
#include "runtime_core.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

template <class T>
void free_as(void* object) noexcept {
  delete static_cast<T*>(object);
}

}  // namespace

registry::bucket_table::bucket_table(std::size_t buckets)
    : mask(buckets - 1), heads(std::make_unique<std::atomic<node*>[]>(buckets)) {}

registry::bucket_table::~bucket_table() {
  for (std::size_t b = 0; b <= mask; ++b)
    for (node* n = heads[b].load(std::memory_order_relaxed); n != nullptr;) {
      const std::unique_ptr<node> dead(n);
      n = n->next.load(std::memory_order_relaxed);
    }
}

void registry::bucket_table::push_front(node* n, std::memory_order order) noexcept {
  std::atomic<node*>& head = heads[bucket_of(n->name->hash, mask)];
  n->next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  head.store(n, order);
}

registry::~registry() {
  // No reader is left: the live tables, their nodes and the names they hold go now (what was
  // retired before went with the epochs).
  for (shard& s : shards_) {
    const std::unique_ptr<bucket_table> t(s.current.load(std::memory_order_relaxed));
    if (t) t->for_each([](node& n) { delete n.name; });  // a live node owns its name
  }
}

std::size_t registry::hash_of(std::string_view name) noexcept {
  return std::hash<std::string_view>{}(name);
}

registry::node* registry::find(const bucket_table* t, std::string_view name,
                               std::size_t hash) noexcept {
  if (t == nullptr) return nullptr;
  for (node* n = t->heads[bucket_of(hash, t->mask)].load(std::memory_order_acquire); n != nullptr;
       n = n->next.load(std::memory_order_acquire))
    if (n->name->hash == hash && n->name->text == name) return n;
  return nullptr;
}

void registry::insert_locked(shard& s, const registered_name* name, pid owner) {
  auto fresh = std::unique_ptr<node>(new node{name, owner});
  bucket_table* t = s.current.load(std::memory_order_relaxed);
  if (t == nullptr || s.count > t->mask) {
    // Full (or first use): copy into a table twice the size. Readers of the old one still see
    // every name it had; the old table and its nodes go once no reader can be on them.
    auto bigger =
        std::make_unique<bucket_table>(t == nullptr ? initial_buckets : 2 * (t->mask + 1));
    if (t != nullptr)
      t->for_each([&](const node& n) {
        bigger->push_front(new node{n.name, n.owner}, std::memory_order_relaxed);
      });
    s.current.store(bigger.release(), std::memory_order_release);
    if (t != nullptr) rt_.retire(t, &free_as<bucket_table>);
    t = s.current.load(std::memory_order_relaxed);
  }
  t->push_front(fresh.release(), std::memory_order_release);
  ++s.count;
}

void registry::erase_locked(shard& s, const registered_name* name) {
  bucket_table* t = s.current.load(std::memory_order_relaxed);
  if (t == nullptr) return;
  std::atomic<node*>* link = &t->heads[bucket_of(name->hash, t->mask)];
  for (node* n = link->load(std::memory_order_relaxed); n != nullptr;
       n = link->load(std::memory_order_relaxed)) {
    if (n->name == name) {
      // A reader standing on n still reaches the rest of the chain through n->next.
      link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
      --s.count;
      rt_.retire(n, &free_as<node>);
      rt_.retire(const_cast<registered_name*>(name), &free_as<registered_name>);
      return;
    }
    link = &n->next;
  }
}

std::error_code registry::register_name(std::string_view name, proc* p) {
  // `undefined` is what whereis answers for a free name in Erlang, so it cannot be a name
  // (spec §9 rule 1).
  if (name.empty() || name == "undefined") return errc::invalid_name;
  if (p == nullptr) return errc::not_alive;
  const std::size_t hash = hash_of(name);
  auto text = std::make_unique<registered_name>(registered_name{std::string(name), hash});
  shard& s = shard_for(hash);
  lock_guard lock(s.mu);
  if (find(s.current.load(std::memory_order_relaxed), name, hash) != nullptr) {
    // As Erlang: a process that already has a name is told so before a taken name is.
    const reg_state st = p->registration.load(std::memory_order_acquire);
    if (st == reg_state::named) return errc::already_named;
    return st == reg_state::closed ? errc::not_alive : errc::name_taken;
  }
  // Races with the owner's exit (open -> closed) and with a registration of the same process
  // under a name of another shard: whoever moves the word first wins.
  reg_state expected = reg_state::open;
  if (!p->registration.compare_exchange_strong(expected, reg_state::named,
                                               std::memory_order_acq_rel))
    return expected == reg_state::closed ? errc::not_alive : errc::already_named;
  // From here the owner's exit waits for this lock to drop the name (see release()).
  try {
    insert_locked(s, text.get(), p->id());
  } catch (...) {
    p->registration.store(reg_state::open, std::memory_order_release);
    throw;
  }
  p->reg_name.store(text.release(), std::memory_order_release);
  return {};
}

std::error_code registry::unregister_name(std::string_view name, const process_table& table) {
  const std::size_t hash = hash_of(name);
  shard& s = shard_for(hash);
  pin guard(rt_);  // the table lookup below
  lock_guard lock(s.mu);
  node* n = find(s.current.load(std::memory_order_relaxed), name, hash);
  if (n == nullptr) return errc::not_registered;
  // The holder cannot finish exiting while we hold the lock (release() takes it to drop its
  // name), so it is still in the table.
  if (proc* p = table.lookup(n->owner)) {
    p->reg_name.store(nullptr, std::memory_order_relaxed);
    p->registration.store(reg_state::open, std::memory_order_release);
  }
  erase_locked(s, n->name);
  return {};
}

std::optional<pid> registry::whereis(std::string_view name) const noexcept {
  const std::size_t hash = hash_of(name);
  const shard& s = shard_for(hash);
  pin guard(rt_);
  if (const node* n = find(s.current.load(std::memory_order_acquire), name, hash)) return n->owner;
  return std::nullopt;
}

std::vector<std::pair<std::string, pid>> registry::entries() const {
  std::vector<std::pair<std::string, pid>> out;
  for (shard& s : shards_) {
    lock_guard lock(s.mu);
    if (const bucket_table* t = s.current.load(std::memory_order_relaxed))
      t->for_each([&](const node& n) { out.emplace_back(n.name->text, n.owner); });
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> registry::names() const {
  std::vector<std::string> out;
  for (auto& [name, owner] : entries()) out.push_back(std::move(name));
  return out;
}

std::optional<std::string> registry::name_of(const proc* p) const {
  if (p == nullptr || p->registration.load(std::memory_order_acquire) != reg_state::named)
    return std::nullopt;
  pin guard(rt_);  // an unregister may retire the name while we copy it
  const registered_name* name = p->reg_name.load(std::memory_order_acquire);
  if (name == nullptr) return std::nullopt;
  return name->text;
}

void registry::release(proc* p) noexcept {
  // Never named (the common case): close without a lock.
  reg_state expected = reg_state::open;
  if (p->registration.compare_exchange_strong(expected, reg_state::closed,
                                              std::memory_order_acq_rel))
    return;
  pin guard(rt_);  // an unregister may retire the name we look at
  for (;;) {
    const registered_name* name = p->reg_name.load(std::memory_order_acquire);
    if (name == nullptr) {
      // Unregistered meanwhile (open again), or a registration between its CAS and its store
      // of the name (it holds its shard's lock for a few instructions more).
      expected = reg_state::open;
      if (p->registration.compare_exchange_strong(expected, reg_state::closed,
                                                  std::memory_order_acq_rel))
        return;
      std::this_thread::yield();
      continue;
    }
    shard& s = shard_for(name->hash);
    lock_guard lock(s.mu);
    // Unregistered (and perhaps registered under another name) before we took the lock.
    if (p->reg_name.load(std::memory_order_relaxed) != name) continue;
    p->registration.store(reg_state::closed, std::memory_order_release);
    p->reg_name.store(nullptr, std::memory_order_relaxed);
    erase_locked(s, name);
    return;
  }
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
