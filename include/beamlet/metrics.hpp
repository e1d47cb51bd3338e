// beamlet/metrics.hpp: moved to <beamlet/observe/metrics.hpp>; this path is deprecated in 0.2 and
// goes away in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning "<beamlet/metrics.hpp> is deprecated: include <beamlet/observe/metrics.hpp>"
#endif
#include <beamlet/observe/metrics.hpp>
