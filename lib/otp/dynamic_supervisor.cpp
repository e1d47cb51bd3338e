// DynamicSupervisor (spec §7), a gen_server like Elixir's.
#include <beamlet/otp/dynamic_supervisor.hpp>

#include <map>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "reports.hpp"
#include "supervision.hpp"
#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

struct dyn_start_child {
  child_spec spec;
  using reply_type = sup_result<start_result>;
};
struct dyn_terminate_child {
  pid child;
  using reply_type = sup_result<void>;
};
struct dyn_which_children {
  using reply_type = std::vector<child_info>;
};
struct dyn_count_children {
  using reply_type = child_counts;
};
/// Elixir's {:"$gen_restart", old_pid}: a failed restart, retried behind the queued messages.
struct gen_restart {
  pid old;
};
/// A restart postponed by the child's backoff, due now.
struct dyn_backoff_restart {
  pid old;
};
/// The kill timer of one shutdown-time group during a parallel shutdown.
struct kill_timer {
  std::uint64_t group;
};

struct dyn_child {
  child_spec spec;
  bool restarting = false;
  backoff_state backoff;
};

const char* strategy_name(restart_strategy s) {
  switch (s) {
    case restart_strategy::one_for_one:
      return "one_for_one";
    case restart_strategy::one_for_all:
      return "one_for_all";
    case restart_strategy::rest_for_one:
      return "rest_for_one";
  }
  return nullptr;
}

std::optional<std::string> check_dynamic_flags(const dynamic_supervisor_flags& f) {
  if (f.strategy != restart_strategy::one_for_one) {
    const char* name = strategy_name(f.strategy);
    return concat(
        {"{invalid_strategy,",
         name != nullptr ? std::string(name) : std::to_string(static_cast<unsigned>(f.strategy)),
         "}"});
  }
  if (f.intensity < 0) return concat({"{invalid_intensity,", std::to_string(f.intensity), "}"});
  if (f.period <= 0) return concat({"{invalid_period,", std::to_string(f.period), "}"});
  if (f.max_children && *f.max_children < 0)
    return concat({"{invalid_max_children,", std::to_string(*f.max_children), "}"});
  if (auto e = check_start_rate(f.start_rate)) return e;
  return std::nullopt;
}

/// The caller-side check of §7.2 rule 6. Ids are ignored; significant children are rejected
/// (a dynamic supervisor has no auto_shutdown).
std::optional<spec_error> check_dynamic_spec(const child_spec& spec) {
  if (auto e = validate(spec, /*require_id=*/false)) return e;
  if (spec.significant) return spec_error{spec_errc::invalid_significant, "true"};
  return std::nullopt;
}

sup_error error_of(sup_errc code) {
  return sup_error{code, pid(), {}, std::nullopt};
}

}  // namespace

// The supervisor's notes to itself: a bounded mailbox must never drop them, or a restart or a
// shutdown's kill would be lost.
template <>
inline constexpr bool is_control_message<gen_restart> = true;
template <>
inline constexpr bool is_control_message<dyn_backoff_restart> = true;
template <>
inline constexpr bool is_control_message<kill_timer> = true;

class dynamic_supervisor_server : public gen_server<dynamic_supervisor_server> {
 public:
  using initial_call = beamlet::dynamic_supervisor;  // what process_info and reports call it

  dynamic_supervisor_server(dynamic_supervisor_init_fn init, ack_wait_mode wait, bool priority)
      : init_fn_(std::move(init)), wait_(wait), priority_(priority) {}

  gen::init_result init();
  task<sup_result<start_result>> handle_call(dyn_start_child& r, from<sup_result<start_result>>);
  task<sup_result<void>> handle_call(const dyn_terminate_child& r, from<sup_result<void>>);
  std::vector<child_info> handle_call(const dyn_which_children&, from<std::vector<child_info>>);
  child_counts handle_call(const dyn_count_children&, from<child_counts>);
  task<gen::action> handle_info(any_message m);
  task<> terminate(const exit_reason& reason);

