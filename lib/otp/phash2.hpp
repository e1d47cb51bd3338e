// erlang:phash2/2 for binaries, bit-exact, so a string key routes to the same partition as the
// same binary key does in Elixir's PartitionSupervisor (spec §8.3 rule 9).
#pragma once

#include <cstdint>
#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// The full 32-bit term hash of the binary `bytes` (ERTS make_hash2). phash2(B) is this value's
/// low 27 bits; phash2(B, N) is this value modulo N.
std::uint32_t phash2_binary(std::string_view bytes) noexcept;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
