#include "process_table.hpp"

#include <sys/mman.h>

#include <bit>
#include <new>

#include <beamlet/core/error.hpp>

#include "process_state.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

process_table::process_table(std::size_t limit) : limit_(limit) {
  const std::size_t wanted = limit + limit / 7 + 1;
  const std::size_t cap = std::bit_ceil(wanted < 1024 ? std::size_t{1024} : wanted);
  mask_ = cap - 1;
  bytes_ = cap * sizeof(std::atomic<proc*>);
  void* mem = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) throw std::bad_alloc();
  // Anonymous pages read as zero: every slot starts as a null pointer.
  slots_ = static_cast<std::atomic<proc*>*>(mem);
}

process_table::~process_table() {
  ::munmap(slots_, bytes_);
}

void process_table::insert(proc* p, pid& out) {
  if (count_.fetch_add(1, std::memory_order_relaxed) >= limit_) {
    count_.fetch_sub(1, std::memory_order_relaxed);
    throw system_limit_error("beamlet: process table full (raise runtime_options::max_processes)");
  }
  for (;;) {
    const std::uint64_t serial = next_serial_.fetch_add(1, std::memory_order_relaxed);
    std::atomic<proc*>& slot = slots_[serial & mask_];
    if (slot.load(std::memory_order_relaxed) != nullptr) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    out = pid(serial);
    proc* expected = nullptr;
    if (slot.compare_exchange_strong(expected, p, std::memory_order_seq_cst)) return;
  }
}

proc* process_table::lookup(pid id) const noexcept {
  proc* p = slots_[id.serial() & mask_].load(std::memory_order_seq_cst);
  return (p != nullptr && p->id() == id) ? p : nullptr;
}

void process_table::remove(pid id) noexcept {
  slots_[id.serial() & mask_].store(nullptr, std::memory_order_seq_cst);
  count_.fetch_sub(1, std::memory_order_seq_cst);  // (a lock-prefixed sub on x86 either way)
}

}  // namespace detail
BEAMLET_END_NAMESPACE