 private:
  using children_t = std::unordered_map<pid, dyn_child>;

  /// Restarts the child kept under `old` (its last pid); a stop action when the intensity is
  /// exceeded.
  task<std::optional<gen::action>> restart(pid old);
  /// Elixir's terminate_children/2: signal every child, then wait for all (§7.4 rule 19).
  task<> terminate_children();
  /// Runs the start function of the child kept under `old` again.
  task<> start_again(pid old);
  /// Overload control: why a start request must be refused now, if it must.
  std::optional<sup_errc> refuse_start();
  /// After children left the map: the published count, and the bucket array of a spike of
  /// children given back once most of them are gone (an unordered_map never shrinks it).
  void children_removed() noexcept {
    stats_->set_children(children_.size());
    if (children_.bucket_count() > 1024 && children_.size() * 8 < children_.bucket_count()) {
      try {
        children_.rehash(0);
      } catch (...) {
        // No memory for the smaller array: the larger one stays.
      }
    }
  }

  dynamic_supervisor_init_fn init_fn_;
  ack_wait_mode wait_;
  bool priority_;
  std::optional<token_bucket> start_bucket_;
  dynamic_supervisor_flags flags_;
  children_t children_;
  restart_window window_;
  supervisor_registration stats_;

  void report(std::string_view context, const exit_reason& reason, const child_spec& spec,
              pid child) {
    supervisor_report(self(), "dynamic_supervisor", context, reason.to_string(), spec, child);
  }
};

gen::init_result dynamic_supervisor_server::init() {
  dynamic_supervisor_init si;
  if (auto end = begin_init(self(), wait_, init_fn_, "dynamic_supervisor", si,
                            [](const dynamic_supervisor_init& v) {
                              return supervisor_data(check_dynamic_flags(v.flags));
                            }))
    return std::move(*end);
  flags_ = std::move(si.flags);
  window_ = restart_window(flags_.intensity, flags_.period);
  if (flags_.start_rate) start_bucket_.emplace(*flags_.start_rate);
  if (priority_) (void)self().make_priority_alias(/*publish=*/true);
  stats_.enroll(self(), "dynamic_supervisor");
  return gen::ok();
}

std::optional<sup_errc> dynamic_supervisor_server::refuse_start() {
  // Shedding first: a shed request should not use up a token of the rate.
  const auto mode = static_cast<shedding>(stats_->shed_mode.load(std::memory_order_relaxed));
  const bool shed = mode == shedding::on || (mode == shedding::automatic && flags_.shed_above &&
                                             self().message_queue_len() > *flags_.shed_above);
  if (shed) {
    supervisor_counters::bump(stats_->overloaded);
    return sup_errc::overloaded;
  }
  if (start_bucket_ && !start_bucket_->try_acquire(self().now())) {
    supervisor_counters::bump(stats_->rate_limited);
    return sup_errc::rate_limited;
  }
  return std::nullopt;
}

task<sup_result<start_result>> dynamic_supervisor_server::handle_call(
    dyn_start_child& r, from<sup_result<start_result>>) {
  supervisor_counters::bump(stats_->start_child_calls);
  // §7.2 rule 8: checked before the start function runs; restarting children count.
  if (flags_.max_children && static_cast<std::int64_t>(children_.size()) >= *flags_.max_children)
    co_return unexpected(error_of(sup_errc::max_children));
  // Overload control: a refused request costs the supervisor no start.
  if (const auto refused = refuse_start()) co_return unexpected(error_of(*refused));
  const start_result s =
      co_await start_child_process(self(), r.spec, flags_.extra, start_failure_style::dynamic);
  if (s.is_ok()) {
    // A temporary child is never restarted: keep no start function (and none of its captures).
    if (r.spec.restart == restart_type::temporary) r.spec.start = nullptr;
    dyn_child c{std::move(r.spec), false, {}};
    c.backoff.started(self().now());
    children_.insert_or_assign(s.pid(), std::move(c));
    stats_->set_children(children_.size());
    co_return s;
  }
  if (s.is_ignore()) co_return start_result::ignore();
  supervisor_counters::bump(stats_->start_child_errors);
  co_return unexpected(sup_error{sup_errc::start_failed, pid(), s.reason(), std::nullopt});
}

