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
  using type = void;
};
/// Req names its reply type.
template <class Req>
concept names_reply = requires {
  typename Req::reply_type;
};
template <names_reply Req>
struct reply_of<Req> {
  using type = typename Req::reply_type;
};
template <class Req>
using reply_of_t = typename reply_of<Req>::type;

/// The caller of an ongoing call ({Pid, Tag} in OTP). Copy it to reply later (deferred reply).
template <class Reply>
class from {
 public:
  from() noexcept = default;
  from(pid caller, ref tag) noexcept : caller_(caller), tag_(tag) {}
  pid caller() const noexcept { return caller_; }
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
  bool hibernate = false;
};

template <class Derived>
struct with_options {
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

struct noreply_t : with_options<noreply_t> {};
struct stop_t {
  exit_reason reason;
};
template <class R>
struct reply_t : with_options<reply_t<R>> {
  explicit reply_t(R v) : value(std::move(v)) {}
  R value;
};
struct reply_void_t : with_options<reply_void_t> {};
template <class R>
struct stop_reply_t {
  exit_reason reason;
  R value;
};
struct init_ok_t : with_options<init_ok_t> {};
struct ignore_t {};

inline noreply_t noreply() {
  return {};
}
inline stop_t stop(exit_reason reason) {
  return {std::move(reason)};
}
template <class R>
reply_t<std::decay_t<R>> reply(R&& v) {
  return reply_t<std::decay_t<R>>(std::forward<R>(v));
}
/// {reply, ok, S} for a request whose reply type is void.
inline reply_void_t reply() {
  return {};
}
template <class R>
stop_reply_t<std::decay_t<R>> stop(exit_reason reason, R&& v) {
  return {std::move(reason), std::forward<R>(v)};
}
inline init_ok_t ok() {
  return {};
}
inline ignore_t ignore() {
  return {};
}

/// What handle_cast / handle_info / handle_continue return when they need to choose.
class action {
 public:
  action() = default;
  action(noreply_t n) : v_(std::move(n)) {}
  action(stop_t s) : v_(std::move(s)) {}
  std::variant<noreply_t, stop_t>& get() noexcept { return v_; }

 private:
  std::variant<noreply_t, stop_t> v_;
};

/// What handle_call returns when it needs to choose.
template <class R>
class call_result {
 public:
  call_result(R v) : v_(reply_t<R>(std::move(v))) {}
  template <std::convertible_to<R> V>
  call_result(reply_t<V> r) : v_(reply_t<R>(R(std::move(r.value)))) {
    std::get<0>(v_).options = std::move(r.options);
  }
  call_result(noreply_t n) : v_(std::move(n)) {}
  call_result(stop_t s) : v_(std::move(s)) {}
  template <std::convertible_to<R> V>
  call_result(stop_reply_t<V> s)
      : v_(stop_reply_t<R>{std::move(s.reason), R(std::move(s.value))}) {}
  std::variant<reply_t<R>, noreply_t, stop_t, stop_reply_t<R>>& get() noexcept { return v_; }

 private:
  std::variant<reply_t<R>, noreply_t, stop_t, stop_reply_t<R>> v_;
};
template <>
class call_result<void> {
 public:
  call_result(reply_void_t r) : v_(std::move(r)) {}
  call_result(noreply_t n) : v_(std::move(n)) {}
  call_result(stop_t s) : v_(std::move(s)) {}
  std::variant<reply_void_t, noreply_t, stop_t>& get() noexcept { return v_; }

 private:
  std::variant<reply_void_t, noreply_t, stop_t> v_;
};

/// What init returns when it needs to choose.
class init_result {
 public:
  init_result() = default;
  init_result(init_ok_t o) : v_(std::move(o)) {}
  init_result(ignore_t i) : v_(i) {}
  init_result(stop_t s) : v_(std::move(s)) {}
  std::variant<init_ok_t, ignore_t, stop_t>& get() noexcept { return v_; }

 private:
  std::variant<init_ok_t, ignore_t, stop_t> v_;
};

}  // namespace gen

/// A call failed: the caller exits with reason() unless it catches this.
class call_error : public exit_exception {
 public:
  /// mailbox_full: the server's bounded mailbox refused the request (reason `mailbox_full`);
  /// nothing was sent, so nothing will be answered.
  enum class kind { noproc, calling_self, timeout, server_exited, mailbox_full };
  call_error(kind k, exit_reason server_reason, exit_reason wrapped)
      : exit_exception(std::move(wrapped)), kind_(k), server_reason_(std::move(server_reason)) {}
  kind which() const noexcept { return kind_; }
  /// The bare reason: noproc, calling_self, timeout, or the reason the server exited with.
  const exit_reason& server_reason() const noexcept { return server_reason_; }

 private:
  kind kind_;
  exit_reason server_reason_;
};

BEAMLET_END_NAMESPACE
