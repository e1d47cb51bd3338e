/// @file
/// beamlet/otp/child_spec.hpp: how a supervisor starts, restarts and stops one child (spec §6.1).
///
/// A child's start function runs inside the supervisor process and returns a start_result,
/// normally by co_awaiting a proc_lib or gen_server start_link (so the child is linked to the
/// supervisor). Defaults follow OTP: restart permanent, type worker, shutdown 5000 ms for a worker
/// and infinity for a supervisor. Every field is checked (validate) before a child is started;
/// the errors are those of OTP's do_check_childspec/2.
///
///   child_spec("cache", worker_start<cache>(42)).with_restart(restart_type::transient)
#pragma once

#include <any>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/otp/start_result.hpp>

BEAMLET_BEGIN_NAMESPACE

/// When a supervisor restarts a child that ended (OTP's `restart`).
enum class restart_type : std::uint8_t {
  permanent,  ///< always restarted
  transient,  ///< restarted unless it ends normal, shutdown or {shutdown, _}
  temporary,  ///< never restarted; its spec is dropped when it ends
};

/// Whether a child is a worker or a supervisor: picks its default shutdown (5000 ms or
/// infinity) and how count_children counts it.
enum class child_type : std::uint8_t { worker, supervisor };

/// How a child is stopped: brutal_kill (exit kill), a timeout (exit shutdown, then kill), or
/// infinity (exit shutdown and wait).
class shutdown_spec {
 public:
  /// Which of the three shutdowns: brutal_kill, timeout or infinite (OTP's infinity).
  enum class kind : std::uint8_t { brutal_kill, timeout, infinite };

  /// Kill the child at once: exit(Child, kill).
  static shutdown_spec brutal_kill() noexcept { return shutdown_spec(kind::brutal_kill, {}); }
  /// Send exit shutdown and wait for the child to end, however long it takes.
  static shutdown_spec infinity() noexcept { return shutdown_spec(kind::infinite, {}); }
  /// Send exit shutdown, then kill the child if it has not ended within `t`.
  static shutdown_spec timeout(std::chrono::milliseconds t) noexcept {
    return shutdown_spec(kind::timeout, t);
  }

  /// Which shutdown this is.
  kind which() const noexcept { return kind_; }
  /// The wait before the kill; meaningful for kind::timeout only.
  std::chrono::milliseconds time() const noexcept { return time_; }
  /// Same kind and time.
  friend bool operator==(const shutdown_spec&, const shutdown_spec&) = default;

 private:
  shutdown_spec(kind k, std::chrono::milliseconds t) noexcept : kind_(k), time_(t) {}
  kind kind_;
  std::chrono::milliseconds time_;
};

/// What extra_arguments::get throws on a missing index or a type mismatch, so that the start
/// fails with a clear {error, Reason} instead of undefined behaviour.
class bad_extra_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class extra_arguments;
/// A value that may be an extra argument (anything but an extra_arguments list itself).
template <class T>
concept extra_value = !std::is_same_v<std::decay_t<T>, extra_arguments>;

/// A DynamicSupervisor's extra_arguments: values the supervisor prepends to every child start
/// (Elixir's `extra_arguments: [...]`). Type-erased, as the supervisor holds one list for
/// children of any type; a start function reads them back with `get<T>(i)`, which throws
/// bad_extra_argument on a missing index or a type mismatch, so the start fails with a clear
/// {error, Reason} instead of undefined behaviour.
class extra_arguments {
 public:
  extra_arguments() = default;
  /// The values, in order, each stored by value (copied or moved in).
  template <extra_value T, extra_value... More>
  explicit extra_arguments(T&& first, More&&... more) {
    values_.reserve(1 + sizeof...(More));
    values_.emplace_back(std::forward<T>(first));
    (values_.emplace_back(std::forward<More>(more)), ...);
  }

  /// How many values.
  std::size_t size() const noexcept { return values_.size(); }
  /// Whether there are none.
  bool empty() const noexcept { return values_.empty(); }

