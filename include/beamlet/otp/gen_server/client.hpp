/// @file
/// beamlet/otp/gen_server/client.hpp: talking to a GenServer: server_ref, call, cast, stop,
/// send_request/receive_response, reply.
///
/// A `server_ref<S>` addresses a server of type S by pid, registered name or via name, resolved at
/// each use; the request types S handles are checked at compile time and replies are typed.
///
///  * call (gen_server:call, spec §4.2): monitor the server with a receive marker, send, wait for
///    the reply or the DOWN. O(1) whatever the caller's mailbox holds. Throws call_error (an
///    exit_exception): noproc, calling_self, timeout, or the server's exit reason, each wrapped
///    as {Reason, {gen_server, call, [Server, Request, Timeout]}}. A reply that arrives after the
///    call gave up is dropped, never queued (replies are alias-like,
///    beamlet/core/detail/reply.hpp). The timeout (default 5 s) follows beamlet/core/timeout.hpp
///    and is checked before anything is sent.
///  * cast always succeeds, even when nobody is there (§4.3 rule 11).
///  * stop (gen_server:stop, §4.4 rule 17) waits until the server has exited; its errors are
///    OTP's bare reasons (noproc, timeout, or the reason the server exited with).
///
/// Each blocking operation has a coroutine form for processes (co_await it) and a blocking form
/// for an outside thread's scoped_process; both run the same protocol code
/// (detail::run_to_completion).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/core/via.hpp>
#include <beamlet/otp/detail/gen_server_dispatch.hpp>
#include <beamlet/otp/gen_server/results.hpp>
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/start_result.hpp>

BEAMLET_BEGIN_NAMESPACE

/// How to reach a gen_server of type S: its pid, the name it is registered under, or a via name.
template <class S>
class server_ref {
 public:
  using server_type = S;  ///< the server class it addresses

  /// Addresses nobody: it resolves to the null pid (a call fails with noproc).
  server_ref() = default;
  /// The server with pid `p`.
  server_ref(pid p) noexcept : pid_(p) {}
  /// The server registered under `name`, looked up at each use.
  server_ref(std::string name) : name_(std::move(name)) {}
  /// The server registered under `name` (a C string), looked up at each use.
  server_ref(const char* name) : name_(name) {}
  /// The server that `v` resolves to at each use ({via, Module, Name}).
  server_ref(via_name v) : via_(std::move(v)) {}
  /// The server a start function started: `r.pid()` (the null pid unless `r` is ok).
  static server_ref from(const start_result& r) noexcept { return server_ref(r.pid()); }

  /// True when addressed by a registered name.
  bool by_name() const noexcept { return !name_.empty(); }
  /// True when addressed by a via name.
  bool by_via() const noexcept { return via_.has_value(); }
  /// The registered name; empty unless by_name().
  const std::string& name() const noexcept { return name_; }
  /// The via name; nullopt unless by_via().
  const std::optional<via_name>& via() const noexcept { return via_; }
  /// The stored pid; the null pid when addressed by name or by via name.
  pid id() const noexcept { return pid_; }
  /// The pid now: the stored pid, whoever holds the name, or what the via name resolves to
  /// (null pid if nobody). A via name may throw exit_exception.
  pid resolve(runtime& rt) const { return resolve(rt.core()); }
  /// The same, from the runtime's internal core (the library's own use).
  pid resolve(detail::runtime_core& rt) const {
    if (via_) return via_->whereis(rt);
    return by_name() ? detail::whereis_in(rt, name_) : pid_;
  }
  /// The address as text (the pid, the name, or the via name's description), as call errors show
  /// it.
  std::string to_string() const {
    if (via_) return via_->to_string();
    return by_name() ? name_ : pid_.to_string();
  }

 private:
  pid pid_;
  std::string name_;
  std::optional<via_name> via_;
};

/// gen_server:reply(From, Reply): answers a call, now or later, from any process.
template <class R, class V>
void reply(basic_process& self, const from<R>& to, V&& value) {
  static_assert(std::is_convertible_v<V&&, R>,
                "reply: the value does not convert to the reply type");
  detail::send_node(*detail::runtime_of(self), to.caller(),
                    detail::make_reply_node(to.tag(), R(std::forward<V>(value))));
}
/// gen_server:reply(From, ok): answers a call whose reply type is void, now or later, from any
/// process.
inline void reply(basic_process& self, const from<void>& to) {
  detail::send_node(*detail::runtime_of(self), to.caller(), detail::make_reply_node(to.tag()));
}

