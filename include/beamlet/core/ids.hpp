/// @file
/// beamlet/core/ids.hpp: process identifiers (`pid`) and unique references (`ref`).
///
/// Both are 64-bit value types: trivially copyable, totally ordered, hashable and printable in
/// Erlang's notation (`<0.42.0>`, `#Ref<0.7>`). A runtime never hands out the same pid or ref
/// twice, so a stale pid can never reach a newer process: sending to it is a silent no-op
/// (spec §1.1 rule 4). The default-constructed value is the null id, which names no process.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Identifies one process for the lifetime of its runtime. Serial numbers start at 1.
///
/// A pid can also denote a process on another node of an Erlang cluster (beamlet/dist.hpp):
/// then the top bit is set, the next 15 bits name the node's incarnation (its name and
/// creation, interned once per program: dist::node_of) and the low 48 bits carry the remote
/// process's identifier. Local serials stay below 2^48, so the two never meet.
class pid {
 public:
  /// The top bit: set in every remote pid, never in a local one.
  static constexpr std::uint64_t remote_bit = std::uint64_t{1} << 63;
  /// Where a remote pid's node slot starts (bits 48..62).
  static constexpr unsigned node_shift = 48;
  /// The low 48 bits: a remote pid's identifier on its own node.
  static constexpr std::uint64_t data_mask = (std::uint64_t{1} << node_shift) - 1;
  /// The highest node slot (2^15 - 1): at most this many node incarnations per program.
  static constexpr std::uint32_t max_node_slot = (1u << 15) - 1;

  /// The null pid: names no process; sending to it does nothing.
  constexpr pid() noexcept = default;
  /// The pid with this raw 64-bit value (as serial() returns it). Runtimes hand out pids; this
  /// is for round-tripping a stored value, not for making up a process.
  constexpr explicit pid(std::uint64_t serial) noexcept : serial_(serial) {}
  /// A process on another node: `slot` (1..max_node_slot) is the node incarnation, `data`
  /// (below 2^48) the process's identifier there.
  static constexpr pid remote(std::uint32_t slot, std::uint64_t data) noexcept {
    return pid(remote_bit | (std::uint64_t{slot} << node_shift) | (data & data_mask));
  }

  /// The raw 64-bit value: the local serial, or the whole encoding of a remote pid. 0 for the
  /// null pid.
  constexpr std::uint64_t serial() const noexcept { return serial_; }
  /// True for every pid a runtime handed out; false for the null pid.
  constexpr explicit operator bool() const noexcept { return serial_ != 0; }
  /// True for a process on another node.
  constexpr bool is_remote() const noexcept { return (serial_ & remote_bit) != 0; }
  /// The node incarnation of a remote pid (0 for a local one).
  constexpr std::uint32_t node_slot() const noexcept {
    return is_remote() ? static_cast<std::uint32_t>((serial_ & ~remote_bit) >> node_shift) : 0;
  }
  /// The identifier part of a remote pid (the serial of a local one).
  constexpr std::uint64_t data() const noexcept { return serial_ & data_mask; }

  /// Orders by the raw value: local pids by serial (spawn order), then all remote pids.
  friend constexpr auto operator<=>(pid, pid) noexcept = default;

  /// `<0.N.0>`, as Erlang prints a local pid; `<S.N.M>` for a remote one (S its node slot, N
  /// and M the number and serial its node gave it).
  std::string to_string() const;
  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, pid p);

 private:
  std::uint64_t serial_ = 0;
};

/// A unique reference: a monitor reference, a timer reference or a `make_ref()` tag.
class ref {
 public:
  /// The null reference: matches no monitor or timer.
  constexpr ref() noexcept = default;
  /// The reference with this raw value (as value() returns it).
  constexpr explicit ref(std::uint64_t value) noexcept : value_(value) {}

  /// The raw 64-bit value; 0 for the null reference.
  constexpr std::uint64_t value() const noexcept { return value_; }
  /// True for every reference a runtime handed out; false for the null reference.
  constexpr explicit operator bool() const noexcept { return value_ != 0; }

  /// Orders by the raw value: a total order for maps and sets, with no meaning beyond it.
  friend constexpr auto operator<=>(ref, ref) noexcept = default;

  /// `#Ref<0.N>`.
  std::string to_string() const;
  /// Writes to_string().
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
