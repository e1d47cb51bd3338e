// beamlet/gen_server.hpp: the GenServer behaviour (OTP gen_server, spec §4).
//
// A server is a class deriving from gen_server<Self>; an instance lives inside its process and
// is its state. Callbacks, all optional except the handle_call/handle_cast overloads a client
// uses:
//
//   init()                                  -> void | gen::init_result (ok / ok.after(t) /
//                                              ok.then(c) / ignore / stop(R))
//   handle_call(const Req&, from<Reply>)     -> Reply | gen::call_result<Reply> (reply(v) /
//                                              noreply() / stop(R, v) / stop(R), each .after(t)
//                                              or .then(c))
//   handle_cast(const Req&)                  -> void | gen::action (noreply() / stop(R))
//   handle_info(any_message)                 -> void | gen::action
//   handle_continue(any_message)             -> void | gen::action
//   terminate(const exit_reason&)            -> void
//
// Any callback may instead be a coroutine returning task<...> of the same, and co_await
// (call other servers, receive, sleep). handle_call/handle_cast may take the request as `Req&`
// instead and move from it: a delivered request belongs to the server. Requests are plain
// types that name their reply:
//
//   struct get { using reply_type = int; };
//   struct counter : gen_server<counter> {
//     int n = 0;
//     int handle_call(const get&, from<int>) { return n; }
//   };
//   auto r = co_await counter::start_link(self, {});
//   int v = co_await call(self, server_ref<counter>(r.pid()), get{});
//
// Clients address a server through a typed server_ref<S> (a pid, a registered name, or a
// via_name resolved at each use, as Erlang's {via, Module, Name}), so a
// request the server does not handle is a compile-time error, and replies are typed.
//
// Semantics (spec §4): start goes through proc_lib (beamlet/proc_lib.hpp) and returns
// {ok, Pid}, ignore or {error, R} as §4.1 rule 3 (an exception in init gives its exit reason;
// C++ has no "bad return value" or throw-as-return). call is gen:call: monitor with a receive
// marker, send, wait on the reply or the DOWN; O(1) whatever the caller's mailbox holds. It
// throws call_error (an exit_exception) for noproc, calling_self, timeout and the server's exit
// reason, each wrapped as {Reason, {gen_server, call, ...}}. A reply arriving after a timeout is
// dropped, never queued (replies are alias-like, see beamlet/detail/reply.hpp). cast always
// succeeds. terminate runs on a stop result, on an exception in a callback, on the parent's EXIT
// when the server traps exits, and on stop(); not when an exit signal kills a non-trapping
// server. A {stop, R, Reply} result runs terminate before the reply is sent.
#pragma once

#include <chrono>
#include <concepts>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>

#include <beamlet/config.hpp>
#include <beamlet/detail/message.hpp>
#include <beamlet/detail/reply.hpp>
#include <beamlet/error.hpp>
#include <beamlet/exit_reason.hpp>
#include <beamlet/ids.hpp>
#include <beamlet/mailbox.hpp>
#include <beamlet/proc_lib.hpp>
#include <beamlet/process.hpp>
#include <beamlet/receive.hpp>
#include <beamlet/runtime.hpp>
#include <beamlet/start_result.hpp>
#include <beamlet/system_messages.hpp>
#include <beamlet/task.hpp>
#include <beamlet/via.hpp>

BEAMLET_BEGIN_NAMESPACE

/// handle_info receives this when a timeout from a callback result expires ({noreply, S, T}).
struct timeout_message {};

/// A request's reply type: Req::reply_type, or void when it does not name one.
template <class Req>
struct reply_of {
  using type = void;
};
template <class Req>
requires requires {
  typename Req::reply_type;
}
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

/// gen_server:reply(From, Reply): answers a call, now or later, from any process.
template <class R, class V>
void reply(basic_process& self, const from<R>& to, V&& value) {
  static_assert(std::is_convertible_v<V&&, R>,
                "reply: the value does not convert to the reply type");
  detail::send_node(*detail::runtime_of(self), to.caller(),
                    detail::make_reply_node(to.tag(), R(std::forward<V>(value))));
}
inline void reply(basic_process& self, const from<void>& to) {
  detail::send_node(*detail::runtime_of(self), to.caller(), detail::make_reply_node(to.tag()));
}

