// beamlet/otp/detail/gen_server_dispatch.hpp: how a call or cast reaches a server's callback.
//
// A call or cast travels as an envelope whose type descriptor points at the dispatcher for
// (server type, request type): the server loop hands the envelope to it and gets back what to
// do (reply, stop, options), or a coroutine to await when the callback is one. Replies travel
// as alias-like signals (beamlet/core/detail/reply.hpp). Not stable API.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/reply.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/otp/gen_server/results.hpp>

BEAMLET_BEGIN_NAMESPACE

namespace detail {

/// A call reply in transit; `tag` is the caller's monitor ref.
template <class R>
struct call_reply {
  std::uint64_t tag;
  R value;
};
template <>
struct call_reply<void> {
  std::uint64_t tag;
};

// A reply the caller waits for is never dropped by a bounded mailbox.
template <class R>
inline constexpr bool is_control_message<call_reply<R>> = true;

template <class R>
message_node* make_reply_node(ref tag, R&& value) {
  using D = std::decay_t<R>;
  return make_node<call_reply<D>>(&reply_signal_type<call_reply<D>>,
                                  call_reply<D>{tag.value(), std::forward<R>(value)});
}
inline message_node* make_reply_node(ref tag) {
  return make_node<call_reply<void>>(&reply_signal_type<call_reply<void>>,
                                     call_reply<void>{tag.value()});
}

}  // namespace detail

