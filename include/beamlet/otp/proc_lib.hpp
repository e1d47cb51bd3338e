/// @file
/// beamlet/otp/proc_lib.hpp: the synchronous start protocol (OTP proc_lib, spec §5).
///
/// A starter spawns a child and blocks in a selective receive until the child reports how its
/// initialisation went (`starter::ack`, proc_lib:init_ack). Every gen_server, and so every
/// supervisor child start, goes through it. How the starter waits is selectable, per call or as a
/// process flag (`ack_wait(mode)`):
///
///  * ack_wait_mode::scan   - the receive is keyed on the child's pid, as in OTP 25-27. It
///                            cannot skip anything, so it examines the starter's whole mailbox
///                            once, then each new arrival. A supervisor with N queued requests
///                            pays O(N) per child start: the outage (spec §1.3 rules 19-20).
///  * ack_wait_mode::marker - the receive is keyed on a ref made (with a receive marker) just
///                            before the spawn, as erlang/otp PR #11633 proposes: O(1) whatever
///                            the backlog.
///
/// Both modes give identical observable results (return values, and what is left in the
/// mailbox); only the cost differs. Results follow OTP 25 (§5.3-5.5):
///  * the child acks R: returns R unchanged;
///  * start_link, the child exits before acking: a trapping starter gets {error, Reason} (the EXIT
///    is consumed); a non-trapping one is killed by the link if the reason is abnormal, and waits
///    for the timeout if it is `normal`;
///  * start (monitor, no link), the child exits before acking: {error, Reason};
///  * timeout: the child is unlinked and killed, its EXIT (if any) flushed, {error, timeout}.
/// The default timeout is infinity, as in OTP.
///
/// Thread-safety: called from the starting process itself (or the thread owning a scoped_process).
#pragma once

#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/otp/start_result.hpp>

BEAMLET_BEGIN_NAMESPACE

/// {ack, Pid, Ret}: the message a child sends to its starter. `tag` is set in marker mode.
struct init_ack_message {
  pid from;             ///< the child that acks
  ref tag;              ///< the starter's marked ref in marker mode; null in scan mode
  start_result result;  ///< what the child's init reports (Ret)
};
namespace detail {
// A starter waits for this: a bounded mailbox never drops it.
template <>
inline constexpr bool is_control_message<init_ack_message> = true;
}  // namespace detail

/// Handed to a child started through proc_lib: how to acknowledge its initialisation.
class starter {
 public:
  starter() noexcept = default;
  /// Acks go to `parent`, carrying `tag` (null in scan mode). Made by the start functions.
  starter(pid parent, ref tag) noexcept : parent_(parent), tag_(tag) {}

  /// The process that started this one (proc_lib's first ancestor).
  pid parent() const noexcept { return parent_; }
  /// proc_lib:init_ack(Ret). Call exactly once; a second ack is an ordinary message to the
  /// parent (§5 rule 8).
  void ack(basic_process& self, start_result result) const {
    self.send(parent_, init_ack_message{self.self(), tag_, std::move(result)});
  }

 private:
  pid parent_;
  ref tag_;
};

/// Options of proc_lib's start and start_link.
struct start_options {
  /// How long to wait for the ack; infinity is OTP's default.
  timeout_value timeout{};
  /// How to wait; nullopt uses the starting process's ack_wait flag.
  std::optional<ack_wait_mode> wait{};
  /// Bounds the child's mailbox (beamlet/core/mailbox_limit.hpp); unbounded by default.
  mailbox_limit mailbox{};
};

namespace detail {

inline after_clause<> start_timeout(const start_options& o) {
  return after(o.timeout);
}

template <class Fn>
class child_body_fn {
 public:
  /// process_info and crash reports name the user's body, not this wrapper.
  using initial_call = typename initial_call_of<Fn>::type;
  child_body_fn(Fn fn, starter st) : fn_(std::move(fn)), st_(st) {}
  // The body object lives in the process until it ends, so the coroutine may use `this`.
  task<> operator()(process& c) { co_await fn_(c, st_); }

 private:
  Fn fn_;
  starter st_;
};
template <class Fn>
auto child_body(Fn fn, starter st) {
  return child_body_fn<Fn>(std::move(fn), st);
}

template <class F>
void check_child_body() {
  static_assert(std::is_invocable_r_v<task<>, std::decay_t<F>&, process&, const starter&>,
                "a proc_lib child body must be callable as task<>(process&, const starter&)");
}
/// The coroutine starts (start_link/start from a process) are always co_awaited.
template <class F>
void check_awaited_child_body() {
  check_child_body<F>();
  static_assert(coroutine_safe_argument<F>,
                "start_link/start: with GCC 12, pass a child body that is an aggregate with a "
                "destructor as a named variable, not a temporary: GCC 12 miscompiles such "
                "temporaries in a co_await expression (docs/gcc12-coroutines.md)");
}

inline auto ack_from(pid child) {
  return on<init_ack_message>().when(
      [child](const init_ack_message& a) { return a.from == child && !a.tag; });
}
inline auto ack_tagged(ref tag) {
  return on<init_ack_message>().when([tag](const init_ack_message& a) { return a.tag == tag; });
}
inline auto exit_from(pid child) {
  return on<exit_message>().when([child](const exit_message& e) { return e.from == child; });
}
inline auto down_of(ref mref) {
  return on<down>().when([mref](const down& d) { return d.ref == mref; });
}

}  // namespace detail

