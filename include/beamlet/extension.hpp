// beamlet/extension.hpp: moved to <beamlet/core/extension.hpp>; this path is deprecated in 0.2 and
// goes away in 0.3. Define BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning "<beamlet/extension.hpp> is deprecated: include <beamlet/core/extension.hpp>"
#endif
#include <beamlet/core/extension.hpp>
