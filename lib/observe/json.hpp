// Writing JSON strings: the one escaping routine of the observability layer (log lines and the
// HTTP endpoint's documents).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// Appends `s` as a JSON string literal. Bytes >= 0x80 pass through (UTF-8 stays UTF-8);
/// control characters are escaped.
inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
