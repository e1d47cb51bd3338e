#include "md5.hpp"

#include <cmath>
#include <cstring>
#include <string>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace {

struct constants {
  std::uint32_t k[64];
  constants() {
    // The sine table of RFC 1321 §3.4: the integer part of 2^32 * |sin(i + 1)|.
    for (int i = 0; i < 64; ++i)
      k[i] = static_cast<std::uint32_t>(std::fabs(std::sin(static_cast<double>(i + 1))) *
                                        4294967296.0);
  }
};

constexpr std::uint8_t shift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

std::uint32_t rotl(std::uint32_t x, unsigned c) {
  return (x << c) | (x >> (32 - c));
}

}  // namespace

std::array<std::uint8_t, 16> md5(std::string_view data) {
  static const constants table;
  std::uint32_t h[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  std::string msg(data);
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 0; i < 8; ++i) msg.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));

  for (std::size_t off = 0; off < msg.size(); off += 64) {
    std::uint32_t m[16];
    for (int i = 0; i < 16; ++i) {
      const auto* b = reinterpret_cast<const unsigned char*>(
          msg.data() + off + std::size_t{4} * static_cast<std::size_t>(i));
      m[i] = std::uint32_t{b[0]} | (std::uint32_t{b[1]} << 8) | (std::uint32_t{b[2]} << 16) |
             (std::uint32_t{b[3]} << 24);
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (unsigned i = 0; i < 64; ++i) {
      std::uint32_t f;
      unsigned g;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      f = f + a + table.k[i] + m[g];
      a = d;
      d = c;
      c = b;
      b = b + rotl(f, shift[i]);
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
  }
  std::array<std::uint8_t, 16> out{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      out[4 * i + j] = static_cast<std::uint8_t>((h[i] >> (8 * j)) & 0xff);
  return out;
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
