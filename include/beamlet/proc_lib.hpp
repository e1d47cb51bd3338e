// beamlet/proc_lib.hpp: moved to <beamlet/otp/proc_lib.hpp>; this path is deprecated in 0.2 and
// goes away in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning "<beamlet/proc_lib.hpp> is deprecated: include <beamlet/otp/proc_lib.hpp>"
#endif
#include <beamlet/otp/proc_lib.hpp>
