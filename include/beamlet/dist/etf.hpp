/// @file
/// beamlet/dist/etf.hpp: Erlang's external term format (ETF), both ways.
///
/// encode() writes what term_to_binary/1 writes for the same term (no compression, no atom
/// cache); decode() reads what any OTP 25 node sends, including the older tags it may still
/// meet. The decoder faces untrusted input: every length is checked against what remains before
/// anything is allocated from it, nesting is bounded, the number of terms it makes is bounded,
/// and it never reads past the end. A malformed input is an error value, never an exception or
/// a crash.
///
/// Pids: a node's own processes are plain local pids; a pid of any other node (or of an earlier
/// incarnation of this one) becomes a remote pid whose node is interned (node_of). `self` says
/// who this node is; without one, local pids are written as Erlang's non-distributed node
/// writes them ('nonode\@nohost', creation 0).
///
/// Thread-safety: free functions over values; the node table behind node_of is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// A node incarnation: its name (`alive@host`) and its creation.
struct node_incarnation {
  std::string name;            ///< the node's name, `alive@host`
  std::uint32_t creation = 0;  ///< which start of that node (a restarted node has a new one)
  /// Same name and same creation.
  friend bool operator==(const node_incarnation&, const node_incarnation&) = default;
};

/// The node a remote pid belongs to; nullopt for a local pid.
std::optional<node_incarnation> node_of(pid p);
/// The slot (pid::node_slot) of a node incarnation, interned on first use and kept for the life
/// of the program; 0 once all pid::max_node_slot slots are taken.
///
/// Slots are program-wide. One that only terms from other nodes hold (a node this program never
/// connected to, mentioned in a message) is released when the last such term goes, and reused
/// when the table is full; a slot given out as a number (here, or by taking a pid out of a term)
/// or of a connected node is never reused, so a plain pid keeps naming its process.
std::uint32_t intern_node(std::string_view name, std::uint32_t creation);

/// How the table of node incarnations is used.
struct node_slots {
  std::size_t in_use = 0;       ///< of pid::max_node_slot
  std::size_t pinned = 0;       ///< never reused (see intern_node)
  std::uint64_t reclaimed = 0;  ///< slots reused, ever
};
/// How many slots of the program-wide table are in use, pinned and reclaimed now.
node_slots node_slot_usage();

/// What decode accepts. The defaults take what an OTP node sends in practice: the decoder and
/// every operation on a term (copy, comparison, printing, encoding, destruction) work without
/// recursion, so nesting is not limited by the stack; memory is bounded by the input's size
/// (each term takes at least one byte of it) and by max_terms.
struct decode_limits {
  /// Nested lists, tuples and maps; unlimited by default (a deep term costs heap, not stack).
  std::size_t max_depth = static_cast<std::size_t>(-1);
  std::size_t max_terms = std::size_t{1} << 28;  ///< terms made in all (about 256 million)
};

/// Appends the ETF of `t` to `out`: with the version byte (131) first when `versioned`.
/// Fails only for what ETF or an Erlang node cannot take (an atom over 255 characters or not
/// UTF-8, a NaN or infinite float, a pid whose node slot is unknown...).
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

/// Binaries in the result at least this long refer to the input in place when it is a binary.
inline constexpr std::size_t decode_in_place_min = 64;
/// decode() of `in`'s bytes, except that each binary of at least decode_in_place_min bytes in
/// the result is a sub-binary of `in` (sharing its bytes, no copy) rather than a copy. Such a
/// binary keeps all of `in` alive; copy it (`binary(b.bytes())`) to keep it alone.
expected<term, std::string> decode(const binary& in, std::size_t& pos,
                                   const node_incarnation* self = nullptr, bool versioned = true,
                                   const decode_limits& limits = {});
/// from_binary() of `in`'s bytes, its binaries in place as decode(const binary&...) makes them.
expected<term, std::string> from_binary(const binary& in, const node_incarnation* self = nullptr,
                                        const decode_limits& limits = {});

}  // namespace dist
BEAMLET_END_NAMESPACE
