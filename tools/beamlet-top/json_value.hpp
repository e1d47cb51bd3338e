// A small JSON reader and writer for beamlet-top: enough for the console's answers (objects,
// arrays, strings with escapes, numbers, true/false/null). Malformed input throws
// std::runtime_error with the offset, so a wrong port (an endpoint of something else) reads as an
// error message, not as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace beamlet_top {

struct json_member;

struct json_value {
  enum class kind : std::uint8_t { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<json_value> items;     // array
  std::vector<json_member> members;  // object, in order

  /// The member `key` of an object, or nullptr.
  const json_value* find(std::string_view key) const;
  /// The member `key` as a number (0 when absent or not a number).
  double num(std::string_view key) const;
  /// The member `key` as a string ("" when absent or not a string).
  std::string str(std::string_view key) const;
};

// A named type rather than std::pair: a pair of an incomplete json_value is ill-formed (libstdc++
// under clang rejects it), while a vector of a type completed before its use is fine.
struct json_member {
  json_member(std::string k, json_value v) : key(std::move(k)), value(std::move(v)) {}
  std::string key;
  json_value value;
};

/// Parses one JSON document; throws std::runtime_error when it is not one.
json_value parse_json(std::string_view text);
/// Writes `v` as compact JSON.
void write_json(std::string& out, const json_value& v);

}  // namespace beamlet_top
