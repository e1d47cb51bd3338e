// The static supervisor (spec §6), implemented as a gen_server like OTP's.
#include <beamlet/otp/supervisor.hpp>

#include <algorithm>
#include <deque>

#include "reports.hpp"
#include "supervision.hpp"
#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

// -- requests ------------------------------------------------------------------------------------

struct start_child_req {
  child_spec spec;
  using reply_type = sup_result<start_result>;
};
struct terminate_child_req {
  std::string id;
  using reply_type = sup_result<void>;
};
struct restart_child_req {
  std::string id;
  using reply_type = sup_result<start_result>;
};
struct delete_child_req {
  std::string id;
  using reply_type = sup_result<void>;
};
struct which_children_req {
  using reply_type = std::vector<child_info>;
};
struct count_children_req {
  using reply_type = child_counts;
};
struct get_childspec_req {
  std::string id;
  using reply_type = sup_result<child_spec>;
};
/// Cast to itself after a failed restart, so the retry runs behind queued messages (§6.3 r9).
struct try_again_restart {
  std::string id;
};
/// A restart postponed by the child's backoff (child_spec::backoff), due now; `generation`
/// tells a stale timer (the child was restarted or terminated meanwhile) from the live one.
struct backoff_restart {
  std::string id;
  std::uint64_t generation;
};

struct sup_child {
  child_spec spec;
  pid id;  // null: undefined
  bool restarting = false;
  backoff_state backoff;
};

}  // namespace

// The supervisor's notes to itself: a bounded mailbox must never drop them, or a restart would
// be lost.
template <>
inline constexpr bool is_control_message<try_again_restart> = true;
template <>
inline constexpr bool is_control_message<backoff_restart> = true;

class supervisor_server : public gen_server<supervisor_server> {
 public:
  using initial_call = beamlet::supervisor;  // what process_info and reports call it

  supervisor_server(supervisor_init_fn init, ack_wait_mode wait, bool priority)
      : init_fn_(std::move(init)), wait_(wait), priority_(priority) {}

  task<gen::init_result> init();

  task<sup_result<start_result>> handle_call(const start_child_req& r,
                                             from<sup_result<start_result>>);
  task<sup_result<void>> handle_call(const terminate_child_req& r, from<sup_result<void>>);
  task<sup_result<start_result>> handle_call(const restart_child_req& r,
                                             from<sup_result<start_result>>);
  sup_result<void> handle_call(const delete_child_req& r, from<sup_result<void>>);
  std::vector<child_info> handle_call(const which_children_req&, from<std::vector<child_info>>);
  child_counts handle_call(const count_children_req&, from<child_counts>);
  sup_result<child_spec> handle_call(const get_childspec_req& r, from<sup_result<child_spec>>);

  task<gen::action> handle_info(any_message m);
  task<> terminate(const exit_reason& reason);

 private:
  using children_t = std::vector<sup_child>;

  children_t::iterator find(const std::string& id) {
    return std::find_if(children_.begin(), children_.end(),
                        [&](const sup_child& c) { return c.spec.id == id; });
  }
  children_t::iterator find(pid p) {
    return std::find_if(children_.begin(), children_.end(),
                        [&](const sup_child& c) { return c.id == p; });
  }

  task<start_result> start_one(sup_child& c);
  /// Restarts the group the strategy ties to child `id`. Returns a stop action when the
  /// intensity is exceeded.
  task<std::optional<gen::action>> restart(std::string id, pid failed = pid());
  /// The start half of a restart: starts the group of `failed_id` in order.
  task<> start_group(std::string failed_id);
  /// Stops children_[i] if it runs; a temporary child is dropped.
  task<> stop_child(std::size_t i);
  std::optional<gen::action> significant_exit(const sup_child& c);
  void report(std::string_view context, const exit_reason& reason, const sup_child& c, pid child) {
    supervisor_report(self(), "supervisor", context, reason.to_string(), c.spec, child);
  }

  supervisor_init_fn init_fn_;
  ack_wait_mode wait_;
  bool priority_;

  supervisor_flags flags_;
  children_t children_;
  restart_window window_;
  supervisor_registration stats_;
};

