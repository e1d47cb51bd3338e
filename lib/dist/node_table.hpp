// The node table's lock-free side: the incarnation behind a slot, for the hot paths (encoding
// every remote pid a message names) that must not copy a string or take a lock.
#pragma once

#include <cstdint>

#include <beamlet/config.hpp>
#include <beamlet/dist/etf.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist::detail {

/// The incarnation interned in `slot`, or null. The entry lives as long as the program.
const node_incarnation* node_entry(std::uint32_t slot) noexcept;

}  // namespace dist::detail
BEAMLET_END_NAMESPACE
