// id_table: an open-addressing hash map from non-zero 64-bit ids (pid serials, ref values) to small
// values. Key 0 marks an empty slot, so it is never a key: find/contains/erase report it absent and
// insert refuses it. That is what lets a null pid or ref reach any entry point harmlessly.
// Linear probing with backward-shift deletion: no tombstones, so a process that links and
// unlinks forever keeps a small table, and an emptied large map frees its slots. The 16-byte header
// lives inside the process; slots come from beamlet's allocator. Used for links and monitors,
// owned by one process.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/allocator.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct empty_value {};

template <class V>
class id_table {
 public:
  struct slot {
    std::uint64_t key = 0;  // 0: empty
    V value{};
  };

  id_table() noexcept = default;
  id_table(const id_table&) = delete;
  id_table& operator=(const id_table&) = delete;
  ~id_table() { clear(); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  V* find(std::uint64_t key) noexcept {
    if (size_ == 0 || key == 0) return nullptr;
    for (std::uint32_t i = index(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == 0) return nullptr;
    }
  }
  bool contains(std::uint64_t key) noexcept { return find(key) != nullptr; }

  /// Inserts (key, value) unless key is present. Returns the new value, or null if the key
  /// was already present or is 0.
  V* insert(std::uint64_t key, V value) {
    if (key == 0) return nullptr;
    if ((size_ + 1) * 4 > capacity_ * 3) grow();
    for (std::uint32_t i = index(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return nullptr;
      if (slots_[i].key == 0) {
        slots_[i].key = key;
        slots_[i].value = std::move(value);
        ++size_;
        return &slots_[i].value;
      }
    }
  }

  /// Removes key; returns true if it was present. `out` receives the value.
  bool erase(std::uint64_t key, V* out = nullptr) noexcept {
    if (size_ == 0 || key == 0) return false;
    std::uint32_t i = index(key);
    for (;; i = (i + 1) & mask()) {
      if (slots_[i].key == key) break;
      if (slots_[i].key == 0) return false;
    }
    if (out != nullptr) *out = std::move(slots_[i].value);
    // Backward-shift: pull later entries of the probe run into the hole.
    for (std::uint32_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
      if (slots_[j].key == 0) break;
      const std::uint32_t home = index(slots_[j].key);
      // Move j into i if its home is not in the cyclic range (i, j].
      if (((j - home) & mask()) >= ((j - i) & mask())) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i].key = 0;
    slots_[i].value = V{};
    --size_;
    // An emptied large map gives its memory back; a small one keeps it, so the common
    // monitor/demonitor cycle (one call at a time) does not allocate. A large map that is
    // mostly empty (a supervisor's links after a spike of children) shrinks to a quarter full:
    // growing at 3/4 and shrinking at 1/16 leaves room for no thrashing.
    if (size_ == 0 && capacity_ > 8) {
      clear();
    } else if (capacity_ > 64 && size_ * 16 < capacity_) {
      try {
        rehash_to(std::max<std::uint32_t>(8, std::bit_ceil(size_ * 4)));
      } catch (...) {
        // No memory for the smaller table: the larger one stays.
      }
    }
    return true;
  }

  template <class F>
  void for_each(F&& f) {
    for (std::uint32_t i = 0; i < capacity_; ++i)
      if (slots_[i].key != 0) f(slots_[i].key, slots_[i].value);
  }

  void clear() noexcept {
    if (slots_ != nullptr) {
      for (std::uint32_t i = 0; i < capacity_; ++i) slots_[i].~slot();
      deallocate(slots_, sizeof(slot) * capacity_);
    }
    slots_ = nullptr;
    capacity_ = size_ = 0;
  }

 private:
  std::uint32_t mask() const noexcept { return capacity_ - 1; }
  std::uint32_t index(std::uint64_t key) const noexcept {
    return static_cast<std::uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask();
  }
  void grow() { rehash_to(capacity_ == 0 ? 2 : capacity_ * 2); }
  void rehash_to(std::uint32_t cap) {
    auto* fresh = static_cast<slot*>(allocate(sizeof(slot) * cap));
    for (std::uint32_t i = 0; i < cap; ++i) ::new (&fresh[i]) slot();
    slot* old = slots_;
    const std::uint32_t old_cap = capacity_;
    slots_ = fresh;
    capacity_ = cap;
    size_ = 0;
    for (std::uint32_t i = 0; i < old_cap; ++i) {
      if (old[i].key != 0) insert(old[i].key, std::move(old[i].value));
      old[i].~slot();
    }
    if (old != nullptr) deallocate(old, sizeof(slot) * old_cap);
  }

  slot* slots_ = nullptr;
  std::uint32_t capacity_ = 0;
  std::uint32_t size_ = 0;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
