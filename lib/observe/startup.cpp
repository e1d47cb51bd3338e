// What every runtime gets when it starts: the logger, with its default stderr handler (see
// beamlet/logger.hpp). The core calls this hook (lib/core/runtime_core.hpp) without knowing
// what it installs.
#include <beamlet/logger.hpp>
#include <beamlet/runtime.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

void runtime_started(runtime& rt) {
  (void)logger::of(rt);
}

}  // namespace detail
BEAMLET_END_NAMESPACE
