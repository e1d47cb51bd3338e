// The chaos driver: one process that, from the seed alone, decides what to break next. Every
// 25 ms it may kill a seq server, a session, a sink, a server-side connection or a whole
// supervisor; stall the beamlet peer (SIGSTOP for up to 1.5 s); cut its connection; and every
// 10..20 s it kills the erl node and starts it again. Each kill is made under a monitor and
// recorded (world::kills_by_supervisor, killed_workers) for the invariants checked at the end.
// The sequence of decisions is the seed's; when they land depends on the load, so a replay with
// the same seed breaks the same things in the same order, not at the same instants.
#pragma once

#include "external_node.hpp"
#include "world.hpp"

#include <beamlet/beamlet.hpp>

namespace soak {

beamlet::task<> chaos(beamlet::process& self, world& w, external_node* peer, external_node* erl);

}  // namespace soak
