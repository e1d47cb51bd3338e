// beamlet/core/detail/allocator.hpp: the allocator behind messages, coroutine frames and processes.
//
// Small blocks come from per-thread size-class caches (no lock, no atomic on the fast path);
// caches exchange whole batches with a central list so a producer/consumer pair that always
// allocates on one thread and frees on another does not grow without bound. Memory that has
// come free goes back to the operating system when the schedulers idle (trim_when_idle), never
// on an allocation path. Builds with BEAMLET_SYSTEM_ALLOCATOR (all sanitizer builds) forward to
// operator new/delete instead, and trimming there is malloc_trim alone.
#pragma once

#include <chrono>
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

/// For a scheduler thread about to sleep. When enough memory is free (4 MiB, and a quarter of
/// what is in use) and some came back since the last trim, hands this thread's cache back (once
/// per trim) and, if the last trim was a second ago or more, trims (trim_memory). Returns how
/// long until a trim is due, so that the caller can wake for it; nanoseconds::max() when none
/// is wanted.
std::chrono::nanoseconds trim_when_idle() noexcept;
/// Returns memory to the operating system now: this thread's cache goes back to the central
/// lists, every chunk whose blocks are all free there is unmapped, and malloc_trim(0) runs
/// (glibc). Returns the bytes of chunks unmapped. Blocks other threads' caches hold stay.
std::size_t trim_memory() noexcept;

struct allocator_stats {
  std::int64_t mapped_bytes = 0;  ///< chunks of the size-class allocator
  std::int64_t free_bytes = 0;    ///< of those, blocks free in the central lists
};
allocator_stats allocator_statistics() noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
