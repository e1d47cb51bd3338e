// The CAF 0.17 side of spawn_delay: a supervisor actor that spawns a linked child per request
// and waits for the child's ack with request(...).await(...), which holds back every other
// message until the ack arrives (CAF's selective wait). Partitioned: P such actors, requests
// routed by key.
#pragma once

#include <cstdint>

#include "beamlet_runs.hpp"
#include "measure.hpp"

namespace spawn_delay {

backlog_run caf_backlog(int partitions, std::int64_t depth, std::int64_t timed,
                        const progress_fn& progress);

catch_up_run caf_catch_up(int partitions, std::int64_t backlog, double rate, double duration,
                          const progress_fn& progress);

}  // namespace spawn_delay
