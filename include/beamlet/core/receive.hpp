// beamlet/core/receive.hpp: selective receive clauses and results.
//
// A receive lists clauses in priority order:
//
//   auto m = co_await self.receive(on<ping>(),                      // any ping
//                                  on<job>().when(is_urgent),      // a job passing a guard
//                                  after(5s));                     // give up after 5 s
//   if (auto* p = m.get_if<ping>()) ...; else if (m.timed_out()) ...
//
// Semantics are Erlang's (spec §1.2): the OLDEST message matching ANY clause is taken (for
// each message in queue order the clauses are tried top to bottom); messages that match nothing
// stay queued in their original order; a blocked receive only tests messages that arrive after
// it blocked; the next receive starts again at the head of the queue. `after(0)` polls once and
// never blocks; `after(infinity)` is the same as no `after`; a receive with only `after(t)` is a
// sleep. Timeouts follow beamlet/core/timeout.hpp: negative or NaN is an error, overlong is
// infinity.
//
// Clause matching is by exact type: `on<T>` matches a message sent as T (after decay), not a
// type derived from T. Guards take `const T&` and must not have side effects that matter: like
// Erlang guards they may run on messages that are then left in the queue. A guard that throws
// makes the receive throw that exception.
//
// Two result styles:
//  * value style (no clause has a handler): the receive yields `received<T...>`, which owns the
//    matched message;
//  * handler style (every clause has a handler, and `after` too if present): the matched clause's
//    handler runs with the message as an rvalue and the receive yields the handlers' common
//    return type. For a message type whose move constructor may throw, the message is first
//    moved out of the mailbox with the strong guarantee (if that move throws, the message stays
//    queued where it was and the receive throws); the handler then gets that moved-out value,
//    and an exception from there on (the handler's own parameter copy included) is the
//    handler's: the message is consumed, as in Erlang once a clause has matched.
//
// Cost model (spec §1.3): a receive that matches nothing has examined every queued message;
// that is deliberate, it is how BEAM behaves and what the supervisor meltdown is made of. A
// receive that starts with `since(r)`, where r was made with `make_ref(marked)` or
// `monitor(p, marked)`, skips every message queued before r existed. Only use it when every
// clause can match nothing but messages carrying r (OTP's condition, rule 14); a catch-all
// clause is rejected at compile time (rule 15).
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
  any_message() noexcept = default;
  explicit any_message(detail::message_node* n) noexcept : node_(n) {}

  template <class T>
  bool is() const noexcept {
    return node_ != nullptr && node_->type == detail::tag_of<T>();
  }
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
  using message_type = T;
  static constexpr bool has_guard = !std::is_same_v<Guard, detail::no_guard>;
  static constexpr bool has_handler = !std::is_same_v<Handler, detail::no_handler>;

  constexpr on_clause() = default;
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

  Guard guard;
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
  static constexpr bool has_handler = !std::is_same_v<Handler, detail::no_handler>;
  constexpr after_clause(timeout_value t, Handler h) : timeout_(t), handler(std::move(h)) {}

  bool finite() const noexcept { return timeout_.finite(); }
  detail::clock::duration duration() const noexcept { return timeout_.duration(); }

 private:
  timeout_value timeout_;

 public:
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
inline constexpr marked_t marked{};

/// First argument of a marked receive: skip messages queued before `r` was made.
struct since_t {
  ref r;
};
constexpr since_t since(ref r) noexcept {
  return {r};
}

/// The result of a value-style receive: the matched message (owned), or a timeout.
template <class... Ts>
class received {
 public:
  received() noexcept = default;
  received(detail::message_node* n, int clause) noexcept : node_(n), clause_(clause) {}
  received(received&& o) noexcept
      : node_(std::move(o.node_)), clause_(std::exchange(o.clause_, -1)) {}
  received& operator=(received&& o) noexcept {
    node_ = std::move(o.node_);
    clause_ = std::exchange(o.clause_, -1);
    return *this;
  }

  /// True when the `after` clause fired.
  bool timed_out() const noexcept { return node_ == nullptr; }
  explicit operator bool() const noexcept { return node_ != nullptr; }
  /// Index of the matching clause (0-based, in the order given), -1 on timeout.
  int clause() const noexcept { return clause_; }

