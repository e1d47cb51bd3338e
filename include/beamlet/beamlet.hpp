// beamlet/beamlet.hpp: convenience header including the whole public API.
#pragma once

#include <beamlet/child_spec.hpp>
#include <beamlet/clock.hpp>
#include <beamlet/config.hpp>
#include <beamlet/dynamic_supervisor.hpp>
#include <beamlet/error.hpp>
#include <beamlet/exit_reason.hpp>
#include <beamlet/expected.hpp>
#include <beamlet/extension.hpp>
#include <beamlet/gen_server.hpp>
#include <beamlet/ids.hpp>
#include <beamlet/mailbox.hpp>
#include <beamlet/partition_supervisor.hpp>
#include <beamlet/proc_lib.hpp>
#include <beamlet/process.hpp>
#include <beamlet/receive.hpp>
#include <beamlet/runtime.hpp>
#include <beamlet/start_result.hpp>
#include <beamlet/supervisor.hpp>
#include <beamlet/system_messages.hpp>
#include <beamlet/task.hpp>
#include <beamlet/timeout.hpp>
#include <beamlet/via.hpp>
