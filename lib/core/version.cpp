// The version the library was built as (beamlet/version.hpp).
#include <beamlet/version.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

version_info version() noexcept {
  return version_info{BEAMLET_VERSION_MAJOR, BEAMLET_VERSION_MINOR, BEAMLET_VERSION_PATCH,
                      BEAMLET_VERSION_STRING};
}

BEAMLET_END_PRIVATE_NAMESPACE
