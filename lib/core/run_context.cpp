// The out-of-line accessors of the running process's run context (see beamlet/core/task.hpp for why
// coroutine code reaches it only through calls).
#include "run_context.hpp"

#include <beamlet/core/detail/allocator.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

thread_local constinit run_context this_run{};

namespace {
// Always inlined into its two callers: their own frame, one call below the coroutine's, stands
// for the stack in use (a few bytes off the bound, which has 256 KiB of room).
[[gnu::always_inline]] inline bool below_floor() noexcept {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) < this_run.stack_floor;
}
}  // namespace

bool stack_exhausted() noexcept {
  return below_floor();
}

bool must_yield() noexcept {
  return --this_run.budget <= 0 || below_floor();
}

void* allocate_frame(std::size_t size) {
  void* p = allocate(size);
  this_run.frame_bytes += static_cast<std::int32_t>(size);
  return p;
}

void deallocate_frame(void* p, std::size_t size) noexcept {
  this_run.frame_bytes -= static_cast<std::int32_t>(size);
  deallocate(p, size);
}

std::int32_t exchange_frame_bytes(std::int32_t bytes) noexcept {
  const std::int32_t old = this_run.frame_bytes;
  this_run.frame_bytes = bytes;
  return old;
}

run_context exchange_run_context(const run_context& c) noexcept {
  const run_context old = this_run;
  this_run = c;
  return old;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
