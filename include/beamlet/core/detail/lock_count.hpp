// beamlet/core/detail/lock_count.hpp: how often the runtime's shared locks were taken.
//
// A shared lock is one the whole runtime contends on (the timer heap's, a registry shard's, the
// scheduler's global queue's, the allocator's, ...), as opposed to one process's own lock (a
// scoped process's wait, a process's watcher list). bench/scaling prints acquisitions per
// operation to prove which hot paths take none; the count exists only in a library built with
// BEAMLET_COUNT_LOCKS=ON (one relaxed atomic add per acquisition), and reads 0 otherwise.
// Thread-safe; the figure covers every thread and every runtime of the program.
#pragma once

#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

/// True in a library built with BEAMLET_COUNT_LOCKS.
bool counts_shared_locks() noexcept;
/// Shared-lock acquisitions since the program started (0 where they are not counted).
std::uint64_t shared_lock_acquisitions() noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
