// The routing tables of partition supervisors (Elixir keeps one ETS table per supervisor).
// Keyed by the supervisor's pid; written by the supervisor process as its children start,
// read by any thread that routes a key. A table whose owner has exited is treated as absent and
// dropped on the next lookup or insertion. The set of tables is per runtime, kept as a
// runtime_extension (beamlet/core/extension.hpp), so the core knows nothing of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include <beamlet/core/extension.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/otp/rate_limit.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

class partition_table {
 public:
  partition_table(pid owner, int partitions)
      : owner_(owner), n_(partitions), pids_(new std::atomic<std::uint64_t>[partitions]) {
    for (int i = 0; i < partitions; ++i) pids_[i].store(0, std::memory_order_relaxed);
  }
  pid owner() const noexcept { return owner_; }
  int partitions() const noexcept { return n_; }
  /// The last child started for partition `p` (kept while it restarts: Elixir's behaviour);
  /// the null pid if none ever started.
  pid get(int p) const noexcept { return pid(pids_[p].load(std::memory_order_acquire)); }
  void set(int p, pid child) noexcept { pids_[p].store(child.serial(), std::memory_order_release); }
  /// The limit on starts through partition_supervisor::start_child, all partitions together
  /// (null: none). Set once, before the table is published.
  std::unique_ptr<token_bucket> total_rate;

 private:
  pid owner_;
  int n_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> pids_;
};

class partition_tables final : public runtime_extension {
 public:
  /// The table of the live supervisor `owner`, if any.
  std::shared_ptr<partition_table> find(runtime_core& rt, pid owner);
  /// The table of `owner`, created with `partitions` slots on first use.
  std::shared_ptr<partition_table> get_or_create(runtime_core& rt, pid owner, int partitions,
                                                 const std::optional<rate_limit>& total_rate);
  void erase(pid owner);

 private:
  std::shared_mutex mu_;
  std::unordered_map<pid, std::shared_ptr<partition_table>> tables_;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
