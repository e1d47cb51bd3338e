/// @file
/// beamlet/beamlet.hpp: the whole public API in one include, layer by layer (bottom up).
///
/// Each layer's headers live in a folder of their own (beamlet/core/, otp/, observe/, net/,
/// dist/) and include only headers of their own layer and of the layers below it. Including a
/// single header instead of this one compiles faster; the API is the same.
#pragma once

// core: processes, mailboxes, selective receive, links and monitors, timers, names.
#include <beamlet/core/call_context.hpp>
#include <beamlet/core/clock.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/error.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/log_event.hpp>
#include <beamlet/core/mailbox_limit.hpp>
#include <beamlet/core/priority.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/process_info.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/system_monitor.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/core/via.hpp>

// otp: proc_lib, gen_server, sys, the supervisors.
#include <beamlet/otp/child_spec.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/partition_supervisor.hpp>
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/rate_limit.hpp>
#include <beamlet/otp/run_until_signal.hpp>
#include <beamlet/otp/start_result.hpp>
#include <beamlet/otp/supervisor.hpp>
#include <beamlet/otp/supervisor_stats.hpp>
#include <beamlet/otp/sys.hpp>

// observe: the logger, metrics (the runtime's and your own), the top view, the HTTP endpoint.
#include <beamlet/observe/app_metrics.hpp>
#include <beamlet/observe/http_endpoint.hpp>
#include <beamlet/observe/logger.hpp>
#include <beamlet/observe/metrics.hpp>
#include <beamlet/observe/top.hpp>

// net and dist: sockets owned by processes; Erlang distribution.
#include <beamlet/dist.hpp>
#include <beamlet/net.hpp>

#include <beamlet/version.hpp>