/// The results a callback may return (OTP's {reply, ...}, {noreply, ...}, {stop, ...} tuples).
namespace gen {

/// Options shared by non-stop results: a timeout ({..., T}) and a continuation ({continue, C}).
struct result_options {
  timeout_value timeout;                         ///< infinity: no timeout
  detail::message_node* continuation = nullptr;  // owned
  bool hibernate = false;

  result_options() = default;
  result_options(result_options&& o) noexcept
      : timeout(o.timeout),
        continuation(std::exchange(o.continuation, nullptr)),
        hibernate(o.hibernate) {}
  result_options& operator=(result_options&& o) noexcept {
    if (this != &o) {
      reset();
      timeout = o.timeout;
      continuation = std::exchange(o.continuation, nullptr);
      hibernate = o.hibernate;
    }
    return *this;
  }
  ~result_options() { reset(); }
  void reset() noexcept {
    if (continuation != nullptr) detail::destroy_node(std::exchange(continuation, nullptr));
  }
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
    options.reset();
    options.continuation = detail::make_message(std::forward<C>(c));
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
  template <class V>
  requires std::convertible_to<V, R> call_result(reply_t<V> r)
      : v_(reply_t<R>(R(std::move(r.value)))) {
    std::get<0>(v_).options = std::move(r.options);
  }
  call_result(noreply_t n) : v_(std::move(n)) {}
  call_result(stop_t s) : v_(std::move(s)) {}
  template <class V>
  requires std::convertible_to<V, R> call_result(stop_reply_t<V> s)
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
  enum class kind { noproc, calling_self, timeout, server_exited };
  call_error(kind k, exit_reason server_reason, exit_reason wrapped)
      : exit_exception(std::move(wrapped)), kind_(k), server_reason_(std::move(server_reason)) {}
  kind which() const noexcept { return kind_; }
  /// The bare reason: noproc, calling_self, timeout, or the reason the server exited with.
  const exit_reason& server_reason() const noexcept { return server_reason_; }

 private:
  kind kind_;
  exit_reason server_reason_;
};

/// How to reach a gen_server of type S: its pid, or the name it is registered under.
template <class S>
class server_ref {
 public:
  server_ref() = default;
  server_ref(pid p) noexcept : pid_(p) {}
  server_ref(std::string name) : name_(std::move(name)) {}
  server_ref(const char* name) : name_(name) {}
  server_ref(via_name v) : via_(std::move(v)) {}
  static server_ref from(const start_result& r) noexcept { return server_ref(r.pid()); }

  bool by_name() const noexcept { return !name_.empty(); }
  bool by_via() const noexcept { return via_.has_value(); }
  const std::string& name() const noexcept { return name_; }
  const std::optional<via_name>& via() const noexcept { return via_; }
  pid id() const noexcept { return pid_; }
  /// The pid now: the stored pid, whoever holds the name, or what the via name resolves to
  /// (null pid if nobody). A via name may throw exit_exception.
  pid resolve(runtime& rt) const {
    if (via_) return via_->whereis(rt);
    return by_name() ? rt.whereis(name_).value_or(pid()) : pid_;
  }
  std::string to_string() const {
    if (via_) return via_->to_string();
    return by_name() ? name_ : pid_.to_string();
  }

 private:
  pid pid_;
  std::string name_;
  std::optional<via_name> via_;
};

template <class S>
class gen_server;

namespace detail {

// -- envelopes ---------------------------------------------------------------------------------

/// What the server loop should do after a callback.
struct outcome {
  bool stop = false;
  exit_reason reason;
  gen::result_options options;
  message_node* reply = nullptr;  ///< a reply to send (after terminate, when stopping); owned
  pid reply_to;

