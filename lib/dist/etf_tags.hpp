// The ETF tags beamlet reads and writes (Erlang's external term format documentation names
// them; the numbers are the wire format).
#pragma once

#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail::tag {
inline constexpr std::uint8_t version = 131;
inline constexpr std::uint8_t new_float = 70;
inline constexpr std::uint8_t bit_binary = 77;
inline constexpr std::uint8_t compressed = 80;
inline constexpr std::uint8_t atom_cache_ref = 82;
inline constexpr std::uint8_t new_pid = 88;
inline constexpr std::uint8_t new_port = 89;
inline constexpr std::uint8_t newer_reference = 90;
inline constexpr std::uint8_t small_integer = 97;
inline constexpr std::uint8_t integer = 98;
inline constexpr std::uint8_t float_text = 99;
inline constexpr std::uint8_t atom_latin1 = 100;
inline constexpr std::uint8_t reference_old = 101;
inline constexpr std::uint8_t port = 102;
inline constexpr std::uint8_t pid = 103;
inline constexpr std::uint8_t small_tuple = 104;
inline constexpr std::uint8_t large_tuple = 105;
inline constexpr std::uint8_t nil = 106;
inline constexpr std::uint8_t string = 107;
inline constexpr std::uint8_t list = 108;
inline constexpr std::uint8_t binary = 109;
inline constexpr std::uint8_t small_big = 110;
inline constexpr std::uint8_t large_big = 111;
inline constexpr std::uint8_t new_fun = 112;
inline constexpr std::uint8_t export_fun = 113;
inline constexpr std::uint8_t new_reference = 114;
inline constexpr std::uint8_t small_atom_latin1 = 115;
inline constexpr std::uint8_t map = 116;
inline constexpr std::uint8_t atom_utf8 = 118;
inline constexpr std::uint8_t small_atom_utf8 = 119;
inline constexpr std::uint8_t v4_port = 120;
}  // namespace dist::detail::tag
BEAMLET_END_PRIVATE_NAMESPACE
