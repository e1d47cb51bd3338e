// Sender lanes: the inbox of a process that many threads send to at once (spec §1.1 rule 1).
//
// A process's inbox is one word that every sender CASes. With senders on several schedulers the
// word's cache line moves between cores on every message, and a send costs a line transfer (or
// several, when CASes fail). OTP 25 met the same problem with per-sender buffers in the signal
// queue; beamlet does it the same way, lazily: a sender whose CAS on the word failed twice in one
// send gives the process sixteen lanes, each a lock-free stack of its own on its own cache line.
// From then on a sender pushes to the lane its identity picks (the sending process's pid, or the
// sending thread), so senders on different cores write different lines and the owner takes each
// lane whole, once per drain.
//
// Ordering. Per-pair order needs every node of one sender to be taken in the order it was
// pushed. A sender always uses the same lane, and it pushes to the word only before it has seen
// the lanes, never after; the owner's drain ends with a take of the word that follows its last
// take of the lanes and puts every chain taken from the word before every chain taken from the
// lanes. So whatever one sender pushed to the word before its first lane push is ahead of it.
// Order between different senders is not kept (as on BEAM).
//
// Wake-ups. Parking and waking stay on the word (`blocked`, `inspected`, `closed`). A push that
// makes a lane non-empty sets its bit in `ready`; the first such push since the owner last
// looked also rings the doorbell: it pushes `doorbell`, a node of no consequence that lives here,
// onto the word through the ordinary path, which wakes a parked owner. `rung` says whether the
// doorbell is out (pushed, or about to be); the owner clears it as it takes the doorbell off the
// word and only then reads `ready`, so a lane filled meanwhile either rings again or is seen.
// Every field but `doorbell` is atomic; the owner alone reads the lanes' chains.
//
// Exit. exit_process closes every lane as it closes the word: later pushes fail (the process is
// gone), and what was pushed before is settled as the word's leftovers are.
#pragma once

#include <atomic>
#include <cstdint>
#include <typeinfo>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct inbox_lanes {
  static constexpr unsigned count = 16;

  /// A lane's word: the newest node of its chain (null: empty) and, in the high 16 bits, the
  /// nodes in it (saturating, as the inbox word's count does); or `closed_mark`.
  struct alignas(64) lane {
    std::atomic<std::uintptr_t> word{0};
  };
  static constexpr std::uintptr_t closed_mark = 2;

  lane lanes[count];
  alignas(64) std::atomic<std::uint32_t> ready{0};  ///< one bit per non-empty lane
  std::atomic<bool> rung{false};
  message_node doorbell;

  inbox_lanes() noexcept;
  static const type_descriptor doorbell_type;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