  template <class T>
  bool is() const noexcept {
    check<T>();
    return node_ != nullptr && node_->type == detail::tag_of<T>();
  }
  template <class T>
  T* get_if() noexcept {
    return is<T>() ? &detail::payload<T>(node_.get()) : nullptr;
  }
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

namespace detail {

template <class T>
inline constexpr bool is_on_clause = false;
template <class T, class G, class H>
inline constexpr bool is_on_clause<on_clause<T, G, H>> = true;
template <class T>
inline constexpr bool is_after_clause = false;
template <class H>
inline constexpr bool is_after_clause<after_clause<H>> = true;

/// Splits `receive(args...)` into [since] clauses... [after].
template <class... Args>
struct receive_shape {
  static constexpr std::size_t n = sizeof...(Args);
  using tuple = std::tuple<Args...>;
  static constexpr bool has_since =
      n > 0 && std::is_same_v<std::tuple_element_t<0, tuple>, since_t>;
  template <std::size_t I>
  static constexpr bool last_is_after() {
    if constexpr (I == 0)
      return false;
    else
      return is_after_clause<std::tuple_element_t<I - 1, tuple>>;
  }
  static constexpr bool has_after = last_is_after<n>();
  static constexpr std::size_t first_clause = has_since ? 1 : 0;
  static constexpr std::size_t clause_count = n - first_clause - (has_after ? 1 : 0);
};

template <std::size_t Offset, class Tuple, class Seq>
struct slice_type;
template <std::size_t Offset, class Tuple, std::size_t... I>
struct slice_type<Offset, Tuple, std::index_sequence<I...>> {
  using type = std::tuple<std::tuple_element_t<Offset + I, Tuple>...>;
};

template <class Clause>
using clause_message_t = typename Clause::message_type;

/// No `after` clause.
struct no_after {
  static constexpr bool has_handler = false;
  detail::no_handler handler;
};

template <class Clauses, class After>
struct receive_result;
template <class... Cs, class After>
struct receive_result<std::tuple<Cs...>, After> {
  static constexpr bool has_after = !std::is_same_v<After, no_after>;
  static constexpr bool any_handler = (Cs::has_handler || ...) || (has_after && After::has_handler);
  static constexpr bool all_handlers =
      (Cs::has_handler && ...) && (!has_after || After::has_handler);
  template <class C>
  static auto handler_result() {
    using T = clause_message_t<C>;
    return std::type_identity<std::invoke_result_t<decltype(C::handler)&, T&&>>{};
  }
  static auto compute() {
    if constexpr (!any_handler) {
      return std::type_identity<received<clause_message_t<Cs>...>>{};
    } else if constexpr (sizeof...(Cs) > 0) {
      using first = std::tuple_element_t<0, std::tuple<Cs...>>;
      return handler_result<first>();
    } else {
      return std::type_identity<std::invoke_result_t<decltype(After::handler)&>>{};
    }
  }
  using type = typename decltype(compute())::type;
};

/// The typed receive: clauses compiled into scan(), results built by take_result().
template <class Clauses, class After>
class receive_request : public receive_op {
  using result_info = receive_result<Clauses, After>;

 public:
  using result_type = typename result_info::type;
  static constexpr bool handler_style = result_info::any_handler;

  /// Built in place from the arguments of `receive(...)` (see receive_types).
  template <class Shape, class... Args>
  receive_request(std::type_identity<Shape>, Args&&... args)
      : receive_request(from_tuple{}, std::type_identity<Shape>{},
                        std::forward_as_tuple(std::forward<Args>(args)...)) {}

  static bool scan_impl(receive_op* self, message_queue& q) {
    return static_cast<receive_request*>(self)->scan_typed(q);
  }

  bool scan_typed(message_queue& q) {
    message_node* prev = position;
    std::uint64_t examined = 0;
    for (message_node* n = prev->next; n != nullptr; prev = n, n = n->next) {
      ++examined;
      const int c = match(n);
      if (c >= 0) {
        q.add_scanned(examined);
        matched = q.unlink_after(prev);
        queue = &q;
        clause = c;
        position = prev;
        return true;
      }
    }
    q.add_scanned(examined);
    position = prev;
    return false;
  }

  /// Builds the result once the receive has completed (matched or timed out).
  result_type take_result() {
    if (error) std::rethrow_exception(error);
    if constexpr (!handler_style) {
      return result_type(std::exchange(matched, nullptr), clause);
    } else {
      if (matched == nullptr) {
        if constexpr (!std::is_same_v<After, no_after>) return after_.handler();
      }
      node_ptr node(std::exchange(matched, nullptr));
      return dispatch(node, std::make_index_sequence<std::tuple_size_v<Clauses>>{});
    }
  }

  ~receive_request() {
    if (matched != nullptr) destroy_node(matched);
  }

 private:
  struct from_tuple {};
  template <class Shape, class Tuple>
  receive_request(from_tuple, std::type_identity<Shape>, Tuple&& all)
      : receive_op(&scan_impl),
        clauses_(take_clauses<Shape>(all, std::make_index_sequence<Shape::clause_count>{})),
        after_(take_after<Shape>(all)) {
    static_assert(!handler_style || result_info::all_handlers,
                  "receive: either no clause has a handler (value style) or every clause and "
                  "the after clause have one (handler style)");
    check_handler_results(std::make_index_sequence<std::tuple_size_v<Clauses>>{});
    if constexpr (!std::is_same_v<After, no_after>) {
      has_timeout = after_.finite();
      timeout = after_.duration();
      if constexpr (handler_style) {
        static_assert(
            std::is_same_v<std::invoke_result_t<decltype(after_.handler)&>, result_type>,
            "receive: the after handler must return the same type as the clause handlers");
      }
    }
    if constexpr (Shape::has_since) since = std::get<0>(all).r.value();
  }

