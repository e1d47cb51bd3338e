// The non-template parts of start results and gen_server calls.
#include <beamlet/gen_server.hpp>
#include <beamlet/start_result.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <ostream>

BEAMLET_BEGIN_NAMESPACE

std::string start_result::to_string() const {
  switch (kind_) {
    case kind::ok:
      return has_info_ ? "{ok," + pid_.to_string() + ",Info}" : "{ok," + pid_.to_string() + "}";
    case kind::ignore:
      return "ignore";
    case kind::error:
      return "{error," + reason_.to_string() + "}";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const start_result& r) {
  return os << r.to_string();
}

namespace detail {

namespace {
std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}
}  // namespace

call_error make_call_error(call_error::kind k, exit_reason reason, const std::string& server,
                           const char* request, std::optional<std::chrono::milliseconds> t) {
  // Erlang wraps the reason as {Reason, {gen_server, call, [Server, Request, Timeout]}}.
  // (Built with append: GCC 12 warns falsely (-Wrestrict) on long chains of operator+.)
  std::string term = "{";
  term.append(reason.to_string()).append(",{gen_server,call,[").append(server).append(",");
  term.append(demangle(request)).append(",");
  term.append(t ? std::to_string(t->count()) : std::string("infinity")).append("]}}");
  return call_error(k, std::move(reason), exit_reason::error(std::move(term)));
}

std::string already_started(pid holder) {
  std::string term = "{already_started,";
  term.append(holder.to_string()).append("}");
  return term;
}

}  // namespace detail
BEAMLET_END_NAMESPACE
