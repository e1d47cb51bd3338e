/// @file
/// beamlet/core/expected.hpp: a value or an error, a C++20 subset of C++23's std::expected.
///
/// Used by the supervisor management API, whose errors are expected outcomes (not_found,
/// already_started, running...) rather than exceptions. Accessing the wrong alternative throws
/// bad_expected_access. Besides has_value/value/error: value_or, and_then (chain another
/// operation that may fail) and transform (map the value), as in C++23:
///
///   auto n = (co_await supervisor::count_children(self, sup)).workers;      // plain value
///   auto pid = r.transform([](const start_result& s) { return s.pid(); }).value_or(pid{});
#pragma once

#include <functional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Thrown by expected::value() when it holds an error, and by expected::error() when it holds a
/// value.
class bad_expected_access : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Wraps an error for expected's constructor: `return unexpected(sup_error{...});`.
template <class E>
class unexpected {
 public:
  /// Wraps `e`.
  explicit unexpected(E e) : error_(std::move(e)) {}
  /// The wrapped error.
  const E& error() const& noexcept { return error_; }
  /// The wrapped error, to move from.
  E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};
/// Deduces E from the argument: `unexpected(sup_error{...})` is an `unexpected<sup_error>`.
template <class E>
unexpected(E) -> unexpected<E>;

/// Either a T (success) or an E (the error): the return type of operations whose failure is
/// an ordinary outcome. Unlike std::expected, `*` and `->` check too: they throw
/// bad_expected_access when there is no value.
template <class T, class E>
class [[nodiscard]] expected {
 public:
  /// Success, holding `value`.
  expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  /// Failure, holding f's error converted to E.
  template <class F>
  expected(unexpected<F> f) : v_(std::in_place_index<1>, std::move(f).error()) {}

  /// True when it holds a value.
  bool has_value() const noexcept { return v_.index() == 0; }
  /// has_value().
  explicit operator bool() const noexcept { return has_value(); }

  /// The value; throws bad_expected_access when it holds an error.
  T& value() & { return check_value(), std::get<0>(v_); }
  /// The value; throws bad_expected_access when it holds an error.
  const T& value() const& { return check_value(), std::get<0>(v_); }
  /// The value, to move from; throws bad_expected_access when it holds an error.
  T&& value() && { return check_value(), std::get<0>(std::move(v_)); }
  /// value(): throws bad_expected_access when it holds an error.
  T& operator*() & { return value(); }
  /// value(): throws bad_expected_access when it holds an error.
  const T& operator*() const& { return value(); }
  /// Member access to value(): throws bad_expected_access when it holds an error.
  T* operator->() { return &value(); }
  /// Member access to value(): throws bad_expected_access when it holds an error.
  const T* operator->() const { return &value(); }

  /// The error; throws bad_expected_access when it holds a value.
  const E& error() const {
    if (has_value()) throw bad_expected_access("beamlet: expected holds a value, not an error");
    return std::get<1>(v_);
  }

  /// The value, or `fallback` converted to T.
  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(fallback));
  }
  /// The value moved out, or `fallback` converted to T.
  template <class U>
  T value_or(U&& fallback) && {
    return has_value() ? std::get<0>(std::move(v_)) : static_cast<T>(std::forward<U>(fallback));
  }

  /// f(value) (which returns an expected<U, E>) if there is a value; the error otherwise.
  template <class F>
  auto and_then(F&& f) const& {
    using R = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    if (has_value()) return std::invoke(std::forward<F>(f), std::get<0>(v_));
    return R(unexpected(std::get<1>(v_)));
  }
  /// f(value moved out) (which returns an expected<U, E>) if there is a value; the error
  /// otherwise.
  template <class F>
  auto and_then(F&& f) && {
    using R = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    if (has_value()) return std::invoke(std::forward<F>(f), std::get<0>(std::move(v_)));
    return R(unexpected(std::get<1>(std::move(v_))));
  }

  /// expected<U, E> holding f(value), or the error.
  template <class F>
  auto transform(F&& f) const& {
    using U = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    if (!has_value()) return expected<U, E>(unexpected(std::get<1>(v_)));
    if constexpr (std::is_void_v<U>) {
      std::invoke(std::forward<F>(f), std::get<0>(v_));
      return expected<U, E>();
    } else {
      return expected<U, E>(std::invoke(std::forward<F>(f), std::get<0>(v_)));
    }
  }
  /// expected<U, E> holding f(value moved out), or the error.
  template <class F>
  auto transform(F&& f) && {
    using U = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    if (has_value()) {
      if constexpr (std::is_void_v<U>) {
        std::invoke(std::forward<F>(f), std::get<0>(std::move(v_)));
        return expected<U, E>();
      } else {
        return expected<U, E>(std::invoke(std::forward<F>(f), std::get<0>(std::move(v_))));
      }
    }
    return expected<U, E>(unexpected(std::get<1>(std::move(v_))));
  }

 private:
  void check_value() const {
    if (!has_value()) throw bad_expected_access("beamlet: expected holds an error, not a value");
  }
  std::variant<T, E> v_;
};

/// expected<void, E>: success carries nothing.
template <class E>
class [[nodiscard]] expected<void, E> {
 public:
  /// Success.
  expected() = default;
  /// Failure, holding f's error converted to E.
  template <class F>
  expected(unexpected<F> f) : error_(std::move(f).error()), failed_(true) {}

  /// True on success.
  bool has_value() const noexcept { return !failed_; }
  /// has_value().
  explicit operator bool() const noexcept { return has_value(); }
  /// Nothing on success; throws bad_expected_access when it holds an error.
  void value() const {
    if (failed_) throw bad_expected_access("beamlet: expected holds an error, not a value");
  }
  /// The error; throws bad_expected_access on success.
  const E& error() const {
    if (!failed_) throw bad_expected_access("beamlet: expected holds a value, not an error");
    return error_;
  }

  /// f() (which returns an expected<U, E>) on success; the error otherwise.
  template <class F>
  auto and_then(F&& f) const {
    using R = std::remove_cvref_t<std::invoke_result_t<F>>;
    if (!failed_) return std::invoke(std::forward<F>(f));
    return R(unexpected(error_));
  }
  /// expected<U, E> holding f() on success, or the error.
  template <class F>
  auto transform(F&& f) const {
    using U = std::remove_cvref_t<std::invoke_result_t<F>>;
    if (failed_) return expected<U, E>(unexpected(error_));
    if constexpr (std::is_void_v<U>) {
      std::invoke(std::forward<F>(f));
      return expected<U, E>();
    } else {
      return expected<U, E>(std::invoke(std::forward<F>(f)));
    }
  }

 private:
  E error_{};
  bool failed_ = false;
};

BEAMLET_END_NAMESPACE
