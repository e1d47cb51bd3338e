// MD5 (RFC 1321), for the distribution handshake's cookie digests only: MD5 is what the
// protocol prescribes, not a choice of hash. Written here so the library needs no crypto
// package.
#pragma once

#include <beamlet/core/config.hpp>

#include <array>
#include <cstdint>
#include <string_view>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

std::array<std::uint8_t, 16> md5(std::string_view data);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