namespace detail {

template <class S>
pid resolve_server(basic_process& self, const server_ref<S>& s) {
  return s.resolve(*runtime_of(self));
}

template <class S, class Req>
message_node* make_call(pid self, ref tag, Req&& req) {
  using D = std::decay_t<Req>;
  return make_node<call_envelope<S, D>>(&call_type<S, D>,
                                        call_envelope<S, D>{self, tag, std::forward<Req>(req)});
}

/// Sends a call request to `to` under a fresh monitor whose ref is also a receive marker, so
/// the wait for the reply skips everything queued before the request (as gen:call does). With
/// `prio`, through `to`'s published priority alias when it has one. Returns the null ref (and
/// holds no monitor) when `to`'s bounded mailbox refused the request.
template <class S, class Req>
ref send_call(basic_process& self, pid to, Req&& req, bool prio = false) {
  const ref mref = self.monitor(to, marked);
  message_node* n = make_call<S>(self.self(), mref, std::forward<Req>(req));
  runtime_core& rt = *runtime_of(self);
  if (prio) {
    if (const auto alias = published_priority_alias(rt, to)) {
      send_priority_node(rt, *alias, n);
      return mref;
    }
  }
  if (send_node_checked(rt, to, n, nullptr) == send_status::full) {
    self.demonitor(mref, flush);
    clear_marker(self, mref);  // no receive will run on it
    return ref();
  }
  return mref;
}

template <class R>
auto reply_clause(ref tag) {
  return on<call_reply<R>>().when([t = tag.value()](const call_reply<R>& r) { return r.tag == t; });
}

/// The wait for the reply of the call whose monitor is `mref`, shared by call and
/// receive_response, from processes and (blocking) scoped processes: the reply, or `fail(kind,
/// reason)` thrown for the server's DOWN or for the timeout. On timeout the monitor is removed
/// first, which makes a later reply be dropped, and one last look takes a reply that arrived
/// just in time (§4.2 rule 9).
template <class R, class Self, class Fail>
task<R> await_reply(Self& self, pid server, ref mref, timeout_value timeout, Fail fail) {
  set_waiting_for(self, "call to", server);
  auto m =
      co_await receive_on(self, since(mref), reply_clause<R>(mref), down_of(mref), after(timeout));
  if (auto* r = m.template get_if<call_reply<R>>()) {
    self.demonitor(mref, flush);
    if constexpr (std::is_void_v<R>) {
      co_return;
    } else {
      co_return std::move(r->value);
    }
  }
  if (auto* d = m.template get_if<down>()) {
    const auto k = d->reason == exit_reason::noproc() ? call_error::kind::noproc
                                                      : call_error::kind::server_exited;
    throw fail(k, d->reason);
  }
  self.demonitor(mref, flush);
  auto late = co_await receive_on(self, reply_clause<R>(mref), after(std::chrono::milliseconds(0)));
  if (auto* r = late.template get_if<call_reply<R>>()) {
    if constexpr (std::is_void_v<R>) {
      co_return;
    } else {
      co_return std::move(r->value);
    }
  }
  throw fail(call_error::kind::timeout, exit_reason::error("timeout"));
}

/// gen:call, for a process or a scoped_process.
template <class S, class Req, class Self>
task<reply_of_t<std::decay_t<Req>>> call_protocol(Self& self, server_ref<S> server, Req&& req,
                                                  timeout_value timeout, bool prio = false) {
  using D = std::decay_t<Req>;
  using R = reply_of_t<D>;
  auto fail = [&server, timeout](call_error::kind k, exit_reason r) {
    return make_call_error(k, std::move(r), server.to_string(), typeid(D).name(), timeout);
  };
  const pid to = resolve_server(self, server);
  if (!to) throw fail(call_error::kind::noproc, exit_reason::noproc());
  if (to == self.self())
    throw fail(call_error::kind::calling_self, exit_reason::error("calling_self"));
  const ref mref = send_call<S>(self, to, std::forward<Req>(req), prio);
  if (!mref) throw fail(call_error::kind::mailbox_full, exit_reason::error("mailbox_full"));
  co_return co_await await_reply<R>(self, to, mref, timeout, fail);
}

/// gen:stop, for a process or a scoped_process.
template <class S, class Self>
task<> stop_protocol(Self& self, server_ref<S> server, exit_reason reason, timeout_value timeout) {
  const pid to = resolve_server(self, server);
  if (!to) throw make_stop_error(call_error::kind::noproc, exit_reason::noproc());
  const ref mref = self.monitor(to, marked);
  // A server that published a priority alias takes its stop ahead of its backlog.
  if (const auto alias = published_priority_alias(*runtime_of(self), to))
    self.send(*alias, stop_request{reason});
  else
    self.send(to, stop_request{reason});
  set_waiting_for(self, "stop of", to);
  auto m = co_await receive_on(self, since(mref), down_of(mref), after(timeout));
  if (auto* d = m.template get_if<down>()) {
    if (d->reason == exit_reason::noproc())
      throw make_stop_error(call_error::kind::noproc, d->reason);
    if (!(d->reason == reason)) throw make_stop_error(call_error::kind::server_exited, d->reason);
    co_return;
  }
  self.demonitor(mref, flush);
  throw make_stop_error(call_error::kind::timeout, exit_reason::error("timeout"));
}

template <class S, class D>
void check_call() {
  static_assert(handles_call<S, D>,
                "call: the server has no handle_call(const Req&, from<Reply>) for this request");
}

/// call and its priority form from a process: the checks, then the protocol.
template <class S, class Req>
task<reply_of_t<std::decay_t<Req>>> process_call(process& self, server_ref<S> server, Req&& req,
                                                 timeout_value timeout, bool prio) {
  check_call<S, std::decay_t<Req>>();
  static_assert(coroutine_safe_argument<Req>,
                "call: with GCC 12, pass a request that is an aggregate with a destructor (e.g. "
                "one holding a std::string) as a named variable, not a temporary: GCC 12 "
                "miscompiles such temporaries in a co_await expression (docs/gcc12-coroutines.md)");
  return call_protocol(self, std::move(server), std::forward<Req>(req), timeout, prio);
}

}  // namespace detail

