// An open-addressing hash map from non-zero 64-bit ids (pid serials, ref values) to small values.
// Linear probing with backward-shift deletion: no tombstones, so a process that links and
// unlinks forever keeps a small table. Used for links and monitors, owned by one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <beamlet/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

struct empty_value {};

template <class V>
class flat_map {
 public:
  struct slot {
    std::uint64_t key = 0;  // 0: empty
    V value{};
  };

  flat_map() = default;
  flat_map(const flat_map&) = delete;
  flat_map& operator=(const flat_map&) = delete;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  V* find(std::uint64_t key) noexcept {
    if (size_ == 0) return nullptr;
    for (std::size_t i = index(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == 0) return nullptr;
    }
  }
  bool contains(std::uint64_t key) noexcept { return find(key) != nullptr; }

  /// Inserts (key, value) unless key is present. Returns true if inserted.
  bool insert(std::uint64_t key, V value) {
    if ((size_ + 1) * 4 > capacity_ * 3) grow();
    for (std::size_t i = index(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return false;
      if (slots_[i].key == 0) {
        slots_[i].key = key;
        slots_[i].value = std::move(value);
        ++size_;
        return true;
      }
    }
  }

  /// Removes key; returns true if it was present. `out` receives the value.
  bool erase(std::uint64_t key, V* out = nullptr) noexcept {
    if (size_ == 0) return false;
    std::size_t i = index(key);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].key == key) break;
      if (slots_[i].key == 0) return false;
    }
    if (out != nullptr) *out = std::move(slots_[i].value);
    // Backward-shift: pull later entries of the probe run into the hole.
    for (std::size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].key == 0) break;
      const std::size_t home = index(slots_[j].key);
      // Move j into i if its home is not in the cyclic range (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i].key = 0;
    slots_[i].value = V{};
    --size_;
    return true;
  }

  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key != 0) f(slots_[i].key, slots_[i].value);
  }

  void clear() noexcept {
    slots_.reset();
    capacity_ = mask_ = size_ = 0;
  }

 private:
  std::size_t index(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  void grow() {
    const std::size_t cap = capacity_ == 0 ? 4 : capacity_ * 2;
    auto old = std::move(slots_);
    const std::size_t old_cap = capacity_;
    slots_ = std::make_unique<slot[]>(cap);
    capacity_ = cap;
    mask_ = cap - 1;
    size_ = 0;
    for (std::size_t i = 0; i < old_cap; ++i)
      if (old[i].key != 0) insert(old[i].key, std::move(old[i].value));
  }

  std::unique_ptr<slot[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace detail
BEAMLET_END_NAMESPACE