  template <class Shape, class Tuple, std::size_t... I>
  static Clauses take_clauses(Tuple& all, std::index_sequence<I...>) {
    return Clauses(std::forward<std::tuple_element_t<Shape::first_clause + I, Tuple>>(
        std::get<Shape::first_clause + I>(all))...);
  }
  template <class Shape, class Tuple>
  static After take_after(Tuple& all) {
    if constexpr (Shape::has_after) {
      return After(
          std::forward<std::tuple_element_t<Shape::n - 1, Tuple>>(std::get<Shape::n - 1>(all)));
    } else {
      return After{};
    }
  }

  template <std::size_t... I>
  static constexpr void check_handler_results(std::index_sequence<I...>) {
    if constexpr (handler_style) {
      static_assert((std::is_same_v<typename decltype(result_info::template handler_result<
                                                      std::tuple_element_t<I, Clauses>>())::type,
                                    result_type> &&
                     ...),
                    "receive: every clause handler must return the same type");
    }
  }

  int match(message_node* n) { return match_from<0>(n); }

  template <std::size_t I>
  int match_from(message_node* n) {
    if constexpr (I == std::tuple_size_v<Clauses>) {
      return -1;
    } else {
      using C = std::tuple_element_t<I, Clauses>;
      using T = clause_message_t<C>;
      if constexpr (std::is_same_v<T, any_message>) {
        return static_cast<int>(I);
      } else {
        if (n->type == tag_of<T>()) {
          if constexpr (C::has_guard) {
            if (std::get<I>(clauses_).guard(std::as_const(payload<T>(n))))
              return static_cast<int>(I);
          } else {
            return static_cast<int>(I);
          }
        }
        return match_from<I + 1>(n);
      }
    }
  }

  template <std::size_t... I>
  result_type dispatch(node_ptr& n, std::index_sequence<I...>) {
    if constexpr (std::is_void_v<result_type>) {
      (void)((clause == static_cast<int>(I) ? (invoke_clause<I>(n), true) : false) || ...);
    } else {
      std::optional<result_type> r;
      (void)((clause == static_cast<int>(I) ? (r.emplace(invoke_clause<I>(n)), true) : false) ||
             ...);
      return std::move(*r);
    }
  }

  template <std::size_t I>
  decltype(auto) invoke_clause(node_ptr& n) {
    using C = std::tuple_element_t<I, Clauses>;
    using T = clause_message_t<C>;
    if constexpr (std::is_same_v<T, any_message>) {
      return std::get<I>(clauses_).handler(any_message(n.release()));
    } else if constexpr (std::is_nothrow_move_constructible_v<T>) {
      return std::get<I>(clauses_).handler(std::move(payload<T>(n.get())));
    } else {
      // Strong guarantee: the message leaves the mailbox only once it has been moved out. If
      // that move throws, the message goes back to where it was and the exception propagates.
      std::optional<T> local;
      try {
        local.emplace(std::move(payload<T>(n.get())));
      } catch (...) {
        queue->insert_after(position, n.release());
        throw;
      }
      n.reset();
      return std::get<I>(clauses_).handler(std::move(*local));
    }
  }

  Clauses clauses_;
  After after_;
};

/// The receive_request type for `receive(args...)`, with the argument checks.
template <class... Args>
struct receive_types {
  using shape = receive_shape<std::decay_t<Args>...>;
  using all_t = std::tuple<std::decay_t<Args>...>;
  using clauses_t = typename slice_type<shape::first_clause, all_t,
                                        std::make_index_sequence<shape::clause_count>>::type;
  template <std::size_t... I>
  static constexpr bool all_on_clauses(std::index_sequence<I...>) {
    return (is_on_clause<std::tuple_element_t<I, clauses_t>> && ...);
  }
  template <std::size_t... I>
  static constexpr bool no_catch_all(std::index_sequence<I...>) {
    return (!std::is_same_v<clause_message_t<std::tuple_element_t<I, clauses_t>>, any_message> &&
            ...);
  }
  static_assert(all_on_clauses(std::make_index_sequence<shape::clause_count>{}),
                "receive: arguments are [since(ref),] on<T>()/on_any() clauses..., [after(t)]; "
                "since() must come first and after() last");
  static_assert(!shape::has_since || no_catch_all(std::make_index_sequence<shape::clause_count>{}),
                "receive(since(r), ...): a catch-all clause cannot be marked; every clause must "
                "match only messages carrying r (spec §1.3 rule 15)");
  static auto after_type() {
    if constexpr (shape::has_after) {
      return std::type_identity<std::tuple_element_t<shape::n - 1, all_t>>{};
    } else {
      return std::type_identity<no_after>{};
    }
  }
  using after_t = typename decltype(after_type())::type;
  using request = receive_request<clauses_t, after_t>;
};

}  // namespace detail

BEAMLET_END_NAMESPACE