// -- init ----------------------------------------------------------------------------------------

task<gen::init_result> supervisor_server::init() {
  supervisor_init si;
  if (auto end =
          begin_init(self(), wait_, init_fn_, "supervisor", si,
                     [](const supervisor_init& v) -> std::optional<exit_reason> {
                       if (auto e = supervisor_data(check_flags(v.flags))) return e;
                       if (auto e = check_childspecs(v.children))
                         return exit_reason::error(concat({"{start_spec,", e->to_string(), "}"}));
                       return std::nullopt;
                     }))
    co_return std::move(*end);
  flags_ = si.flags;
  window_ = restart_window(flags_.intensity, flags_.period);
  if (priority_) (void)self().make_priority_alias(/*publish=*/true);
  stats_.enroll(self(), "supervisor");
  // Children start one at a time, in list order (§6.2 rule 3).
  for (child_spec& spec : si.children) {
    children_.push_back(sup_child{std::move(spec), pid(), false, {}});
    sup_child& c = children_.back();
    const start_result r = co_await start_one(c);
    if (r.is_ok()) {
      c.id = r.pid();
    } else if (r.is_ignore()) {
      if (c.spec.restart == restart_type::temporary) children_.pop_back();
    } else {
      // Rule 4: stop what was started, in reverse order, and fail with the child's reason.
      report("start_error", r.reason(), c, pid());
      const std::string id = c.spec.id;
      children_.pop_back();
      for (std::size_t i = children_.size(); i-- > 0;) co_await stop_child(i);
      co_return gen::stop(failed_to_start(id, r.reason()));
    }
  }
  stats_->set_children(children_.size());
  co_return gen::ok();
}

task<start_result> supervisor_server::start_one(sup_child& c) {
  static const extra_arguments none;
  start_result r =
      co_await start_child_process(self(), c.spec, none, start_failure_style::supervisor);
  if (r.is_ok()) {
    c.backoff.started(self().now());
    progress_report(self(), "supervisor", c.spec, r.pid());
  }
  co_return r;
}

// -- restarts ------------------------------------------------------------------------------------

std::optional<gen::action> supervisor_server::significant_exit(const sup_child& c) {
  if (!c.spec.significant || flags_.shutdown_when == auto_shutdown::never) return std::nullopt;
  if (flags_.shutdown_when == auto_shutdown::any_significant)
    return gen::stop(exit_reason::shutdown());
  for (const sup_child& o : children_)
    if (&o != &c && o.spec.significant && o.id) return std::nullopt;
  return gen::stop(exit_reason::shutdown());
}

task<gen::action> supervisor_server::handle_info(any_message m) {
  if (auto* r = m.get_if<try_again_restart>()) {
    auto it = find(r->id);
    if (it == children_.end() || !it->restarting) co_return gen::noreply();
    std::optional<gen::action> a = co_await restart(r->id);
    co_return a ? std::move(*a) : gen::noreply();
  }
  if (auto* b = m.get_if<backoff_restart>()) {
    auto it = find(b->id);
    // Deleted, terminated or restarted by hand meanwhile (a stale timer): nothing to do.
    if (it == children_.end() || !it->restarting || b->generation != it->backoff.generation())
      co_return gen::noreply();
    co_await start_group(b->id);
    stats_->set_children(children_.size());
    co_return gen::noreply();
  }
  auto* e = m.get_if<exit_message>();
  if (e == nullptr) co_return gen::noreply();  // unexpected message: ignored (§6.4 rule 18)
  auto it = find(e->from);
  if (it == children_.end()) co_return gen::noreply();  // not a child: ignored (§6.3 rule 6)
  const exit_reason reason = e->reason;
  const pid dead = e->from;
  if (reports_termination(it->spec, reason)) report("child_terminated", reason, *it, dead);
  // §6.3 rule 6: the restart decision.
  if (it->spec.restart == restart_type::temporary) {
    std::optional<gen::action> a = significant_exit(*it);
    children_.erase(it);
    stats_->set_children(children_.size());
    co_return a ? std::move(*a) : gen::noreply();
  }
  if (it->spec.restart == restart_type::transient && reason.is_clean()) {
    it->id = pid();
    std::optional<gen::action> a = significant_exit(*it);
    co_return a ? std::move(*a) : gen::noreply();
  }
  it->id = pid();
  std::optional<gen::action> a = co_await restart(it->spec.id, dead);
  stats_->set_children(children_.size());
  co_return a ? std::move(*a) : gen::noreply();
}

