// beamlet/core/detail/receive_op.hpp: one receive in progress, as the runtime sees it.
//
// The typed part (clauses, guards, handlers) lives in a template derived from receive_op; the
// runtime only calls scan(), which that template compiles into a tight loop comparing node type
// tags, so the per-message cost of a scan is a pointer compare and a pointer chase. The same
// object serves a coroutine process (co_await) and an outside thread's scoped_process (blocking
// call).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message_queue.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

class receive_op {
 public:
  receive_op(const receive_op&) = delete;
  receive_op& operator=(const receive_op&) = delete;

  /// Examines the messages after `position` in order; on a match, unlinks the message into
  /// `matched` and `clause` and returns true. Otherwise leaves `position` on the last message
  /// examined (the save position of spec §1.2 rule 10) and returns false.
  bool scan(message_queue& q) { return scan_(this, q); }

  // -- set up by the typed receive --------------------------------------------------------------
  bool has_timeout = false;        ///< an `after` clause with a finite duration
  clock_time::duration timeout{};  ///< its duration
  std::uint64_t since = 0;         ///< marker ref value, 0 for a scan from the head

  // -- state while the receive runs --------------------------------------------------------------
  clock_time deadline{};  ///< entry time + timeout (rule 11: measured from entry)
  message_node* position = nullptr;
  message_node* priority_position = nullptr;  ///< the save position in the priority queue
  message_node* matched = nullptr;
  message_queue* queue = nullptr;  ///< where `matched` was taken from (right after `position`)
  int clause = -1;
  bool timed_out = false;
  std::exception_ptr error;  ///< a guard threw while the runtime was scanning

 protected:
  using scan_fn = bool (*)(receive_op*, message_queue&);
  explicit receive_op(scan_fn f) noexcept : scan_(f) {}
  ~receive_op() = default;

 private:
  scan_fn scan_;
};

}  // namespace detail
BEAMLET_END_NAMESPACE
