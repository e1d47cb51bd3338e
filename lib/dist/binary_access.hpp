// Inside a binary, for the codec: a binary viewing part of another (the decoder's in-place
// binaries, with the bit count of a BIT_BINARY_EXT), and a copy made in one allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <beamlet/core/config.hpp>
#include <beamlet/dist/binary.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

struct binary_access {
  /// `n` bytes of `whole` from `pos` (in range), sharing its bytes unless small enough to be
  /// held inline.
  static binary view(const binary& whole, std::size_t pos, std::size_t n, std::uint8_t last_bits);
  /// A binary of a copy of `bytes`.
  static binary copy(std::string_view bytes, std::uint8_t last_bits);
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
