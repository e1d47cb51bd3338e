// The beamlet side of spawn_delay: DynamicSupervisors (alone or partitioned) with a backlog of
// start_child requests, each from its own client process, as in the outage.
#pragma once

#include <beamlet/core/process.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "measure.hpp"

namespace spawn_delay {

using progress_fn = std::function<void(const std::string&)>;

/// `depth` requests queued behind gates, released at once; times the first `timed` starts
/// (all of them when timed >= depth). depth 0 times `timed` sequential start_child calls on an
/// idle supervisor.
backlog_run beamlet_backlog(beamlet::ack_wait_mode mode, int partitions, std::int64_t depth,
                            std::int64_t timed, const progress_fn& progress);

/// `backlog` requests queued, released, and new requests arriving at `rate` per second for
/// `duration` seconds; samples the number of waiting requests every 100 ms.
catch_up_run beamlet_catch_up(beamlet::ack_wait_mode mode, int partitions, std::int64_t backlog,
                              double rate, double duration, const progress_fn& progress);

}  // namespace spawn_delay
