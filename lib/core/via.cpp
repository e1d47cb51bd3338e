#include <beamlet/core/runtime.hpp>
#include <beamlet/core/via.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

pid via_name::whereis(runtime& rt) const {
  return resolver_->resolve(rt.core());
}

BEAMLET_END_PRIVATE_NAMESPACE
