// ERTS hashes a binary with Bob Jenkins' 1996 "lookup2" block hash: 12-byte little-endian
// blocks mixed into three 32-bit words seeded with the golden ratio, the last word also
// carrying the length. The seed of the third word is a per-type constant, so <<>> and []
// differ; for a top-level binary it is 13 times the golden ratio.
#include "phash2.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

constexpr std::uint32_t golden_ratio = 0x9e3779b9u;
constexpr std::uint32_t binary_seed = golden_ratio * 13u;  // HCONST_13, wraps mod 2^32

struct lookup2_state {
  std::uint32_t a, b, c;

  void mix() noexcept {
    a -= b;
    a -= c;
    a ^= (c >> 13);
    b -= c;
    b -= a;
    b ^= (a << 8);
    c -= a;
    c -= b;
    c ^= (b >> 13);
    a -= b;
    a -= c;
    a ^= (c >> 12);
    b -= c;
    b -= a;
    b ^= (a << 16);
    c -= a;
    c -= b;
    c ^= (b >> 5);
    a -= b;
    a -= c;
    a ^= (c >> 3);
    b -= c;
    b -= a;
    b ^= (a << 10);
    c -= a;
    c -= b;
    c ^= (b >> 15);
  }
};

std::uint32_t load_le(const unsigned char* p, std::size_t n) noexcept {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::uint32_t phash2_binary(std::string_view bytes) noexcept {
  if (bytes.empty()) return binary_seed;
  const auto* k = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t left = bytes.size();
  lookup2_state s{golden_ratio, golden_ratio, binary_seed};
  for (; left >= 12; left -= 12, k += 12) {
    s.a += load_le(k, 4);
    s.b += load_le(k + 4, 4);
    s.c += load_le(k + 8, 4);
    s.mix();
  }
  // The tail: bytes 0-3 into a, 4-7 into b, 8-10 into c above its low byte, which holds the
  // length.
  s.c += static_cast<std::uint32_t>(bytes.size());
  s.a += load_le(k, left < 4 ? left : 4);
  if (left > 4) s.b += load_le(k + 4, left < 8 ? left - 4 : 4);
  if (left > 8) s.c += load_le(k + 8, left - 8) << 8;
  s.mix();
  return s.c;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
