#include "supervision.hpp"

#include <chrono>
#include <iterator>
#include <random>
#include <stdexcept>

#include <beamlet/core/receive.hpp>
#include <beamlet/core/system_messages.hpp>

#include "reports.hpp"
#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
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

std::optional<std::string> check_start_rate(const std::optional<rate_limit>& r) {
  if (!r) return std::nullopt;
  try {
    token_bucket check(*r);
  } catch (const std::invalid_argument&) {
    return concat({"{invalid_start_rate,{", std::to_string(r->per_second), ",",
                   std::to_string(r->burst), "}}"});
  }
  return std::nullopt;
}

namespace {
// A number in [0, 1) from this thread's generator. Never inlined: code that reaches a
// thread_local from inside a coroutine may keep its address across a suspension, and so use
// another thread's generator after the process moved (beamlet/core/task.hpp says more).
[[gnu::noinline]] double unit_random() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}
}  // namespace

std::chrono::nanoseconds backoff_state::next_delay(const restart_backoff& b, clock_time now,
                                                   bool retry) {
  ++generation_;
  if (!retry && now - started_ >= b.reset_after) failures_ = 0;
  auto delay = std::chrono::duration_cast<std::chrono::nanoseconds>(b.delay(failures_));
  ++failures_;
  if (b.jitter > 0) {
    // Spread restarts of children that failed together (a thundering herd otherwise).
    const double u = unit_random();
    delay += std::chrono::nanoseconds(
        static_cast<std::int64_t>(static_cast<double>(delay.count()) * b.jitter * u));
  }
  return delay;
}

void signal_shutdown(basic_process& self, pid child) {
  // A child that published a priority alias (a supervisor with `priority`) takes its shutdown
  // ahead of whatever it has queued.
  if (const auto alias = published_priority_alias(*runtime_of(self), child))
    self.exit(*alias, exit_reason::shutdown());
  else
    self.exit(child, exit_reason::shutdown());
}

namespace {
auto exit_of(pid child) {
  return on<exit_message>().when([child](const exit_message& e) { return e.from == child; });
}
auto down_for(ref mref) {
  return on<down>().when([mref](const down& d) { return d.ref == mref; });
}
}  // namespace

namespace {
task<exit_reason> stop_and_wait(process& self, pid child, const child_spec& spec) {
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
  signal_shutdown(self, child);
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
}  // namespace

task<exit_reason> shutdown_child(process& self, pid child, const child_spec& spec,
                                 std::string_view module) {
  exit_reason reason = co_await stop_and_wait(self, child, spec);
  if (!clean_shutdown(spec, reason))
    supervisor_report(self, module, "shutdown_error", reason.to_string(), spec, child);
  co_return reason;
}

bool restart_window::add(clock_time at) {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(at.time_since_epoch()).count();
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

}  // namespace detail

BEAMLET_END_PRIVATE_NAMESPACE
