// The console's Nodes view (console_nodes.cpp): added to the runtime's consoles when the node
// starts, removed when it stops.
#pragma once

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
class runtime;
namespace dist::detail {

void add_console_nodes(runtime& rt);
void remove_console_nodes(runtime& rt);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