  /// Value `i` as a T: bad_extra_argument if `i` is out of range or the value was not stored as
  /// exactly a T (no conversions).
  template <class T>
  const T& get(std::size_t i) const {
    if (i >= values_.size())
      throw bad_extra_argument("beamlet: extra argument " + std::to_string(i) + " missing (" +
                               std::to_string(values_.size()) + " given)");
    const T* v = std::any_cast<T>(&values_[i]);
    if (v == nullptr)
      throw bad_extra_argument("beamlet: extra argument " + std::to_string(i) +
                               " has another type than the start function expects");
    return *v;
  }

 private:
  std::vector<std::any> values_;
};

class start_function;
namespace detail {
template <class F>
concept not_start_function = !std::is_same_v<std::decay_t<F>, start_function>;
}  // namespace detail
/// A start function that reads the supervisor's extra arguments.
template <class F>
concept start_callable_with_extra = detail::not_start_function<F> &&
    std::is_invocable_r_v<task<start_result>, F&, process&, const extra_arguments&>;
/// A start function that takes the supervisor process only.
template <class F>
concept start_callable = detail::not_start_function<F> && !start_callable_with_extra<F> &&
                         std::is_invocable_r_v<task<start_result>, F&, process&>;

/// Starts a child from inside the supervisor process. Built from any callable taking
/// `(process& sup)` or `(process& sup, const extra_arguments&)` and returning
/// task<start_result>. The callable is copied into every restart, so it must be copyable.
class start_function {
 public:
  /// The stored call: the supervisor process and its extra arguments.
  using signature = task<start_result>(process&, const extra_arguments&);

  start_function() = default;
  /// Empty, as the default: a spec with it fails validation with missing_start.
  start_function(std::nullptr_t) noexcept {}
  /// From a callable taking `(process& sup, const extra_arguments&)`.
  template <start_callable_with_extra F>
  start_function(F f) : fn_(std::move(f)), target_(&typeid(F)) {}
  /// From a callable taking `(process& sup)`; the extra arguments are not passed to it.
  template <start_callable F>
  start_function(F f)
      : fn_([f = std::move(f)](process& sup, const extra_arguments&) mutable { return f(sup); }),
        target_(&typeid(F)) {}

  /// Whether a callable is held.
  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }
  /// What the start function starts: child_spec takes its type from here unless told
  /// otherwise (with_type), so the *_start helpers of supervisors and acceptor pools need no
  /// `.with_type(child_type::supervisor)`. A worker unless marked.
  child_type type() const noexcept { return type_; }
  /// Marks the start function as starting a `t` (the helpers that start supervisors do).
  start_function&& of_type(child_type t) && {
    type_ = t;
    return std::move(*this);
  }
  /// What supervisor reports name as the child's start (OTP's mfargs): the server class for
  /// `worker_start<S>`, the supervisor kind for the *_start helpers, else the callable's type.
  const std::type_info& target() const noexcept {
    return target_ != nullptr ? *target_ : typeid(void);
  }
  /// Names T as the target.
  template <class T>
  start_function&& naming() && {
    target_ = &typeid(T);
    return std::move(*this);
  }
  /// `extra` must outlive the returned task (the supervisor passes its own list).
  task<start_result> operator()(process& sup, const extra_arguments& extra) const {
    return fn_(sup, extra);
  }

 private:
  std::function<signature> fn_;
  const std::type_info* target_ = nullptr;
  child_type type_ = child_type::worker;
};

