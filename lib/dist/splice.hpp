// Large binaries in an outgoing packet, by reference: the encoder leaves a large binary's bytes
// out of the packet's bytes and notes where they go, and the connection copies them from the
// binary itself when it writes the packet (in fragments, or whole). A large message so costs
// one copy of its payload on the way out instead of two, and no buffer the size of the message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/dist/binary.hpp>
#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// A binary whose bytes belong before bytes[at] of the packet it was left out of.
struct splice {
  std::size_t at;
  binary bin;
};
using splice_list = std::vector<splice>;

/// Binaries at least this large are spliced rather than encoded into the packet's bytes.
inline constexpr std::size_t splice_min = 64u << 10;

/// The bytes the splices add to a packet.
inline std::size_t spliced_size(const splice_list& s) noexcept {
  std::size_t n = 0;
  for (const splice& x : s) n += x.bin.size();
  return n;
}

/// Appends bytes [from, from + n) of the packet made of `bytes` with `splices` in place (a
/// position counts the spliced bytes before it).
void append_spliced(std::string& out, std::string_view bytes, const splice_list& splices,
                    std::size_t from, std::size_t n);

/// encode() without the version byte, large binaries left out of `out` and noted in
/// `splices` (positions in `out`); on failure neither is changed.
expected<void, std::string> encode_spliced(const term& t, std::string& out,
                                           const node_incarnation* self, splice_list& splices);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