namespace detail {

/// proc_lib:start_link's protocol, for a process or (blocking) a scoped_process.
template <class Self, class Fn>
task<start_result> start_link_protocol(Self& self, Fn fn, start_options opts) {
  if (opts.wait.value_or(self.ack_wait()) == ack_wait_mode::scan) {
    // OTP 25 sync_start_link/2: {ack, Pid, Ret} or {'EXIT', Pid, Reason}, keyed on the pid.
    const pid child = self.spawn_opt(child_body(std::move(fn), starter(self.self(), ref())),
                                     {.link = true, .mailbox = opts.mailbox})
                          .pid;
    set_waiting_for(self, "init ack from", child);
    auto m = co_await receive_on(self, ack_from(child), exit_from(child), start_timeout(opts));
    if (auto* a = m.template get_if<init_ack_message>()) co_return std::move(a->result);
    if (auto* e = m.template get_if<exit_message>()) co_return start_result::error(e->reason);
    self.unlink(child);
    self.exit(child, exit_reason::kill());
    co_await receive_on(self, exit_from(child), after(std::chrono::milliseconds(0)));
    co_return start_result::error(exit_reason::error("timeout"));
  }
  // Marker mode: every clause is about messages created after the marker, so the receive skips
  // the backlog. The tag is made first so the child can carry it.
  const ref tag = self.make_ref(marked);
  const spawn_result sr = self.spawn_opt(child_body(std::move(fn), starter(self.self(), tag)),
                                         {.link = true, .monitor = true, .mailbox = opts.mailbox});
  const auto deadline = deadline_after(wait_now(self), opts.timeout);
  set_waiting_for(self, "init ack from", sr.pid);
  auto m = co_await receive_on(self, since(tag), ack_tagged(tag), down_of(sr.monitor),
                               start_timeout(opts));
  if (auto* a = m.template get_if<init_ack_message>()) {
    self.demonitor(sr.monitor, flush);
    co_return std::move(a->result);
  }
  if (auto* d = m.template get_if<down>()) {
    if (self.trap_exit()) {
      // The EXIT came before the DOWN; a pid-keyed receive would have consumed it.
      co_await receive_on(self, exit_from(sr.pid), after(std::chrono::milliseconds(0)));
      co_return start_result::error(d->reason);
    }
    if (!d->reason.is_normal())
      co_return start_result::error(d->reason);  // cannot happen: the
                                                 // link killed us
    // Not trapping, child ended `normal` before acking: OTP 25 hears nothing and waits for the
    // timeout (§5 rule 4). So do we.
    if (!opts.timeout.finite()) {
      for (;;) co_await receive_on(self, since(tag), ack_tagged(tag));
    }
    const auto left = std::max(clock_time::duration::zero(), deadline - wait_now(self));
    co_await receive_on(self, since(tag), ack_tagged(tag), after(left));
  } else {
    self.demonitor(sr.monitor, flush);
  }
  self.unlink(sr.pid);
  self.exit(sr.pid, exit_reason::kill());
  co_await receive_on(self, exit_from(sr.pid), after(std::chrono::milliseconds(0)));
  co_return start_result::error(exit_reason::error("timeout"));
}

}  // namespace detail

/// proc_lib:start_link: spawns `body(child, starter)` linked to `self` and waits for its ack.
template <class F>
task<start_result> start_link(process& self, F&& body, start_options opts = {}) {
  detail::check_awaited_child_body<F>();
  return detail::start_link_protocol(self, std::decay_t<F>(std::forward<F>(body)), opts);
}

/// start_link from an outside thread: blocks the thread that owns `me`. Same protocol, with
/// the scoped_process's ack_wait flag (scan unless set).
template <class F>
start_result start_link(scoped_process& me, F&& body, start_options opts = {}) {
  detail::check_child_body<F>();
  return detail::run_to_completion(
      detail::start_link_protocol(me, std::decay_t<F>(std::forward<F>(body)), opts));
}

/// proc_lib:start: spawns `body(child, starter)` monitored (not linked) and waits for its ack.
template <class F>
task<start_result> start(process& self, F&& body, start_options opts = {}) {
  detail::check_awaited_child_body<F>();
  using Fn = std::decay_t<F>;
  Fn fn(std::forward<F>(body));
  const bool scan = opts.wait.value_or(self.ack_wait()) == ack_wait_mode::scan;
  // OTP 25 sync_start/2 waits on {ack, Pid, Ret} (pid-keyed) or {'DOWN', Ref, ...}: no marker.
  const ref tag = scan ? ref() : self.make_ref(marked);
  const spawn_result sr =
      self.spawn_opt(detail::child_body(std::move(fn), starter(self.self(), tag)),
                     {.monitor = true, .mailbox = opts.mailbox});
  auto done = [&](auto&& m) -> std::optional<start_result> {
    if (auto* a = m.template get_if<init_ack_message>()) {
      self.demonitor(sr.monitor, flush);
      return std::move(a->result);
    }
    if (auto* d = m.template get_if<down>()) return start_result::error(d->reason);
    return std::nullopt;
  };
  std::optional<start_result> r;
  detail::set_waiting_for(self, "init ack from", sr.pid);
  if (scan) {
    r = done(co_await self.receive(detail::ack_from(sr.pid), detail::down_of(sr.monitor),
                                   detail::start_timeout(opts)));
  } else {
    r = done(co_await self.receive(since(tag), detail::ack_tagged(tag), detail::down_of(sr.monitor),
                                   detail::start_timeout(opts)));
  }
  if (r) co_return std::move(*r);
  self.exit(sr.pid, exit_reason::kill());
  self.demonitor(sr.monitor, flush);
  co_return start_result::error(exit_reason::error("timeout"));
}

BEAMLET_END_NAMESPACE
