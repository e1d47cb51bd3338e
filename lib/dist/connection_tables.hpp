// What a connection remembers of the links and monitors that cross it: exactly what must end
// with `noconnection` when it is lost (and what a DOWN or an EXIT from the peer settles).
#pragma once

#include <beamlet/core/config.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/detail/remote.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// A local process's monitor of a remote one (or of a name on the peer).
struct watch {
  pid watcher;
  pid target;        ///< the remote pid, or the peer's stand-in for a monitor by name
  std::string name;  ///< set for a monitor by name
};

/// A remote process's monitor of a local one, under the local ref the core knows it by.
struct watched_by {
  pid watcher;         ///< remote
  term ref;            ///< the watcher's own reference, sent back in the DOWN
  pid target;          ///< local
  std::string name;    ///< set when the watcher monitored a registered name
  std::uint32_t slot;  ///< where the core keeps it (remote_demonitor_in)
};

struct connection_tables {
  std::set<std::pair<pid, pid>> links;                    ///< (local, remote)
  std::unordered_map<std::uint64_t, watch> watching;      ///< by the local watcher's ref
  std::unordered_map<std::uint64_t, watched_by> watched;  ///< by the local ref we made
  std::map<std::string, std::uint64_t> watched_by_ref;    ///< remote ref (as a key) -> local ref

  static std::string key_of(const term& ref) {
    return ref.to_string() + "/" +
           std::to_string(ref.which() == term::type::reference ? ref.ref().creation : 0);
  }

  void forget_watched(std::unordered_map<std::uint64_t, watched_by>::iterator it) {
    watched_by_ref.erase(key_of(it->second.ref));
    watched.erase(it);
  }

  /// The connection is lost: every link and monitor across it ends with `why`.
  void lose(beamlet::detail::runtime_core& rt, const exit_reason& why) {
    for (const auto& [local, remote] : links)
      beamlet::detail::remote_exit_in(rt, remote, local, why, true);
    links.clear();
    for (auto& [r, w] : watching)
      beamlet::detail::remote_down_in(rt, w.watcher, r, w.target, why, std::move(w.name));
    watching.clear();
    for (const auto& [r, w] : watched)
      beamlet::detail::remote_demonitor_in(rt, w.target, r, w.slot);
    watched.clear();
    watched_by_ref.clear();
  }
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
