// beamlet/http_endpoint.hpp: moved to <beamlet/observe/http_endpoint.hpp>; this path is deprecated
// in 0.2 and goes away in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without
// the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning \
    "<beamlet/http_endpoint.hpp> is deprecated: include <beamlet/observe/http_endpoint.hpp>"
#endif
#include <beamlet/observe/http_endpoint.hpp>
