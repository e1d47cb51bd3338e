// What every runtime of the full library gets when it starts: the logger, with its default
// stderr handler (see beamlet/observe/logger.hpp). The core reaches this through the hook table
// of beamlet/core/detail/layer_hooks.hpp without knowing what it installs.
#include <beamlet/core/detail/layer_hooks.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/observe/logger.hpp>

namespace {

void install_defaults(beamlet::runtime& rt) {
  (void)beamlet::logger::of(rt);
}

}  // namespace

extern "C" const beamlet::detail::layer_hooks beamlet_layer_hooks{&install_defaults};
