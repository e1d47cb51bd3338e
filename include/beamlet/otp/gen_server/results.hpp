/// @file
/// beamlet/otp/gen_server/results.hpp: what GenServer callbacks return, and how calls fail.
///
/// The C++ forms of OTP's callback tuples: gen::reply(v), gen::noreply(), gen::stop(R),
/// gen::stop(R, v), gen::ok(), gen::ignore(), each non-stop result refinable with .after(t)
/// ({..., Timeout}) and .then(c) ({continue, C}); from<Reply> for the caller of a call (OTP's
/// {Pid, Tag}); call_error, what a failed call or stop throws. Value types; a continuation
/// message is owned by its result and freed with it.
#pragma once

#include <concepts>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE

/// handle_info receives this when a timeout from a callback result expires ({noreply, S, T}).
struct timeout_message {};

/// A request's reply type: Req::reply_type, or void when it does not name one.
template <class Req>
struct reply_of {
  using type = void;  ///< void: Req names no reply type.
};
/// Req names its reply type.
template <class Req>
concept names_reply = requires {
  typename Req::reply_type;
};
/// A request that names its reply type: the reply type is Req::reply_type.
template <names_reply Req>
struct reply_of<Req> {
  using type = typename Req::reply_type;  ///< the reply type Req names
};
/// Req's reply type (void if it names none): what a call with Req returns.
template <class Req>
using reply_of_t = typename reply_of<Req>::type;

/// The caller of an ongoing call ({Pid, Tag} in OTP). Copy it to reply later (deferred reply).
template <class Reply>
class from {
 public:
  from() noexcept = default;
  /// The call `caller` made under `tag` (the server loop makes it for handle_call).
  from(pid caller, ref tag) noexcept : caller_(caller), tag_(tag) {}
  /// The calling process, where the reply goes.
  pid caller() const noexcept { return caller_; }
  /// The call's tag (its monitor ref): the reply carries it so the caller can match it.
  ref tag() const noexcept { return tag_; }

 private:
  pid caller_;
  ref tag_;
};

/// The results a callback may return (OTP's {reply, ...}, {noreply, ...}, {stop, ...} tuples).
namespace gen {

/// Options shared by non-stop results: a timeout ({..., T}) and a continuation ({continue, C}).
struct result_options {
  timeout_value timeout;          ///< infinity: no timeout
  detail::node_ptr continuation;  ///< handle_continue's message, if any
  bool hibernate = false;         ///< set by .hibernate(); has no effect
};

/// The CRTP base of the non-stop results (gen::reply, gen::noreply, gen::ok): each modifier sets an
/// option on an rvalue result and returns it, so they chain: `gen::noreply().after(t)`.
template <class Derived>
struct with_options {
  /// The options set so far (none by default: no timeout, no continuation).
  result_options options;
  /// handle_info(timeout_message) runs if no message arrives within `t` ({noreply, S, T}).
  /// `infinity` means no timeout; negative or NaN throws timeout_value_error.
  Derived&& after(timeout_value t) && {
    options.timeout = t;
    return static_cast<Derived&&>(*this);
  }
  /// handle_continue(c) runs before any other message ({continue, C}).
  template <message C>
  Derived&& then(C&& c) && {
    options.continuation.reset(detail::make_message(std::forward<C>(c)));
    return static_cast<Derived&&>(*this);
  }
  /// Accepted for compatibility; beamlet has no per-process heap to shrink.
  Derived&& hibernate() && {
    options.hibernate = true;
    return static_cast<Derived&&>(*this);
  }
};

/// {noreply, State}: keep running, send no reply now. Made by gen::noreply().
struct noreply_t : with_options<noreply_t> {};
/// {stop, Reason, State}: run terminate, then exit with `reason`; from handle_call, no reply is
/// sent. Made by gen::stop(reason).
struct stop_t {
  exit_reason reason;  ///< the reason the server exits with
};
/// {reply, Value, State}: answer the call with `value` and keep running. Made by gen::reply(v).
template <class R>
struct reply_t : with_options<reply_t<R>> {
  /// The reply `v`.
  explicit reply_t(R v) : value(std::move(v)) {}
  R value;  ///< the reply sent to the caller
};
/// {reply, ok, State} for a request whose reply type is void. Made by gen::reply().
struct reply_void_t : with_options<reply_void_t> {};
/// {stop, Reason, Reply, State}: run terminate, then send `value` to the caller, then exit with
/// `reason`. Made by gen::stop(reason, v).
template <class R>
struct stop_reply_t {
  exit_reason reason;  ///< the reason the server exits with
  R value;             ///< the reply, sent after terminate has run
};
/// {ok, State} from init: the starter gets {ok, Pid}. Made by gen::ok().
struct init_ok_t : with_options<init_ok_t> {};
/// ignore from init: the starter gets `ignore`. Made by gen::ignore().
struct ignore_t {};

/// {noreply, State}: keep running, no reply now. From handle_call, answer later with reply(self,
/// from, v).
inline noreply_t noreply() {
  return {};
}
/// {stop, Reason, State}: terminate(reason) runs, then the server exits with `reason`. From
/// handle_call, no reply is sent: the call fails with the server's exit reason.
inline stop_t stop(exit_reason reason) {
  return {std::move(reason)};
}
/// {reply, Value, State}: answers the call with `v` (converted to the request's reply type).
template <class R>
reply_t<std::decay_t<R>> reply(R&& v) {
  return reply_t<std::decay_t<R>>(std::forward<R>(v));
}
/// {reply, ok, S} for a request whose reply type is void.
inline reply_void_t reply() {
  return {};
}
/// {stop, Reason, Reply, State}: terminate(reason) runs, then `v` is sent to the caller, then the
/// server exits with `reason`.
template <class R>
stop_reply_t<std::decay_t<R>> stop(exit_reason reason, R&& v) {
  return {std::move(reason), std::forward<R>(v)};
}
/// {ok, State} from init: the server enters its loop and the starter gets {ok, Pid}.
inline init_ok_t ok() {
  return {};
}
/// ignore from init: the starter gets `ignore` and the server exits `normal` at once (no terminate,
/// any registered name released).
inline ignore_t ignore() {
  return {};
}

/// What handle_cast / handle_info / handle_continue return when they need to choose.
class action {
 public:
  action() = default;
  /// Keep running, with `n`'s timeout or continuation if any.
  action(noreply_t n) : v_(std::move(n)) {}
  /// Stop: terminate runs, then the server exits with `s.reason`.
  action(stop_t s) : v_(std::move(s)) {}
  /// The chosen result; the server loop moves it out.
  std::variant<noreply_t, stop_t>& get() noexcept { return v_; }

