/// @file
/// beamlet/otp/sys.hpp: sys-style debugging of a running gen_server (OTP's sys module).
///
///   counter c = co_await sys::get_state<counter>(self, "counter");  // a copy of the state
///   int n = co_await sys::get_state<counter>(self, "counter",
///                                            [](const counter& s) { return s.n; });
///   server_status st = co_await sys::get_status(self, "counter");  // to_string(st) prints it
///   co_await sys::trace(self, "counter", true);  // each message in and reply out is logged
///   co_await sys::statistics(self, "counter", true);
///   std::optional<server_statistics> s = co_await sys::get_statistics(self, "counter");
///   co_await sys::suspend(self, "counter");  // handles only system messages until resume
///   co_await sys::resume(self, "counter");
///
/// Each is a request the server answers between two of its messages, in its own process, so the
/// state it reports is consistent and never read concurrently. Every function also has a blocking
/// form for outside threads (the same call, made with a scoped_process). Errors are those of a call
/// (call_error): noproc when the server is not alive, timeout when it does not answer in time (a
/// process that is not a gen_server never answers, as in OTP), the server's exit reason if it dies
/// meanwhile. `get_state<S>` on a server of another class throws std::invalid_argument. A
/// suspended server still answers system messages and can still be stopped; its gen_server timeout
/// does not run. Traces go to the logger at `notice`, as "*DBG* <0.9.0> got call ...".
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <beamlet/core/call_context.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/otp/gen_server/client.hpp>
#include <beamlet/otp/gen_server/status.hpp>

BEAMLET_BEGIN_NAMESPACE

namespace detail {

/// Sends a system request to `server` and waits for its reply of type R.
template <class R, class Self>
task<R> sys_protocol(Self& self, server_ref<void> server, sys_request req, const char* what,
                     timeout_value timeout) {
  auto fail = [&server, what, timeout](call_error::kind k, exit_reason r) {
    return make_call_error(k, std::move(r), server.to_string(), what, timeout);
  };
  const pid to = server.resolve(*runtime_of(self));
  if (!to) throw fail(call_error::kind::noproc, exit_reason::noproc());
  if (to == self.self())
    throw fail(call_error::kind::calling_self, exit_reason::error("calling_self"));
  const ref mref = self.monitor(to, marked);
  req.from = self.self();
  req.tag = mref;
  send_node(*runtime_of(self), to, make_message(std::move(req)));
  co_return co_await await_reply<R>(self, to, mref, timeout, fail);
}

/// The same server, addressed without its type (system requests are not typed).
template <class S>
server_ref<void> untyped(const server_ref<S>& s) {
  // Tested on the optional itself, so that GCC sees the via name is there before it is copied.
  if (const std::optional<via_name>& v = s.via(); v.has_value()) return server_ref<void>(*v);
  if (s.by_name()) return server_ref<void>(s.name());
  return server_ref<void>(s.id());
}

inline sys_request sys_op(sys_request::op o) {
  sys_request r;
  r.what = o;
  return r;
}

template <class S, class F>
sys_request state_request(F f) {
  using R = std::decay_t<std::invoke_result_t<F&, const S&>>;
  sys_request r;
  r.what = sys_request::op::get_state;
  r.server_type = &server_type_id<S>;
  r.project = [f = std::move(f)](const void* server, ref tag) mutable -> message_node* {
    if (server == nullptr) return make_reply_node(tag, std::optional<R>());
    return make_reply_node(tag, std::optional<R>(f(*static_cast<const S*>(server))));
  };
  return r;
}

template <class R>
R state_or_throw(std::optional<R>&& r) {
  if (!r) throw std::invalid_argument("sys::get_state: the server is not of the requested class");
  return std::move(*r);
}

inline constexpr auto sys_default_timeout = std::chrono::milliseconds(5000);

/// get_state's protocol, for either context: the projection, already inside `request`, runs
/// in the server. The coroutine takes the request, not the projection: a projection that is a
/// lambda of a function has no linkage, and GCC warns (-Wsubobject-linkage) about a coroutine
/// frame of a header's template that holds one.
template <class R, class Self>
task<R> get_state_protocol(Self& self, server_ref<void> to, sys_request request,
                           timeout_value timeout) {
  auto r = co_await sys_protocol<std::optional<R>>(self, std::move(to), std::move(request),
                                                   "sys:get_state", timeout);
  co_return state_or_throw(std::move(r));
}

}  // namespace detail

namespace sys {

// Each call is declared once for both contexts (beamlet/core/call_context.hpp): from a process
// it is a task to co_await, from an outside thread's scoped_process it blocks.

/// sys:get_state/2 with a projection: runs `f(const S&)` in the server and returns its result.
template <class S, class F, call_context Ctx>
in_context<Ctx, std::decay_t<std::invoke_result_t<F&, const S&>>> get_state(
    Ctx& self, server_ref<S> server, F f, timeout_value timeout = detail::sys_default_timeout) {
  using R = std::decay_t<std::invoke_result_t<F&, const S&>>;
  server_ref<void> to = detail::untyped(server);
  detail::sys_request request = detail::state_request<S>(std::move(f));
  return detail::finish_in(
      self, detail::get_state_protocol<R>(self, std::move(to), std::move(request), timeout));
}
/// sys:get_state/1: a copy of the server object (S must be copyable).
template <class S, call_context Ctx>
in_context<Ctx, S> get_state(Ctx& self, server_ref<S> server,
                             timeout_value timeout = detail::sys_default_timeout) {
  static_assert(std::is_copy_constructible_v<S>,
                "sys::get_state<S>: S is not copyable; pass a projection (const S&) -> R");
  return get_state<S>(
      self, std::move(server), [](const S& s) { return s; }, timeout);
}

/// sys:get_status/1.
template <call_context Ctx>
in_context<Ctx, server_status> get_status(Ctx& self, server_ref<void> server,
                                          timeout_value timeout = detail::sys_default_timeout);
/// sys:suspend/1: until resumed, the server takes only system messages, a stop and its
/// parent's exit; its gen_server timeout does not run.
template <call_context Ctx>
in_context<Ctx, void> suspend(Ctx& self, server_ref<void> server,
                              timeout_value timeout = detail::sys_default_timeout);
/// sys:resume/1: the server takes all its messages again.
template <call_context Ctx>
in_context<Ctx, void> resume(Ctx& self, server_ref<void> server,
                             timeout_value timeout = detail::sys_default_timeout);
/// sys:trace/2: log each message taken and each reply sent (or stop).
template <call_context Ctx>
in_context<Ctx, void> trace(Ctx& self, server_ref<void> server, bool on,
                            timeout_value timeout = detail::sys_default_timeout);
/// sys:statistics/2 with true/false: start (from zero) or stop collecting.
template <call_context Ctx>
in_context<Ctx, void> statistics(Ctx& self, server_ref<void> server, bool on,
                                 timeout_value timeout = detail::sys_default_timeout);
/// sys:statistics/2 with get: nullopt when statistics are off.
template <call_context Ctx>
in_context<Ctx, std::optional<server_statistics>> get_statistics(
    Ctx& self, server_ref<void> server, timeout_value timeout = detail::sys_default_timeout);

}  // namespace sys

BEAMLET_END_NAMESPACE
