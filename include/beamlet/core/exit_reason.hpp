/// @file
/// beamlet/core/exit_reason.hpp: why a process ended, and the exception that ends one.
///
/// An `exit_reason` is an immutable value. The reasons OTP gives meaning to have their own kinds
/// (`normal`, `shutdown`, `{shutdown, Detail}`, `kill`, `killed`, `noproc`); everything else is
/// either an escaped C++ exception (type name and `what()`) or a free-form error term. Copies are
/// cheap: the common reasons carry no payload, the others share one refcounted payload, so a
/// DOWN fan-out to 100k watchers copies no strings.
///
/// A reason may also carry a value of a layer above the core (with_value): a reason that came
/// from another node keeps its term there (beamlet/dist), so that a pid, a reference or a
/// bitstring inside it survives being relayed to a third process or node. The value rides
/// along: comparisons and printing use the text, and value<T>() hands it back.
///
/// Thread-safety: an exit_reason may be copied and read from any number of threads.
#pragma once

#include <cstdint>
#include <exception>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// An atom inside exit_reason::error_tuple: printed bare where Erlang prints it bare
/// (`drop_oldest`), quoted otherwise (`'Drop me'`).
struct reason_atom {
  /// The atom's text, unquoted; it must outlive the error_tuple call.
  std::string_view name;
};

namespace detail {
/// An atom as Erlang prints it: bare where it may be (`drop_oldest`), quoted otherwise
/// (`'Drop me'`, `'end'`). The distribution layer prints its terms with these too.
void append_erlang_atom(std::string& out, std::string_view name);
/// A string as Erlang prints it: "...", escaped so that Erlang's reader gives it back.
void append_erlang_string(std::string& out, std::string_view text);
}  // namespace detail

/// Why a process ended: the Reason of OTP's `{'EXIT', Pid, Reason}` and `{'DOWN', ..., Reason}`.
/// Build one with the named constructors (normal(), shutdown(), error(), ...); test it with
/// which(), is_normal() and is_clean().
class exit_reason {
 public:
  /// The reasons OTP gives meaning to, and the two catch-alls (exception and error).
  enum class kind : std::uint8_t {
    normal,     ///< the body returned, or `exit(normal)`
    shutdown,   ///< `shutdown`, or `{shutdown, Detail}` when detail() is non-empty
    kill,       ///< the untrappable signal reason; a process exiting by itself with it ends `kill`
    killed,     ///< what a process killed by `kill` ends with (spec §2 rule 7)
    noproc,     ///< the target did not exist (links and monitors of dead pids)
    exception,  ///< a C++ exception escaped the process body
    error,      ///< any other reason: a free-form term such as `timeout` or `{bad_return,1}`
  };

  /// The `normal` reason.
  exit_reason() noexcept = default;

  /// `normal`: the process finished its work. Linked processes that do not trap exits ignore it.
  static exit_reason normal() noexcept { return exit_reason(kind::normal); }
  /// `shutdown`: asked to stop (how a supervisor stops a child); clean, like `normal`.
  static exit_reason shutdown() noexcept { return exit_reason(kind::shutdown); }
  /// `{shutdown, Detail}`: clean like `shutdown`, but carries why. An empty `detail` gives
  /// plain `shutdown`.
  static exit_reason shutdown(std::string detail);
  /// `kill`: sent as an exit signal, it ends the target even when it traps exits, with
  /// reason `killed`.
  static exit_reason kill() noexcept { return exit_reason(kind::kill); }
  /// `killed`: the reason of a process ended by a `kill` signal.
  static exit_reason killed() noexcept { return exit_reason(kind::killed); }
  /// `noproc`: the process did not exist (a link or monitor to a dead pid).
  static exit_reason noproc() noexcept { return exit_reason(kind::noproc); }
  /// Any other reason, written as an Erlang term would print (`timeout`, `{badarg,x}`).
  static exit_reason error(std::string term);
  /// `{Tag,E1,...}` built from parts rather than pasted text, so that whatever a part holds
  /// the term prints (and parses back) as Erlang would: `tag` is an atom; each element is a
  /// reason_atom, a string (printed as an Erlang string), an integer, a bool (an atom), or an
  /// exit_reason (its term). `error_tuple("already_started", name)` prints
  /// `{already_started,"the name"}`.
  template <class... Elements>
  static exit_reason error_tuple(std::string_view tag, const Elements&... elements) {
    std::string t = "{";
    detail::append_erlang_atom(t, tag);
    ((t += ',', append_element(t, elements)), ...);
    t += '}';
    return error(std::move(t));
  }
  /// `{exception, TypeName, "what"}`: a C++ exception of type `type_name` with message `what`
  /// (`kind::exception`). from_exception builds it from a caught exception.
  static exit_reason exception(std::string type_name, std::string what);
  /// The reason for an exception of any type: an `exit_exception` gives its own reason; any
  /// other gives `kind::exception` with its demangled dynamic type and `what()` (empty when
  /// `what()` is null; the text itself for a thrown `const char*` or std::string; empty for
  /// other non-`std::exception` types). Never throws: if memory runs out while the reason is
  /// built, the result is `{exception,std::bad_alloc,...}`.
  static exit_reason from_exception(const std::exception_ptr& e) noexcept;

