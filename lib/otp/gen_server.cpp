// The non-template parts of gen_server calls.
#include <beamlet/gen_server.hpp>

#include <boost/core/demangle.hpp>

#include "term.hpp"

BEAMLET_BEGIN_NAMESPACE

namespace detail {

call_error make_call_error(call_error::kind k, exit_reason reason, const std::string& server,
                           const char* request, timeout_value t) {
  // Erlang wraps the reason as {Reason, {gen_server, call, [Server, Request, Timeout]}}.
  const auto ms = t.milliseconds();
  const std::string timeout = ms ? std::to_string(*ms) : std::string("infinity");
  std::string term = concat({"{", reason.to_string(), ",{gen_server,call,[", server, ",",
                             boost::core::demangle(request), ",", timeout, "]}}"});
  return call_error(k, std::move(reason), exit_reason::error(std::move(term)));
}

std::string already_started(pid holder) {
  return concat({"{already_started,", holder.to_string(), "}"});
}

}  // namespace detail
BEAMLET_END_NAMESPACE
