// beamlet/child_spec.hpp: how a supervisor starts, restarts and stops one child (SEMANTICS §6.1).
//
// A child's start function runs inside the supervisor process and returns a start_result,
// normally by co_awaiting a proc_lib or gen_server start_link (so the child is linked to the
// supervisor). Defaults follow OTP: restart permanent, type worker, shutdown 5000 ms for a worker
// and infinity for a supervisor. Every field is checked (validate) before a child is started;
// the errors are those of OTP's do_check_childspec/2.
//
//   child_spec("cache", worker_start<cache>(42)).with_restart(restart_type::transient)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <beamlet/config.hpp>
#include <beamlet/process.hpp>
#include <beamlet/start_result.hpp>
#include <beamlet/task.hpp>

BEAMLET_BEGIN_NAMESPACE

enum class restart_type : std::uint8_t {
  permanent,  ///< always restarted
  transient,  ///< restarted unless it ends normal, shutdown or {shutdown, _}
  temporary,  ///< never restarted; its spec is dropped when it ends
};

enum class child_type : std::uint8_t { worker, supervisor };

/// How a child is stopped: brutal_kill (exit kill), a timeout (exit shutdown, then kill), or
/// infinity (exit shutdown and wait).
class shutdown_spec {
 public:
  enum class kind : std::uint8_t { brutal_kill, timeout, infinite };

  static shutdown_spec brutal_kill() noexcept { return shutdown_spec(kind::brutal_kill, {}); }
  static shutdown_spec infinity() noexcept { return shutdown_spec(kind::infinite, {}); }
  static shutdown_spec timeout(std::chrono::milliseconds t) noexcept {
    return shutdown_spec(kind::timeout, t);
  }

  kind which() const noexcept { return kind_; }
  std::chrono::milliseconds time() const noexcept { return time_; }
  friend bool operator==(const shutdown_spec&, const shutdown_spec&) = default;

 private:
  shutdown_spec(kind k, std::chrono::milliseconds t) noexcept : kind_(k), time_(t) {}
  kind kind_;
  std::chrono::milliseconds time_;
};

/// Starts a child from inside the supervisor process.
using start_function = std::function<task<start_result>(process& supervisor)>;

/// Not an aggregate on purpose: specs are often built as temporaries inside a co_await
/// (`co_await supervisor::start_child(self, sup, child_spec("id", f))`), which GCC 12
/// miscompiles for aggregates with destructors (docs/gcc12-coroutines.md). Build with the
/// constructor and the chainable setters.
class child_spec {
 public:
  child_spec() = default;
  child_spec(std::string child_id, start_function start_fn)
      : id(std::move(child_id)), start(std::move(start_fn)) {}

  child_spec&& with_restart(restart_type r) && {
    restart = r;
    return std::move(*this);
  }
  child_spec&& with_shutdown(shutdown_spec s) && {
    shutdown = s;
    return std::move(*this);
  }
  child_spec&& with_type(child_type t) && {
    type = t;
    return std::move(*this);
  }
  child_spec&& with_modules(std::vector<std::string> m) && {
    modules = std::move(m);
    return std::move(*this);
  }
  child_spec&& with_significant(bool s) && {
    significant = s;
    return std::move(*this);
  }

  /// Unique among the children of a static supervisor; ignored by DynamicSupervisor.
  std::string id;
  start_function start;
  restart_type restart = restart_type::permanent;
  /// nullopt: 5000 ms for a worker, infinity for a supervisor.
  std::optional<shutdown_spec> shutdown;
  child_type type = child_type::worker;
  /// Informational, as OTP's `modules` (which_children reports it).
  std::vector<std::string> modules;
  /// OTP 24+: with the supervisor's auto_shutdown, this child's exit may end the supervisor.
  /// Only transient and temporary children may be significant.
  bool significant = false;

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
  invalid_significant,   ///< a permanent child marked significant (OTP: bad_combination)
  duplicate_child_name,  ///< two children of one static supervisor with the same id
};

struct spec_error {
  spec_errc code;
  std::string detail;  ///< the offending value, as OTP prints it ({invalid_shutdown, -1})
  std::string to_string() const;
};

/// The first problem with `spec`, if any. `require_id`: static supervisors need ids,
/// DynamicSupervisor ignores them.
std::optional<spec_error> validate(const child_spec& spec, bool require_id = true);
/// supervisor:check_childspecs/1: every spec valid and ids unique.
std::optional<spec_error> check_childspecs(const std::vector<child_spec>& specs);

/// A start function for a gen_server S(args...): `.start = worker_start<my_server>(1, 2)`.
template <class S, class... Args>
start_function worker_start(Args... args) {
  return [args...](process& sup) -> task<start_result> {
    co_return co_await S::start_link(sup, {}, args...);
  };
}

BEAMLET_END_NAMESPACE
