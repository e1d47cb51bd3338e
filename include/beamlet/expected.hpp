// beamlet/expected.hpp: a value or an error, a C++20 subset of C++23's std::expected.
//
// Used by the supervisor management API, whose errors are expected outcomes (not_found,
// already_started, running...) rather than exceptions. Accessing the wrong alternative throws
// bad_expected_access.
#pragma once

#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include <beamlet/config.hpp>

BEAMLET_BEGIN_NAMESPACE

class bad_expected_access : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Wraps an error for expected's constructor: `return unexpected(sup_error{...});`.
template <class E>
class unexpected {
 public:
  explicit unexpected(E e) : error_(std::move(e)) {}
  const E& error() const& noexcept { return error_; }
  E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};
template <class E>
unexpected(E) -> unexpected<E>;

template <class T, class E>
class [[nodiscard]] expected {
 public:
  expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  template <class F>
  expected(unexpected<F> f) : v_(std::in_place_index<1>, std::move(f).error()) {}

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { return check_value(), std::get<0>(v_); }
  const T& value() const& { return check_value(), std::get<0>(v_); }
  T&& value() && { return check_value(), std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const {
    if (has_value()) throw bad_expected_access("beamlet: expected holds a value, not an error");
    return std::get<1>(v_);
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
  expected() = default;
  template <class F>
  expected(unexpected<F> f) : error_(std::move(f).error()), failed_(true) {}

  bool has_value() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (failed_) throw bad_expected_access("beamlet: expected holds an error, not a value");
  }
  const E& error() const {
    if (!failed_) throw bad_expected_access("beamlet: expected holds a value, not an error");
    return error_;
  }

 private:
  E error_{};
  bool failed_ = false;
};

BEAMLET_END_NAMESPACE
