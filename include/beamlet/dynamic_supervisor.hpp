// beamlet/dynamic_supervisor.hpp: moved to <beamlet/otp/dynamic_supervisor.hpp>; this path is
// deprecated in 0.2 and goes away in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include
// it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning \
    "<beamlet/dynamic_supervisor.hpp> is deprecated: include <beamlet/otp/dynamic_supervisor.hpp>"
#endif
#include <beamlet/otp/dynamic_supervisor.hpp>
