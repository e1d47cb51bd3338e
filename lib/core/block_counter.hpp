// Unique 64-bit numbers, taken by each thread in blocks: a thread-local increment per number
// and one shared atomic add per 256, instead of a shared read-modify-write per number. One
// counter per Tag for the whole program, so the numbers stay unique across runtimes.
#pragma once

#include <atomic>
#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// The next number of counter `Tag` (starting at 1; never 0).
template <class Tag>
std::uint64_t next_from_blocks() noexcept {
  static std::atomic<std::uint64_t> next_block{1};
  constexpr std::uint64_t block = 256;
  thread_local std::uint64_t next = 0;
  thread_local std::uint64_t end = 0;
  if (next == end) {
    next = next_block.fetch_add(block, std::memory_order_relaxed);
    end = next + block;
  }
  return next++;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