namespace detail {

// -- envelopes ---------------------------------------------------------------------------------

/// What the server loop should do after a callback.
struct outcome {
  bool stop = false;
  exit_reason reason;
  gen::result_options options;
  node_ptr reply;  ///< a reply to send (after terminate, when stopping)
  pid reply_to;
};

/// The result of dispatching one message to a server: done now, or a coroutine to await. A
/// pending handler reads the request from the message, so the message lives as long as it.
struct dispatched {
  outcome done;
  std::optional<task<outcome>> pending;
  any_message message;
};

/// Dispatches a call or cast envelope to the server object it is for.
using dispatch_fn = dispatched (*)(void* server, message_node* n);

struct envelope_ext {
  const void* server_type;  ///< which server class may take it
  dispatch_fn dispatch;
  const std::type_info* request;       ///< the request's type (terminate reports, sys traces)
  pid (*caller)(const message_node*);  ///< a call's caller; null for a cast
};

template <class S>
inline constexpr char server_type_id = 0;

template <class S, class Req>
struct call_envelope {
  pid from;
  ref tag;
  Req request;
};
template <class S, class Req>
struct cast_envelope {
  Req request;
};

// Normalising callback results into an outcome.
inline void absorb(outcome& o, gen::noreply_t&& n) {
  o.options = std::move(n.options);
}
inline void absorb(outcome& o, gen::stop_t&& s) {
  o.stop = true;
  o.reason = std::move(s.reason);
}
inline void absorb(outcome& o, gen::action&& a) {
  // get() is an lvalue: the alternative is moved out on purpose (the action is consumed).
  std::visit([&](auto& x) { absorb(o, std::move(x)); }, a.get());
}
template <class R>
void absorb_call(outcome& o, const from<R>& f, gen::reply_t<R>&& r) {
  o.options = std::move(r.options);
  o.reply.reset(make_reply_node(f.tag(), std::move(r.value)));
  o.reply_to = f.caller();
}
inline void absorb_call(outcome& o, const from<void>& f, gen::reply_void_t&& r) {
  o.options = std::move(r.options);
  o.reply.reset(make_reply_node(f.tag()));
  o.reply_to = f.caller();
}
template <class R>
void absorb_call(outcome& o, const from<R>&, gen::noreply_t&& n) {
  absorb(o, std::move(n));
}
template <class R>
void absorb_call(outcome& o, const from<R>&, gen::stop_t&& s) {
  absorb(o, std::move(s));
}
template <class R>
void absorb_call(outcome& o, const from<R>& f, gen::stop_reply_t<R>&& s) {
  o.stop = true;
  o.reason = std::move(s.reason);
  o.reply.reset(make_reply_node(f.tag(), std::move(s.value)));
  o.reply_to = f.caller();
}

/// A handle_call result (anything gen::call_result<R> accepts) as an outcome.
template <class R, class... V>
outcome call_outcome(const from<R>& f, V&&... v) {
  outcome o;
  if constexpr (sizeof...(V) == 0) {
    static_assert(std::is_void_v<R>, "handle_call returned nothing for a request with a reply");
    o.reply.reset(make_reply_node(f.tag()));
    o.reply_to = f.caller();
  } else {
    gen::call_result<R> r(std::forward<V>(v)...);
    std::visit([&](auto& x) { absorb_call(o, f, std::move(x)); }, r.get());
  }
  return o;
}

/// A handle_cast / handle_info / handle_continue result as an outcome.
template <class... V>
outcome plain_outcome(V&&... v) {
  outcome o;
  if constexpr (sizeof...(V) > 0) {
    static_assert((std::is_constructible_v<gen::action, V> && ...),
                  "handle_cast/handle_info/handle_continue must return void or gen::action");
    absorb(o, gen::action(std::forward<V>(v)...));
  }
  return o;
}

template <class T>
inline constexpr bool is_task = false;
template <class T>
inline constexpr bool is_task<task<T>> = true;
/// T for task<T> (decltype(co_await ...) is not allowed in an unevaluated context by Clang).
template <class T>
struct task_value;
template <class T>
struct task_value<task<T>> {
  using type = T;
};
template <class T>
using task_value_t = typename task_value<T>::type;

/// Runs a callback and turns what it returns (a value, void, or a task of either) into a
/// dispatched, through `convert` (called with the value, or with nothing for void).
template <class Invoke, class Convert>
dispatched run_callback(Invoke invoke, Convert convert) {
  using ret = decltype(invoke());
  if constexpr (is_task<ret>) {
    return dispatched{{},
                      [](Invoke inv, Convert conv) -> task<outcome> {
                        if constexpr (std::is_void_v<task_value_t<decltype(inv())>>) {
                          co_await inv();
                          co_return conv();
                        } else {
                          co_return conv(co_await inv());
                        }
                      }(std::move(invoke), std::move(convert)),
                      {}};
  } else if constexpr (std::is_void_v<ret>) {
    invoke();
    return dispatched{convert(), std::nullopt, {}};
  } else {
    return dispatched{convert(invoke()), std::nullopt, {}};
  }
}

template <class S, class Req>
dispatched dispatch_call(void* server, message_node* n) {
  using R = reply_of_t<Req>;
  S& s = *static_cast<S*>(server);
  auto& env = payload<call_envelope<S, Req>>(n);
  const from<R> f(env.from, env.tag);
  Req* req = &env.request;  // the server owns a delivered request: handlers may move from it
  return run_callback(
      [&s, req, f]() -> decltype(auto) { return s.handle_call(*req, f); },
      [f](auto&&... v) { return call_outcome<R>(f, std::forward<decltype(v)>(v)...); });
}

template <class S, class Req>
dispatched dispatch_cast(void* server, message_node* n) {
  S& s = *static_cast<S*>(server);
  Req* req = &payload<cast_envelope<S, Req>>(n).request;
  return run_callback([&s, req]() -> decltype(auto) { return s.handle_cast(*req); },
                      [](auto&&... v) { return plain_outcome(std::forward<decltype(v)>(v)...); });
}

template <class S, class Req>
pid caller_of_call(const message_node* n) {
  return static_cast<const typed_node<call_envelope<S, Req>>*>(n)->value.from;
}

template <class S, class Req>
inline constexpr envelope_ext call_ext{&server_type_id<S>, &dispatch_call<S, Req>, &typeid(Req),
                                       &caller_of_call<S, Req>};
template <class S, class Req>
inline constexpr envelope_ext cast_ext{&server_type_id<S>, &dispatch_cast<S, Req>, &typeid(Req),
                                       nullptr};

template <class S, class Req>
inline constexpr type_descriptor call_type{&destroy_typed<call_envelope<S, Req>>,
                                           &typeid(call_envelope<S, Req>),
                                           node_kind::message,
                                           0,
                                           &call_ext<S, Req>,
                                           sizeof(typed_node<call_envelope<S, Req>>)};
template <class S, class Req>
inline constexpr type_descriptor cast_type{&destroy_typed<cast_envelope<S, Req>>,
                                           &typeid(cast_envelope<S, Req>),
                                           node_kind::message,
                                           0,
                                           &cast_ext<S, Req>,
                                           sizeof(typed_node<cast_envelope<S, Req>>)};

/// gen_server:stop's request.
struct stop_request {
  exit_reason reason;
};
template <>
inline constexpr bool is_control_message<stop_request> = true;

template <class S, class Req>
concept handles_call = requires(S& s, Req& r, from<reply_of_t<Req>> f) {
  s.handle_call(r, f);
};
template <class S, class Req>
concept handles_cast = requires(S& s, Req& r) {
  s.handle_cast(r);
};

call_error make_call_error(call_error::kind k, exit_reason reason, const std::string& server,
                           const char* request, timeout_value t);
/// gen_server:stop's errors are the bare reasons (noproc, timeout, or the reason the server
/// exited with), not wrapped as a call's.
inline call_error make_stop_error(call_error::kind k, exit_reason reason) {
  exit_reason bare = reason;
  return call_error(k, std::move(reason), std::move(bare));
}
std::string already_started(pid holder);
}  // namespace detail

BEAMLET_END_NAMESPACE