task<sup_result<void>> dynamic_supervisor_server::handle_call(const dyn_terminate_child& r,
                                                              from<sup_result<void>>) {
  auto it = children_.find(r.child);
  if (it == children_.end()) co_return unexpected(error_of(sup_errc::not_found));
  if (!it->second.restarting) {
    // The map is not touched while this waits: the server handles one message at a time.
    co_await shutdown_child(self(), r.child, it->second.spec, "dynamic_supervisor");
  }
  children_.erase(r.child);
  children_removed();
  co_return sup_result<void>{};
}

std::vector<child_info> dynamic_supervisor_server::handle_call(const dyn_which_children&,
                                                               from<std::vector<child_info>>) {
  std::vector<child_info> out;
  out.reserve(children_.size());
  for (const auto& [p, c] : children_) {
    out.push_back(
        child_info{std::string(), c.restarting ? pid() : p,
                   c.restarting ? child_info::state::restarting : child_info::state::running,
                   c.spec.type, c.spec.modules});
  }
  return out;
}

child_counts dynamic_supervisor_server::handle_call(const dyn_count_children&, from<child_counts>) {
  child_counts n;
  for (const auto& [p, c] : children_) {
    ++n.specs;
    if (!c.restarting) ++n.active;
    if (c.spec.type == child_type::supervisor)
      ++n.supervisors;
    else
      ++n.workers;
  }
  return n;
}

task<gen::action> dynamic_supervisor_server::handle_info(any_message m) {
  if (auto* b = m.get_if<dyn_backoff_restart>()) {
    auto it = children_.find(b->old);
    // Terminated meanwhile: nothing to do.
    if (it == children_.end() || !it->second.restarting) co_return gen::noreply();
    co_await start_again(b->old);
    co_return gen::noreply();
  }
  if (auto* g = m.get_if<gen_restart>()) {
    auto it = children_.find(g->old);
    // The child was terminated meanwhile: ignored (§7.3 rule 13).
    if (it == children_.end() || !it->second.restarting) co_return gen::noreply();
    std::optional<gen::action> a = co_await restart(g->old);
    co_return a ? std::move(*a) : gen::noreply();
  }
  auto* e = m.get_if<exit_message>();
  if (e == nullptr) co_return gen::noreply();  // unexpected info: ignored (§7.4 rule 18)
  auto it = children_.find(e->from);
  if (it == children_.end() || it->second.restarting) co_return gen::noreply();
  const restart_type restart_kind = it->second.spec.restart;
  if (reports_termination(it->second.spec, e->reason))
    report("child_terminated", e->reason, it->second.spec, e->from);
  // §7.3 rule 12.
  if (restart_kind == restart_type::temporary ||
      (restart_kind == restart_type::transient && e->reason.is_clean())) {
    children_.erase(it);
    children_removed();
    co_return gen::noreply();
  }
  std::optional<gen::action> a = co_await restart(e->from);
  co_return a ? std::move(*a) : gen::noreply();
}

task<std::optional<gen::action>> dynamic_supervisor_server::restart(pid old) {
  supervisor_counters::bump(stats_->restarts);
  if (!window_.add(self().now())) {
    // reached_max_restart_intensity: the child is dropped and the supervisor stops `shutdown`.
    supervisor_report(self(), "dynamic_supervisor", "shutdown", "reached_max_restart_intensity",
                      children_.at(old).spec, old);
    children_.erase(old);
    children_removed();
    co_return gen::stop(exit_reason::shutdown());
  }
  dyn_child& c = children_.at(old);
  if (c.spec.backoff) {
    // Decided now (and counted above); started when the delay is over.
    const auto delay = c.backoff.next_delay(*c.spec.backoff, self().now(), c.restarting);
    c.restarting = true;
    self().send_after(self().self(), dyn_backoff_restart{old}, delay);
    co_return std::nullopt;
  }
  co_await start_again(old);
  co_return std::nullopt;
}

