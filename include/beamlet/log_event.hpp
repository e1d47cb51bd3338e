// beamlet/log_event.hpp: moved to <beamlet/core/log_event.hpp>; this path is deprecated in 0.2 and
// goes away in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning "<beamlet/log_event.hpp> is deprecated: include <beamlet/core/log_event.hpp>"
#endif
#include <beamlet/core/log_event.hpp>