/// gen_server:call: sends `req` and waits up to `timeout` for the reply. Throws call_error.
template <class S, class Req>
task<reply_of_t<std::decay_t<Req>>> call(process& self, server_ref<S> server, Req&& req,
                                         timeout_value timeout = std::chrono::milliseconds(5000)) {
  return detail::process_call<S>(self, std::move(server), std::forward<Req>(req), timeout, false);
}

/// gen_server:call from an outside thread (blocks it).
template <class S, class Req>
reply_of_t<std::decay_t<Req>> call(scoped_process& me, server_ref<S> server, Req&& req,
                                   timeout_value timeout = std::chrono::milliseconds(5000)) {
  detail::check_call<S, std::decay_t<Req>>();
  return detail::run_to_completion(
      detail::call_protocol(me, std::move(server), std::forward<Req>(req), timeout));
}

/// A priority call (beamlet/core/priority.hpp): the request goes through the server's published
/// priority alias, so the server takes it ahead of everything queued; an ordinary call when the
/// server published none. The reply and the errors are call's.
template <class S, class Req>
task<reply_of_t<std::decay_t<Req>>> call(process& self, server_ref<S> server, Req&& req, priority_t,
                                         timeout_value timeout = std::chrono::milliseconds(5000)) {
  return detail::process_call<S>(self, std::move(server), std::forward<Req>(req), timeout, true);
}
/// A priority call from an outside thread (blocks it). The reply and the errors are call's.
template <class S, class Req>
reply_of_t<std::decay_t<Req>> call(scoped_process& me, server_ref<S> server, Req&& req, priority_t,
                                   timeout_value timeout = std::chrono::milliseconds(5000)) {
  detail::check_call<S, std::decay_t<Req>>();
  return detail::run_to_completion(
      detail::call_protocol(me, std::move(server), std::forward<Req>(req), timeout, true));
}