task<> dynamic_supervisor_server::start_again(pid old) {
  // The same args again, extra_arguments first (§7.3 rule 13). The node is stable while this
  // waits: nothing else runs in the supervisor meanwhile.
  dyn_child& c = children_.at(old);
  const start_result s =
      co_await start_child_process(self(), c.spec, flags_.extra, start_failure_style::dynamic);
  if (s.is_ok()) {
    auto node = children_.extract(old);
    node.key() = s.pid();
    node.mapped().restarting = false;
    node.mapped().backoff.started(self().now());
    children_.insert(std::move(node));
  } else if (s.is_ignore()) {
    children_.erase(old);
    children_removed();
  } else {
    // Kept under the old pid as restarting, retried behind whatever is queued now.
    report("start_error", s.reason(), c.spec, pid());
    c.restarting = true;
    self().send(self().self(), gen_restart{old});
  }
}

task<> dynamic_supervisor_server::terminate(const exit_reason&) {
  co_await terminate_children();
}

task<> dynamic_supervisor_server::terminate_children() {
  // 1. Monitor and unlink every running child. After the unlinks no new EXIT from a child can
  // arrive, so one look at the queue finds every EXIT already there (Elixir probes child by
  // child; the outcome is the same, without a full queue scan per child).
  struct watch {
    pid child;
    const child_spec* spec;  // stays in children_ until the end
    bool exited = false;     // its EXIT was already queued: not signalled again
    exit_reason reason;      // that EXIT's reason
  };
  std::unordered_map<ref, watch> pending;
  std::unordered_set<pid> linked;
  pending.reserve(children_.size());
  for (const auto& [p, c] : children_) {
    if (c.restarting) continue;
    const ref mon = self().monitor(p);
    self().unlink(p);
    pending.emplace(mon, watch{p, &c.spec, false, exit_reason()});
    linked.insert(p);
  }
  std::unordered_map<pid, ref> by_pid;
  for (const auto& [mon, w] : pending) by_pid.emplace(w.child, mon);
  for (;;) {
    auto queued = co_await self().receive(
        on<exit_message>().when([&](const exit_message& e) { return linked.count(e.from) != 0; }),
        after(std::chrono::milliseconds(0)));
    if (!queued) break;
    const pid from = queued.get<exit_message>().from;
    watch& w = pending.at(by_pid.at(from));
    w.exited = true;
    w.reason = queued.get<exit_message>().reason;
    linked.erase(from);
  }
  // 2. Signal: brutal_kill -> kill; otherwise shutdown, with one kill timer per distinct time.
  std::map<std::int64_t, std::vector<ref>> groups;
  for (auto& [mon, w] : pending) {
    if (w.exited) continue;
    const shutdown_spec how = w.spec->effective_shutdown();
    switch (how.which()) {
      case shutdown_spec::kind::brutal_kill:
        self().exit(w.child, exit_reason::kill());
        break;
      case shutdown_spec::kind::infinite:
        signal_shutdown(self(), w.child);
        break;
      case shutdown_spec::kind::timeout:
        signal_shutdown(self(), w.child);
        groups[how.time().count()].push_back(mon);
        break;
    }
  }
  std::unordered_map<std::uint64_t, std::vector<ref>*> timer_groups;
  std::vector<ref> timers;
  std::uint64_t next_group = 0;
  for (auto& [ms, members] : groups) {
    const std::uint64_t g = ++next_group;
    timers.push_back(
        self().send_after(self().self(), kill_timer{g}, std::chrono::milliseconds(ms)));
    timer_groups.emplace(g, &members);
  }
  // 3. Wait for every DOWN; a timer kills the members of its group still alive.
  while (!pending.empty()) {
    auto m = co_await self().receive(
        on<down>().when([&](const down& d) { return pending.count(d.ref) != 0; }),
        on<kill_timer>().when(
            [&](const kill_timer& t) { return timer_groups.count(t.group) != 0; }));
    if (auto* d = m.get_if<down>()) {
      auto it = pending.find(d->ref);
      const exit_reason& why = it->second.exited ? it->second.reason : d->reason;
      if (!clean_shutdown(*it->second.spec, why))
        report("shutdown_error", why, *it->second.spec, it->second.child);
      pending.erase(it);
      continue;
    }
    const std::uint64_t g = m.get<kill_timer>().group;
    for (const ref mon : *timer_groups.at(g)) {
      if (auto it = pending.find(mon); it != pending.end())
        self().exit(it->second.child, exit_reason::kill());
    }
    timer_groups.erase(g);
  }
  // 4. Leftover timers: cancel, and flush one that fired meanwhile.
  for (const ref t : timers) (void)self().cancel_timer(t);
  for (;;) {
    auto stale = co_await self().receive(on<kill_timer>().when([&](const kill_timer& t) {
      return timer_groups.count(t.group) != 0;
    }),
                                         after(std::chrono::milliseconds(0)));
    if (!stale) break;
  }
  children_.clear();
}

}  // namespace detail

