// beamlet/core/detail/message_queue.hpp: a process's private message queue (owner-only).
//
// Messages move here from the lock-free inbox in arrival order and stay until a receive takes
// them, so the queue is exactly Erlang's: FIFO, with matched messages removed from the middle and
// unmatched ones keeping their relative order (spec §1.2 rules 7-9).
//
// A receive scans from a position node: the sentinel (head of the queue), its own save position
// when it blocked and was woken (rule 10), or a receive marker (rules 14-16). Markers are node
// pointers into the queue; removing a node that a marker points at moves the marker to the
// node's predecessor, so a marker always means "everything up to here was queued before the
// marked ref existed". Only the owning process changes this structure: no synchronisation. Its
// counters (length, bytes, messages received and examined) are atomics that the owner writes
// with plain relaxed stores, so process_info can read them from any thread at no cost to the
// owner.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

/// What a bounded mailbox's queue counts (see message_queue::track_limit); owned by the bound.
struct queue_tally {
  std::int64_t counted = 0;                       ///< ordinary messages queued (owner only)
  std::atomic<std::int64_t>* reserved = nullptr;  ///< senders' reservations to release, if any
};

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
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  /// Bytes of the queued nodes (headers and payloads), estimated as the queue length times the
  /// average size of the messages ever queued: exact for a process that receives one type,
  /// and it costs a receive nothing (a removal does not look at the node's size).
  std::size_t bytes() const noexcept {
    const std::uint64_t in = received_.load(std::memory_order_relaxed);
    if (in == 0) return 0;
    const double average =
        static_cast<double>(bytes_in_.load(std::memory_order_relaxed)) / static_cast<double>(in);
    return static_cast<std::size_t>(average * static_cast<double>(size()));
  }
  /// Messages ever appended.
  std::uint64_t received() const noexcept { return received_.load(std::memory_order_relaxed); }

  /// Appends an already linked chain first..last of `count` messages totalling `bytes`.
  void append(message_node* first, message_node* last, std::size_t count,
              std::size_t bytes) noexcept {
    bump(size_, count);
    append_arrived(first, last, count, bytes);
  }

  /// Arrivals count in the length from the moment the owner takes them out of its inbox,
  /// before it has walked them into the queue: a reader on another thread (process_info, top)
  /// must not see a draining backlog vanish for as long as the walk takes. The drain then
  /// appends them with append_arrived and takes back, with drop_arriving, those that did not
  /// become messages (signals, messages to a process already exiting).
  void add_arriving(std::size_t count) noexcept { bump(size_, count); }

  /// Bracket the take from the inbox and the add_arriving that follows (a seqlock's writer
  /// side): the reader (see arrival_seq) retries when its readings of the length and of the
  /// inbox straddle that moment, in which the messages are in neither. 16 bits are plenty: a
  /// reader is fooled only if 32,768 takes happen between two of its adjacent loads.
  void begin_arrival() noexcept {
    arrival_seq_.store(static_cast<std::uint16_t>(arrival_seq_.load(std::memory_order_relaxed) + 1),
                       std::memory_order_relaxed);
  }
  void end_arrival() noexcept {
    arrival_seq_.store(static_cast<std::uint16_t>(arrival_seq_.load(std::memory_order_relaxed) + 1),
                       std::memory_order_release);
  }
  std::uint16_t arrival_seq() const noexcept {
    return arrival_seq_.load(std::memory_order_acquire);
  }
  void drop_arriving(std::size_t count) noexcept {
    size_.store(size_.load(std::memory_order_relaxed) - count, std::memory_order_relaxed);
  }
  void append_arrived(message_node* first, message_node* last, std::size_t count,
                      std::size_t bytes) noexcept {
    tail_->next = first;
    last->next = nullptr;
    tail_ = last;
    bump(bytes_in_, bytes);
    bump(received_, count);
  }

  /// For the messages the owner makes itself (trapped exits, DOWNs, replies): control
  /// messages, which a bounded mailbox's tally does not count.
  void push_back(message_node* n) noexcept { append(n, n, 1, n->type->node_size); }

  /// Removes and returns the node after `prev`. A bounded mailbox's tally is not told here (a
  /// receive's scan is the hottest loop there is): whoever takes a message out for good calls
  /// release() (receive_end, the drop_oldest trim).
  message_node* unlink_after(message_node* prev) noexcept {
    message_node* n = prev->next;
    prev->next = n->next;
    if (tail_ == n) tail_ = prev;
    size_.store(size_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    if (markers_in_use_ != 0) move_markers(n, prev);
    n->next = nullptr;
    return n;
  }

  /// Puts `n` back right after `prev` (undoes unlink_after when taking the message failed).
  void insert_after(message_node* prev, message_node* n) noexcept {
    n->next = prev->next;
    prev->next = n;
    if (tail_ == prev) tail_ = n;
    bump(size_, 1);
    if (tally_ != nullptr) [[unlikely]]
      note_in(n);
  }

  // -- bounded mailboxes (beamlet/core/mailbox_limit.hpp)
  // ---------------------------------------------

  /// Counts the ordinary messages (counted_message) in this queue into `t` from now on; each
  /// one that leaves also releases a sender's reservation in `*t.reserved` (null: nothing
  /// reserved, as under drop_oldest). Set before any message is queued; `t` outlives the queue.
  void track_limit(queue_tally* t) noexcept { tally_ = t; }
  bool tracking() const noexcept { return tally_ != nullptr; }
  /// `n`, taken out of this queue for good, no longer counts.
  void release(const message_node* n) noexcept {
    if (tally_ != nullptr) note_out(n);
  }
  /// Ordinary messages queued (while tracking).
  std::int64_t counted() const noexcept { return tally_->counted; }
  /// `n` ordinary messages were appended (append() does not look at the nodes).
  void add_counted(std::int64_t n) noexcept { tally_->counted += n; }

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
  std::uint64_t scanned() const noexcept { return scanned_.load(std::memory_order_relaxed); }
  void add_scanned(std::uint64_t n) noexcept { bump(scanned_, n); }

 private:
  struct marker {
    std::uint64_t ref = 0;  // 0: free slot
    message_node* position = nullptr;
    std::uint32_t age = 0;
  };

  void move_markers(message_node* removed, message_node* prev) noexcept;
  void note_in(const message_node* n) noexcept;
  void note_out(const message_node* n) noexcept;
  /// The owner's add: a load and a store, no atomic read-modify-write.
  template <class T, class N>
  static void bump(std::atomic<T>& v, N n) noexcept {
    v.store(v.load(std::memory_order_relaxed) + static_cast<T>(n), std::memory_order_relaxed);
  }

  message_node head_{nullptr, nullptr};
  message_node* tail_ = &head_;
  std::atomic<std::size_t> size_{0};
  std::atomic<std::uint64_t> bytes_in_{0};  ///< bytes of the messages ever appended
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> scanned_{0};
  marker* markers_ = nullptr;        // allocated on first use: most processes never mark
  std::int16_t markers_in_use_ = 0;  // at most marker_slots
  /// Odd while arrivals pass from the inbox into the length (begin_arrival..end_arrival).
  std::atomic<std::uint16_t> arrival_seq_{0};
  std::uint32_t marker_clock_ = 0;
  queue_tally* tally_ = nullptr;  ///< set for a bounded mailbox's queue
};

}  // namespace detail
BEAMLET_END_NAMESPACE
