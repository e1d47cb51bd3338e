// PartitionSupervisor (spec §8): a static supervisor of N partition children plus a
// routing table per supervisor.
#include <beamlet/otp/partition_supervisor.hpp>

#include <algorithm>

#include "partition_table.hpp"
#include "phash2.hpp"
#include "supervision.hpp"
#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

// -- keys ----------------------------------------------------------------------------------------

int partition_key::partition(int partitions) const noexcept {
  const auto n = static_cast<std::uint64_t>(partitions);
  if (kind_ == kind::integer) return static_cast<int>(magnitude_ % n);  // rem(abs(key), n)
  return static_cast<int>(detail::phash2_binary(bytes_) % n);           // phash2(key, n)
}

std::string partition_key::to_string() const {
  if (kind_ == kind::integer) return std::to_string(magnitude_);
  return detail::concat({"<<\"", bytes_, "\">>"});
}

namespace detail {

// -- routing tables ------------------------------------------------------------------------------

std::shared_ptr<partition_table> partition_tables::find(runtime_core& rt, pid owner) {
  {
    std::shared_lock lock(mu_);
    auto it = tables_.find(owner);
    if (it == tables_.end()) return nullptr;
    if (is_alive_in(rt, owner)) return it->second;
  }
  erase(owner);  // its supervisor has exited: the table goes with it
  return nullptr;
}

std::shared_ptr<partition_table> partition_tables::get_or_create(
    runtime_core& rt, pid owner, int partitions, const std::optional<rate_limit>& total_rate) {
  std::unique_lock lock(mu_);
  if (auto it = tables_.find(owner); it != tables_.end()) return it->second;
  // Drop the tables of supervisors that exited without being looked up since.
  std::erase_if(tables_, [&](const auto& entry) { return !is_alive_in(rt, entry.first); });
  auto table = std::make_shared<partition_table>(owner, partitions);
  if (total_rate) table->total_rate = std::make_unique<token_bucket>(*total_rate);
  tables_.emplace(owner, table);
  return table;
}

void partition_tables::erase(pid owner) {
  std::unique_lock lock(mu_);
  tables_.erase(owner);
}

namespace {

[[noreturn]] void exit_noproc(std::string_view name) {
  throw exit_exception(
      exit_reason::error(concat({"{noproc,{partition_supervisor,partitions,[", name, "]}}"})));
}

std::shared_ptr<partition_table> table_named(runtime_core& rt, std::string_view name) {
  const pid sup = whereis_in(rt, name);
  if (sup) {
    if (auto t = extension<partition_tables>(rt).find(rt, sup)) return t;
  }
  exit_noproc(name);
}

std::shared_ptr<partition_table> table_of(runtime_core& rt, pid sup) {
  if (auto t = extension<partition_tables>(rt).find(rt, sup)) return t;
  exit_noproc(sup.to_string());
}

class partition_via final : public via_resolver {
 public:
  partition_via(std::string name, pid sup, partition_key key)
      : name_(std::move(name)), sup_(sup), key_(std::move(key)) {}

  pid resolve(runtime_core& rt) const override {
    // One lookup of the table, then the partition, then the pid (§8.3 rule 10).
    const auto t = sup_ ? table_of(rt, sup_) : table_named(rt, name_);
    return t->get(key_.partition(t->partitions()));
  }
  std::string describe() const override {
    return concat({"{via,partition_supervisor,{", sup_ ? sup_.to_string() : name_, ",",
                   key_.to_string(), "}}"});
  }

 private:
  std::string name_;
  pid sup_;
  partition_key key_;
};

int default_partitions(const runtime_core& rt) {
  return static_cast<int>(std::max(1u, scheduler_count(rt)));
}

/// Partition p's start: records the started pid in the supervisor's table (§8.2 rule 6). It
/// runs again on every restart, so the table follows restarts.
start_function recording_start(start_function inner, int p, int n,
                               std::optional<rate_limit> total_rate) {
  return [inner = std::move(inner), p, n, total_rate](
             process& sup, const extra_arguments& extra) -> task<start_result> {
    runtime_core& rt = *runtime_of(sup);
    const auto table = extension<partition_tables>(rt).get_or_create(rt, sup.self(), n, total_rate);
    start_result r = co_await inner(sup, extra);
    if (r.is_ok()) table->set(p, r.pid());
    co_return r;
  };
}

/// The children of §8.1 rule 2, built in the caller, or the error that bad options give
/// (reported like a supervisor's bad flags: see docs/errors.md).
expected<std::vector<child_spec>, exit_reason> partition_children(
    const partition_supervisor_options& o, const runtime_core& rt) {
  auto bad = [](std::string term) { return unexpected(exit_reason::error(std::move(term))); };
  if (o.name.empty()) return bad("{supervisor_data,missing_name}");
  if (!o.child.start) return bad("{supervisor_data,missing_child}");
  const int n = o.partitions.value_or(default_partitions(rt));
  if (n <= 0)
    return bad(concat({"{supervisor_data,{invalid_partitions,", std::to_string(n), "}}"}));
  if (auto e = check_start_rate(o.total_start_rate))
    return bad(concat({"{supervisor_data,", *e, "}"}));
  std::vector<child_spec> children;
  children.reserve(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    child_spec s = o.with_arguments ? o.with_arguments(o.child, p) : o.child;
    if (!s.start) return bad(concat({"{start_spec,{missing_start,", std::to_string(p), "}}"}));
    s.id = std::to_string(p);
    s.start = recording_start(std::move(s.start), p, n, o.total_start_rate);
    children.push_back(std::move(s));
  }
  return children;
}

supervisor_flags flags_of(const partition_supervisor_options& o) {
  return supervisor_flags{o.strategy, o.intensity, o.period, auto_shutdown::never};
}

}  // namespace
}  // namespace detail

