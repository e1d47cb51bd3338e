#include <beamlet/core/detail/lock_count.hpp>

#include "thread_safety.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

bool counts_shared_locks() noexcept {
  return lock_counting;
}

std::uint64_t shared_lock_acquisitions() noexcept {
  return shared_locks_taken.load(std::memory_order_relaxed);
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
