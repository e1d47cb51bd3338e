// sys-style debugging: the client side of the system requests a gen_server answers
// (include/beamlet/otp/detail/gen_server_loop.hpp handles them).
#include <beamlet/otp/sys.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace sys {

namespace {
using op = detail::sys_request::op;

template <class R>
task<R> ask(process& self, server_ref<void> server, op o, const char* what, timeout_value t) {
  co_return co_await detail::sys_protocol<R>(self, std::move(server), detail::sys_op(o), what, t);
}
template <class R>
R ask(scoped_process& me, server_ref<void> server, op o, const char* what, timeout_value t) {
  return detail::run_to_completion(
      detail::sys_protocol<R>(me, std::move(server), detail::sys_op(o), what, t));
}
}  // namespace

task<server_status> get_status(process& self, server_ref<void> server, timeout_value timeout) {
  co_return co_await ask<server_status>(self, std::move(server), op::get_status, "sys:get_status",
                                        timeout);
}
server_status get_status(scoped_process& me, server_ref<void> server, timeout_value timeout) {
  return ask<server_status>(me, std::move(server), op::get_status, "sys:get_status", timeout);
}

task<> suspend(process& self, server_ref<void> server, timeout_value timeout) {
  co_await ask<void>(self, std::move(server), op::suspend, "sys:suspend", timeout);
}
void suspend(scoped_process& me, server_ref<void> server, timeout_value timeout) {
  ask<void>(me, std::move(server), op::suspend, "sys:suspend", timeout);
}

task<> resume(process& self, server_ref<void> server, timeout_value timeout) {
  co_await ask<void>(self, std::move(server), op::resume, "sys:resume", timeout);
}
void resume(scoped_process& me, server_ref<void> server, timeout_value timeout) {
  ask<void>(me, std::move(server), op::resume, "sys:resume", timeout);
}

task<> trace(process& self, server_ref<void> server, bool on, timeout_value timeout) {
  co_await ask<void>(self, std::move(server), on ? op::trace_on : op::trace_off, "sys:trace",
                     timeout);
}
void trace(scoped_process& me, server_ref<void> server, bool on, timeout_value timeout) {
  ask<void>(me, std::move(server), on ? op::trace_on : op::trace_off, "sys:trace", timeout);
}

task<> statistics(process& self, server_ref<void> server, bool on, timeout_value timeout) {
  co_await ask<void>(self, std::move(server), on ? op::statistics_on : op::statistics_off,
                     "sys:statistics", timeout);
}
void statistics(scoped_process& me, server_ref<void> server, bool on, timeout_value timeout) {
  ask<void>(me, std::move(server), on ? op::statistics_on : op::statistics_off, "sys:statistics",
            timeout);
}

task<std::optional<server_statistics>> get_statistics(process& self, server_ref<void> server,
                                                      timeout_value timeout) {
  co_return co_await ask<std::optional<server_statistics>>(
      self, std::move(server), op::statistics_get, "sys:statistics", timeout);
}
std::optional<server_statistics> get_statistics(scoped_process& me, server_ref<void> server,
                                                timeout_value timeout) {
  return ask<std::optional<server_statistics>>(me, std::move(server), op::statistics_get,
                                               "sys:statistics", timeout);
}

}  // namespace sys
BEAMLET_END_NAMESPACE
