// beamlet/core/detail/receive_request.hpp: how a receive's clauses become one request.
//
// receive_types<Args...> sorts a receive's arguments (since(r), on<T> clauses, an after clause)
// at compile time into a receive_request: a receive_op that the core's mailbox scan drives
// (match, take, time out) and that then yields the value-style received<T...> or runs the
// matched handler. Included at the end of beamlet/core/receive.hpp, whose clause and result
// types it is built on; not API.
#pragma once

#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/receive_op.hpp>
#include <beamlet/core/receive.hpp>

BEAMLET_BEGIN_NAMESPACE

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
