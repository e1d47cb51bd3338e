/// @file
/// beamlet/dist/binary.hpp: an Erlang binary, its bytes shared by reference count.
///
/// Copying a binary shares its bytes (one atomic increment, as copying a refc binary in BEAM),
/// so a term holding a large binary is cheap to copy, to send to many processes and to send to
/// another node. sub() makes a sub-binary that shares them too. The bytes never change once a
/// binary holds them, so copies may be read and destroyed on any threads at once; a single
/// binary object is, like a std::string, not to be assigned on one thread while read on another.
///
/// Small binaries (up to inline_capacity bytes) are held inside the object: no allocation, no
/// sharing. A binary may also view bytes owned elsewhere (the shared_ptr constructor; decode()
/// of a binary, which refers to the input in place): a sub-binary keeps all of what it views
/// alive, as in BEAM; `binary(b.bytes())` makes a binary of its own and lets the rest go.
/// Constructors that allocate throw std::bad_alloc; copies and moves never throw.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

namespace detail {
/// The shared owner of a binary's bytes: a reference count and how to free itself.
struct binary_owner {
  std::atomic<std::size_t> refs{1};
  void (*destroy)(binary_owner*) noexcept = nullptr;
};
struct binary_access;
}  // namespace detail

/// A binary, or a bitstring when the last byte holds fewer than 8 bits.
class binary {
 public:
  /// Bytes held inside the object rather than shared.
  static constexpr std::size_t inline_capacity = 24;

  /// The empty binary `<<>>`.
  binary() noexcept : p_{} {}
  /// A binary of `bytes`, taken without copying them (a small one is copied inline); a
  /// bitstring when `last_bits` (bits used in the last byte, 1..8) is below 8. Throws
  /// std::invalid_argument for a bitstring without bytes or with last_bits 0 or over 8.
  explicit binary(std::string bytes, std::uint8_t last_bits = 8);
  /// A binary of a copy of `bytes`.
  explicit binary(const char* bytes) : binary(std::string_view(bytes)) {}
  /// A binary of a copy of `bytes`.
  explicit binary(std::string_view bytes, std::uint8_t last_bits = 8);
  /// A binary of `bytes` as they are, kept alive by `owner` (a buffer of the caller's: a
  /// memory-mapped file, a received packet): not copied, so they must not change while any
  /// binary refers to them. Throws as the std::string constructor does.
  explicit binary(std::shared_ptr<const void> owner, std::string_view bytes,
                  std::uint8_t last_bits = 8);

  /// Shares `other`'s bytes (or copies them, when inline).
  binary(const binary& other) noexcept;
  /// Takes `other`'s bytes; `other` is left `<<>>`.
  binary(binary&& other) noexcept;
  /// Lets go of its bytes and shares `other`'s.
  binary& operator=(const binary& other) noexcept;
  /// Lets go of its bytes and takes `other`'s; `other` is left `<<>>`.
  binary& operator=(binary&& other) noexcept;
  ~binary() { release(); }

  /// The bytes (a bitstring's last byte used in part).
  std::string_view bytes() const noexcept { return {data(), size_}; }
  /// The first byte.
  const char* data() const noexcept { return size_ <= inline_capacity ? p_.local : p_.shared.data; }
  /// How many bytes, the partly used last byte of a bitstring included.
  std::size_t size() const noexcept { return size_; }
  /// True for `<<>>`.
  bool empty() const noexcept { return size_ == 0; }
  /// Bits used in the last byte: 8 for a binary, 1..7 for a bitstring.
  std::uint8_t last_bits() const noexcept { return last_bits_; }
  /// True when the last byte is used in part.
  bool is_bitstring() const noexcept { return last_bits_ != 8; }
  /// A copy of the bytes.
  std::string str() const { return std::string(bytes()); }

  /// The sub-binary of `n` bytes (or up to the end) from `pos`, sharing these bytes (a small
  /// one is copied inline). It keeps a bitstring's last_bits only when it reaches the last
  /// byte. Throws std::out_of_range when `pos` is past the end.
  binary sub(std::size_t pos, std::size_t n = std::string_view::npos) const;
  /// True when both refer to the same shared bytes (copies and sub-binaries of one binary).
  bool shares_with(const binary& other) const noexcept {
    return !is_inline() && !other.is_inline() && p_.shared.owner == other.p_.shared.owner;
  }
  /// Holders of these shared bytes (copies, sub-binaries, the owner passed in); 0 for bytes
  /// held inline. A figure for tests and diagnostics: others may change it at any time.
  std::size_t use_count() const noexcept {
    return is_inline() ? 0 : p_.shared.owner->refs.load(std::memory_order_relaxed);
  }

  /// Same bytes and same last_bits.
  friend bool operator==(const binary& a, const binary& b) noexcept {
    return a.last_bits_ == b.last_bits_ && a.bytes() == b.bytes();
  }

 private:
  friend struct detail::binary_access;
  struct shared_part {
    const char* data;
    detail::binary_owner* owner;
  };
  /// Takes one reference of `owner` (already counted for this binary).
  binary(detail::binary_owner* owner, const char* data, std::size_t n, std::uint8_t last_bits);
  bool is_inline() const noexcept { return size_ <= inline_capacity; }
  void check_bits() const;
  void release() noexcept {
    if (!is_inline() && p_.shared.owner->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      p_.shared.owner->destroy(p_.shared.owner);
  }
  void copy_from(const binary& other) noexcept;
  void take_from(binary& other) noexcept;

  union storage {
    shared_part shared;
    char local[inline_capacity];
  };
  storage p_;
  std::size_t size_ = 0;
  std::uint8_t last_bits_ = 8;
};

}  // namespace dist
BEAMLET_END_NAMESPACE