task<std::optional<gen::action>> supervisor_server::restart(std::string failed_id, pid failed) {
  // Every attempt counts, retries included (§6.3 rule 7).
  supervisor_counters::bump(stats_->restarts);
  if (!window_.add(self().now())) {
    // reached_max_restart_intensity: drop the child, stop the rest, exit shutdown.
    auto it = find(failed_id);
    supervisor_report(self(), "supervisor", "shutdown", "reached_max_restart_intensity", it->spec,
                      failed);
    children_.erase(it);
    co_return gen::stop(exit_reason::shutdown());
  }
  auto index_of = [&](const std::string& id) {
    return static_cast<std::size_t>(find(id) - children_.begin());
  };
  const bool all = flags_.strategy == restart_strategy::one_for_all;
  if (flags_.strategy != restart_strategy::one_for_one) {
    // Stop the rest of the group in reverse start order; temporary members are dropped, not
    // restarted, and use up no intensity (§6.3 rule 8, temporary_bystander).
    const std::size_t first = all ? 0 : index_of(failed_id);
    for (std::size_t i = children_.size(); i-- > first;) {
      if (children_[i].spec.id == failed_id) continue;
      co_await stop_child(i);
    }
  }
  if (sup_child& c = children_[index_of(failed_id)]; c.spec.backoff) {
    // Decided (and counted) now; the group starts when the delay is over.
    const auto delay = c.backoff.next_delay(*c.spec.backoff, self().now(), c.restarting);
    c.restarting = true;
    self().send_after(self().self(), backoff_restart{failed_id, c.backoff.generation()}, delay);
    co_return std::nullopt;
  }
  co_await start_group(std::move(failed_id));
  co_return std::nullopt;
}

task<> supervisor_server::start_group(std::string failed_id) {
  auto index_of = [&](const std::string& id) {
    return static_cast<std::size_t>(find(id) - children_.begin());
  };
  const bool all = flags_.strategy == restart_strategy::one_for_all;
  // Start the group in order. For one_for_one it is the child alone.
  const std::size_t first = all ? 0 : index_of(failed_id);
  const std::size_t last =
      flags_.strategy == restart_strategy::one_for_one ? first + 1 : children_.size();
  for (std::size_t i = first; i < last; ++i) {
    // Already running: restarted by hand while a backoff delay ran (never the case otherwise:
    // the group was stopped before this).
    if (children_[i].id) continue;
    const start_result r = co_await start_one(children_[i]);
    sup_child& c = children_[i];
    if (r.is_ok()) {
      c.id = r.pid();
      c.restarting = false;
      continue;
    }
    if (r.is_ignore()) {
      c.restarting = false;
      continue;
    }
    // A failed restart: undo the siblings restarted so far, and try the whole restart again
    // later, behind the messages already queued (§6.3 rule 9). As in OTP, the child whose exit
    // caused the restart is the one marked restarting; the retry restarts its group again.
    report("start_error", r.reason(), c, pid());
    for (std::size_t k = i; k-- > first;) co_await stop_child(k);
    children_[index_of(failed_id)].restarting = true;
    self().send(self().self(), try_again_restart{failed_id});
    co_return;
  }
}

task<> supervisor_server::stop_child(std::size_t i) {
  sup_child& c = children_[i];
  if (c.id) co_await shutdown_child(self(), c.id, c.spec, "supervisor");
  c.id = pid();
  if (c.spec.restart == restart_type::temporary)
    children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(i));
}

task<> supervisor_server::terminate(const exit_reason&) {
  // Children stop sequentially in reverse start order (§6.2 rule 5).
  for (std::size_t i = children_.size(); i-- > 0;) {
    sup_child& c = children_[i];
    if (c.id) co_await shutdown_child(self(), c.id, c.spec, "supervisor");
    c.id = pid();
  }
}

