/// @file
/// beamlet/core/receive.hpp: selective receive clauses and results.
///
/// A receive lists clauses in priority order:
///
///   auto m = co_await self.receive(on<ping>(),                      // any ping
///                                  on<job>().when(is_urgent),      // a job passing a guard
///                                  after(5s));                     // give up after 5 s
///   if (auto* p = m.get_if<ping>()) ...; else if (m.timed_out()) ...
///
/// Semantics are Erlang's (spec §1.2): the OLDEST message matching ANY clause is taken (for
/// each message in queue order the clauses are tried top to bottom); messages that match nothing
/// stay queued in their original order; a blocked receive only tests messages that arrive after
/// it blocked; the next receive starts again at the head of the queue. `after(0)` polls once and
/// never blocks; `after(infinity)` is the same as no `after`; a receive with only `after(t)` is a
/// sleep. Timeouts follow beamlet/core/timeout.hpp: negative or NaN is an error, overlong is
/// infinity.
///
/// Clause matching is by exact type: `on<T>` matches a message sent as T (after decay), not a
/// type derived from T. Guards take `const T&` and must not have side effects that matter: like
/// Erlang guards they may run on messages that are then left in the queue. A guard that throws
/// makes the receive throw that exception.
///
/// Two result styles:
///  * value style (no clause has a handler): the receive yields `received<T...>`, which owns the
///    matched message;
///  * handler style (every clause has a handler, and `after` too if present): the matched clause's
///    handler runs with the message as an rvalue and the receive yields the handlers' common
///    return type. For a message type whose move constructor may throw, the message is first
///    moved out of the mailbox with the strong guarantee (if that move throws, the message stays
///    queued where it was and the receive throws); the handler then gets that moved-out value,
///    and an exception from there on (the handler's own parameter copy included) is the
///    handler's: the message is consumed, as in Erlang once a clause has matched.
///
/// Cost model (spec §1.3): a receive that matches nothing has examined every queued message;
/// that is deliberate, it is how BEAM behaves and what the supervisor meltdown is made of. A
/// receive that starts with `since(r)`, where r was made with `make_ref(marked)` or
/// `monitor(p, marked)`, skips every message queued before r existed. Only use it when every
/// clause can match nothing but messages carrying r (OTP's condition, rule 14); a catch-all
/// clause is rejected at compile time (rule 15).
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/receive_op.hpp>
#include <beamlet/core/error.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE

/// What may be sent: any movable object type. Arrays decay, references are stripped, and
/// the message is moved (or copied) into the receiver's mailbox.
template <class T>
concept message = std::is_object_v<std::decay_t<T>> && std::move_constructible<std::decay_t<T>> &&
    std::destructible<std::decay_t<T>>;

/// A message of a type the receiving clause did not name (see on_any()). Owns the message.
class any_message {
 public:
  /// Holds no message.
  any_message() noexcept = default;
  /// Takes ownership of the message node `n` (the receive machinery and received::take()).
  explicit any_message(detail::message_node* n) noexcept : node_(n) {}

  /// True when it holds a message sent as T (exact type, as `on<T>` matches).
  template <class T>
  bool is() const noexcept {
    return node_ != nullptr && node_->type == detail::tag_of<T>();
  }
  /// The message if it is a T, else nullptr.
  template <class T>
  T* get_if() noexcept {
    return is<T>() ? &detail::payload<T>(node_.get()) : nullptr;
  }
  /// Demangled C++ type name of the message.
  std::string type_name() const;

  /// The message's type descriptor and node, for protocol code (gen_server); not for users.
  const detail::type_descriptor* descriptor() const noexcept {
    return node_ != nullptr ? node_->type : nullptr;
  }
  /// The message node, still owned by this object; protocol code only, like descriptor().
  detail::message_node* native_handle() const noexcept { return node_.get(); }

 private:
  detail::node_ptr node_;
};

namespace detail {
struct no_guard {};
struct no_handler {};
}  // namespace detail

