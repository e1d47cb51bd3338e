#include "epoch.hpp"

#include <functional>
#include <thread>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

epoch_domain::epoch_domain(unsigned worker_count)
    : workers_(std::make_unique<record[]>(worker_count)), worker_count_(worker_count) {}

epoch_domain::~epoch_domain() {
  free_all_shared();
}

epoch_domain::outside_guard::outside_guard(epoch_domain& d) noexcept {
  // Start at a per-thread position so threads rarely collide on a slot.
  thread_local const unsigned start = static_cast<unsigned>(
      std::hash<std::thread::id>{}(std::this_thread::get_id()) % outside_slots);
  for (unsigned n = 0;; ++n) {
    record& r = d.outside_[(start + n) % outside_slots];
    std::uint64_t expected = inactive;
    if (r.epoch.load(std::memory_order_relaxed) == inactive &&
        r.epoch.compare_exchange_strong(expected, d.global_.load(), std::memory_order_seq_cst)) {
      slot_ = &r;
      return;
    }
    // Every slot busy: more outside threads than slots are mid-call. Let one finish.
    if (n % outside_slots == outside_slots - 1) std::this_thread::yield();
  }
}

void epoch_domain::retire(bag& b, void* object, void (*free)(void*) noexcept) {
  b.items_.push_back({object, free, global_.load(std::memory_order_seq_cst)});
}

void epoch_domain::retire_shared(void* object, void (*free)(void*) noexcept) {
  lock_guard lock(shared_mu_);
  retire(shared_, object, free);
  shared_waiting_.store(true, std::memory_order_relaxed);
}

bool epoch_domain::try_advance() noexcept {
  std::uint64_t g = global_.load(std::memory_order_seq_cst);
  for (unsigned i = 0; i < worker_count_; ++i) {
    const std::uint64_t e = workers_[i].epoch.load(std::memory_order_seq_cst);
    if (e != inactive && e != g) return false;
  }
  for (record& r : outside_) {
    const std::uint64_t e = r.epoch.load(std::memory_order_seq_cst);
    if (e != inactive && e != g) return false;
  }
  return global_.compare_exchange_strong(g, g + 1, std::memory_order_seq_cst);
}

void epoch_domain::collect(bag& b) noexcept {
  const std::uint64_t g = global_.load(std::memory_order_seq_cst);
  std::size_t i = b.head_;
  while (i < b.items_.size() && b.items_[i].epoch + 2 <= g) {
    b.items_[i].free(b.items_[i].object);
    ++i;
  }
  b.head_ = i;
  if (b.head_ == b.items_.size()) {
    b.items_.clear();
    b.head_ = 0;
  } else if (b.head_ > 1024 && b.head_ * 2 > b.items_.size()) {
    b.items_.erase(b.items_.begin(), b.items_.begin() + static_cast<std::ptrdiff_t>(b.head_));
    b.head_ = 0;
  }
}

void epoch_domain::collect_shared() noexcept {
  // Workers call this every few runs: with nothing retired from outside (the usual case) it
  // must not touch the shared lock. A retirement this load misses waits for the next call.
  if (!shared_waiting_.load(std::memory_order_relaxed)) return;
  // Whoever holds the lock is retiring or collecting already; this round can be skipped.
  if (!shared_mu_.try_lock()) return;
  collect(shared_);
  shared_waiting_.store(!shared_.empty(), std::memory_order_relaxed);
  shared_mu_.unlock();
}

void epoch_domain::free_all(bag& b) noexcept {
  for (std::size_t i = b.head_; i < b.items_.size(); ++i) b.items_[i].free(b.items_[i].object);
  b.items_.clear();
  b.head_ = 0;
}

void epoch_domain::free_all_shared() noexcept {
  lock_guard lock(shared_mu_);
  free_all(shared_);
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
