// Decimal text of bignums, both ways: schoolbook arithmetic on the little-endian bytes, which
// is plenty for printing and parsing (bignums in messages are rare and small).
#pragma once

#include <string>
#include <string_view>

#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

std::string bignum_to_decimal(const bignum& b);
/// Digits only (the sign is the caller's); `digits` must be non-empty and all decimal.
bignum decimal_to_bignum(std::string_view digits, bool negative);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