/// A typed clause: matches messages of type T, optionally only those passing a guard, and
/// optionally handing them to a handler. Build with on<T>() and refine with .when(guard).
template <class T, class Guard = detail::no_guard, class Handler = detail::no_handler>
class on_clause {
 public:
  /// The message type the clause matches (any_message for on_any()).
  using message_type = T;
  /// Whether the clause has a guard (set by when()).
  static constexpr bool has_guard = !std::is_same_v<Guard, detail::no_guard>;
  /// Whether the clause has a handler, i.e. belongs to a handler-style receive.
  static constexpr bool has_handler = !std::is_same_v<Handler, detail::no_handler>;

  /// A clause with neither guard nor handler.
  constexpr on_clause() = default;
  /// A clause with guard `g` and handler `h`; on() and when() build them.
  constexpr on_clause(Guard g, Handler h) : guard(std::move(g)), handler(std::move(h)) {}

  /// Adds a guard: a predicate on `const T&`. The clause matches only when it returns true.
  template <class G>
  constexpr on_clause<T, std::decay_t<G>, Handler> when(G&& g) && {
    static_assert(!has_guard, "a clause takes one guard; combine conditions in one predicate");
    static_assert(!std::is_same_v<T, any_message>, "on_any() takes no guard");
    static_assert(std::is_invocable_r_v<bool, std::decay_t<G>&, const T&>,
                  "a guard must be callable as bool(const T&)");
    return {std::forward<G>(g), std::move(handler)};
  }

  /// The guard (detail::no_guard when there is none).
  Guard guard;
  /// The handler (detail::no_handler when there is none).
  Handler handler;
};

/// Matches any message of type T.
template <class T>
constexpr on_clause<T> on() {
  static_assert(message<T> && std::is_same_v<T, std::decay_t<T>>,
                "on<T>: T must be a plain (decayed) movable message type");
  return {};
}

/// Matches any message of type T and runs `handler(T&&)` on it.
template <class T, class H>
constexpr on_clause<T, detail::no_guard, std::decay_t<H>> on(H&& handler) {
  static_assert(message<T> && std::is_same_v<T, std::decay_t<T>>,
                "on<T>: T must be a plain (decayed) movable message type");
  static_assert(std::is_invocable_v<std::decay_t<H>&, T&&>,
                "on<T>(handler): the handler must be callable with T&&");
  return {detail::no_guard{}, std::forward<H>(handler)};
}

/// Matches every message (Erlang's catch-all variable). Disables the marker optimisation.
constexpr on_clause<any_message> on_any() {
  return {};
}
/// Matches every message and runs `handler(any_message&&)` on it. Like on_any(), not allowed
/// in a receive that starts with since() (a compile error, spec §1.3 rule 15).
template <class H>
constexpr on_clause<any_message, detail::no_guard, std::decay_t<H>> on_any(H&& handler) {
  static_assert(std::is_invocable_v<std::decay_t<H>&, any_message&&>,
                "on_any(handler): the handler must be callable with any_message&&");
  return {detail::no_guard{}, std::forward<H>(handler)};
}

/// The timeout clause; must be the last argument of a receive.
template <class Handler = detail::no_handler>
class after_clause {
 public:
  /// Whether a handler runs on timeout, i.e. the clause belongs to a handler-style receive.
  static constexpr bool has_handler = !std::is_same_v<Handler, detail::no_handler>;
  /// Times out after `t` and runs `h`; after() builds it.
  constexpr after_clause(timeout_value t, Handler h) : timeout_(t), handler(std::move(h)) {}

  /// False for `infinity`: the receive then waits as if it had no `after`.
  bool finite() const noexcept { return timeout_.finite(); }
  /// The timeout; clock_time::duration::max() for infinity.
  clock_time::duration duration() const noexcept { return timeout_.duration(); }

 private:
  timeout_value timeout_;

 public:
  /// Run when the timeout fires (detail::no_handler when there is none).
  Handler handler;
};

