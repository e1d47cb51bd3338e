// The run context of the process running on this thread (beamlet/core/task.hpp's run_context).
//
// Only the library's own non-coroutine code reads `this_run` directly: the scheduler when a
// run starts and ends, and the out-of-line functions of run_context.cpp that coroutine code
// calls (task.hpp says why coroutine code must not read a thread_local inline).
#pragma once

#include <beamlet/core/task.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

/// Constant-initialised, so that reading it is a plain TLS access with no init guard.
extern thread_local constinit run_context this_run;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