/// Exponential backoff between the restarts of one child (beyond OTP, like Akka's backoff
/// supervisor), so a crashing dependency is not hammered by a restart loop. Restart number k
/// (counted from 0 since the child last ran for `reset_after`) waits min * 2^k, capped at max,
/// then stretched by a random factor in [1, 1 + jitter). The child is `restarting` meanwhile;
/// every restart still counts toward the supervisor's intensity when it is decided, so a child
/// that keeps crashing escalates as long as its restarts still fall within the intensity window
/// (a delay longer than period / intensity spaces them out of it: that is a choice).
/// Under one_for_all and rest_for_one the group is stopped
/// at once and started again when the delay is over. Validation: 0 <= min <= max <= 1 day,
/// 0 <= reset_after <= 1 day, 0 <= jitter <= 1 ({invalid_backoff, ...} otherwise).
struct restart_backoff {
  /// The delay of the first restart.
  std::chrono::milliseconds min{100};
  /// The longest delay, before jitter.
  std::chrono::milliseconds max{10000};
  /// A child that ran at least this long before it ended starts over from `min`.
  std::chrono::milliseconds reset_after{30000};
  /// Each delay is stretched by a random factor in [1, 1 + jitter), so that children that
  /// failed together do not restart together.
  double jitter = 0.2;

  /// The delay of restart number `attempt`, before jitter.
  std::chrono::milliseconds delay(unsigned attempt) const noexcept {
    auto d = min;
    for (unsigned i = 0; i < attempt && d < max; ++i) d *= 2;
    return d < max ? d : max;
  }
};

/// Not an aggregate on purpose: specs are often built as temporaries inside a co_await
/// (`co_await supervisor::start_child(self, sup, child_spec("id", f))`), which GCC 12
/// miscompiles for aggregates with destructors (docs/gcc12-coroutines.md). Build with the
/// constructor and the chainable setters.
class child_spec {
 public:
  child_spec() = default;
  /// The type is the start function's (a worker unless it starts a supervisor).
  child_spec(std::string child_id, start_function start_fn)
      : id(std::move(child_id)), start(std::move(start_fn)), type(start.type()) {}

  /// Sets `restart`.
  child_spec&& with_restart(restart_type r) && {
    restart = r;
    return std::move(*this);
  }
  /// Sets `shutdown`, replacing the type's default.
  child_spec&& with_shutdown(shutdown_spec s) && {
    shutdown = s;
    return std::move(*this);
  }
  /// Sets `type`, replacing the start function's.
  child_spec&& with_type(child_type t) && {
    type = t;
    return std::move(*this);
  }
  /// Sets `modules`.
  child_spec&& with_modules(std::vector<std::string> m) && {
    modules = std::move(m);
    return std::move(*this);
  }
  /// Sets `significant`.
  child_spec&& with_significant(bool s) && {
    significant = s;
    return std::move(*this);
  }
  /// Sets `backoff`.
  child_spec&& with_backoff(restart_backoff b) && {
    backoff = b;
    return std::move(*this);
  }

  /// Unique among the children of a static supervisor; ignored by DynamicSupervisor.
  std::string id;
  /// Starts the child inside the supervisor process, at first and on every restart.
  start_function start;
  /// When the child is restarted (permanent by default).
  restart_type restart = restart_type::permanent;
  /// nullopt: 5000 ms for a worker, infinity for a supervisor.
  std::optional<shutdown_spec> shutdown;
  /// What start.type() says, unless with_type was given.
  child_type type = child_type::worker;
  /// Informational, as OTP's `modules` (which_children reports it).
  std::vector<std::string> modules;
  /// OTP 24+: with the supervisor's auto_shutdown, this child's exit may end the supervisor.
  /// Only transient and temporary children may be significant.
  bool significant = false;
  /// Spaces the restarts of this child (restart_backoff); none by default, as OTP.
  std::optional<restart_backoff> backoff;

  /// The shutdown in effect, defaults applied.
  shutdown_spec effective_shutdown() const noexcept {
    if (shutdown) return *shutdown;
    return type == child_type::worker ? shutdown_spec::timeout(std::chrono::milliseconds(5000))
                                      : shutdown_spec::infinity();
  }
};

