// Registered names (spec §9): one mutex-protected map from name to pid. Registration is
// rare next to messaging, and the mutex also orders a registration against the owner's exit
// (the owner marks itself closed under the same lock), so a name can never outlive its process.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <beamlet/core/ids.hpp>

#include "thread_safety.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

struct proc;
class process_table;

class registry {
 public:
  std::error_code register_name(std::string_view name, proc* p);
  std::error_code unregister_name(std::string_view name, const process_table& table);
  std::optional<pid> whereis(std::string_view name) const;
  std::vector<std::string> names() const;
  /// Every (name, pid), sorted by name.
  std::vector<std::pair<std::string, pid>> entries() const;
  std::optional<std::string> name_of(const proc* p) const;
  /// The process is exiting: drop its name and refuse later registrations.
  void release(proc* p) noexcept;

 private:
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  mutable mutex mu_;
  std::unordered_map<std::string, pid, hash, std::equal_to<>> names_ BEAMLET_GUARDED_BY(mu_);
};

}  // namespace detail
BEAMLET_END_NAMESPACE