  outcome() = default;
  outcome(outcome&& o) noexcept
      : stop(o.stop),
        reason(std::move(o.reason)),
        options(std::move(o.options)),
        reply(std::exchange(o.reply, nullptr)),
        reply_to(o.reply_to) {}
  outcome& operator=(outcome&& o) noexcept {
    if (this != &o) {
      if (reply != nullptr) destroy_node(reply);
      stop = o.stop;
      reason = std::move(o.reason);
      options = std::move(o.options);
      reply = std::exchange(o.reply, nullptr);
      reply_to = o.reply_to;
    }
    return *this;
  }
  ~outcome() {
    if (reply != nullptr) destroy_node(reply);
  }
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
  std::visit([&](auto&& x) { absorb(o, std::move(x)); }, a.get());
}
template <class R>
void absorb_call(outcome& o, const from<R>& f, gen::reply_t<R>&& r) {
  o.options = std::move(r.options);
  o.reply = make_reply_node(f.tag(), std::move(r.value));
  o.reply_to = f.caller();
}
inline void absorb_call(outcome& o, const from<void>& f, gen::reply_void_t&& r) {
  o.options = std::move(r.options);
  o.reply = make_reply_node(f.tag());
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
  o.reply = make_reply_node(f.tag(), std::move(s.value));
  o.reply_to = f.caller();
}

/// A handle_call result (anything gen::call_result<R> accepts) as an outcome.
template <class R, class... V>
outcome call_outcome(const from<R>& f, V&&... v) {
  outcome o;
  if constexpr (sizeof...(V) == 0) {
    static_assert(std::is_void_v<R>, "handle_call returned nothing for a request with a reply");
    o.reply = make_reply_node(f.tag());
    o.reply_to = f.caller();
  } else {
    gen::call_result<R> r(std::forward<V>(v)...);
    std::visit([&](auto&& x) { absorb_call(o, f, std::move(x)); }, r.get());
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
inline constexpr envelope_ext call_ext{&server_type_id<S>, &dispatch_call<S, Req>};
template <class S, class Req>
inline constexpr envelope_ext cast_ext{&server_type_id<S>, &dispatch_cast<S, Req>};

template <class S, class Req>
inline constexpr type_descriptor call_type{&destroy_typed<call_envelope<S, Req>>,
                                           &typeid(call_envelope<S, Req>), node_kind::message, 0,
                                           &call_ext<S, Req>};
template <class S, class Req>
inline constexpr type_descriptor cast_type{&destroy_typed<cast_envelope<S, Req>>,
                                           &typeid(cast_envelope<S, Req>), node_kind::message, 0,
                                           &cast_ext<S, Req>};

/// gen_server:stop's request.
struct stop_request {
  exit_reason reason;
};

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

template <class S>
concept has_init = requires(S& s) {
  s.init();
};
template <class S>
concept has_info = requires(S& s, any_message m) {
  s.handle_info(std::move(m));
};
template <class S>
concept has_continue = requires(S& s, any_message m) {
  s.handle_continue(std::move(m));
};
template <class S>
concept has_terminate = requires(S& s, const exit_reason& r) {
  s.terminate(r);
};

/// Runs init and reduces its result to ok (+ options) / ignore / stop.
template <class S>
task<gen::init_result> run_init(S& server) {
  if constexpr (!has_init<S>) {
    co_return gen::ok();
  } else {
    using ret = decltype(server.init());
    if constexpr (is_task<ret>) {
      if constexpr (std::is_void_v<task_value_t<ret>>) {
        co_await server.init();
        co_return gen::ok();
      } else {
        co_return gen::init_result(co_await server.init());
      }
    } else if constexpr (std::is_void_v<ret>) {
      server.init();
      co_return gen::ok();
    } else {
      co_return gen::init_result(server.init());
    }
  }
}

template <class S>
task<> call_terminate(S& server, const exit_reason& reason) {
  if constexpr (has_terminate<S>) {
    if constexpr (is_task<decltype(server.terminate(reason))>) {
      co_await server.terminate(reason);
    } else {
      server.terminate(reason);
    }
  }
  co_return;
}

// The message moves into the callback: a coroutine callback runs after this returns.
template <class S>
dispatched dispatch_plain(S& server, any_message m, bool continuation) {
  auto convert = [](auto&&... v) { return plain_outcome(std::forward<decltype(v)>(v)...); };
  if (continuation) {
    if constexpr (has_continue<S>) {
      return run_callback(
          [&server, m = std::move(m)]() mutable -> decltype(auto) {
            return server.handle_continue(std::move(m));
          },
          convert);
    } else {
      outcome o;
      o.stop = true;
      o.reason = exit_reason::error("{undef,handle_continue}");
      return {std::move(o), std::nullopt, {}};
    }
  }
  if constexpr (has_info<S>) {
    return run_callback(
        [&server, m = std::move(m)]() mutable -> decltype(auto) {
          return server.handle_info(std::move(m));
        },
        convert);
  } else {
    // OTP 25 logs and drops an info message a server does not handle (§4.3 rule 12).
    return {outcome{}, std::nullopt, {}};
  }
}

/// Dispatches one message taken by the server loop. Sets `terminate` (and returns nothing)
/// for a stop request or the trapped exit of the parent. Not a coroutine: the loop receives
/// itself, so an idle server keeps no frame for this and a message costs no frame allocation.
template <class S>
std::optional<dispatched> dispatch_message(process& self, S& server, pid parent, any_message m,
                                           exit_reason& terminate) {
  const type_descriptor* t = m.descriptor();
  if (const auto* ext = static_cast<const envelope_ext*>(t->ext);
      ext != nullptr && ext->server_type == &server_type_id<S>) {
    dispatched d = ext->dispatch(&server, m.native_handle());
    if (d.pending) d.message = std::move(m);
    return d;
  }
  if (auto* sr = m.template get_if<stop_request>()) {
    terminate = sr->reason;
    return std::nullopt;
  }
  if (auto* e = m.template get_if<exit_message>();
      e != nullptr && e->from == parent && self.trap_exit()) {
    terminate = e->reason;  // the parent's exit, trapped (§4.4 rule 14)
    return std::nullopt;
  }
  return dispatch_plain(server, std::move(m), false);
}

template <class S>
struct server_access {
  static void bind(gen_server<S>& g, process& self, pid parent) {
    g.self_ = &self;
    g.parent_ = parent;
  }
};

/// The body of a gen_server process (gen:init_it + gen_server:loop).
template <class S, class... Args>
task<> server_main(process& self, const starter& st, std::string name, Args... args) {
  if (!name.empty() && self.register_name(name)) {
    // Taken since the starter's check: ack {error, {already_started, P}} and exit normal.
    st.ack(self, start_result::error(
                     exit_reason::error(already_started(whereis_in(*runtime_of(self), name)))));
    co_return;
  }
  std::optional<S> server;
  gen::init_result init;
  std::optional<exit_reason> failed;
  try {
    server.emplace(args...);
    server_access<S>::bind(*server, self, st.parent());
    init = co_await run_init(*server);
  } catch (...) {
    failed = exit_reason::from_exception(std::current_exception());
  }
  if (failed) {
    // An exception in init: {error, Reason} and exit with it (§4.1 rule 3).
    if (!name.empty()) (void)unregister_in(*runtime_of(self), name);
    st.ack(self, start_result::error(*failed));
    co_await self.exit(*failed);
  }
  if (auto* s = std::get_if<gen::stop_t>(&init.get())) {
    if (!name.empty()) (void)unregister_in(*runtime_of(self), name);
    st.ack(self, start_result::error(s->reason));
    co_await self.exit(s->reason);
  }
  if (std::holds_alternative<gen::ignore_t>(init.get())) {
    if (!name.empty()) (void)unregister_in(*runtime_of(self), name);
    st.ack(self, start_result::ignore());
    co_return;
  }
  gen::result_options opts = std::move(std::get<gen::init_ok_t>(init.get()).options);
  st.ack(self, start_result::ok(self.self()));

  exit_reason reason;
  outcome last;  // holds a {stop, R, Reply} reply until terminate has run
  for (;;) {
    std::optional<dispatched> d;
    bool crashed = false;
    try {
      if (opts.continuation != nullptr) {
        d = dispatch_plain(*server, any_message(std::exchange(opts.continuation, nullptr)), true);
      } else {
        if (opts.timeout.finite()) {
          auto r = co_await self.receive(on_any(), after(opts.timeout));
          if (r.timed_out()) {
            d = dispatch_plain(*server, any_message(make_message(timeout_message{})), false);
          } else {
            d = dispatch_message(self, *server, st.parent(), r.take(), reason);
          }
        } else {
          auto r = co_await self.receive(on_any());
          d = dispatch_message(self, *server, st.parent(), r.take(), reason);
        }
      }
      if (d && d->pending) d->done = co_await std::move(*d->pending);
    } catch (...) {
      reason = exit_reason::from_exception(std::current_exception());
      crashed = true;
    }
    if (crashed || !d) break;
    if (d->done.stop) {
      reason = d->done.reason;
      last = std::move(d->done);
      break;
    }
    if (d->done.reply != nullptr)
      send_node(*runtime_of(self), d->done.reply_to, std::exchange(d->done.reply, nullptr));
    opts = std::move(d->done.options);
  }
  std::optional<exit_reason> terminate_failed;
  try {
    co_await call_terminate(*server, reason);
  } catch (...) {
    terminate_failed = exit_reason::from_exception(std::current_exception());
  }
  if (terminate_failed) reason = *terminate_failed;
  // {stop, R, Reply}: the reply goes out after terminate (§4.2 rule 10).
  if (last.reply != nullptr)
    send_node(*runtime_of(self), last.reply_to, std::exchange(last.reply, nullptr));
  co_await self.exit(reason);
}

template <class S, class... Args>
auto server_body(std::string name, Args... args) {
  return [name = std::move(name), args...](process& c, const starter& st) -> task<> {
    co_await server_main<S>(c, st, name, args...);
  };
}

}  // namespace detail

/// Options of gen_server start functions. Trivially destructible on purpose: callers write
/// `co_await S::start_link(self, {.name = "x"})`, and GCC 12 miscompiles aggregate temporaries
/// with destructors inside a co_await expression (see docs/gcc12-coroutines.md).
struct server_options {
  /// Registers the server under this name (copied; the view need only outlive the call). A
  /// taken name gives {error, {already_started, P}}.
  std::string_view name{};
  /// How long to wait for init; infinity is OTP's default.
  timeout_value timeout{};
  /// How to wait for the ack; nullopt follows the starting process's ack_wait flag.
  std::optional<ack_wait> wait{};

  start_options start() const { return {timeout, wait}; }
};

/// Base class of gen_server implementations: `class my_server : public gen_server<my_server>`.
template <class S>
class gen_server {
 public:
  /// The server's own process (send, spawn, monitor, trap_exit... from callbacks).
  process& self() const noexcept { return *self_; }
  /// The process that started the server (proc_lib's parent).
  pid parent() const noexcept { return parent_; }

  /// gen_server:start_link: starts an S(args...) linked to `self` and waits for its init.
  /// The arguments are copied (or moved) before this returns.
  template <class... Args>
  static task<start_result> start_link(process& self, server_options opts, Args&&... args) {
    check_start_arguments<Args...>();
    return start_task<true>(self, opts, std::decay_t<Args>(std::forward<Args>(args))...);
  }
  /// gen_server:start: as start_link, without the link (monitored while starting).
  template <class... Args>
  static task<start_result> start(process& self, server_options opts, Args&&... args) {
    check_start_arguments<Args...>();
    return start_task<false>(self, opts, std::decay_t<Args>(std::forward<Args>(args))...);
  }
  /// start_link from an outside thread (blocks it); the server is linked to the mailbox.
  template <class... Args>
  static start_result start_link(mailbox& me, server_options opts, Args... args) {
    if (!opts.name.empty()) {
      if (const pid holder = detail::whereis_in(*detail::runtime_of(me), opts.name))
        return start_result::error(exit_reason::error(detail::already_started(holder)));
    }
    return beamlet::start_link(me, detail::server_body<S>(std::string(opts.name), args...),
                               opts.start());
  }

 protected:
  gen_server() = default;
  ~gen_server() = default;

 private:
  template <class... Args>
  static constexpr void check_start_arguments() {
    static_assert((detail::coroutine_safe_argument<Args> && ...),
                  "start_link/start: with GCC 12, pass a constructor argument that is an aggregate "
                  "with a destructor (e.g. one holding a std::string) as a named variable, not a "
                  "temporary: GCC 12 miscompiles such temporaries in a co_await expression "
                  "(docs/gcc12-coroutines.md)");
  }
  template <bool Link, class... Args>
  static task<start_result> start_task(process& self, server_options opts, Args... args) {
    if (!opts.name.empty()) {
      if (const pid holder = detail::whereis_in(*detail::runtime_of(self), opts.name))
        co_return start_result::error(exit_reason::error(detail::already_started(holder)));
    }
    // A named local, not a temporary in the co_await expression (GCC 12, see above).
    auto body = detail::server_body<S>(std::string(opts.name), args...);
    const start_options so = opts.start();
    if constexpr (Link) {
      co_return co_await beamlet::start_link(self, std::move(body), so);
    } else {
      co_return co_await beamlet::start(self, std::move(body), so);
    }
  }

  friend struct detail::server_access<S>;
  process* self_ = nullptr;
  pid parent_;
};

// -- clients -------------------------------------------------------------------------------------

namespace detail {

template <class S>
pid resolve_server(basic_process& self, const server_ref<S>& s) {
  if (s.by_via()) return s.via()->whereis(*runtime_of(self));
  return s.by_name() ? whereis_in(*runtime_of(self), s.name()) : s.id();
}

template <class S, class Req>
message_node* make_call(pid self, ref tag, Req&& req) {
  using D = std::decay_t<Req>;
  return make_node<call_envelope<S, D>>(&call_type<S, D>,
                                        call_envelope<S, D>{self, tag, std::forward<Req>(req)});
}

/// Sends a call request to `to` under a fresh monitor whose ref is also a receive marker, so
/// the wait for the reply skips everything queued before the request (as gen:call does).
template <class S, class Req>
ref send_call(basic_process& self, pid to, Req&& req) {
  const ref mref = self.monitor(to, marked);
  send_node(*runtime_of(self), to, make_call<S>(self.self(), mref, std::forward<Req>(req)));
  return mref;
}

template <class R>
auto reply_clause(ref tag) {
  return on<call_reply<R>>().when([t = tag.value()](const call_reply<R>& r) { return r.tag == t; });
}

/// The end of a call's wait, shared by every client that waits for a reply (call from a
/// process or from an outside thread, receive_response). Returns true when `m` holds the
/// reply; throws `fail(kind, reason)` for the server's DOWN; returns false on timeout, after
/// removing the monitor, which makes a later reply be dropped. The caller then takes a reply
/// that arrived just in time with one more receive (§4.2 rule 9).
template <class R, class Received, class Fail>
bool reply_arrived(basic_process& self, Received& m, ref mref, const Fail& fail) {
  if (m.template get_if<call_reply<R>>() != nullptr) {
    self.demonitor(mref, flush);
    return true;
  }
  if (auto* d = m.template get_if<down>()) {
    const auto k = d->reason == exit_reason::noproc() ? call_error::kind::noproc
                                                      : call_error::kind::server_exited;
    throw fail(k, d->reason);
  }
  self.demonitor(mref, flush);
  return false;
}

/// The reply held by `m` (a receive result that matched reply_clause<R>), as an rvalue, so the
/// caller's return moves it once.
template <class R, class Received>
decltype(auto) reply_value(Received& m) {
  if constexpr (std::is_void_v<R>) {
    return;
  } else {
    return std::move(m.template get_if<call_reply<R>>()->value);
  }
}

}  // namespace detail

/// gen_server:call: sends `req` and waits up to `timeout` for the reply. O(1) in the caller's
/// mailbox. Throws call_error.
template <class S, class Req>
task<reply_of_t<std::decay_t<Req>>> call(process& self, server_ref<S> server, Req&& req,
                                         timeout_value timeout = std::chrono::milliseconds(5000)) {
  using D = std::decay_t<Req>;
  using R = reply_of_t<D>;
  static_assert(detail::handles_call<S, D>,
                "call: the server has no handle_call(const Req&, from<Reply>) for this request");
  static_assert(detail::coroutine_safe_argument<Req>,
                "call: with GCC 12, pass a request that is an aggregate with a destructor (e.g. "
                "one holding a std::string) as a named variable, not a temporary: GCC 12 "
                "miscompiles such temporaries in a co_await expression (docs/gcc12-coroutines.md)");
  const pid to = detail::resolve_server(self, server);
  auto fail = [&](call_error::kind k, exit_reason r) {
    return detail::make_call_error(k, std::move(r), server.to_string(), typeid(D).name(), timeout);
  };
  if (!to) throw fail(call_error::kind::noproc, exit_reason::noproc());
  if (to == self.self())
    throw fail(call_error::kind::calling_self, exit_reason::error("calling_self"));
  const ref mref = detail::send_call<S>(self, to, std::forward<Req>(req));
  auto m = co_await self.receive(since(mref), detail::reply_clause<R>(mref), detail::down_of(mref),
                                 after(timeout));
  if (detail::reply_arrived<R>(self, m, mref, fail)) co_return detail::reply_value<R>(m);
  auto late =
      co_await self.receive(detail::reply_clause<R>(mref), after(std::chrono::milliseconds(0)));
  if (late.template get_if<detail::call_reply<R>>()) co_return detail::reply_value<R>(late);
  throw fail(call_error::kind::timeout, exit_reason::error("timeout"));
}

/// gen_server:call from an outside thread (blocks it).
template <class S, class Req>
reply_of_t<std::decay_t<Req>> call(mailbox& me, server_ref<S> server, Req&& req,
                                   timeout_value timeout = std::chrono::milliseconds(5000)) {
  using D = std::decay_t<Req>;
  using R = reply_of_t<D>;
  static_assert(detail::handles_call<S, D>,
                "call: the server has no handle_call(const Req&, from<Reply>) for this request");
  const pid to = detail::resolve_server(me, server);
  auto fail = [&](call_error::kind k, exit_reason r) {
    return detail::make_call_error(k, std::move(r), server.to_string(), typeid(D).name(), timeout);
  };
  if (!to) throw fail(call_error::kind::noproc, exit_reason::noproc());
  const ref mref = detail::send_call<S>(me, to, std::forward<Req>(req));
  auto m =
      me.receive(since(mref), detail::reply_clause<R>(mref), detail::down_of(mref), after(timeout));
  if (detail::reply_arrived<R>(me, m, mref, fail)) return detail::reply_value<R>(m);
  auto late = me.receive(detail::reply_clause<R>(mref), after(std::chrono::milliseconds(0)));
  if (late.template get_if<detail::call_reply<R>>()) return detail::reply_value<R>(late);
  throw fail(call_error::kind::timeout, exit_reason::error("timeout"));
}

/// An outstanding asynchronous request (gen_server:send_request/2), typed by its reply. Holds
/// the monitor that makes the reply deliverable; receive_response consumes it. A default or
/// unresolved request_id (the server was not found) makes receive_response fail with noproc.
template <class R>
class request_id {
 public:
  request_id() = default;
  /// Made by send_request.
  request_id(ref m, std::string text) : monitor_(m), text_(std::move(text)) {}
  ref monitor() const noexcept { return monitor_; }
  /// The server as it was addressed, for error messages.
  const std::string& server_text() const noexcept { return text_; }

 private:
  ref monitor_;
  std::string text_;
};

/// gen_server:send_request/2: sends `req` without waiting; the reply is collected later with
/// receive_response. Many requests may be outstanding at once. Never blocks, never throws for
/// a dead server (its receive_response fails with noproc).
template <class S, class Req>
request_id<reply_of_t<std::decay_t<Req>>> send_request(basic_process& self, server_ref<S> server,
                                                       Req&& req) {
  using D = std::decay_t<Req>;
  static_assert(detail::handles_call<S, D>,
                "send_request: the server has no handle_call(const Req&, from<Reply>) for this "
                "request");
  const pid to = detail::resolve_server(self, server);
  if (!to) return request_id<reply_of_t<D>>(ref(), server.to_string());
  return request_id<reply_of_t<D>>(detail::send_call<S>(self, to, std::forward<Req>(req)),
                                   server.to_string());
}

/// gen_server:receive_response/2: waits up to `timeout` for the reply of `id`. Throws
/// call_error for noproc, the server's exit, or timeout (the request is then abandoned: a later
/// reply is dropped).
template <class R>
task<R> receive_response(process& self, request_id<R> id, timeout_value timeout = infinity) {
  auto fail = [&](call_error::kind k, exit_reason r) {
    return detail::make_call_error(k, std::move(r), id.server_text(), "receive_response", timeout);
  };
  if (!id.monitor()) throw fail(call_error::kind::noproc, exit_reason::noproc());
  const ref mref = id.monitor();
  auto m = co_await self.receive(since(mref), detail::reply_clause<R>(mref), detail::down_of(mref),
                                 after(timeout));
  if (detail::reply_arrived<R>(self, m, mref, fail)) co_return detail::reply_value<R>(m);
  auto late =
      co_await self.receive(detail::reply_clause<R>(mref), after(std::chrono::milliseconds(0)));
  if (late.template get_if<detail::call_reply<R>>()) co_return detail::reply_value<R>(late);
  throw fail(call_error::kind::timeout, exit_reason::error("timeout"));
}

/// gen_server:cast: always succeeds, even when nobody is there (§4.3 rule 11).
template <class S, class Req>
void cast(basic_process& self, server_ref<S> server, Req&& req) {
  using D = std::decay_t<Req>;
  static_assert(detail::handles_cast<S, D>,
                "cast: the server has no handle_cast(const Req&) for this request");
  const pid to = detail::resolve_server(self, server);
  if (!to) return;
  detail::send_node(
      *detail::runtime_of(self), to,
      detail::make_node<detail::cast_envelope<S, D>>(
          &detail::cast_type<S, D>, detail::cast_envelope<S, D>{std::forward<Req>(req)}));
}

/// cast from any thread, without a mailbox.
template <class S, class Req>
void cast(runtime& rt, server_ref<S> server, Req&& req) {
  using D = std::decay_t<Req>;
  static_assert(detail::handles_cast<S, D>,
                "cast: the server has no handle_cast(const Req&) for this request");
  const pid to = server.resolve(rt);
  if (!to) return;
  detail::send_node(
      rt.core(), to,
      detail::make_node<detail::cast_envelope<S, D>>(
          &detail::cast_type<S, D>, detail::cast_envelope<S, D>{std::forward<Req>(req)}));
}

/// gen_server:stop(Server, Reason, Timeout): stops the server and waits until it has exited.
/// Throws call_error with OTP's bare reasons: `noproc` if it is not alive, `timeout`, or the
/// reason it exited with if that differs from `reason` (e.g. what its terminate exited with).
template <class S>
task<> stop(process& self, server_ref<S> server, exit_reason reason = exit_reason::normal(),
            timeout_value timeout = infinity) {
  const pid to = detail::resolve_server(self, server);
  auto fail = [](call_error::kind k, exit_reason r) {
    return detail::make_stop_error(k, std::move(r));
  };
  if (!to) throw fail(call_error::kind::noproc, exit_reason::noproc());
  const ref mref = self.monitor(to, marked);
  self.send(to, detail::stop_request{reason});
  auto m = co_await self.receive(since(mref), detail::down_of(mref), after(timeout));
  if (auto* d = m.template get_if<down>()) {
    if (d->reason == exit_reason::noproc()) throw fail(call_error::kind::noproc, d->reason);
    if (!(d->reason == reason)) throw fail(call_error::kind::server_exited, d->reason);
    co_return;
  }
  self.demonitor(mref, flush);
  throw fail(call_error::kind::timeout, exit_reason::error("timeout"));
}

/// gen_server:stop from an outside thread.
template <class S>
void stop(mailbox& me, server_ref<S> server, exit_reason reason = exit_reason::normal(),
          timeout_value timeout = infinity) {
  const pid to = detail::resolve_server(me, server);
  auto fail = [](call_error::kind k, exit_reason r) {
    return detail::make_stop_error(k, std::move(r));
  };
  if (!to) throw fail(call_error::kind::noproc, exit_reason::noproc());
  const ref mref = me.monitor(to, marked);
  me.send(to, detail::stop_request{reason});
  auto m = me.receive(since(mref), detail::down_of(mref), after(timeout));
  if (auto* d = m.template get_if<down>()) {
    if (d->reason == exit_reason::noproc()) throw fail(call_error::kind::noproc, d->reason);
    if (!(d->reason == reason)) throw fail(call_error::kind::server_exited, d->reason);
    return;
  }
  me.demonitor(mref, flush);
  throw fail(call_error::kind::timeout, exit_reason::error("timeout"));
}

BEAMLET_END_NAMESPACE
