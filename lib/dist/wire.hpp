// The distribution protocol's bytes: capability flags, the handshake's packets, and the data
// packets of the connected phase: a 4-byte length, then a distribution header (131, 'D', and 0
// atom-cache references) and the control tuple and the message as external terms without their
// version byte; or, toward a peer that does not speak fragments, the older pass-through form
// ('p', then each term with its version byte). Large messages from a peer may come in fragments
// (131, 'E' or 'F', a sequence id and a fragment number; see fragments.hpp).
#pragma once

#include <beamlet/core/config.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/term.hpp>

#include "splice.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

// Distribution capability flags (OTP's DFLAG_*), only those this node speaks.
namespace flag {
inline constexpr std::uint64_t published = 0x1;
inline constexpr std::uint64_t extended_references = 0x4;
inline constexpr std::uint64_t dist_monitor = 0x8;
inline constexpr std::uint64_t fun_tags = 0x10;
inline constexpr std::uint64_t dist_monitor_name = 0x20;
inline constexpr std::uint64_t new_fun_tags = 0x80;
inline constexpr std::uint64_t extended_pids_ports = 0x100;
inline constexpr std::uint64_t export_ptr_tag = 0x200;
inline constexpr std::uint64_t bit_binaries = 0x400;
inline constexpr std::uint64_t new_floats = 0x800;
inline constexpr std::uint64_t small_atom_tags = 0x4000;
inline constexpr std::uint64_t utf8_atoms = 0x10000;
inline constexpr std::uint64_t map_tag = 0x20000;
inline constexpr std::uint64_t big_creation = 0x40000;
inline constexpr std::uint64_t fragments = 0x800000;
inline constexpr std::uint64_t handshake_23 = 0x1000000;
inline constexpr std::uint64_t unlink_id = 0x2000000;
inline constexpr std::uint64_t mandatory_25_digest = 0x4000000;
inline constexpr std::uint64_t spawn = std::uint64_t{1} << 32;
inline constexpr std::uint64_t v4_nc = std::uint64_t{4} << 32;
/// What OTP 25 requires of a peer; a peer lacking any of these is refused.
inline constexpr std::uint64_t required =
    extended_references | fun_tags | new_fun_tags | extended_pids_ports | export_ptr_tag |
    bit_binaries | new_floats | utf8_atoms | map_tag | big_creation | handshake_23;
/// What this node advertises: the required set, the monitor flags without which an Erlang
/// node reduces monitors of our processes to nothing, the newer link and reference forms, and
/// spawn requests (which is how rpc:call and erpc:call reach a node; beamlet serves the
/// functions registered with register_rpc and refuses the rest), and fragments (the peer may
/// send a large message in pieces; every packet then carries a distribution header). No atom
/// cache, no aliases; PUBLISHED is added by a visible node (node_options::hidden = false).
inline constexpr std::uint64_t ours = required | dist_monitor | dist_monitor_name |
                                      small_atom_tags | v4_nc | unlink_id | mandatory_25_digest |
                                      spawn | fragments;
}  // namespace flag

// Control message operations (the first element of the control tuple).
namespace ctl {
inline constexpr int link = 1;
inline constexpr int send = 2;
inline constexpr int exit = 3;
inline constexpr int unlink = 4;
inline constexpr int reg_send = 6;
inline constexpr int exit2 = 8;
inline constexpr int send_tt = 12;
inline constexpr int exit_tt = 13;
inline constexpr int reg_send_tt = 16;
inline constexpr int exit2_tt = 18;
inline constexpr int monitor_p = 19;
inline constexpr int demonitor_p = 20;
inline constexpr int monitor_p_exit = 21;
inline constexpr int send_sender = 22;
inline constexpr int spawn_request = 29;
inline constexpr int spawn_reply = 31;
inline constexpr int unlink_id = 35;
inline constexpr int unlink_id_ack = 36;
}  // namespace ctl

void put16(std::string& out, std::uint16_t v);
void put32(std::string& out, std::uint32_t v);
void put64(std::string& out, std::uint64_t v);
std::uint16_t get16(const char* p);
std::uint32_t get32(const char* p);
std::uint64_t get64(const char* p);

/// `body` with its 2-byte length in front (handshake packets over TCP, epmd requests).
std::string frame2(std::string_view body);
/// `body` with its 4-byte length in front (handshake packets over TLS, as inet_tls_dist
/// frames them).
std::string frame4(std::string_view body);

