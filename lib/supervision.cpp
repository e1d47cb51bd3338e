#include "supervision.hpp"

#include <chrono>
#include <iterator>

#include <beamlet/receive.hpp>
#include <beamlet/system_messages.hpp>

#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "term.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace detail {

task<start_result> start_child_process(process& self, const child_spec& spec,
                                       const extra_arguments& extra, start_failure_style style) {
  // No copy of the start function: callers keep `spec` in place until this returns (the
  // supervisor handles nothing else meanwhile).
  std::optional<exit_reason> failed;
  start_result r;
  try {
    r = co_await spec.start(self, extra);
  } catch (...) {
    failed = exit_reason::from_exception(std::current_exception());
  }
  if (failed) {
    if (style == start_failure_style::dynamic) co_return start_result::error(*failed);
    co_return start_result::error(
        exit_reason::error(concat({"{'EXIT',", failed->to_string(), "}"})));
  }
  // {ok, undefined} is not a start: OTP's supervisors accept {ok, Pid} only for a pid and
  // report anything else as {error, Value}.
  if (r.is_ok() && !r.pid())
    co_return start_result::error(
        exit_reason::error(r.has_info() ? "{ok,undefined,Info}" : "{ok,undefined}"));
  co_return r;
}

namespace {
auto exit_of(pid child) {
  return on<exit_message>().when([child](const exit_message& e) { return e.from == child; });
}
auto down_for(ref mref) {
  return on<down>().when([mref](const down& d) { return d.ref == mref; });
}
}  // namespace

task<exit_reason> shutdown_child(process& self, pid child, const child_spec& spec) {
  // monitor_child/1: the DOWN wait is ref-keyed (a receive marker, as OTP's); the probe for an
  // EXIT that is already queued is pid-keyed, a full scan, as in OTP.
  const ref mref = self.monitor(child, marked);
  self.unlink(child);
  const auto now = std::chrono::milliseconds(0);
  auto queued = co_await self.receive(exit_of(child), after(now));
  if (queued) {
    auto d = co_await self.receive(since(mref), down_for(mref));
    (void)d;
    co_return queued.get<exit_message>().reason;
  }
  const shutdown_spec how = spec.effective_shutdown();
  if (how.which() == shutdown_spec::kind::brutal_kill) {
    self.exit(child, exit_reason::kill());
    auto d = co_await self.receive(since(mref), down_for(mref));
    co_return d.get<down>().reason;
  }
  self.exit(child, exit_reason::shutdown());
  if (how.which() == shutdown_spec::kind::infinite) {
    auto d = co_await self.receive(since(mref), down_for(mref));
    co_return d.get<down>().reason;
  }
  const auto wait = how.time();
  auto d = co_await self.receive(since(mref), down_for(mref), after(wait));
  if (d) co_return d.get<down>().reason;
  // Timed out: kill, and wait for the DOWN again (the marker is gone: a plain ref-keyed wait).
  self.exit(child, exit_reason::kill());
  auto k = co_await self.receive(down_for(mref));
  co_return k.get<down>().reason;
}

bool restart_window::add() {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  stamps_.push_back(now);
  // Inclusive window: a restart exactly `period` seconds ago still counts.
  while (!stamps_.empty() && stamps_.front() < now - period_) stamps_.pop_front();
  return static_cast<std::int64_t>(stamps_.size()) <= intensity_;
}

std::optional<std::string> check_flags(const supervisor_flags& f) {
  const auto s = static_cast<unsigned>(f.strategy);
  if (s > static_cast<unsigned>(restart_strategy::rest_for_one))
    return concat({"{invalid_strategy,", std::to_string(s), "}"});
  if (f.intensity < 0) return concat({"{invalid_intensity,", std::to_string(f.intensity), "}"});
  if (f.period <= 0) return concat({"{invalid_period,", std::to_string(f.period), "}"});
  const auto a = static_cast<unsigned>(f.shutdown_when);
  if (a > static_cast<unsigned>(auto_shutdown::all_significant))
    return concat({"{invalid_auto_shutdown,", std::to_string(a), "}"});
  return std::nullopt;
}

exit_reason failed_to_start(const std::string& id, const exit_reason& reason) {
  return exit_reason::shutdown(
      concat({"{failed_to_start_child,", id, ",", reason.to_string(), "}"}));
}

bool is_alive_in(runtime_core& rt, pid p) noexcept {
  pin guard(rt);
  proc* q = rt.table.lookup(p);
  return q != nullptr && q->inbox.load(std::memory_order_acquire) != closed_mark;
}

}  // namespace detail

// -- child specs ---------------------------------------------------------------------------------

std::string spec_error::to_string() const {
  static const char* const names[] = {
      "missing_id",       "missing_start",        "invalid_restart_type",
      "invalid_shutdown", "invalid_child_type",   "invalid_modules",
      "bad_combination",  "duplicate_child_name", "invalid_significant"};
  const auto i = static_cast<unsigned>(code);
  const char* name = i < std::size(names) ? names[i] : "invalid_child_spec";
  if (detail.empty()) return name;
  return detail::concat({"{", name, ",", detail, "}"});
}

std::optional<spec_error> validate(const child_spec& s, bool require_id) {
  if (require_id && s.id.empty()) return spec_error{spec_errc::missing_id, {}};
  if (!s.start) return spec_error{spec_errc::missing_start, {}};
  if (static_cast<unsigned>(s.restart) > static_cast<unsigned>(restart_type::temporary))
    return spec_error{spec_errc::invalid_restart_type,
                      std::to_string(static_cast<unsigned>(s.restart))};
  if (static_cast<unsigned>(s.type) > static_cast<unsigned>(child_type::supervisor))
    return spec_error{spec_errc::invalid_child_type, std::to_string(static_cast<unsigned>(s.type))};
  if (s.shutdown) {
    const auto k = static_cast<unsigned>(s.shutdown->which());
    if (k > static_cast<unsigned>(shutdown_spec::kind::infinite))
      return spec_error{spec_errc::invalid_shutdown, std::to_string(k)};
    if (s.shutdown->which() == shutdown_spec::kind::timeout && s.shutdown->time().count() < 0)
      return spec_error{spec_errc::invalid_shutdown, std::to_string(s.shutdown->time().count())};
  }
  for (const std::string& m : s.modules)
    if (m.empty()) return spec_error{spec_errc::invalid_modules, "[<<>>]"};
  if (s.significant && s.restart == restart_type::permanent)
    return spec_error{spec_errc::bad_combination, "[{restart,permanent},{significant,true}]"};
  return std::nullopt;
}

std::optional<spec_error> check_childspecs(const std::vector<child_spec>& specs) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (auto e = validate(specs[i])) return e;
    for (std::size_t j = 0; j < i; ++j)
      if (specs[j].id == specs[i].id)
        return spec_error{spec_errc::duplicate_child_name, specs[i].id};
  }
  return std::nullopt;
}

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
  }
  return "?";
}

BEAMLET_END_NAMESPACE