// -- management API ------------------------------------------------------------------------------

task<sup_result<start_result>> supervisor_server::handle_call(const start_child_req& r,
                                                              from<sup_result<start_result>>) {
  supervisor_counters::bump(stats_->start_child_calls);
  if (auto e = validate(r.spec))
    co_return unexpected(sup_error{sup_errc::invalid_child_spec, pid(), {}, e});
  if (auto it = find(r.spec.id); it != children_.end()) {
    if (it->id)
      co_return unexpected(sup_error{sup_errc::already_started, it->id, {}, std::nullopt});
    co_return unexpected(sup_error{sup_errc::already_present, pid(), {}, std::nullopt});
  }
  children_.push_back(sup_child{r.spec, pid(), false, {}});
  const start_result s = co_await start_one(children_.back());
  sup_child& c = children_.back();
  stats_->set_children(children_.size());
  if (s.is_ok()) {
    c.id = s.pid();
    co_return s;
  }
  if (s.is_ignore()) {
    // {ok, undefined}: the spec stays, unless temporary (§6.4 rule 11).
    if (c.spec.restart == restart_type::temporary) children_.pop_back();
    stats_->set_children(children_.size());
    co_return start_result::ignore();
  }
  children_.pop_back();  // a failed start discards the spec
  stats_->set_children(children_.size());
  supervisor_counters::bump(stats_->start_child_errors);
  co_return unexpected(sup_error{sup_errc::start_failed, pid(), s.reason(), std::nullopt});
}

task<sup_result<void>> supervisor_server::handle_call(const terminate_child_req& r,
                                                      from<sup_result<void>>) {
  auto it = find(r.id);
  if (it == children_.end())
    co_return unexpected(sup_error{sup_errc::not_found, pid(), {}, std::nullopt});
  if (it->id) co_await shutdown_child(self(), it->id, it->spec, "supervisor");
  it = find(r.id);  // shutdown_child does not touch children_, but stay safe
  if (it->spec.restart == restart_type::temporary) {
    children_.erase(it);
  } else {
    it->id = pid();
    it->restarting = false;
  }
  stats_->set_children(children_.size());
  co_return sup_result<void>{};
}

task<sup_result<start_result>> supervisor_server::handle_call(const restart_child_req& r,
                                                              from<sup_result<start_result>>) {
  auto it = find(r.id);
  if (it == children_.end())
    co_return unexpected(sup_error{sup_errc::not_found, pid(), {}, std::nullopt});
  if (it->restarting)
    co_return unexpected(sup_error{sup_errc::restarting, pid(), {}, std::nullopt});
  if (it->id) co_return unexpected(sup_error{sup_errc::running, pid(), {}, std::nullopt});
  const auto index = static_cast<std::size_t>(it - children_.begin());
  const start_result s = co_await start_one(children_[index]);
  if (s.is_ok()) {
    children_[index].id = s.pid();
    co_return s;
  }
  if (s.is_ignore()) co_return start_result::ignore();
  // A failed restart_child keeps the spec (§6.4 rule 13).
  co_return unexpected(sup_error{sup_errc::start_failed, pid(), s.reason(), std::nullopt});
}

sup_result<void> supervisor_server::handle_call(const delete_child_req& r, from<sup_result<void>>) {
  auto it = find(r.id);
  if (it == children_.end())
    return unexpected(sup_error{sup_errc::not_found, pid(), {}, std::nullopt});
  if (it->restarting) return unexpected(sup_error{sup_errc::restarting, pid(), {}, std::nullopt});
  if (it->id) return unexpected(sup_error{sup_errc::running, pid(), {}, std::nullopt});
  children_.erase(it);
  stats_->set_children(children_.size());
  return {};
}

std::vector<child_info> supervisor_server::handle_call(const which_children_req&,
                                                       from<std::vector<child_info>>) {
  std::vector<child_info> out;
  out.reserve(children_.size());
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {  // newest first (rule 15)
    const auto state = it->restarting ? child_info::state::restarting
                       : it->id       ? child_info::state::running
                                      : child_info::state::undefined;
    out.push_back(child_info{it->spec.id, it->id, state, it->spec.type, it->spec.modules});
  }
  return out;
}

