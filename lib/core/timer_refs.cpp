#include "timer_refs.hpp"

#include <algorithm>
#include <bit>
#include <new>

#include <beamlet/core/detail/allocator.hpp>

#include "block_counter.hpp"
#include "runtime_core.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

std::uint64_t timer_ref::make(std::uint32_t owner) noexcept {
  struct timer_refs_tag;
  const std::uint64_t count = next_from_blocks<timer_refs_tag>() & count_mask;
  return tag | (std::uint64_t{owner} << owner_shift) | count;
}

send_after_timer* timer_ref_table::tombstone() noexcept {
  static send_after_timer erased;
  return &erased;
}

timer_ref_table::~timer_ref_table() {
  clear();
}

std::size_t timer_ref_table::bytes_of(std::size_t capacity) noexcept {
  return sizeof(array) + (capacity - 1) * sizeof(std::atomic<send_after_timer*>);
}

auto timer_ref_table::make_array(std::size_t capacity) -> array* {
  auto* a = static_cast<array*>(allocate(bytes_of(capacity)));
  a->mask = capacity - 1;
  for (std::size_t i = 0; i < capacity; ++i)
    ::new (&a->slots[i]) std::atomic<send_after_timer*>(nullptr);
  return a;
}

void timer_ref_table::free_array(void* p) noexcept {
  auto* a = static_cast<array*>(p);
  deallocate(a, bytes_of(a->mask + 1));
}

void timer_ref_table::place(array* a, send_after_timer* e) noexcept {
  for (std::size_t i = hash(e->ref) & a->mask;; i = (i + 1) & a->mask) {
    if (a->slots[i].load(std::memory_order_relaxed) == nullptr) {
      a->slots[i].store(e, std::memory_order_release);
      return;
    }
  }
}

void timer_ref_table::rebuild(runtime_core& rt, std::size_t capacity) {
  array* fresh = make_array(capacity);
  array* old = current_.load(std::memory_order_relaxed);
  if (old != nullptr) {
    for (std::size_t i = 0; i <= old->mask; ++i) {
      send_after_timer* e = old->slots[i].load(std::memory_order_relaxed);
      if (e != nullptr && e != tombstone()) place(fresh, e);
    }
  }
  // seq_cst, like the tombstones: see worker_timers::finish.
  current_.store(fresh, std::memory_order_seq_cst);
  used_ = live_;
  // Readers that loaded the old array may still probe it: it goes when they cannot.
  if (old != nullptr) rt.retire(old, &free_array);
}

void timer_ref_table::insert(runtime_core& rt, send_after_timer* e) {
  const array* a = current_.load(std::memory_order_relaxed);
  const std::size_t capacity = a == nullptr ? 0 : a->mask + 1;
  // At most half full, tombstones included: every probe meets an empty slot soon.
  if ((used_ + 1) * 2 > capacity)
    rebuild(rt, std::max<std::size_t>(16, std::bit_ceil((live_ + 1) * 4)));
  place(current_.load(std::memory_order_relaxed), e);
  ++live_;
  ++used_;
}

void timer_ref_table::erase(runtime_core& rt, send_after_timer* e) noexcept {
  array* a = current_.load(std::memory_order_relaxed);
  for (std::size_t i = hash(e->ref) & a->mask;; i = (i + 1) & a->mask) {
    if (a->slots[i].load(std::memory_order_relaxed) == e) {
      a->slots[i].store(tombstone(), std::memory_order_seq_cst);
      break;
    }
  }
  --live_;
  // A table that emptied after a spike shrinks back (a failed allocation just keeps it).
  const std::size_t capacity = a->mask + 1;
  if (capacity > 16 && live_ * 16 < capacity) {
    try {
      rebuild(rt, std::max<std::size_t>(16, std::bit_ceil(live_ * 4 + 1)));
    } catch (const std::bad_alloc&) {
    }
  }
}

void timer_ref_table::clear() noexcept {
  array* a = current_.exchange(nullptr, std::memory_order_relaxed);
  if (a != nullptr) free_array(a);
  live_ = 0;
  used_ = 0;
}

send_after_timer* timer_ref_table::find(std::uint64_t r) const noexcept {
  const array* a = current_.load(std::memory_order_seq_cst);
  if (a == nullptr) return nullptr;
  for (std::size_t i = hash(r) & a->mask;; i = (i + 1) & a->mask) {
    send_after_timer* e = a->slots[i].load(std::memory_order_seq_cst);
    if (e == nullptr) return nullptr;
    if (e != tombstone() && e->ref == r) return e;
  }
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
