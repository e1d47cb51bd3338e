// Building Erlang-style term strings ({already_started,<0.7.0>}). One helper instead of chains
// of std::string operator+, on which GCC 12 emits a false -Wrestrict warning (an error under
// BEAMLET_WERROR).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

inline std::string concat(std::initializer_list<std::string_view> parts) {
  std::size_t n = 0;
  for (std::string_view p : parts) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : parts) out.append(p);
  return out;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
