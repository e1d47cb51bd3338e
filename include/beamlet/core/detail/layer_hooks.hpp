// beamlet/core/detail/layer_hooks.hpp: what the layers above the core do when a runtime starts.
//
// The core never names a layer above it, and links alone. The layers that every runtime of the
// full library needs from its first moment (the logger, so that a crash report of the first
// process is printed) hook in through the one table declared here: the library's top defines
// it (lib/observe/startup.cpp), and the core's reference to it is weak, so a program linked
// with the core alone finds no table and its runtimes start without a logger (events go
// nowhere until one is installed). The table is a constant, so no static initialisation order
// stands between it and a runtime made before main().
//
// The beamlet target makes every program that links it keep the table (its interface link
// options name the symbol as undefined, which pulls the defining object out of the static
// archive; a shared library has it anyway). Nothing here is stable API.
//
// Every way the core reaches a layer above it, in one list. Besides this table, which is the
// only link-time one, a layer installs per-runtime hooks once it is running, each through a
// setter of the core's detail API that the layer calls:
//  * set_event_sink (detail/core.hpp): where log events and reports go; the logger installs
//    it when it attaches to a runtime (from runtime_started above).
//  * set_remote_hooks (detail/remote.hpp): what a send, link, monitor or exit to a pid of
//    another node does; dist::start installs it and dist::stop removes it.
//  * extension<T> (extension.hpp): not a hook but state a layer keeps per runtime, which the
//    core creates on demand and tells when the runtime stops.
// The core holds no other pointer into an upper layer.
#pragma once

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

namespace detail {

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
/// The layers' hooks: defined by the library's top layer.
extern const beamlet::detail::layer_hooks beamlet_layer_hooks;
}
