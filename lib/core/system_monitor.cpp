// The system monitor's public settings; the alarms themselves are raised by the core on the
// send path and at the end of process runs (lib/core/observation.cpp).
#include <beamlet/core/system_monitor.hpp>

#include <stdexcept>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {
void check(const system_monitor_settings& s) {
  if (s.long_queue_enable != 0 && s.long_queue_disable >= s.long_queue_enable)
    throw std::invalid_argument(
        "beamlet::set_system_monitor: long_queue_disable must be below long_queue_enable");
  if (s.long_schedule.count() < 0)
    throw std::invalid_argument("beamlet::set_system_monitor: negative long_schedule");
}
}  // namespace

void set_system_monitor(runtime& rt, const system_monitor_settings& s) {
  check(s);
  detail::set_system_monitor(rt.core(), s);
}

void set_system_monitor(basic_process& self, const system_monitor_settings& s) {
  check(s);
  detail::set_system_monitor(*detail::runtime_of(self), s);
}

system_monitor_settings system_monitor(runtime& rt) {
  return detail::system_monitor_of(rt.core());
}

BEAMLET_END_PRIVATE_NAMESPACE
