// beamlet/dist/etf.hpp: Erlang's external term format (ETF), both ways.
//
// encode() writes what term_to_binary/1 writes for the same term (no compression, no atom
// cache); decode() reads what any OTP 25 node sends, including the older tags it may still
// meet. The decoder faces untrusted input: every length is checked against what remains before
// anything is allocated from it, nesting is bounded, the number of terms it makes is bounded,
// and it never reads past the end. A malformed input is an error value, never an exception or
// a crash.
//
// Pids: a node's own processes are plain local pids; a pid of any other node (or of an earlier
// incarnation of this one) becomes a remote pid whose node is interned (node_of). `self` says
// who this node is; without one, local pids are written as Erlang's non-distributed node
// writes them ('nonode@nohost', creation 0).
//
// Thread-safety: free functions over values; the node table behind node_of is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <beamlet/config.hpp>
#include <beamlet/dist/term.hpp>
#include <beamlet/expected.hpp>
#include <beamlet/ids.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// A node incarnation: its name (`alive@host`) and its creation.
struct node_incarnation {
  std::string name;
  std::uint32_t creation = 0;
  friend bool operator==(const node_incarnation&, const node_incarnation&) = default;
};

/// The node a remote pid belongs to; nullopt for a local pid.
std::optional<node_incarnation> node_of(pid p);
/// The slot (pid::node_slot) of a node incarnation, interned on first use; 0 once all
/// pid::max_node_slot slots are taken (then pids of that node cannot be represented).
std::uint32_t intern_node(std::string_view name, std::uint32_t creation);

struct decode_limits {
  std::size_t max_depth = 512;       ///< nested lists, tuples and maps
  std::size_t max_terms = 1u << 22;  ///< terms made in all (bounds the memory a packet costs)
};

/// Appends the ETF of `t` to `out`: with the version byte (131) first when `versioned`.
/// Fails only for what ETF cannot carry (an atom over 255 characters, a pid whose node slot is
/// unknown).
expected<void, std::string> encode(const term& t, std::string& out,
                                   const node_incarnation* self = nullptr, bool versioned = true);
/// term_to_binary: the versioned ETF of `t`.
expected<std::string, std::string> to_binary(const term& t, const node_incarnation* self = nullptr);

/// Reads one term from `in` at `pos` (which moves past it). With `versioned` the version byte
/// (131) must come first.
expected<term, std::string> decode(std::string_view in, std::size_t& pos,
                                   const node_incarnation* self = nullptr, bool versioned = true,
                                   const decode_limits& limits = {});
/// binary_to_term: exactly one versioned term, nothing after it.
expected<term, std::string> from_binary(std::string_view in, const node_incarnation* self = nullptr,
                                        const decode_limits& limits = {});

}  // namespace dist
BEAMLET_END_NAMESPACE
