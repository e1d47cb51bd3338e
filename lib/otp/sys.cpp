// sys-style debugging: the client side of the system requests a gen_server answers
// (include/beamlet/otp/detail/gen_server_loop.hpp handles them).
#include <beamlet/otp/sys.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace sys {

namespace {
using op = detail::sys_request::op;

template <class R, call_context Ctx>
in_context<Ctx, R> ask(Ctx& self, server_ref<void> server, op o, const char* what,
                       timeout_value t) {
  return detail::finish_in(
      self, detail::sys_protocol<R>(self, std::move(server), detail::sys_op(o), what, t));
}
}  // namespace

template <call_context Ctx>
in_context<Ctx, server_status> get_status(Ctx& self, server_ref<void> server,
                                          timeout_value timeout) {
  return ask<server_status>(self, std::move(server), op::get_status, "sys:get_status", timeout);
}

template <call_context Ctx>
in_context<Ctx, void> suspend(Ctx& self, server_ref<void> server, timeout_value timeout) {
  return ask<void>(self, std::move(server), op::suspend, "sys:suspend", timeout);
}

template <call_context Ctx>
in_context<Ctx, void> resume(Ctx& self, server_ref<void> server, timeout_value timeout) {
  return ask<void>(self, std::move(server), op::resume, "sys:resume", timeout);
}

template <call_context Ctx>
in_context<Ctx, void> trace(Ctx& self, server_ref<void> server, bool on, timeout_value timeout) {
  return ask<void>(self, std::move(server), on ? op::trace_on : op::trace_off, "sys:trace",
                   timeout);
}

template <call_context Ctx>
in_context<Ctx, void> statistics(Ctx& self, server_ref<void> server, bool on,
                                 timeout_value timeout) {
  return ask<void>(self, std::move(server), on ? op::statistics_on : op::statistics_off,
                   "sys:statistics", timeout);
}

template <call_context Ctx>
in_context<Ctx, std::optional<server_statistics>> get_statistics(Ctx& self, server_ref<void> server,
                                                                 timeout_value timeout) {
  return ask<std::optional<server_statistics>>(self, std::move(server), op::statistics_get,
                                               "sys:statistics", timeout);
}

// The two contexts of each call (beamlet/core/call_context.hpp).
#define BEAMLET_SYS_CALL(ret, name, ...)                                  \
  template in_context<process, ret> name<process>(process&, __VA_ARGS__); \
  template in_context<scoped_process, ret> name<scoped_process>(scoped_process&, __VA_ARGS__)
BEAMLET_SYS_CALL(server_status, get_status, server_ref<void>, timeout_value);
BEAMLET_SYS_CALL(void, suspend, server_ref<void>, timeout_value);
BEAMLET_SYS_CALL(void, resume, server_ref<void>, timeout_value);
BEAMLET_SYS_CALL(void, trace, server_ref<void>, bool, timeout_value);
BEAMLET_SYS_CALL(void, statistics, server_ref<void>, bool, timeout_value);
BEAMLET_SYS_CALL(std::optional<server_statistics>, get_statistics, server_ref<void>, timeout_value);
#undef BEAMLET_SYS_CALL

}  // namespace sys
BEAMLET_END_PRIVATE_NAMESPACE
