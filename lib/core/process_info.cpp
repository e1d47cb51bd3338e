// process_info and processes: the public face of the core's inspection (lib/core/observation.cpp
// explains how a process is read without its cooperation).
#include <beamlet/core/process_info.hpp>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string_view to_string(process_status s) noexcept {
  switch (s) {
    case process_status::running:
      return "running";
    case process_status::runnable:
      return "runnable";
    case process_status::waiting:
      return "waiting";
    case process_status::exiting:
      return "exiting";
    case process_status::suspended:
      return "suspended";
  }
  return "undefined";
}

std::optional<process_details> process_info(runtime& rt, pid p) {
  return detail::inspect(rt.core(), p);
}

std::optional<process_details> process_info(basic_process& self, pid p) {
  return detail::inspect(*detail::runtime_of(self), p);
}

std::vector<pid> processes(runtime& rt) {
  return detail::process_list(rt.core());
}

std::vector<pid> processes(basic_process& self) {
  return detail::process_list(*detail::runtime_of(self));
}

BEAMLET_END_PRIVATE_NAMESPACE