/// The body of the handshake's name packet ('N'), sent by the initiator.
std::string name_packet(std::uint64_t flags, std::uint32_t creation, std::string_view name);
/// The body of the acceptor's challenge ('N' with a challenge).
std::string challenge_packet(std::uint64_t flags, std::uint32_t challenge, std::uint32_t creation,
                             std::string_view name);
// Reading the handshake's packets (their 2-byte length already taken off). Each returns
// nothing for a packet that is not what it should be; the connection then refuses the peer.
struct name_fields {  ///< the initiator's name packet
  std::uint64_t flags = 0;
  std::uint32_t creation = 0;
  std::string name;
};
struct challenge_fields {  ///< the acceptor's challenge
  std::uint64_t flags = 0;
  std::uint32_t challenge = 0;
  std::uint32_t creation = 0;
  std::string name;
};
struct reply_fields {  ///< the initiator's challenge reply
  std::uint32_t challenge = 0;
  std::string digest;
};
/// A version-6 name packet ('N'): a non-empty name, the whole of it present.
std::optional<name_fields> parse_name(std::string_view p);
std::optional<challenge_fields> parse_challenge(std::string_view p);
std::optional<reply_fields> parse_challenge_reply(std::string_view p);
/// The acceptor's acknowledgement ('a' and a 16-byte digest): the digest.
std::optional<std::string> parse_challenge_ack(std::string_view p);

/// Cutting the connected phase's stream into packets (4-byte lengths).
enum class cut_result {
  need_more,  ///< no whole packet at `pos`
  tick,       ///< an empty packet
  data,       ///< a data packet, in `packet` (its 'p' or its 131 first)
  too_large,  ///< a length over max_packet (the stream cannot go on)
  not_data,   ///< a packet that is neither (likewise)
};
/// Takes the packet at `pos` (moving past it unless need_more or an error).
cut_result cut_packet(std::string_view buf, std::size_t& pos, std::size_t max_packet,
                      std::string_view& packet, std::uint32_t& length);

/// What a data packet's header says.
struct data_header {
  enum class form : std::uint8_t {
    pass_through,    ///< 'p': the terms follow, each with its version byte
    whole,           ///< 131 'D': the terms follow, without version bytes
    first_fragment,  ///< 131 'E': the first of `fragment` pieces of sequence `sequence`
    next_fragment,   ///< 131 'F': piece number `fragment` (counting down to 1)
  };
  form kind = form::pass_through;
  std::uint64_t sequence = 0;
  std::uint64_t fragment = 0;
  std::size_t body = 0;  ///< where the terms (or the piece) start in the packet
};
/// The header of a data packet, or nothing when it is malformed: too short, an atom-cache
/// reference (never negotiated), a fragment number 0.
std::optional<data_header> parse_data_header(std::string_view packet);

/// The packets in `stream` (whole packets and ticks, as append_packet and the send path write
/// them) in the pass-through form, for a peer that did not negotiate fragments. Empty when a
/// packet cannot be read back (which would be a bug of the writer).
std::optional<std::string> to_pass_through(std::string_view stream, const node_incarnation& self);

/// MD5(cookie ++ decimal(challenge)), the proof of knowing the cookie.
std::string digest(std::string_view cookie, std::uint32_t challenge);

/// The distribution header of a whole message: 131, 'D', no atom-cache references.
inline constexpr char whole_header[] = {'\x83', 'D', '\0'};

/// Writes the length of the packet that starts at `start`, `spliced` bytes (splice.hpp) not in
/// `out` included.
void end_packet(std::string& out, std::size_t start, std::size_t spliced = 0);

/// A whole data packet (control and optional message) appended to `out`; when a term cannot be
/// encoded, nothing is appended and the error says why. With `splices`, the message's large
/// binaries are noted there instead of copied into `out`.
expected<void, std::string> append_packet(std::string& out, const term& control,
                                          const term* message, const node_incarnation& self,
                                          splice_list* splices = nullptr);

/// A local ref as a reference term of this node (three words, as OTP makes them).
term ref_term(std::uint64_t ref, const node_incarnation& self);
/// The local ref a reference term of this node carries back (0 if it is not one of ours).
std::uint64_t ref_of(const term& t, const node_incarnation& self);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
