// The monitors held on one process: its watchers (spec §3).
//
// A contiguous array of (ref, watcher) slots. Removing a monitor frees its slot in place (the
// slot joins a free list threaded through the empty slots), so a slot's index is stable for the
// monitor's lifetime: the watcher remembers it and demonitor is O(1) with no search. The exit
// fan-out walks the array sequentially and can prefetch ahead, which matters when 100k watchers
// each live in a different cache line. Guarded by the owner process's watchers_lock.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class watcher_set {
 public:
  struct slot {
    std::uint64_t ref;  ///< 0: free; then `watcher` holds the next free index + 1 (0 = none)
    pid watcher;
  };

  watcher_set() noexcept = default;
  watcher_set(const watcher_set&) = delete;
  watcher_set& operator=(const watcher_set&) = delete;
  watcher_set(watcher_set&& o) noexcept { swap(o); }
  watcher_set& operator=(watcher_set&& o) noexcept {
    watcher_set tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~watcher_set() { std::free(slots_); }

  /// Adds a monitor; returns its slot index. Throws std::bad_alloc.
  std::uint32_t add(std::uint64_t ref, pid watcher) {
    std::uint32_t i;
    if (free_head_ != 0) {
      i = free_head_ - 1;
      free_head_ = static_cast<std::uint32_t>(slots_[i].watcher.serial());
    } else {
      if (end_ == capacity_) grow();
      i = end_++;
    }
    slots_[i] = {ref, watcher};
    ++size_;
    return i;
  }

  /// Removes the monitor in slot `i` if it still holds `ref`.
  bool remove(std::uint32_t i, std::uint64_t ref) noexcept {
    if (i >= end_ || slots_[i].ref != ref) return false;
    slots_[i] = {0, pid(free_head_)};
    free_head_ = i + 1;
    --size_;
    return true;
  }

  std::uint32_t size() const noexcept { return size_; }
  /// Slots [0, end()) in order; free ones have ref == 0.
  const slot* begin() const noexcept { return slots_; }
  const slot* end() const noexcept { return slots_ + end_; }

  void swap(watcher_set& o) noexcept {
    std::swap(slots_, o.slots_);
    std::swap(capacity_, o.capacity_);
    std::swap(end_, o.end_);
    std::swap(size_, o.size_);
    std::swap(free_head_, o.free_head_);
  }

 private:
  void grow() {
    const std::uint32_t cap = capacity_ == 0 ? 4 : capacity_ * 2;
    void* p = std::realloc(slots_, sizeof(slot) * cap);
    if (p == nullptr) throw std::bad_alloc();
    slots_ = static_cast<slot*>(p);
    capacity_ = cap;
  }

  slot* slots_ = nullptr;
  std::uint32_t capacity_ = 0;
  std::uint32_t end_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t free_head_ = 0;  // index + 1 of the first free slot, 0 if none
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