// -- public entry points -------------------------------------------------------------------------

using detail::dynamic_supervisor_server;

namespace {
bool set_shedding_in(detail::runtime_core& rt, pid sup, shedding mode) {
  if (static_cast<std::uint8_t>(mode) > static_cast<std::uint8_t>(shedding::off))
    throw std::invalid_argument("dynamic_supervisor::set_shedding: unknown mode");
  const auto c = detail::find_supervisor(rt, sup);
  if (c == nullptr || std::string_view(c->kind) != "dynamic_supervisor") return false;
  c->shed_mode.store(static_cast<std::uint8_t>(mode), std::memory_order_relaxed);
  return true;
}
}  // namespace

task<start_result> dynamic_supervisor::start_link(process& self, supervisor_options opts,
                                                  dynamic_supervisor_init_fn init) {
  const server_options so{opts.name, opts.timeout, std::nullopt, opts.mailbox};
  co_return co_await dynamic_supervisor_server::start_link(self, so, std::move(init), opts.wait,
                                                           opts.priority);
}

task<start_result> dynamic_supervisor::start_link(process& self, supervisor_options opts,
                                                  const dynamic_supervisor_flags& flags) {
  dynamic_supervisor_init_fn init = [flags]() { return dynamic_supervisor_init(flags); };
  co_return co_await start_link(self, opts, std::move(init));
}

start_result dynamic_supervisor::start_link(scoped_process& me, supervisor_options opts,
                                            const dynamic_supervisor_flags& flags) {
  dynamic_supervisor_init_fn init = [flags]() { return dynamic_supervisor_init(flags); };
  return dynamic_supervisor_server::start_link(
      me, server_options{opts.name, opts.timeout, std::nullopt, opts.mailbox}, std::move(init),
      opts.wait, opts.priority);
}

template <call_context Ctx>
in_context<Ctx, sup_result<start_result>> dynamic_supervisor::start_child(
    Ctx& self, dynamic_supervisor_ref sup, child_spec spec, timeout_value timeout) {
  if (auto e = detail::check_dynamic_spec(spec))
    return detail::ready_in(self, sup_result<start_result>(unexpected(sup_error{
                                      sup_errc::invalid_child_spec, pid(), {}, std::move(e)})));
  return detail::sup_call(self, sup, detail::dyn_start_child{std::move(spec)}, timeout);
}

