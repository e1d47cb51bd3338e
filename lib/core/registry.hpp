// Registered names (spec §9), read without a lock.
//
// Named sends and whereis are hot (a service sends to its servers by name), registration is
// rare. So a lookup takes no lock at all: the names are spread over 64 shards by hash, each
// shard a chained hash table whose bucket array and nodes are immutable once published and
// reclaimed through the runtime's epochs, so a reader only pins (free on a scheduler thread)
// and follows acquire loads. Writers (register, unregister, an owner's exit) take their
// shard's mutex; a table that grows is copied and the old copy retired, so a reader still
// walking it sees a consistent past state.
//
// A registration is ordered against its owner's exit by the owner's `registration` word: it
// moves open -> named (register) and named -> open (unregister) under the name's shard lock,
// and open -> closed (exit) with a CAS. An exiting owner that holds a name takes that name's
// shard lock to drop it, so a name never outlives its process and is never handed to a dead
// owner's successor (pids are never reused).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <beamlet/core/ids.hpp>

#include "thread_safety.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

struct proc;
class process_table;
class runtime_core;

/// A registered name's text, allocated once per registration: the process points at it (for
/// name_of) and it stays put when its shard's table grows. Retired through the epochs.
struct registered_name {
  std::string text;
  std::size_t hash = 0;
};

class registry {
 public:
  explicit registry(runtime_core& rt) noexcept : rt_(rt) {}
  ~registry();
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  std::error_code register_name(std::string_view name, proc* p);
  std::error_code unregister_name(std::string_view name, const process_table& table);
  /// Lock-free: pins the calling thread (nothing on a scheduler) and reads.
  std::optional<pid> whereis(std::string_view name) const noexcept;
  std::vector<std::string> names() const;
  /// Every (name, pid), sorted by name.
  std::vector<std::pair<std::string, pid>> entries() const;
  /// Lock-free, like whereis.
  std::optional<std::string> name_of(const proc* p) const;
  /// The process is exiting: drop its name and refuse later registrations.
  void release(proc* p) noexcept;

 private:
  static constexpr unsigned shard_bits = 6;
  static constexpr unsigned shard_count = 1U << shard_bits;
  static constexpr std::size_t initial_buckets = 8;

  struct node {
    const registered_name* name;
    pid owner;
    std::atomic<node*> next{nullptr};
  };
  /// A bucket array with the nodes chained from it, which it owns; both immutable to readers
  /// once published, except that a writer may unlink a node (readers standing on it still
  /// reach the rest).
  struct bucket_table {
    explicit bucket_table(std::size_t buckets);
    ~bucket_table();
    bucket_table(const bucket_table&) = delete;
    bucket_table& operator=(const bucket_table&) = delete;
    /// Links `n` at the head of its bucket; `order` publishes it (relaxed before the table is).
    void push_front(node* n, std::memory_order order) noexcept;
    /// Calls f(node&) for every node, for a writer or a table no reader can reach.
    template <class F>
    void for_each(F f) const {
      for (std::size_t b = 0; b <= mask; ++b)
        for (node* n = heads[b].load(std::memory_order_relaxed); n != nullptr;
             n = n->next.load(std::memory_order_relaxed))
          f(*n);
    }
    std::size_t mask;
    std::unique_ptr<std::atomic<node*>[]> heads;
  };
  struct alignas(64) shard {
    mutex mu;
    std::atomic<bucket_table*> current{nullptr};
    std::size_t count BEAMLET_GUARDED_BY(mu) = 0;
  };

  static std::size_t hash_of(std::string_view name) noexcept;
  static std::size_t bucket_of(std::size_t hash, std::size_t mask) noexcept {
    return (hash >> shard_bits) & mask;
  }
  shard& shard_for(std::size_t hash) const noexcept { return shards_[hash & (shard_count - 1)]; }
  static node* find(const bucket_table* t, std::string_view name, std::size_t hash) noexcept;
  /// Links a new node for `name` in `s`, growing its table first if it is full.
  void insert_locked(shard& s, const registered_name* name, pid owner) BEAMLET_REQUIRES(s.mu);
  /// Unlinks the node of `name` from `s` and retires the node and the name.
  void erase_locked(shard& s, const registered_name* name) BEAMLET_REQUIRES(s.mu);

  runtime_core& rt_;
  mutable shard shards_[shard_count];
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