 private:
  std::variant<noreply_t, stop_t> v_;
};

/// What handle_call returns when it needs to choose.
template <class R>
class call_result {
 public:
  /// A plain value: {reply, v, State}.
  call_result(R v) : v_(reply_t<R>(std::move(v))) {}
  /// gen::reply(v), `v` converted to R; keeps its .after / .then options.
  template <std::convertible_to<R> V>
  call_result(reply_t<V> r) : v_(reply_t<R>(R(std::move(r.value)))) {
    std::get<0>(v_).options = std::move(r.options);
  }
  /// gen::noreply(): no reply now; answer later with reply(self, from, v).
  call_result(noreply_t n) : v_(std::move(n)) {}
  /// gen::stop(reason): no reply; the call fails with the server's exit reason.
  call_result(stop_t s) : v_(std::move(s)) {}
  /// gen::stop(reason, v), `v` converted to R and sent after terminate.
  template <std::convertible_to<R> V>
  call_result(stop_reply_t<V> s)
      : v_(stop_reply_t<R>{std::move(s.reason), R(std::move(s.value))}) {}
  /// The chosen result; the server loop moves it out.
  std::variant<reply_t<R>, noreply_t, stop_t, stop_reply_t<R>>& get() noexcept { return v_; }

 private:
  std::variant<reply_t<R>, noreply_t, stop_t, stop_reply_t<R>> v_;
};
/// What handle_call returns, when it needs to choose, for a request whose reply type is void:
/// gen::reply(), gen::noreply() or gen::stop(reason).
template <>
class call_result<void> {
 public:
  /// gen::reply(): answer the call (OTP's ok).
  call_result(reply_void_t r) : v_(std::move(r)) {}
  /// gen::noreply(): no reply now; answer later with reply(self, from).
  call_result(noreply_t n) : v_(std::move(n)) {}
  /// gen::stop(reason): no reply; the call fails with the server's exit reason.
  call_result(stop_t s) : v_(std::move(s)) {}
  /// The chosen result; the server loop moves it out.
  std::variant<reply_void_t, noreply_t, stop_t>& get() noexcept { return v_; }

 private:
  std::variant<reply_void_t, noreply_t, stop_t> v_;
};

/// What init returns when it needs to choose.
class init_result {
 public:
  init_result() = default;
  /// gen::ok(), possibly with .after(t) or .then(c).
  init_result(init_ok_t o) : v_(std::move(o)) {}
  /// gen::ignore().
  init_result(ignore_t i) : v_(i) {}
  /// gen::stop(reason): the starter gets {error, reason} and the server exits with it.
  init_result(stop_t s) : v_(std::move(s)) {}
  /// The chosen result; the server loop reads it.
  std::variant<init_ok_t, ignore_t, stop_t>& get() noexcept { return v_; }

 private:
  std::variant<init_ok_t, ignore_t, stop_t> v_;
};

}  // namespace gen

/// A call failed: the caller exits with reason() unless it catches this.
class call_error : public exit_exception {
 public:
  /// Why a call failed. noproc: no process is alive at the address; calling_self: the server is
  /// the caller itself; timeout: no reply within the timeout; server_exited: the server exited
  /// before replying (server_reason() says why);
  /// mailbox_full: the server's bounded mailbox refused the request (reason `mailbox_full`);
  /// nothing was sent, so nothing will be answered.
  enum class kind { noproc, calling_self, timeout, server_exited, mailbox_full };
  /// Made by the library: `wrapped` is the reason the caller exits with (a call's {Reason,
  /// {gen_server, call, ...}}, a stop's bare reason), `server_reason` the bare one.
  call_error(kind k, exit_reason server_reason, exit_reason wrapped)
      : exit_exception(std::move(wrapped)), kind_(k), server_reason_(std::move(server_reason)) {}
  /// Why the call failed.
  kind which() const noexcept { return kind_; }
  /// The bare reason: noproc, calling_self, timeout, or the reason the server exited with.
  const exit_reason& server_reason() const noexcept { return server_reason_; }

 private:
  kind kind_;
  exit_reason server_reason_;
};

BEAMLET_END_NAMESPACE