request_id<sup_result<start_result>> dynamic_supervisor::send_start_child(
    basic_process& self, dynamic_supervisor_ref sup, child_spec spec) {
  if (auto e = detail::check_dynamic_spec(spec))
    throw std::invalid_argument("dynamic_supervisor::send_start_child: " + e->to_string());
  return send_request(self, std::move(sup), detail::dyn_start_child{std::move(spec)});
}

template <call_context Ctx>
in_context<Ctx, sup_result<void>> dynamic_supervisor::terminate_child(Ctx& self,
                                                                      dynamic_supervisor_ref sup,
                                                                      pid child,
                                                                      timeout_value timeout) {
  return detail::sup_call(self, sup, detail::dyn_terminate_child{child}, timeout, /*prio=*/true);
}

template <call_context Ctx>
in_context<Ctx, std::vector<child_info>> dynamic_supervisor::which_children(
    Ctx& self, dynamic_supervisor_ref sup, timeout_value timeout) {
  return detail::owned_call(self, sup, detail::dyn_which_children{}, timeout, /*prio=*/true);
}

template <call_context Ctx>
in_context<Ctx, child_counts> dynamic_supervisor::count_children(Ctx& self,
                                                                 dynamic_supervisor_ref sup,
                                                                 timeout_value timeout) {
  return detail::owned_call(self, sup, detail::dyn_count_children{}, timeout, /*prio=*/true);
}

template <call_context Ctx>
in_context<Ctx, void> dynamic_supervisor::stop(Ctx& self, dynamic_supervisor_ref sup,
                                               exit_reason reason, timeout_value timeout) {
  return beamlet::stop(self, sup, std::move(reason), timeout);
}

// The two contexts of each management call (beamlet/core/call_context.hpp).
#define BEAMLET_DYNAMIC_SUPERVISOR_CALL(ret, name, ...)                                       \
  template in_context<process, ret> dynamic_supervisor::name<process>(process&, __VA_ARGS__); \
  template in_context<scoped_process, ret> dynamic_supervisor::name<scoped_process>(          \
      scoped_process&, __VA_ARGS__)
BEAMLET_DYNAMIC_SUPERVISOR_CALL(sup_result<start_result>, start_child, dynamic_supervisor_ref,
                                child_spec, timeout_value);
BEAMLET_DYNAMIC_SUPERVISOR_CALL(sup_result<void>, terminate_child, dynamic_supervisor_ref, pid,
                                timeout_value);
BEAMLET_DYNAMIC_SUPERVISOR_CALL(std::vector<child_info>, which_children, dynamic_supervisor_ref,
                                timeout_value);
BEAMLET_DYNAMIC_SUPERVISOR_CALL(child_counts, count_children, dynamic_supervisor_ref,
                                timeout_value);
BEAMLET_DYNAMIC_SUPERVISOR_CALL(void, stop, dynamic_supervisor_ref, exit_reason, timeout_value);
#undef BEAMLET_DYNAMIC_SUPERVISOR_CALL

bool dynamic_supervisor::set_shedding(runtime& rt, pid sup, shedding mode) {
  return set_shedding_in(rt.core(), sup, mode);
}

bool dynamic_supervisor::set_shedding(basic_process& self, pid sup, shedding mode) {
  return set_shedding_in(*detail::runtime_of(self), sup, mode);
}

start_function dynamic_supervisor_start(dynamic_supervisor_flags flags, supervisor_options opts) {
  return start_function([flags = std::move(flags), name = std::string(opts.name),
                         timeout = opts.timeout, wait = opts.wait, mailbox = opts.mailbox,
                         prio = opts.priority](process& sup) -> task<start_result> {
           const supervisor_options o{name, timeout, wait, mailbox, prio};
           co_return co_await dynamic_supervisor::start_link(sup, o, flags);
         })
      .of_type(child_type::supervisor);
}

BEAMLET_END_PRIVATE_NAMESPACE
