// beamlet/top.hpp: moved to <beamlet/observe/top.hpp>; this path is deprecated in 0.2 and goes away
// in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning "<beamlet/top.hpp> is deprecated: include <beamlet/observe/top.hpp>"
#endif
#include <beamlet/observe/top.hpp>
