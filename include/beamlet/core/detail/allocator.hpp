// beamlet/core/detail/allocator.hpp: the allocator behind messages, coroutine frames and processes.
//
// Small blocks come from per-thread size-class caches (no lock, no atomic on the fast path);
// caches exchange whole batches with a central list so a producer/consumer pair that always
// allocates on one thread and frees on another does not grow without bound. Builds with
// BEAMLET_SYSTEM_ALLOCATOR (all sanitizer builds) forward to operator new/delete instead.
#pragma once

#include <cstddef>
#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

/// Never returns null; throws std::bad_alloc.
void* allocate(std::size_t size);
/// `size` must be the size passed to allocate().
void deallocate(void* p, std::size_t size) noexcept;
/// Blocks allocated and not yet freed, over all threads (for leak tests).
std::int64_t live_blocks() noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