/// A child spec field that does not hold.
enum class spec_errc : std::uint8_t {
  missing_id,            ///< empty id (OTP: missing_id)
  missing_start,         ///< no start function (OTP: missing_start)
  invalid_restart_type,  ///< not one of the enumerators
  invalid_shutdown,      ///< negative timeout, or not one of the enumerators
  invalid_child_type,    ///< not one of the enumerators
  invalid_modules,       ///< an empty module name
  bad_combination,       ///< a permanent child marked significant
  duplicate_child_name,  ///< two children of one static supervisor with the same id
  invalid_significant,   ///< a significant child given to a DynamicSupervisor
  invalid_backoff,       ///< a restart_backoff out of range
};

/// Why a child spec is invalid: the check that failed and the offending value.
struct spec_error {
  spec_errc code;      ///< which check failed
  std::string detail;  ///< the offending value, as OTP prints it ({invalid_shutdown, -1})
  /// OTP's rendering: `missing_id`, or `{invalid_shutdown,-1}` when there is a detail.
  std::string to_string() const;
};

/// The first problem with `spec`, if any. `require_id`: static supervisors need ids,
/// DynamicSupervisor ignores them.
std::optional<spec_error> validate(const child_spec& spec, bool require_id = true);
/// supervisor:check_childspecs/1: every spec valid and ids unique.
std::optional<spec_error> check_childspecs(const std::vector<child_spec>& specs);

/// A start function for a gen_server S(args...): `worker_start<my_server>(1, 2)`.
template <class S, class... Args>
start_function worker_start(Args... args) {
  return start_function([args...](process& sup) -> task<start_result> {
           co_return co_await S::start_link(sup, {}, args...);
         })
      .template naming<S>();
}

/// As worker_start, with the server registered under `name` (gen_server start_link's name
/// option); a restart registers the new process under the same name.
template <class S, class... Args>
start_function worker_start_named(std::string name, Args... args) {
  return start_function([name = std::move(name), args...](process& sup) -> task<start_result> {
           co_return co_await S::start_link(sup, {std::string_view(name)}, args...);
         })
      .template naming<S>();
}

template <class S>
class server_ref;
namespace detail {
template <class R>
inline constexpr bool is_server_ref = false;
template <class S>
inline constexpr bool is_server_ref<server_ref<S>> = true;
}  // namespace detail

/// As worker_start_named, with the name (and the server's type) taken from a server_ref, so that
/// a service writes its server's name once and uses the same value to start and to reach it:
///
///   const server_ref<counter> the_counter("counter");
///   child_spec("counter", worker_start_named(the_counter));   // starts it under that name
///   co_await call(self, the_counter, incr{});                   // finds whoever holds it
///
/// A server_ref by pid or via name names nothing to register: std::invalid_argument.
template <class Ref, class... Args>
  requires detail::is_server_ref<Ref> start_function worker_start_named(const Ref& ref,
                                                                        Args... args) {
    if (!ref.by_name())
      throw std::invalid_argument("beamlet: worker_start_named needs a server_ref by name, not " +
                                  ref.to_string());
    using S = typename Ref::server_type;
    return worker_start_named<S>(ref.name(), std::move(args)...);
  }

namespace detail {
template <class S, class... Extra, std::size_t... I, class... Args>
task<start_result> start_with_extra(process& sup, const extra_arguments& extra,
                                    std::index_sequence<I...>, Args... args) {
  co_return co_await S::start_link(sup, {}, extra.get<Extra>(I)..., args...);
}
}  // namespace detail

/// A start function for a gen_server S(extra..., args...), where the leading constructor
/// arguments come from the DynamicSupervisor's extra_arguments, as types Extra...:
/// `worker_start_extra<conn, std::string>(42)` starts conn(extra.get<std::string>(0), 42).
template <class S, class... Extra, class... Args>
start_function worker_start_extra(Args... args) {
  return start_function(
             [args...](process& sup, const extra_arguments& extra) -> task<start_result> {
               co_return co_await detail::start_with_extra<S, Extra...>(
                   sup, extra, std::index_sequence_for<Extra...>{}, args...);
             })
      .template naming<S>();
}

BEAMLET_END_NAMESPACE
