// The global name server's tables (global_server.cpp): registered names, locks, and the nodes
// it has synchronised with. Written by the server process only; read by the API (whereis_name,
// registered_names, the registrar's list of nodes) and by the locker (is the `global` lock
// set here?) from any thread, under `mu`.
#pragma once

#include <beamlet/core/config.hpp>

#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <beamlet/core/ids.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

struct global_tables {
  struct name_entry {
    term name;
    pid owner;
    term method;  ///< the conflict resolver, kept as it came (an Erlang fun)
  };
  /// A lock on a resource: who asked (a term all holders share) and the processes holding it.
  struct lock_entry {
    term resource;
    term requester;
    std::vector<pid> holders;
  };

  mutable std::shared_mutex mu;
  /// By the external format of the name (equal terms, equal keys).
  std::unordered_map<std::string, name_entry> names;
  /// By the external format of the resource.
  std::unordered_map<std::string, lock_entry> locks;
  /// The nodes synchronised with (OTP's known nodes), sorted.
  std::vector<std::string> known;

  /// The key of a name or resource: its external format ("" for a term that has none).
  static std::string key(const term& t);
  /// The key of the `global` resource.
  static const std::string& global_key();
  /// Who holds `name`, if anyone (takes `mu`).
  std::optional<pid> owner_of(const term& name) const;
  bool global_lock_set() const { return locks.count(global_key()) != 0; }
  void clear() {
    names.clear();
    locks.clear();
    known.clear();
  }
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
