// Printing start results as Erlang terms.
#include <beamlet/otp/start_result.hpp>

#include <ostream>

#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string start_result::to_string() const {
  switch (kind_) {
    case kind::ok:
      return detail::concat({"{ok,", pid_.to_string(), has_info_ ? ",Info}" : "}"});
    case kind::ignore:
      return "ignore";
    case kind::error:
      return detail::concat({"{error,", reason_.to_string(), "}"});
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const start_result& r) {
  return os << r.to_string();
}

BEAMLET_END_PRIVATE_NAMESPACE