child_counts supervisor_server::handle_call(const count_children_req&, from<child_counts>) {
  child_counts n;
  for (const sup_child& c : children_) {
    ++n.specs;
    if (self().is_alive(c.id)) ++n.active;  // an is_process_alive check
    if (c.spec.type == child_type::supervisor)
      ++n.supervisors;
    else
      ++n.workers;
  }
  return n;
}

sup_result<child_spec> supervisor_server::handle_call(const get_childspec_req& r,
                                                      from<sup_result<child_spec>>) {
  auto it = find(r.id);
  if (it == children_.end())
    return unexpected(sup_error{sup_errc::not_found, pid(), {}, std::nullopt});
  return it->spec;
}

}  // namespace detail

// -- management API errors ----------------------------------------------------------------------

std::string sup_error::to_string() const {
  switch (code) {
    case sup_errc::already_started:
      return detail::concat({"{already_started,", pid.to_string(), "}"});
    case sup_errc::already_present:
      return "already_present";
    case sup_errc::not_found:
      return "not_found";
    case sup_errc::running:
      return "running";
    case sup_errc::restarting:
      return "restarting";
    case sup_errc::start_failed:
      return reason.to_string();
    case sup_errc::invalid_child_spec:
      return spec ? spec->to_string() : std::string("invalid_child_spec");
    case sup_errc::max_children:
      return "max_children";
    case sup_errc::rate_limited:
      return "rate_limited";
    case sup_errc::overloaded:
      return "overloaded";
    case sup_errc::mailbox_full:
      return "mailbox_full";
  }
  return "?";
}

// -- public entry points -------------------------------------------------------------------------

using detail::supervisor_server;

task<start_result> supervisor::start_link(process& self, supervisor_options opts,
                                          supervisor_init_fn init) {
  server_options so{opts.name, opts.timeout, std::nullopt, opts.mailbox};
  co_return co_await supervisor_server::start_link(self, so, std::move(init), opts.wait,
                                                   opts.priority);
}

task<start_result> supervisor::start_link(process& self, supervisor_options opts,
                                          supervisor_flags flags,
                                          std::vector<child_spec> children) {
  supervisor_init_fn init = [flags, children]() { return supervisor_init(flags, children); };
  co_return co_await start_link(self, opts, std::move(init));
}

start_result supervisor::start_link(scoped_process& me, supervisor_options opts,
                                    supervisor_init_fn init) {
  return supervisor_server::start_link(
      me, server_options{opts.name, opts.timeout, std::nullopt, opts.mailbox}, std::move(init),
      opts.wait, opts.priority);
}

template <call_context Ctx>
in_context<Ctx, sup_result<start_result>> supervisor::start_child(Ctx& self, supervisor_ref sup,
                                                                  child_spec spec,
                                                                  timeout_value timeout) {
  return detail::sup_call(self, sup, detail::start_child_req{std::move(spec)}, timeout);
}

template <call_context Ctx>
in_context<Ctx, sup_result<void>> supervisor::terminate_child(Ctx& self, supervisor_ref sup,
                                                              std::string id,
                                                              timeout_value timeout) {
  return detail::sup_call(self, sup, detail::terminate_child_req{std::move(id)}, timeout,
                          /*prio=*/true);
}

namespace {
// Resolves the supervisor anyway, so a dead one still fails with noproc like every call.
task<sup_result<void>> not_an_id(process& self, supervisor_ref sup, timeout_value timeout) {
  (void)co_await detail::owned_call(self, sup, detail::count_children_req{}, timeout);
  co_return unexpected(sup_error{sup_errc::not_found, pid(), {}, std::nullopt});
}
sup_result<void> not_an_id(scoped_process& me, supervisor_ref sup, timeout_value timeout) {
  (void)detail::owned_call(me, sup, detail::count_children_req{}, timeout);
  return unexpected(sup_error{sup_errc::not_found, pid(), {}, std::nullopt});
}
}  // namespace

