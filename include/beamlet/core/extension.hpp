/// @file
/// beamlet/core/extension.hpp: state that a library layer keeps per runtime.
///
/// A layer built on the core (the supervisors' partition routing tables, and the observability,
/// network and distribution layers) sometimes needs one object per runtime, reachable from any
/// thread that holds the runtime or one of its processes. Instead of the core knowing about each
/// such layer, a layer derives its state from runtime_extension and asks for it by type, as CAF's
/// actor_system_module lets modules hang state on the actor system:
///
///   struct routing_tables final : beamlet::runtime_extension { ... };
///   routing_tables& t = beamlet::extension<routing_tables>(rt);      // created on first use
///
/// Guarantees: one instance per (runtime, type), created on first use with its default
/// constructor, then attached() to the runtime; thread-safe (concurrent first uses create it
/// once; attached() may itself look up other extensions); told when the runtime stops
/// (stopping()), destroyed with the runtime after every process has ended and every scheduler
/// thread has stopped (so an extension's destructor may not send or spawn), in the order they
/// were created: one created on another's first use (in its attached(), or later) outlives
/// it, so that one's destructor may still use it through a reference kept earlier (a lookup
/// from a destructor throws std::logic_error, which ends the program). Looking one up takes a
/// short lock; cache the reference where it is hot. An exception from the constructor or from
/// attached() propagates and creates nothing.
#pragma once

#include <memory>
#include <type_traits>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Base of per-runtime state owned by a library layer.
class runtime_extension {
 public:
  virtual ~runtime_extension() = default;

  /// Called once, right after construction, with the runtime it belongs to (an extension that
  /// needs the runtime keeps the reference; it outlives the extension).
  virtual void attached(detail::runtime_core& rt) { (void)rt; }
  /// Called by the runtime's shutdown once every process has ended, before any thread is
  /// joined for good: flush what must be flushed (the logger writes its queue here).
  virtual void stopping() noexcept {}

 protected:
  runtime_extension() = default;
  runtime_extension(const runtime_extension&) = delete;
  runtime_extension& operator=(const runtime_extension&) = delete;
};

namespace detail {

using extension_factory = std::unique_ptr<runtime_extension> (*)();
/// The extension registered under `key` in `rt`, made with `make` on first use.
runtime_extension& extension_slot(runtime_core& rt, const void* key, extension_factory make);

template <class T>
inline constexpr char extension_key = 0;

}  // namespace detail

/// The T of runtime `rt` (created on first use).
template <class T>
T& extension(detail::runtime_core& rt) {
  static_assert(std::is_base_of_v<runtime_extension, T>,
                "extension<T>: T must derive from beamlet::runtime_extension");
  static_assert(std::is_default_constructible_v<T>,
                "extension<T>: T must be default-constructible");
  auto make = []() -> std::unique_ptr<runtime_extension> { return std::make_unique<T>(); };
  return static_cast<T&>(detail::extension_slot(rt, &detail::extension_key<T>, make));
}
/// The T of runtime `rt` (created on first use): the form for code holding the runtime.
template <class T>
T& extension(runtime& rt) {
  return extension<T>(rt.core());
}
/// The T of the runtime `self` runs on.
template <class T>
T& extension(basic_process& self) {
  return extension<T>(*detail::runtime_of(self));
}

BEAMLET_END_NAMESPACE
