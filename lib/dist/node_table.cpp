// The program-wide table of node incarnations behind remote pids (pid::node_slot). Slots are
// never reused: a pid names one incarnation for as long as the program runs, which is what makes
// a restarted node's old pids dead (their creation differs, so their slot does).
#include <beamlet/dist/etf.hpp>

#include "node_table.hpp"

#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

namespace {
struct node_table {
  std::shared_mutex mu;
  std::deque<node_incarnation> entries;  // stable addresses
  std::array<std::atomic<const node_incarnation*>, pid::max_node_slot + 1> by_slot{};
  std::uint32_t next = 1;  // slot 0: none
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t, std::less<>> by_name;
};
node_table& table() {
  static node_table t;  // a function-local static: constructed on first use, thread-safe
  return t;
}
}  // namespace

namespace detail {
const node_incarnation* node_entry(std::uint32_t slot) noexcept {
  if (slot == 0 || slot > pid::max_node_slot) return nullptr;
  return table().by_slot[slot].load(std::memory_order_acquire);
}
}  // namespace detail

std::optional<node_incarnation> node_of(pid p) {
  if (!p.is_remote()) return std::nullopt;
  const node_incarnation* e = detail::node_entry(p.node_slot());
  if (e == nullptr) return std::nullopt;
  return *e;
}

std::uint32_t intern_node(std::string_view name, std::uint32_t creation) {
  node_table& t = table();
  auto key = std::make_pair(std::string(name), creation);
  {
    std::shared_lock lock(t.mu);
    if (auto it = t.by_name.find(key); it != t.by_name.end()) return it->second;
  }
  std::unique_lock lock(t.mu);
  if (auto it = t.by_name.find(key); it != t.by_name.end()) return it->second;
  if (t.next > pid::max_node_slot) return 0;
  const std::uint32_t slot = t.next++;
  t.entries.push_back(node_incarnation{key.first, creation});
  t.by_slot[slot].store(&t.entries.back(), std::memory_order_release);
  t.by_name.emplace(std::move(key), slot);
  return slot;
}

}  // namespace dist
BEAMLET_END_NAMESPACE
