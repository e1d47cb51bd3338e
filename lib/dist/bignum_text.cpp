#include "bignum_text.hpp"

#include <algorithm>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

std::string bignum_to_decimal(const bignum& b) {
  std::vector<std::uint8_t> m = b.magnitude;  // divided by 10 in place, most significant last
  std::string digits;
  while (!m.empty()) {
    unsigned rem = 0;
    for (std::size_t i = m.size(); i-- > 0;) {
      const unsigned cur = (rem << 8) | m[i];
      m[i] = static_cast<std::uint8_t>(cur / 10);
      rem = cur % 10;
    }
    digits.push_back(static_cast<char>('0' + rem));
    while (!m.empty() && m.back() == 0) m.pop_back();
  }
  if (digits.empty()) return "0";
  std::string out(b.negative ? 1 : 0, '-');
  out.append(digits.rbegin(), digits.rend());
  return out;
}

bignum decimal_to_bignum(std::string_view digits, bool negative) {
  bignum b;
  b.negative = negative;
  for (char c : digits) {
    unsigned carry = static_cast<unsigned>(c - '0');
    for (auto& byte : b.magnitude) {  // magnitude = magnitude * 10 + digit
      const unsigned cur = byte * 10u + carry;
      byte = static_cast<std::uint8_t>(cur & 0xff);
      carry = cur >> 8;
    }
    if (carry != 0) b.magnitude.push_back(static_cast<std::uint8_t>(carry));
  }
  return b;
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
