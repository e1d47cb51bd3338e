#include <beamlet/core/detail/message_queue.hpp>

#include <new>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

void message_queue::clear() noexcept {
  message_node* n = head_.next;
  while (n != nullptr) {
    message_node* next = n->next;
    destroy_node(n);
    n = next;
  }
  head_.next = nullptr;
  tail_ = &head_;
  size_.store(0, std::memory_order_relaxed);
  if (markers_ != nullptr) {
    deallocate(markers_, sizeof(marker) * marker_slots);
    markers_ = nullptr;
    markers_in_use_ = 0;
  }
}

void message_queue::set_marker(std::uint64_t ref_value) noexcept {
  if (markers_ == nullptr) {
    try {
      markers_ = static_cast<marker*>(allocate(sizeof(marker) * marker_slots));
    } catch (...) {
      return;  // no marker: the receive scans from the head, with the same result
    }
    for (int i = 0; i < marker_slots; ++i) ::new (&markers_[i]) marker{};
  }
  marker* slot = nullptr;
  for (int i = 0; i < marker_slots; ++i) {
    marker& m = markers_[i];
    if (m.ref == 0) {
      slot = &m;
      break;
    }
    if (slot == nullptr || m.age < slot->age) slot = &m;  // evict the oldest
  }
  if (slot->ref == 0) ++markers_in_use_;
  slot->ref = ref_value;
  slot->position = tail_;
  // A 32-bit clock: should it wrap, an eviction picks a younger marker, which costs a scan from
  // the head, never a wrong result.
  slot->age = ++marker_clock_;
}

message_node* message_queue::marker_position(std::uint64_t ref_value) noexcept {
  if (markers_in_use_ != 0) {
    for (int i = 0; i < marker_slots; ++i)
      if (markers_[i].ref == ref_value) return markers_[i].position;
  }
  return &head_;
}

void message_queue::note_in(const message_node* n) noexcept {
  if (!counted_message(n)) return;
  ++tally_->counted;
  if (tally_->reserved != nullptr) tally_->reserved->fetch_add(1, std::memory_order_relaxed);
}

void message_queue::note_out(const message_node* n) noexcept {
  if (!counted_message(n)) return;
  --tally_->counted;
  if (tally_->reserved != nullptr) tally_->reserved->fetch_sub(1, std::memory_order_relaxed);
}

void message_queue::clear_marker(std::uint64_t ref_value) noexcept {
  if (markers_in_use_ == 0) return;
  for (int i = 0; i < marker_slots; ++i) {
    if (markers_[i].ref == ref_value) {
      markers_[i] = marker{};
      --markers_in_use_;
      return;
    }
  }
}

void message_queue::move_markers(message_node* removed, message_node* prev) noexcept {
  for (int i = 0; i < marker_slots; ++i)
    if (markers_[i].ref != 0 && markers_[i].position == removed) markers_[i].position = prev;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
