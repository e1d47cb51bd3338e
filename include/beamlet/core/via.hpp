/// @file
/// beamlet/core/via.hpp: names resolved at each use (Erlang's {via, Module, Name}).
///
/// A via_name does not name a process in the registry; it carries a resolver that finds the
/// process when a message or call is about to go out. beamlet hands them out where OTP uses via
/// tuples, e.g. partition_supervisor::via(name, key), which routes a key to the live child of
/// one partition. `server_ref<S>` accepts a via_name, so call/cast/stop and the supervisor APIs
/// take one wherever they take a pid or a registered name.
///
/// Resolution happens in the caller and may throw exit_exception, as Module:whereis_name/1
/// exiting does (an unknown partition supervisor exits {noproc, {partition_supervisor,
/// partitions, [Name]}}). Resolving to the null pid means "nobody there": call fails with noproc
/// and cast is dropped. A via_name is cheap to copy (shared, immutable) and thread-safe.
#pragma once

#include <memory>
#include <string>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

namespace detail {
/// What a via_name calls. Implemented inside beamlet (partition supervisors).
class via_resolver {
 public:
  virtual ~via_resolver() = default;
  virtual pid resolve(runtime_core& rt) const = 0;
  /// `{via,partition_supervisor,{Name,Key}}`, for error messages.
  virtual std::string describe() const = 0;
};
}  // namespace detail

/// A name looked up anew at each use, through the resolver beamlet gave it (Erlang's
/// {via, Module, Name}); see the header comment.
class via_name {
 public:
  /// Wraps a resolver; beamlet makes these (partition_supervisor::via), user code copies them.
  explicit via_name(std::shared_ptr<const detail::via_resolver> r) noexcept
      : resolver_(std::move(r)) {}

  /// The process the name stands for now (the null pid if none). May throw exit_exception.
  pid whereis(runtime& rt) const;
  /// The same, given the runtime's internal core (for beamlet's own headers).
  pid whereis(detail::runtime_core& rt) const { return resolver_->resolve(rt); }
  /// The name as Erlang writes it, e.g. `{via,partition_supervisor,{Name,Key}}`, for errors
  /// and logs.
  std::string to_string() const { return resolver_->describe(); }

 private:
  std::shared_ptr<const detail::via_resolver> resolver_;
};

BEAMLET_END_NAMESPACE
