// The application's metric families in the Prometheus text format (app_metrics.cpp), for the
// metrics page to write after the runtime's own families.
#pragma once

#include <string>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

void render_app_metrics(runtime_core& core, std::string& out);

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
