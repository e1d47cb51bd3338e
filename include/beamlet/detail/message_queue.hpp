// beamlet/detail/message_queue.hpp: a process's private message queue (owner-only).
//
// Messages move here from the lock-free inbox in arrival order and stay until a receive takes
// them, so the queue is exactly Erlang's: FIFO, with matched messages removed from the middle and
// unmatched ones keeping their relative order (spec §1.2 rules 7-9).
//
// A receive scans from a position node: the sentinel (head of the queue), its own save position
// when it blocked and was woken (rule 10), or a receive marker (rules 14-16). Markers are node
// pointers into the queue; removing a node that a marker points at moves the marker to the
// node's predecessor, so a marker always means "everything up to here was queued before the
// marked ref existed". Only the owning process touches this structure: no synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>

#include <beamlet/config.hpp>
#include <beamlet/detail/message.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

class message_queue {
 public:
  /// OTP keeps a fixed block of receive markers per process (ERTS_RECV_MARKER_BLOCK_SIZE = 8).
  static constexpr int marker_slots = 8;

  message_queue() noexcept = default;
  message_queue(const message_queue&) = delete;
  message_queue& operator=(const message_queue&) = delete;
  ~message_queue() { clear(); }

  /// The node before the first message; a scan "from the head" starts after it.
  message_node* head() noexcept { return &head_; }
  bool empty() const noexcept { return head_.next == nullptr; }
  std::size_t size() const noexcept { return size_; }

  /// Appends an already linked chain first..last of `count` messages.
  void append(message_node* first, message_node* last, std::size_t count) noexcept {
    tail_->next = first;
    last->next = nullptr;
    tail_ = last;
    size_ += count;
  }

  void push_back(message_node* n) noexcept { append(n, n, 1); }

  /// Removes and returns the node after `prev`.
  message_node* unlink_after(message_node* prev) noexcept {
    message_node* n = prev->next;
    prev->next = n->next;
    if (tail_ == n) tail_ = prev;
    --size_;
    if (markers_in_use_ != 0) move_markers(n, prev);
    n->next = nullptr;
    return n;
  }

  /// Puts `n` back right after `prev` (undoes unlink_after when taking the message failed).
  void insert_after(message_node* prev, message_node* n) noexcept {
    n->next = prev->next;
    prev->next = n;
    if (tail_ == prev) tail_ = n;
    ++size_;
  }

  /// Destroys every queued message.
  void clear() noexcept;

  // -- receive markers (spec §1.3 rules 14-16) ---------------------------------------------

  /// Binds `ref_value` to the current end of the queue. Evicts the oldest marker when all
  /// slots are taken; a receive whose marker was evicted scans from the head (same result).
  void set_marker(std::uint64_t ref_value) noexcept;
  /// The node a receive keyed on `ref_value` may start after, or the head when unmarked.
  message_node* marker_position(std::uint64_t ref_value) noexcept;
  void clear_marker(std::uint64_t ref_value) noexcept;
  int markers_in_use() const noexcept { return markers_in_use_; }

  // -- statistics for the cost-model tests (spec §1.3 rule 13) ------------------------------

  /// Total number of messages examined by receives on this queue.
  std::uint64_t scanned() const noexcept { return scanned_; }
  void add_scanned(std::uint64_t n) noexcept { scanned_ += n; }

 private:
  struct marker {
    std::uint64_t ref = 0;  // 0: free slot
    message_node* position = nullptr;
    std::uint64_t age = 0;
  };

  void move_markers(message_node* removed, message_node* prev) noexcept;

  message_node head_{nullptr, nullptr};
  message_node* tail_ = &head_;
  std::size_t size_ = 0;
  std::uint64_t scanned_ = 0;
  marker* markers_ = nullptr;  // allocated on first use: most processes never mark
  int markers_in_use_ = 0;
  std::uint64_t marker_clock_ = 0;
};

}  // namespace detail
BEAMLET_END_NAMESPACE
