// The pg scope's membership tables (pg.cpp): what local processes joined, and what each peer
// scope said its node's members are. Written by the API (local joins and leaves) and by the
// scope process (peers, deaths); read by get_members from any thread.
#pragma once

#include <beamlet/core/config.hpp>

#include <cstdint>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <beamlet/core/ids.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

struct pg_groups {
  /// A group: its term and its members (repeats: joined more than once).
  struct group {
    term name;
    std::vector<pid> members;
  };
  /// Groups by the external format of their term (equal terms, equal keys).
  using group_map = std::unordered_map<std::string, group>;

  std::shared_mutex mu;
  group_map local;
  /// Each local member's groups, one key per join.
  std::unordered_map<pid, std::vector<std::string>> joined;
  /// By peer scope pid: that node's groups.
  std::unordered_map<pid, group_map> remote;
  /// The number of the next local join or leave: the scope tells the peers in this order.
  std::uint64_t next = 0;

  void clear() {
    local.clear();
    joined.clear();
    remote.clear();
    next = 0;
  }
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// A local join or leave, numbered under pg_groups::mu, for the scope to tell the peers.
struct pg_local {
  std::uint64_t seq = 0;
  term group;
  pid member;
  bool joined = false;
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