template <call_context Ctx>
in_context<Ctx, sup_result<void>> supervisor::terminate_child(Ctx& self, supervisor_ref sup, pid,
                                                              timeout_value timeout) {
  return not_an_id(self, sup, timeout);
}

template <call_context Ctx>
in_context<Ctx, sup_result<start_result>> supervisor::restart_child(Ctx& self, supervisor_ref sup,
                                                                    std::string id,
                                                                    timeout_value timeout) {
  return detail::sup_call(self, sup, detail::restart_child_req{std::move(id)}, timeout);
}

template <call_context Ctx>
in_context<Ctx, sup_result<void>> supervisor::delete_child(Ctx& self, supervisor_ref sup,
                                                           std::string id, timeout_value timeout) {
  return detail::sup_call(self, sup, detail::delete_child_req{std::move(id)}, timeout);
}

template <call_context Ctx>
in_context<Ctx, std::vector<child_info>> supervisor::which_children(Ctx& self, supervisor_ref sup,
                                                                    timeout_value timeout) {
  return detail::owned_call(self, sup, detail::which_children_req{}, timeout, /*prio=*/true);
}

template <call_context Ctx>
in_context<Ctx, child_counts> supervisor::count_children(Ctx& self, supervisor_ref sup,
                                                         timeout_value timeout) {
  return detail::owned_call(self, sup, detail::count_children_req{}, timeout, /*prio=*/true);
}

template <call_context Ctx>
in_context<Ctx, sup_result<child_spec>> supervisor::get_childspec(Ctx& self, supervisor_ref sup,
                                                                  std::string id,
                                                                  timeout_value timeout) {
  return detail::sup_call(self, sup, detail::get_childspec_req{std::move(id)}, timeout);
}

template <call_context Ctx>
in_context<Ctx, void> supervisor::stop(Ctx& self, supervisor_ref sup, exit_reason reason,
                                       timeout_value timeout) {
  return beamlet::stop(self, sup, std::move(reason), timeout);
}

// The two contexts of each management call (beamlet/core/call_context.hpp).
#define BEAMLET_SUPERVISOR_CALL(ret, name, ...)                                              \
  template in_context<process, ret> supervisor::name<process>(process&, __VA_ARGS__);        \
  template in_context<scoped_process, ret> supervisor::name<scoped_process>(scoped_process&, \
                                                                            __VA_ARGS__)
BEAMLET_SUPERVISOR_CALL(sup_result<start_result>, start_child, supervisor_ref, child_spec,
                        timeout_value);
BEAMLET_SUPERVISOR_CALL(sup_result<void>, terminate_child, supervisor_ref, std::string,
                        timeout_value);
BEAMLET_SUPERVISOR_CALL(sup_result<void>, terminate_child, supervisor_ref, pid, timeout_value);
BEAMLET_SUPERVISOR_CALL(sup_result<start_result>, restart_child, supervisor_ref, std::string,
                        timeout_value);
BEAMLET_SUPERVISOR_CALL(sup_result<void>, delete_child, supervisor_ref, std::string, timeout_value);
BEAMLET_SUPERVISOR_CALL(std::vector<child_info>, which_children, supervisor_ref, timeout_value);
BEAMLET_SUPERVISOR_CALL(child_counts, count_children, supervisor_ref, timeout_value);
BEAMLET_SUPERVISOR_CALL(sup_result<child_spec>, get_childspec, supervisor_ref, std::string,
                        timeout_value);
BEAMLET_SUPERVISOR_CALL(void, stop, supervisor_ref, exit_reason, timeout_value);
#undef BEAMLET_SUPERVISOR_CALL

start_function supervisor_start(supervisor_flags flags, std::vector<child_spec> children,
                                supervisor_options opts) {
  return start_function([flags, children, name = std::string(opts.name), timeout = opts.timeout,
                         wait = opts.wait, mailbox = opts.mailbox,
                         prio = opts.priority](process& sup) -> task<start_result> {
           const supervisor_options o{name, timeout, wait, mailbox, prio};
           co_return co_await supervisor::start_link(sup, o, flags, children);
         })
      .of_type(child_type::supervisor);
}

BEAMLET_END_PRIVATE_NAMESPACE