/// An outstanding asynchronous request (gen_server:send_request/2), typed by its reply. Holds
/// the monitor that makes the reply deliverable; receive_response consumes it. A default or
/// unresolved request_id (the server was not found) makes receive_response fail with noproc.
template <class R>
class request_id {
 public:
  request_id() = default;
  /// Made by send_request.
  request_id(ref m, pid server, std::string text)
      : monitor_(m), server_(server), text_(std::move(text)) {}
  /// The monitor that is also the reply's tag; the null ref when nothing was sent (the server was
  /// not found, or its bounded mailbox refused the request).
  ref monitor() const noexcept { return monitor_; }
  /// The server's pid (null if it was not found).
  pid server() const noexcept { return server_; }
  /// The server as it was addressed, for error messages.
  const std::string& server_text() const noexcept { return text_; }

 private:
  ref monitor_;
  pid server_;
  std::string text_;
};

/// gen_server:send_request/2: sends `req` without waiting; the reply is collected later with
/// receive_response. Many requests may be outstanding at once. Never blocks, never throws for
/// a dead server (its receive_response fails with noproc, or with mailbox_full when the server's
/// bounded mailbox refused the request).
template <class S, class Req>
request_id<reply_of_t<std::decay_t<Req>>> send_request(basic_process& self, server_ref<S> server,
                                                       Req&& req) {
  using D = std::decay_t<Req>;
  static_assert(detail::handles_call<S, D>,
                "send_request: the server has no handle_call(const Req&, from<Reply>) for this "
                "request");
  const pid to = detail::resolve_server(self, server);
  if (!to) return request_id<reply_of_t<D>>(ref(), pid(), server.to_string());
  return request_id<reply_of_t<D>>(detail::send_call<S>(self, to, std::forward<Req>(req)), to,
                                   server.to_string());
}

/// gen_server:receive_response/2: waits up to `timeout` for the reply of `id`. Throws
/// call_error for noproc, the server's exit, or timeout (the request is then abandoned: a later
/// reply is dropped).
template <class R>
task<R> receive_response(process& self, request_id<R> id, timeout_value timeout = infinity) {
  auto fail = [text = id.server_text(), timeout](call_error::kind k, exit_reason r) {
    return detail::make_call_error(k, std::move(r), text, "receive_response", timeout);
  };
  if (!id.monitor()) {
    // A server was found but its bounded mailbox refused the request.
    if (id.server()) throw fail(call_error::kind::mailbox_full, exit_reason::error("mailbox_full"));
    throw fail(call_error::kind::noproc, exit_reason::noproc());
  }
  co_return co_await detail::await_reply<R>(self, id.server(), id.monitor(), timeout, fail);
}

namespace detail {
template <class S, class Req>
message_node* make_cast(Req&& req) {
  using D = std::decay_t<Req>;
  static_assert(handles_cast<S, D>,
                "cast: the server has no handle_cast(const Req&) for this request");
  return make_node<cast_envelope<S, D>>(&cast_type<S, D>,
                                        cast_envelope<S, D>{std::forward<Req>(req)});
}
}  // namespace detail

/// gen_server:cast: always succeeds, even when nobody is there (§4.3 rule 11).
template <class S, class Req>
void cast(basic_process& self, server_ref<S> server, Req&& req) {
  detail::message_node* n = detail::make_cast<S>(std::forward<Req>(req));
  detail::send_node(*detail::runtime_of(self), detail::resolve_server(self, server), n);
}

/// cast from any thread, without a scoped_process.
template <class S, class Req>
void cast(runtime& rt, server_ref<S> server, Req&& req) {
  detail::message_node* n = detail::make_cast<S>(std::forward<Req>(req));
  detail::send_node(rt.core(), server.resolve(rt), n);
}

/// gen_server:stop(Server, Reason, Timeout): stops the server and waits until it has exited.
/// Throws call_error with OTP's bare reasons: `noproc` if it is not alive, `timeout`, or the
/// reason it exited with if that differs from `reason` (e.g. what its terminate exited with).
template <class S>
task<> stop(process& self, server_ref<S> server, exit_reason reason = exit_reason::normal(),
            timeout_value timeout = infinity) {
  return detail::stop_protocol(self, std::move(server), std::move(reason), timeout);
}

/// gen_server:stop from an outside thread.
template <class S>
void stop(scoped_process& me, server_ref<S> server, exit_reason reason = exit_reason::normal(),
          timeout_value timeout = infinity) {
  detail::run_to_completion(
      detail::stop_protocol(me, std::move(server), std::move(reason), timeout));
}

BEAMLET_END_NAMESPACE
