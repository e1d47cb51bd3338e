// beamlet/ids.hpp: process identifiers (`pid`) and unique references (`ref`).
//
// Both are 64-bit value types: trivially copyable, totally ordered, hashable and printable in
// Erlang's notation (`<0.42.0>`, `#Ref<0.7>`). A runtime never hands out the same pid or ref
// twice, so a stale pid can never reach a newer process: sending to it is a silent no-op
// (spec §1.1 rule 4). The default-constructed value is the null id, which names no process.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include <beamlet/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Identifies one process for the lifetime of its runtime. Serial numbers start at 1.
class pid {
 public:
  constexpr pid() noexcept = default;
  constexpr explicit pid(std::uint64_t serial) noexcept : serial_(serial) {}

  constexpr std::uint64_t serial() const noexcept { return serial_; }
  /// True for every pid a runtime handed out; false for the null pid.
  constexpr explicit operator bool() const noexcept { return serial_ != 0; }

  friend constexpr auto operator<=>(pid, pid) noexcept = default;

  /// `<0.N.0>`, as Erlang prints a local pid.
  std::string to_string() const;
  friend std::ostream& operator<<(std::ostream& os, pid p);

 private:
  std::uint64_t serial_ = 0;
};

/// A unique reference: a monitor reference, a timer reference or a `make_ref()` tag.
class ref {
 public:
  constexpr ref() noexcept = default;
  constexpr explicit ref(std::uint64_t value) noexcept : value_(value) {}

  constexpr std::uint64_t value() const noexcept { return value_; }
  constexpr explicit operator bool() const noexcept { return value_ != 0; }

  friend constexpr auto operator<=>(ref, ref) noexcept = default;

  /// `#Ref<0.N>`.
  std::string to_string() const;
  friend std::ostream& operator<<(std::ostream& os, ref r);

 private:
  std::uint64_t value_ = 0;
};

BEAMLET_END_NAMESPACE

template <>
struct std::hash<beamlet::pid> {
  std::size_t operator()(beamlet::pid p) const noexcept {
    return std::hash<std::uint64_t>{}(p.serial());
  }
};
template <>
struct std::hash<beamlet::ref> {
  std::size_t operator()(beamlet::ref r) const noexcept {
    return std::hash<std::uint64_t>{}(r.value());
  }
};
