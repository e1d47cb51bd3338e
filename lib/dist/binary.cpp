#include <beamlet/dist/binary.hpp>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "binary_access.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {
namespace {

// Three kinds of owner: a std::string taken over (its characters never move: a moved string
// keeps its heap buffer), bytes copied in right behind the owner (one allocation), and a
// caller's shared_ptr.
struct string_owner : detail::binary_owner {
  explicit string_owner(std::string s) : bytes(std::move(s)) {
    destroy = [](detail::binary_owner* o) noexcept { delete static_cast<string_owner*>(o); };
  }
  std::string bytes;
};

struct trailing_owner : detail::binary_owner {
  static trailing_owner* make(std::string_view bytes) {
    void* mem = ::operator new(sizeof(trailing_owner) + bytes.size());
    auto* o = new (mem) trailing_owner;
    std::memcpy(o->bytes(), bytes.data(), bytes.size());
    return o;
  }
  char* bytes() noexcept { return reinterpret_cast<char*>(this + 1); }

 private:
  trailing_owner() {
    destroy = [](detail::binary_owner* o) noexcept {
      auto* t = static_cast<trailing_owner*>(o);
      t->~trailing_owner();
      ::operator delete(static_cast<void*>(t));
    };
  }
};

struct foreign_owner : detail::binary_owner {
  explicit foreign_owner(std::shared_ptr<const void> o) : keep(std::move(o)) {
    destroy = [](detail::binary_owner* b) noexcept { delete static_cast<foreign_owner*>(b); };
  }
  std::shared_ptr<const void> keep;
};

}  // namespace

binary::binary(detail::binary_owner* owner, const char* data, std::size_t n, std::uint8_t last_bits)
    : p_{shared_part{data, owner}}, size_(n), last_bits_(last_bits) {}

void binary::check_bits() const {
  if (last_bits_ == 0 || last_bits_ > 8 || (last_bits_ != 8 && size_ == 0))
    throw std::invalid_argument(
        "dist::binary: last_bits must be 1..8, and a bitstring needs a byte");
}

binary::binary(std::string bytes, std::uint8_t last_bits)
    : p_{}, size_(bytes.size()), last_bits_(last_bits) {
  check_bits();
  if (is_inline()) {
    std::memcpy(p_.local, bytes.data(), size_);
  } else {
    auto* o = new string_owner(std::move(bytes));
    p_.shared = {o->bytes.data(), o};
  }
}

binary::binary(std::string_view bytes, std::uint8_t last_bits)
    : p_{}, size_(bytes.size()), last_bits_(last_bits) {
  check_bits();
  if (is_inline()) {
    std::memcpy(p_.local, bytes.data(), size_);
  } else {
    auto* o = trailing_owner::make(bytes);
    p_.shared = {o->bytes(), o};
  }
}

binary::binary(std::shared_ptr<const void> owner, std::string_view bytes, std::uint8_t last_bits)
    : p_{}, size_(bytes.size()), last_bits_(last_bits) {
  check_bits();
  if (is_inline()) {
    std::memcpy(p_.local, bytes.data(), size_);
  } else {
    p_.shared = {bytes.data(), new foreign_owner(std::move(owner))};
  }
}

void binary::copy_from(const binary& other) noexcept {
  size_ = other.size_;
  last_bits_ = other.last_bits_;
  if (other.is_inline()) {
    std::memcpy(p_.local, other.p_.local, size_);
  } else {
    p_.shared = other.p_.shared;
    p_.shared.owner->refs.fetch_add(1, std::memory_order_relaxed);
  }
}

binary::binary(const binary& other) noexcept : p_{} {
  copy_from(other);
}

void binary::take_from(binary& other) noexcept {
  p_ = other.p_;  // the bytes inline, or the shared part with its reference
  size_ = other.size_;
  last_bits_ = other.last_bits_;
  other.size_ = 0;  // inline and empty: owns nothing
  other.last_bits_ = 8;
}

binary::binary(binary&& other) noexcept : p_{} {
  take_from(other);
}

binary& binary::operator=(const binary& other) noexcept {
  if (this != &other) {
    release();
    copy_from(other);
  }
  return *this;
}

binary& binary::operator=(binary&& other) noexcept {
  if (this != &other) {
    release();
    take_from(other);
  }
  return *this;
}

binary binary::sub(std::size_t pos, std::size_t n) const {
  if (pos > size_) throw std::out_of_range("dist::binary::sub: position past the end");
  n = std::min(n, size_ - pos);
  const std::uint8_t bits = pos + n == size_ && n != 0 ? last_bits_ : 8;
  return detail::binary_access::view(*this, pos, n, bits);
}

namespace detail {

binary binary_access::view(const binary& whole, std::size_t pos, std::size_t n,
                           std::uint8_t last_bits) {
  const char* p = whole.data() + pos;
  if (n <= binary::inline_capacity) {
    binary b;
    b.size_ = n;
    b.last_bits_ = last_bits;
    std::memcpy(b.p_.local, p, n);
    return b;
  }
  whole.p_.shared.owner->refs.fetch_add(1, std::memory_order_relaxed);
  return binary(whole.p_.shared.owner, p, n, last_bits);
}

binary binary_access::copy(std::string_view bytes, std::uint8_t last_bits) {
  return binary(bytes, last_bits);
}

}  // namespace detail
}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
