// beamlet/core/mailbox.hpp: renamed <beamlet/core/scoped_process.hpp> (the class `mailbox` is now
// `scoped_process`); this path is deprecated in 0.2 and goes away in 0.3. Define
// BEAMLET_NO_DEPRECATED_HEADER_WARNINGS to include it without the warning.
#pragma once

#ifndef BEAMLET_NO_DEPRECATED_HEADER_WARNINGS
#pragma GCC warning \
    "<beamlet/core/mailbox.hpp> is deprecated: include <beamlet/core/scoped_process.hpp>"
#endif
#include <beamlet/core/scoped_process.hpp>
