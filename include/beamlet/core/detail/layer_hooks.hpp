// beamlet/core/detail/layer_hooks.hpp: the one way the core reaches the layers above it.
//
// The core never names a layer above it, and links alone. It calls up through one hook table
// per runtime: one slot per interface (where events go, what an operation on a remote pid
// does), each an atomic pointer that a layer fills with install_hook and the core loads once
// per use, so a hook costs its caller one acquire load and no lock, and a runtime without the
// layer finds the slot empty and behaves as documented beside the interface (events go nowhere,
// a remote pid is a dead one).
//
// Lifetime: install_hook does not wait for the threads that may still be calling the hook it
// replaces, so every hook must stay valid until the runtime's core is destroyed. A layer makes
// the hook part of its runtime_extension (extension.hpp), which lives exactly that long, and
// installs it as the last step of the extension's attached(), after which nothing throws (an
// extension whose attached() throws is destroyed); the core empties every slot before it
// destroys the extensions. Removing a hook (null) turns a layer off in a runtime that goes on
// (a dist node empties its slot when the runtime stops); it never frees the hook.
//
// The table starts empty. What fills it when a runtime starts is the library's one link-time
// entry, `beamlet_layer_hooks` below: the top layer defines it (lib/observe/startup.cpp), and the
// core's reference to it is weak, so a program linked with the core alone finds none and its
// runtimes start with an empty table. It is a constant, so no static initialisation order
// stands between it and a runtime made before main(). The beamlet target makes every program
// that links it keep the entry (its interface link options name the symbol as undefined, which
// pulls the defining object out of the static archive; a shared library has it anyway).
//
// extension<T> (extension.hpp) is the other thing a layer keeps in a runtime: state, found by
// type, told when the runtime stops; the core does not call into it otherwise. Nothing here is
// stable API.
#pragma once

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

namespace detail {

class runtime_core;
class event_sink;    // where log events and reports go (detail/core.hpp); the logger's
class remote_hooks;  // operations on remote pids (detail/remote.hpp); a running dist node's

/// Installs `sink` as the runtime's event sink, or empties the slot (null). Either way every
/// level is off (log_enabled and report_enabled are false) until set_event_level
/// (detail/core.hpp) sets them for the sink installed. Thread-safe.
void install_hook(runtime_core& rt, event_sink* sink) noexcept;
/// Installs (or, with null, removes) the operations on remote pids. Thread-safe.
void install_hook(runtime_core& rt, remote_hooks* hooks) noexcept;

/// The link-time entry: what the layers above do when a runtime starts.
struct layer_hooks {
  /// Called by every runtime's constructor once its threads run, before the constructor
  /// returns; an exception from it fails the construction (the runtime is shut down first).
  void (*runtime_started)(runtime& rt);
};

}  // namespace detail
BEAMLET_END_NAMESPACE

// C linkage: one unmangled name that the build can ask the linker to keep. The core refers to
// it weakly (lib/core/runtime.cpp); its definition is an ordinary one.
extern "C" {
/// The layers' startup entry: defined by the library's top layer.
extern const beamlet::detail::layer_hooks beamlet_layer_hooks;
}