/// Time out `t` after entering the receive (a duration or `infinity`; see
/// beamlet/core/timeout.hpp). A negative or NaN duration throws timeout_value_error here, before
/// the receive starts.
inline after_clause<> after(timeout_value t) {
  return {t, {}};
}
/// Time out `t` after entering the receive and run `handler()`.
template <class H>
after_clause<std::decay_t<H>> after(timeout_value t, H&& handler) {
  static_assert(std::is_invocable_v<std::decay_t<H>&>,
                "after(t, handler): handler() must be callable");
  return {t, std::forward<H>(handler)};
}

/// Tag for make_ref/monitor: also place a receive marker (spec §1.3 rule 16).
struct marked_t {
  explicit constexpr marked_t() = default;
};
/// `make_ref(marked)`, `monitor(p, marked)`, `spawn_monitor(body, marked)`.
inline constexpr marked_t marked{};

/// First argument of a marked receive: skip messages queued before `r` was made.
struct since_t {
  /// The marked ref; messages queued before it was made are skipped.
  ref r;
};
/// `receive(since(r), clauses...)`: skips every message queued before `r` was made marked
/// (make_ref(marked), monitor(p, marked), spawn_monitor(body, marked)). Every clause must
/// match only messages carrying `r` (spec §1.3 rule 14). The receive clears the marker when it
/// ends; when `r` has none (unmarked, already used, or evicted) it scans from the head: same
/// result, only slower.
constexpr since_t since(ref r) noexcept {
  return {r};
}

/// The result of a value-style receive: the matched message (owned), or a timeout.
template <class... Ts>
class received {
 public:
  /// Holds no message: timed out.
  received() noexcept = default;
  /// Takes ownership of the message node `n`, matched by clause `clause` (the receive
  /// machinery builds it).
  received(detail::message_node* n, int clause) noexcept : node_(n), clause_(clause) {}
  /// Takes `o`'s message; `o` is left holding none (as if timed out).
  received(received&& o) noexcept
      : node_(std::move(o.node_)), clause_(std::exchange(o.clause_, -1)) {}
  /// Takes `o`'s message, destroying any held before; `o` is left holding none.
  received& operator=(received&& o) noexcept {
    node_ = std::move(o.node_);
    clause_ = std::exchange(o.clause_, -1);
    return *this;
  }

  /// True when the `after` clause fired.
  bool timed_out() const noexcept { return node_ == nullptr; }
  /// True when a message matched: `!timed_out()`.
  explicit operator bool() const noexcept { return node_ != nullptr; }
  /// Index of the matching clause (0-based, in the order given), -1 on timeout.
  int clause() const noexcept { return clause_; }

  /// True when the message is a T. T must be the type of one of the receive's clauses (or
  /// the receive has an on_any() clause): otherwise it does not compile.
  template <class T>
  bool is() const noexcept {
    check<T>();
    return node_ != nullptr && node_->type == detail::tag_of<T>();
  }
  /// The message if it is a T, else nullptr (also on timeout). T as for is().
  template <class T>
  T* get_if() noexcept {
    return is<T>() ? &detail::payload<T>(node_.get()) : nullptr;
  }
  /// The message as a T; throws bad_message_access when it is not one (or on timeout).
  template <class T>
  T& get() {
    if (!is<T>()) throw bad_message_access("beamlet: received does not hold the requested type");
    return detail::payload<T>(node_.get());
  }
  /// Takes the message out as an any_message (useful after an on_any() match).
  any_message take() noexcept { return any_message(node_.release()); }

 private:
  template <class T>
  static constexpr void check() {
    static_assert((std::is_same_v<T, Ts> || ...) || (std::is_same_v<any_message, Ts> || ...),
                  "received<...>::get_if<T>: no clause of this receive matches T");
  }

  detail::node_ptr node_;
  int clause_ = -1;
};

BEAMLET_END_NAMESPACE

// The machinery that turns a receive's clauses into one request: last, because it is built on
// the clause and result types above.
#include <beamlet/core/detail/receive_request.hpp>
