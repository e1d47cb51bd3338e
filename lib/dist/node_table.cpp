// The program-wide table of node incarnations behind remote pids (pid::node_slot). Slots are
// never reused: a pid names one incarnation for as long as the program runs, which is what makes
// a restarted node's old pids dead (their creation differs, so their slot does).
#include <beamlet/dist/etf.hpp>

#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

namespace {
struct node_table {
  std::shared_mutex mu;
  std::vector<node_incarnation> by_slot{node_incarnation{}};  // slot 0: none
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t, std::less<>> by_name;
};
node_table& table() {
  static node_table t;  // a function-local static: constructed on first use, thread-safe
  return t;
}
}  // namespace

std::optional<node_incarnation> node_of(pid p) {
  if (!p.is_remote()) return std::nullopt;
  node_table& t = table();
  std::shared_lock lock(t.mu);
  if (p.node_slot() >= t.by_slot.size()) return std::nullopt;
  return t.by_slot[p.node_slot()];
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
  if (t.by_slot.size() > pid::max_node_slot) return 0;
  const auto slot = static_cast<std::uint32_t>(t.by_slot.size());
  t.by_slot.push_back(node_incarnation{key.first, creation});
  t.by_name.emplace(std::move(key), slot);
  return slot;
}

}  // namespace dist
BEAMLET_END_NAMESPACE
