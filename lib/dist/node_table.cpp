// The program-wide table of node incarnations behind remote pids (pid::node_slot).
//
// A slot names one incarnation for as long as anything can still hold a pid of it, which is
// what makes a restarted node's old pids dead (their creation differs, so their slot does).
// What can hold one: a term (counted: term's constructors and destructor retain and release its
// slot), or a plain pid that left a term or was made from a slot (the slot is then pinned for
// the life of the program: a plain pid is a value nobody counts). Connected nodes' slots are
// pinned too. A slot that is neither held nor pinned (the node was only ever mentioned by
// another node, and every term mentioning it is gone) is reclaimed when the table is full, so
// a peer that names made-up nodes by the thousand cannot exhaust it; and each connection may
// introduce at most node_options::max_foreign_nodes new incarnations.
#include <beamlet/dist/etf.hpp>

#include "node_table.hpp"

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {
constexpr std::size_t slots = pid::max_node_slot + 1;

struct node_table {
  std::shared_mutex mu;
  std::array<std::unique_ptr<node_incarnation>, slots> entries;  // under mu
  std::array<std::atomic<const node_incarnation*>, slots> by_slot{};
  std::array<std::atomic<std::uint32_t>, slots> refs{};
  std::array<std::atomic<bool>, slots> pinned{};
  std::uint32_t next = 1;    // slot 0: none
  std::uint32_t cursor = 1;  // where free_slot's search resumes
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t, std::less<>> by_name;
  std::atomic<std::uint64_t> reclaimed{0};

  /// A slot for a new incarnation: the next unused one, or one nobody holds. Caller holds mu.
  std::uint32_t free_slot() {
    if (next <= pid::max_node_slot) return next++;
    // Round the table from where the last search stopped, so that a table whose first slots
    // are all held costs one pass over it, not one per new node.
    for (std::uint32_t n = 0; n < pid::max_node_slot; ++n) {
      const std::uint32_t s = cursor;
      cursor = cursor == pid::max_node_slot ? 1 : cursor + 1;
      if (pinned[s].load(std::memory_order_acquire) || refs[s].load(std::memory_order_acquire) != 0)
        continue;
      // Nothing holds a pid of it: neither a term (refs) nor a plain pid (pinned), so no
      // thread can be reading its entry.
      const node_incarnation* e = entries[s].get();
      by_name.erase(std::make_pair(e->name, e->creation));
      by_slot[s].store(nullptr, std::memory_order_release);
      entries[s].reset();
      reclaimed.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    return 0;
  }
};

node_table& table() {
  static node_table t;  // a function-local static: constructed on first use, thread-safe
  return t;
}

/// The slot of (name, creation), made if need be (`*budget` new ones at most, when given);
/// with `hold`, retained once for the caller, under the table's lock, so that it cannot be
/// reclaimed before the caller's term holds it. 0 when the table is full or the budget spent.
std::uint32_t intern(std::string_view name, std::uint32_t creation, bool pin, bool hold,
                     std::size_t* budget) {
  node_table& t = table();
  auto key = std::make_pair(std::string(name), creation);
  const auto found = [&](std::uint32_t s) {
    if (pin) t.pinned[s].store(true, std::memory_order_release);
    if (hold) t.refs[s].fetch_add(1, std::memory_order_acq_rel);
    return s;
  };
  {
    std::shared_lock lock(t.mu);
    if (auto it = t.by_name.find(key); it != t.by_name.end()) return found(it->second);
  }
  std::unique_lock lock(t.mu);
  if (auto it = t.by_name.find(key); it != t.by_name.end()) return found(it->second);
  if (budget != nullptr && *budget == 0) return 0;
  const std::uint32_t slot = t.free_slot();
  if (slot == 0) return 0;
  if (budget != nullptr) --*budget;
  t.entries[slot] = std::make_unique<node_incarnation>(node_incarnation{key.first, creation});
  t.pinned[slot].store(pin, std::memory_order_release);
  t.refs[slot].store(hold ? 1 : 0, std::memory_order_release);
  t.by_slot[slot].store(t.entries[slot].get(), std::memory_order_release);
  t.by_name.emplace(std::move(key), slot);
  return slot;
}
}  // namespace

namespace detail {

const node_incarnation* node_entry(std::uint32_t slot) noexcept {
  if (slot == 0 || slot > pid::max_node_slot) return nullptr;
  return table().by_slot[slot].load(std::memory_order_acquire);
}

std::uint32_t intern_held(std::string_view name, std::uint32_t creation, std::size_t* budget) {
  return intern(name, creation, false, true, budget);
}

std::uint32_t intern_pinned(std::string_view name, std::uint32_t creation) {
  return intern(name, creation, true, false, nullptr);
}

void retain_node(std::uint32_t slot) noexcept {
  if (slot != 0 && slot <= pid::max_node_slot)
    table().refs[slot].fetch_add(1, std::memory_order_relaxed);
}

void release_node(std::uint32_t slot) noexcept {
  if (slot != 0 && slot <= pid::max_node_slot)
    table().refs[slot].fetch_sub(1, std::memory_order_acq_rel);
}

void pin_node(std::uint32_t slot) noexcept {
  if (slot == 0 || slot > pid::max_node_slot) return;
  std::atomic<bool>& p = table().pinned[slot];
  if (!p.load(std::memory_order_relaxed)) p.store(true, std::memory_order_release);
}

}  // namespace detail

node_slots node_slot_usage() {
  node_table& t = table();
  node_slots s;
  std::shared_lock lock(t.mu);
  for (std::uint32_t i = 1; i < t.next; ++i) {
    if (t.entries[i] == nullptr) continue;
    ++s.in_use;
    if (t.pinned[i].load(std::memory_order_relaxed)) ++s.pinned;
  }
  s.reclaimed = t.reclaimed.load(std::memory_order_relaxed);
  return s;
}

std::optional<node_incarnation> node_of(pid p) {
  if (!p.is_remote()) return std::nullopt;
  const node_incarnation* e = detail::node_entry(p.node_slot());
  if (e == nullptr) return std::nullopt;
  return *e;
}

std::uint32_t intern_node(std::string_view name, std::uint32_t creation) {
  // The caller gets a plain slot, and may make plain pids of it: pinned.
  return detail::intern_pinned(name, creation);
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
