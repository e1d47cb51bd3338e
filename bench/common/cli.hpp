// Strict command-line parsing and progress reporting for the benchmark programs.
//
// Numbers are parsed whole or not at all: "10k" is 10,000 and "1M" 1,000,000 (k and M are the
// only suffixes), "10x", "1e3", "" or a value out of range is an error that names the option.
// Errors are reported as cli::error exceptions; programs print them with their usage and exit
// with status 2.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cli {

class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An integer count with an optional k (thousand) or M (million) suffix, within [lo, hi].
inline std::int64_t parse_count(std::string_view option, std::string_view text, std::int64_t lo = 0,
                                std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  auto bad = [&](const char* why) {
    return error(std::string(option) + ": '" + std::string(text) + "' " + why);
  };
  if (text.empty()) throw bad("is empty");
  std::int64_t scale = 1;
  std::string_view digits = text;
  if (digits.back() == 'k') {
    scale = 1000;
    digits.remove_suffix(1);
  } else if (digits.back() == 'M') {
    scale = 1000000;
    digits.remove_suffix(1);
  }
  bool negative = false;
  if (!digits.empty() && digits.front() == '-') {
    negative = true;
    digits.remove_prefix(1);
  }
  if (digits.empty()) throw bad("is not a number");
  std::int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') throw bad("is not a whole number (k and M are the only suffixes)");
    if (v > (std::numeric_limits<std::int64_t>::max() - (c - '0')) / 10) throw bad("is too large");
    v = v * 10 + (c - '0');
  }
  if (v > std::numeric_limits<std::int64_t>::max() / scale) throw bad("is too large");
  v *= scale;
  if (negative) v = -v;
  if (v < lo || v > hi)
    throw bad(("is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
  return v;
}

/// A decimal number (no exponent, no suffix) within [lo, hi].
inline double parse_number(std::string_view option, std::string_view text, double lo, double hi) {
  auto bad = [&](const std::string& why) {
    return error(std::string(option) + ": '" + std::string(text) + "' " + why);
  };
  if (text.empty()) throw bad("is empty");
  std::size_t i = 0;
  if (text[0] == '-') i = 1;
  bool digit = false, dot = false;
  for (; i < text.size(); ++i) {
    if (text[i] >= '0' && text[i] <= '9') {
      digit = true;
    } else if (text[i] == '.' && !dot) {
      dot = true;
    } else {
      throw bad("is not a number");
    }
  }
  if (!digit) throw bad("is not a number");
  const double v = std::stod(std::string(text));
  if (!(v >= lo && v <= hi))
    throw bad("is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

/// A comma-separated list, each item parsed by `item`.
template <class F>
auto parse_list(std::string_view option, std::string_view text, F item) {
  std::vector<decltype(item(std::string_view{}))> out;
  if (text.empty()) throw error(std::string(option) + ": the list is empty");
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = text.find(',', pos);
    out.push_back(
        item(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos)));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

/// Progress lines on stderr: "[12/40, 1m05s elapsed, ~3m20s left] what".
class progress {
 public:
  explicit progress(int total) : total_(total), t0_(std::chrono::steady_clock::now()) {}

  void step(const std::string& what) {
    ++done_;
    const double elapsed = seconds();
    std::string eta = "?";
    if (done_ > 1) eta = duration(elapsed / (done_ - 1) * (total_ - done_ + 1));
    std::fprintf(stderr, "  [%d/%d, %s elapsed, ~%s left] %s\n", done_, total_,
                 duration(elapsed).c_str(), eta.c_str(), what.c_str());
    std::fflush(stderr);
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  static std::string duration(double s) {
    char buf[32];
    const long t = std::lround(s);
    if (t >= 60)
      std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    else
      std::snprintf(buf, sizeof buf, "%lds", t);
    return buf;
  }

 private:
  int total_;
  int done_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace cli