  /// Shares `other`'s payload (a reference count increment; no allocation).
  exit_reason(const exit_reason& other) noexcept;
  /// Takes `other`'s payload; `other` is left `normal`.
  exit_reason(exit_reason&& other) noexcept;
  /// Shares `other`'s payload, releasing this one's.
  exit_reason& operator=(const exit_reason& other) noexcept;
  /// Takes `other`'s payload, releasing this one's; `other` is left `normal`.
  exit_reason& operator=(exit_reason&& other) noexcept;
  ~exit_reason();

  /// The reason's kind.
  kind which() const noexcept { return kind_; }
  /// True for `normal` only (not `shutdown`: see is_clean()).
  bool is_normal() const noexcept { return kind_ == kind::normal; }
  /// `normal`, `shutdown` and `{shutdown, _}`: no crash report, no restart of a transient
  /// child (spec §2 rule 8).
  bool is_clean() const noexcept { return kind_ == kind::normal || kind_ == kind::shutdown; }

  /// The shutdown detail, the error term, or the exception's `what()`; empty otherwise.
  const std::string& detail() const noexcept;
  /// The exception's demangled type name; empty unless which() == kind::exception.
  const std::string& exception_type() const noexcept;

  /// This reason carrying `value` as well (shutdown with a detail, error and exception reasons;
  /// the others have nowhere to keep one and are returned as they are).
  template <class T>
  exit_reason with_value(T value) const {
    return with_value(std::make_shared<const T>(std::move(value)), typeid(T));
  }
  /// The value attached with with_value, if it is a T.
  template <class T>
  const T* value() const noexcept {
    return static_cast<const T*>(value_of(typeid(T)));
  }

  /// Erlang-style rendering: `normal`, `{shutdown,detail}`, `killed`,
  /// `{exception,std::runtime_error,"boom"}`, or the error term itself.
  std::string to_string() const;

  /// Same kind, detail() and exception_type(); a value attached with with_value is ignored.
  friend bool operator==(const exit_reason& a, const exit_reason& b) noexcept;
  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const exit_reason& r);

 private:
  template <class E>
  static void append_element(std::string& out, const E& e) {
    if constexpr (std::is_same_v<E, reason_atom>)
      detail::append_erlang_atom(out, e.name);
    else if constexpr (std::is_same_v<E, exit_reason>)
      out += e.to_string();
    else if constexpr (std::is_same_v<E, bool>)
      out += e ? "true" : "false";
    else if constexpr (std::is_integral_v<E>)
      out += std::to_string(e);
    else if constexpr (std::is_convertible_v<const E&, std::string_view>)
      detail::append_erlang_string(out, std::string_view(e));
    else
      static_assert(std::is_same_v<E, reason_atom>,
                    "error_tuple: an element is a reason_atom, a string, an integer, a bool or "
                    "an exit_reason");
  }

  struct payload;
  static payload out_of_memory_;  // what from_exception falls back to (never freed)
  exit_reason with_value(std::shared_ptr<const void> v, const std::type_info& type) const;
  const void* value_of(const std::type_info& type) const noexcept;
  explicit exit_reason(kind k) noexcept : kind_(k) {}
  exit_reason(kind k, payload* p) noexcept : kind_(k), payload_(p) {}

  kind kind_ = kind::normal;
  payload* payload_ = nullptr;
};

/// Thrown to end the current process with a given reason from any depth of ordinary (non
/// coroutine) code. The runtime catches it at the top of the process and uses reason() as the
/// exit reason, unwrapped. `link()` throws it with `noproc` (spec §2 rule 2).
class exit_exception : public std::exception {
 public:
  /// An exception that ends the process with `reason`.
  explicit exit_exception(exit_reason reason);
  /// The reason the process ends with.
  const exit_reason& reason() const noexcept { return reason_; }
  /// "beamlet: exit " followed by reason().to_string().
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  exit_reason reason_;
  std::string text_;
};

BEAMLET_END_NAMESPACE