// -- the API -------------------------------------------------------------------------------------

task<start_result> partition_supervisor::start_link(process& self,
                                                    const partition_supervisor_options& opts) {
  auto children = detail::partition_children(opts, *detail::runtime_of(self));
  if (!children) co_return start_result::error(children.error());
  const supervisor_flags f = detail::flags_of(opts);
  const std::string name = opts.name;
  const supervisor_options so{name, opts.timeout, opts.wait};
  co_return co_await supervisor::start_link(self, so, f, std::move(*children));
}

start_result partition_supervisor::start_link(scoped_process& me,
                                              const partition_supervisor_options& opts) {
  auto children = detail::partition_children(opts, *detail::runtime_of(me));
  if (!children) return start_result::error(children.error());
  const supervisor_flags f = detail::flags_of(opts);
  supervisor_init_fn init = [f, children = std::move(*children)]() {
    return supervisor_init(f, children);
  };
  return supervisor::start_link(me, supervisor_options{opts.name, opts.timeout, opts.wait},
                                std::move(init));
}

task<sup_result<start_result>> partition_supervisor::start_child(process& self,
                                                                 std::string_view name,
                                                                 partition_key key, child_spec spec,
                                                                 timeout_value timeout) {
  const auto table = detail::table_named(*detail::runtime_of(self), name);
  if (table->total_rate && !table->total_rate->try_acquire(self.now()))
    co_return unexpected(sup_error{sup_errc::rate_limited, pid(), {}, std::nullopt});
  const pid to = table->get(key.partition(table->partitions()));
  co_return co_await dynamic_supervisor::start_child(self, to, std::move(spec), timeout);
}

via_name partition_supervisor::via(std::string name, partition_key key) {
  return via_name(std::make_shared<detail::partition_via>(std::move(name), pid(), std::move(key)));
}

via_name partition_supervisor::via(pid sup, partition_key key) {
  return via_name(std::make_shared<detail::partition_via>(std::string(), sup, std::move(key)));
}

int partition_supervisor::partitions(runtime& rt, std::string_view name) {
  return detail::table_named(rt.core(), name)->partitions();
}

int partition_supervisor::partitions(process& self, std::string_view name) {
  return detail::table_named(*detail::runtime_of(self), name)->partitions();
}

pid partition_supervisor::whereis(runtime& rt, std::string_view name, const partition_key& key) {
  const auto t = detail::table_named(rt.core(), name);
  return t->get(key.partition(t->partitions()));
}

pid partition_supervisor::whereis(process& self, std::string_view name, const partition_key& key) {
  const auto t = detail::table_named(*detail::runtime_of(self), name);
  return t->get(key.partition(t->partitions()));
}

template <call_context Ctx>
in_context<Ctx, std::vector<child_info>> partition_supervisor::which_children(
    Ctx& self, supervisor_ref sup, timeout_value timeout) {
  return supervisor::which_children(self, std::move(sup), timeout);
}

template <call_context Ctx>
in_context<Ctx, child_counts> partition_supervisor::count_children(Ctx& self, supervisor_ref sup,
                                                                   timeout_value timeout) {
  return supervisor::count_children(self, std::move(sup), timeout);
}

namespace {
// gen_server:stop, then the routing table goes: once stop returns, routing by name fails.
template <call_context Ctx>
task<> stop_and_unroute(Ctx& self, supervisor_ref sup, exit_reason reason, timeout_value timeout) {
  const pid p = detail::resolve_server(self, sup);
  // Copies, not moves: clang-tidy 14 reads a coroutine's end as a use of its moved-from
  // parameters, and a management call's copies cost nothing that matters.
  co_await detail::stop_protocol(self, sup, reason, timeout);
  extension<detail::partition_tables>(self).erase(p);
}
}  // namespace

template <call_context Ctx>
in_context<Ctx, void> partition_supervisor::stop(Ctx& self, supervisor_ref sup, exit_reason reason,
                                                 timeout_value timeout) {
  return detail::finish_in(self,
                           stop_and_unroute(self, std::move(sup), std::move(reason), timeout));
}

// The two contexts of each management call (beamlet/core/call_context.hpp).
#define BEAMLET_PARTITION_SUPERVISOR_CALL(ret, name, ...)                                       \
  template in_context<process, ret> partition_supervisor::name<process>(process&, __VA_ARGS__); \
  template in_context<scoped_process, ret> partition_supervisor::name<scoped_process>(          \
      scoped_process&, __VA_ARGS__)
BEAMLET_PARTITION_SUPERVISOR_CALL(std::vector<child_info>, which_children, supervisor_ref,
                                  timeout_value);
BEAMLET_PARTITION_SUPERVISOR_CALL(child_counts, count_children, supervisor_ref, timeout_value);
BEAMLET_PARTITION_SUPERVISOR_CALL(void, stop, supervisor_ref, exit_reason, timeout_value);
#undef BEAMLET_PARTITION_SUPERVISOR_CALL

start_function partition_supervisor_start(partition_supervisor_options opts) {
  return start_function([opts = std::move(opts)](process& sup) -> task<start_result> {
           co_return co_await partition_supervisor::start_link(sup, opts);
         })
      .of_type(child_type::supervisor);
}

BEAMLET_END_PRIVATE_NAMESPACE
