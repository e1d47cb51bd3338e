// beamlet-top's JSON reader and writer (see json_value.hpp).
#include "json_value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace beamlet_top {
namespace {

class parser {
 public:
  explicit parser(std::string_view s) : s_(s) {}

  json_value document() {
    json_value v = value(0);
    space();
    if (i_ != s_.size()) error("trailing characters");
    return v;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;

  [[noreturn]] void error(const char* what) const {
    throw std::runtime_error(std::string("not JSON (") + what + " at byte " + std::to_string(i_) +
                             ")");
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool take(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) error("unexpected character");
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  json_value value(int depth) {
    if (depth > 64) error("nested too deep");
    space();
    if (i_ >= s_.size()) error("unexpected end");
    json_value v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type = json_value::kind::object;
      if (take('}')) return v;
      do {
        space();
        std::string key = string();
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = json_value::kind::array;
      if (take(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.type = json_value::kind::string;
      v.text = string();
    } else if (word("true")) {
      v.type = json_value::kind::boolean;
      v.boolean = true;
    } else if (word("false")) {
      v.type = json_value::kind::boolean;
    } else if (word("null")) {
    } else {
      v.type = json_value::kind::number;
      // strtod on a copy of the number's characters: libc++ 16 has no floating-point
      // from_chars, and strtod needs a terminated string.
      std::size_t e = i_;
      while (e < s_.size() && std::strchr("+-0123456789.eE", s_[e]) != nullptr) ++e;
      const std::string digits(s_.substr(i_, e - i_));
      char* end = nullptr;
      v.number = std::strtod(digits.c_str(), &end);
      if (digits.empty() || end != digits.c_str() + digits.size()) error("not a value");
      i_ = e;
    }
    return v;
  }

  std::string string() {
    if (i_ >= s_.size() || s_[i_] != '"') error("expected a string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) error("unfinished escape");
      c = s_[i_++];
      switch (c) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) error("short \\u escape");
          unsigned cp = 0;
          const auto [end, ec] = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, cp, 16);
          if (ec != std::errc() || end != s_.data() + i_ + 4) error("bad \\u escape");
          i_ += 4;
          // UTF-8 for the basic plane (the console escapes control characters only).
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          out += c;  // \" \\ \/
      }
    }
    if (i_ >= s_.size()) error("unfinished string");
    ++i_;
    return out;
  }
};

void write_string(std::string& out, std::string_view s) {
  out += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

}  // namespace

const json_value* json_value::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

double json_value::num(std::string_view key) const {
  const json_value* v = find(key);
  return v != nullptr && v->type == kind::number ? v->number : 0;
}

std::string json_value::str(std::string_view key) const {
  const json_value* v = find(key);
  return v != nullptr && v->type == kind::string ? v->text : std::string();
}

json_value parse_json(std::string_view text) {
  return parser(text).document();
}

void write_json(std::string& out, const json_value& v) {
  switch (v.type) {
    case json_value::kind::null:
      out += "null";
      break;
    case json_value::kind::boolean:
      out += v.boolean ? "true" : "false";
      break;
    case json_value::kind::number: {
      char buf[40];
      if (std::floor(v.number) == v.number && std::fabs(v.number) < 1e15)
        std::snprintf(buf, sizeof buf, "%.0f", v.number);
      else
        std::snprintf(buf, sizeof buf, "%.17g", v.number);
      out += buf;
      break;
    }
    case json_value::kind::string:
      write_string(out, v.text);
      break;
    case json_value::kind::array:
      out += '[';
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) out += ',';
        write_json(out, v.items[i]);
      }
      out += ']';
      break;
    case json_value::kind::object:
      out += '{';
      for (std::size_t i = 0; i < v.members.size(); ++i) {
        if (i > 0) out += ',';
        write_string(out, v.members[i].key);
        out += ':';
        write_json(out, v.members[i].value);
      }
      out += '}';
      break;
  }
}

}  // namespace beamlet_top
