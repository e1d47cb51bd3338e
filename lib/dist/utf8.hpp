// Atoms as Erlang accepts them: valid UTF-8, at most 255 characters. The encoder refuses
// anything else (the peer would drop the connection over it) and the decoder does too (an OTP
// node never sends it, and what decodes must encode again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

inline constexpr std::size_t max_atom_characters = 255;

inline constexpr std::size_t invalid_utf8 = static_cast<std::size_t>(-1);

/// The number of code points in `s`, or invalid_utf8 (overlong forms, surrogates, code points
/// past U+10FFFF and cut sequences are invalid, as Erlang's own check finds them).
inline std::size_t utf8_length(std::string_view s) noexcept {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); ++chars) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4;
      cp = c & 0x07;
    } else {
      return invalid_utf8;
    }
    if (i + n > s.size()) return invalid_utf8;
    for (std::size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return invalid_utf8;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return invalid_utf8;
    i += n;
  }
  return chars;
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
