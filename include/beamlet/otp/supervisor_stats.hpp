/// @file
/// beamlet/otp/supervisor_stats.hpp: what every supervisor of a runtime has done, for metrics.
///
/// Each supervisor (static, dynamic, and each partition of a PartitionSupervisor) keeps a few
/// counters that it bumps itself as it works, and that any thread can read at any time without
/// asking it: a supervisor drowning in start requests is exactly the one an operator needs to
/// see. Counters are totals since the supervisor started; the list holds the supervisors alive
/// when it is taken. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
namespace detail {
class runtime_core;
}

/// One supervisor's counters, as supervisor_stats reads them (each read on its own, without a lock:
/// the fields need not be from one instant).
struct supervisor_statistics {
  pid supervisor;                        ///< its pid
  std::string registered_name;           ///< "" if none
  std::string kind;                      ///< "supervisor" or "dynamic_supervisor"
  std::uint64_t restarts = 0;            ///< restart attempts (each counts against the intensity)
  std::uint64_t start_child_calls = 0;   ///< start_child requests handled
  std::uint64_t start_child_errors = 0;  ///< of which failed (not `ignore`)
  std::size_t children = 0;              ///< children it holds now (specs, for a static one)
  std::uint64_t rate_limited = 0;        ///< start requests refused by the start rate (dynamic)
  std::uint64_t overloaded = 0;          ///< start requests refused by load shedding (dynamic)
};

/// Every live supervisor of `rt`, in pid order.
std::vector<supervisor_statistics> supervisor_stats(runtime& rt);
/// The same, from the runtime's internal core (the library's own use).
std::vector<supervisor_statistics> supervisor_stats(detail::runtime_core& rt);

BEAMLET_END_NAMESPACE
