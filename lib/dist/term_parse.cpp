// term::parse: Erlang term syntax (the subset a literal can have) into a term. Used for tests,
// for configuration, and for exit reasons written as text (exit_reason::error("{badarg,x}")).
#include <beamlet/dist/term.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "bignum_text.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {

constexpr int max_depth = 256;

class parser {
 public:
  explicit parser(std::string_view s) : s_(s) {}

  expected<term, std::string> run() {
    term t;
    if (!value(t, 0)) return unexpected(error_);
    skip();
    if (i_ != s_.size()) return unexpected(where("unexpected text after the term"));
    return t;
  }

 private:
  std::string where(std::string_view what) const {
    return std::string(what) + " at offset " + std::to_string(i_);
  }
  bool fail(std::string_view what) {
    if (error_.empty()) error_ = where(what);
    return false;
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.substr(i_, tok.size()) == tok) {
      i_ += tok.size();
      return true;
    }
    return false;
  }

  // Text between `q` quotes, with Erlang's escapes.
  bool quoted(char q, std::string& out) {
    ++i_;  // the opening quote
    while (i_ < s_.size() && s_[i_] != q) {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) return fail("unterminated escape");
        const char e = s_[i_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 's':
            c = ' ';
            break;
          case '0':
          case '1':
          case '2':
          case '3':
          case '4':
          case '5':
          case '6':
          case '7': {
            unsigned v = static_cast<unsigned>(e - '0');
            for (int k = 0; k < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++k)
              v = v * 8 + static_cast<unsigned>(s_[i_++] - '0');
            c = static_cast<char>(v & 0xff);
            break;
          }
          default:
            c = e;
        }
      }
      out.push_back(c);
    }
    if (i_ >= s_.size()) return fail("unterminated quoted text");
    ++i_;
    return true;
  }

  bool number(term& t) {
    const std::size_t start = i_;
    if (s_[i_] == '-' || s_[i_] == '+') ++i_;
    const std::size_t digits = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ == digits) return fail("expected a digit");
    bool is_float = false;
    if (i_ + 1 < s_.size() && s_[i_] == '.' &&
        std::isdigit(static_cast<unsigned char>(s_[i_ + 1]))) {
      is_float = true;
      ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
        const std::size_t exponent = i_;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ == exponent) return fail("expected the exponent's digits");
      }
    }
    const std::string text(s_.substr(start, i_ - start));
    if (is_float) {
      // As in Erlang, a float literal out of a double's range is an error, not an infinity
      // (which no term can hold: ETF and every peer refuse it).
      const double d = std::strtod(text.c_str(), nullptr);
      if (!std::isfinite(d)) return fail("a float out of range");
      t = term(d);
      return true;
    }
    std::int64_t v = 0;
    const char* b = text.data() + (text[0] == '+' ? 1 : 0);
    const auto r = std::from_chars(b, text.data() + text.size(), v);
    if (r.ec == std::errc() && r.ptr == text.data() + text.size()) {
      t = term(v);
      return true;
    }
    t = term(detail::decimal_to_bignum(s_.substr(digits, i_ - digits), text[0] == '-'));
    return true;
  }

  bool sequence(char close, term_list& items, int depth, term* tail) {
    if (eat(close)) return true;
    for (;;) {
      term e;
      if (!value(e, depth + 1)) return false;
      items.push_back(std::move(e));
      if (eat(',')) continue;
      if (tail != nullptr && eat('|')) {
        if (!value(*tail, depth + 1)) return false;
        if (!eat(close)) return fail("expected the end of the list");
        return true;
      }
      if (eat(close)) return true;
      return fail("expected ',' or a closing bracket");
    }
  }

  bool bin(term& t) {
    std::string bytes;
    if (eat(">>")) {
      t = term::make_binary({});
      return true;
    }
    skip();
    if (i_ < s_.size() && s_[i_] == '"') {
      if (!quoted('"', bytes)) return false;
      if (!eat(">>")) return fail("expected '>>'");
      t = term::make_binary(std::move(bytes));
      return true;
    }
    for (;;) {
      term v;
      skip();
      if (i_ >= s_.size() || !number(v) || !v.is_integer() || v.integer() < 0 || v.integer() > 255)
        return fail("expected a byte");
      bytes.push_back(static_cast<char>(v.integer()));
      if (eat(',')) continue;
      if (eat(">>")) break;
      return fail("expected ',' or '>>'");
    }
    t = term::make_binary(std::move(bytes));
    return true;
  }

  bool value(term& t, int depth) {
    if (depth > max_depth) return fail("nesting too deep");
    skip();
    if (i_ >= s_.size()) return fail("expected a term");
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      term_list items;
      if (!sequence('}', items, depth, nullptr)) return false;
      t = term::make_tuple(std::move(items));
      return true;
    }
    if (c == '[') {
      ++i_;
      term_list items;
      term tl;
      if (!sequence(']', items, depth, &tl)) return false;
      t = term::make_improper_list(std::move(items), std::move(tl));
      return true;
    }
    if (c == '#' && eat("#{")) {
      std::vector<std::pair<term, term>> entries;
      if (eat('}')) {
        t = term::make_map({});
        return true;
      }
      for (;;) {
        term k, v;
        if (!value(k, depth + 1)) return false;
        if (!eat("=>")) return fail("expected '=>'");
        if (!value(v, depth + 1)) return false;
        entries.emplace_back(std::move(k), std::move(v));
        if (eat(',')) continue;
        if (eat('}')) break;
        return fail("expected ',' or '}'");
      }
      t = term::make_map(std::move(entries));
      return true;
    }
    if (c == '<' && eat("<<")) return bin(t);
    if (c == '"') {
      std::string s;
      if (!quoted('"', s)) return false;
      t = term::make_charlist(s);
      return true;
    }
    if (c == '\'') {
      std::string s;
      if (!quoted('\'', s)) return false;
      t = term::make_atom(std::move(s));
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return number(t);
    if (std::islower(static_cast<unsigned char>(c))) {
      const std::size_t start = i_;
      while (i_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '@'))
        ++i_;
      t = term::make_atom(std::string(s_.substr(start, i_ - start)));
      return true;
    }
    return fail("unexpected character");
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::string error_;
};

}  // namespace

expected<term, std::string> term::parse(std::string_view text) {
  return parser(text).run();
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
