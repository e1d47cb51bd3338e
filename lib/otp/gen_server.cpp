// The non-template parts of gen_server: call errors, sys-style debugging, terminate reports.
#include <beamlet/otp/gen_server.hpp>

#include <chrono>
#include <exception>
#include <optional>

#include <boost/core/demangle.hpp>

#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

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
BEAMLET_END_PRIVATE_NAMESPACE

// -- sys-style debugging and terminate reports ---------------------------------------------------

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string to_string(const server_status& s) {
  const std::string name = s.registered_name.empty() ? s.pid.to_string() : s.registered_name;
  return detail::concat({"Status for generic server ",
                         name,
                         " (",
                         s.pid.to_string(),
                         ")\n",
                         "  server: ",
                         s.server_type,
                         "\n",
                         "  status: ",
                         s.suspended ? "suspended" : "running",
                         "\n",
                         "  parent: ",
                         s.parent ? s.parent.to_string() : "undefined",
                         "\n",
                         "  trace: ",
                         s.tracing ? "on" : "off",
                         "\n",
                         "  statistics: ",
                         s.collecting_statistics ? "on" : "off",
                         "\n",
                         "  state: ",
                         s.state,
                         "\n"});
}

namespace detail {

namespace {

std::string describe(const last_message& m) {
  if (m.type == nullptr) return "undefined";
  const auto* ext = static_cast<const envelope_ext*>(m.type->ext);
  switch (m.what) {
    case last_message::kind::none:
      return "undefined";
    case last_message::kind::call:
      return concat(
          {"{'$gen_call',", m.caller.to_string(), ",", demangled_name(*ext->request), "}"});
    case last_message::kind::cast:
      return concat({"{'$gen_cast',", demangled_name(*ext->request), "}"});
    case last_message::kind::timeout:
      return "timeout";
    case last_message::kind::continuation:
      return concat({"{continue,", demangled_name(*m.type->type), "}"});
    case last_message::kind::info:
      return demangled_name(*m.type->type);
  }
  return "undefined";
}

void trace(process& self, std::string text) {
  runtime_core& rt = *runtime_of(self);
  if (!log_enabled(rt, log_level::notice)) return;
  log_event e;
  e.level = log_level::notice;
  e.pid = self.self();
  e.message = concat({"*DBG* ", self.self().to_string(), " ", text});
  emit_event(rt, std::move(e));
}

std::uint64_t reductions_of(process& self) {
  const auto d = inspect(*runtime_of(self), self.self());
  return d ? d->reductions : 0;
}

}  // namespace

void handle_sys(process& self, sys_state& sys, sys_request& r, const server_identity& who) {
  runtime_core& rt = *runtime_of(self);
  message_node* reply = nullptr;
  using op = sys_request::op;
  switch (r.what) {
    case op::get_state:
      if (r.project) reply = r.project(r.server_type == who.type_id ? who.server : nullptr, r.tag);
      break;
    case op::get_status: {
      server_status s;
      s.pid = self.self();
      s.registered_name = registered_name_of(rt, self.self());
      s.server_type = demangled_name(*who.type);
      s.suspended = sys.suspended;
      s.parent = who.parent;
      s.tracing = sys.trace;
      s.collecting_statistics = sys.statistics;
      try {
        s.state = who.format(who.server);
      } catch (const std::exception& e) {
        s.state = concat({"<format_status failed: ", e.what(), ">"});
      } catch (...) {
        s.state = "<format_status failed>";
      }
      reply = make_reply_node(r.tag, std::move(s));
      break;
    }
    case op::suspend:
      sys.suspended = true;
      break;
    case op::resume:
      sys.suspended = false;
      break;
    case op::trace_on:
      sys.trace = true;
      break;
    case op::trace_off:
      sys.trace = false;
      break;
    case op::statistics_on:
      if (!sys.statistics) {
        sys.statistics = true;
        sys.since = std::chrono::system_clock::now();
        sys.reductions_at_start = reductions_of(self);
        sys.in = sys.out = 0;
      }
      break;
    case op::statistics_off:
      sys.statistics = false;
      break;
    case op::statistics_get: {
      std::optional<server_statistics> st;
      if (sys.statistics) {
        server_statistics v;
        v.start_time = sys.since;
        v.current_time = std::chrono::system_clock::now();
        v.reductions = reductions_of(self) - sys.reductions_at_start;
        v.messages_in = sys.in;
        v.messages_out = sys.out;
        st = v;
      }
      reply = make_reply_node(r.tag, st);
      break;
    }
  }
  if (reply == nullptr) reply = make_reply_node(r.tag);
  send_node(rt, r.from, reply);
}

void note_message(process& self, sys_state& sys, const last_message& m) {
  if (sys.statistics) ++sys.in;
  if (!sys.trace) return;
  switch (m.what) {
    case last_message::kind::call:
      trace(self, concat({"got call ",
                          demangled_name(*static_cast<const envelope_ext*>(m.type->ext)->request),
                          " from ", m.caller.to_string()}));
      break;
    case last_message::kind::cast:
      trace(self,
            concat({"got cast ",
                    demangled_name(*static_cast<const envelope_ext*>(m.type->ext)->request)}));
      break;
    default:
      trace(self, concat({"got ", describe(m)}));
  }
}

void note_reply(process& self, sys_state& sys, pid to) {
  if (sys.statistics) ++sys.out;
  if (sys.trace) trace(self, concat({"sent reply to ", to.to_string()}));
}

void report_terminate(process& self, const server_identity& who, const last_message& m,
                      const exit_reason& reason) noexcept {
  try {
    runtime_core& rt = *runtime_of(self);
    if (!report_enabled(rt, log_level::error)) return;
    log_event e;
    e.level = log_level::error;
    e.pid = self.self();
    e.registered_name = registered_name_of(rt, self.self());
    e.report = "gen_server_terminate";
    const std::string name =
        e.registered_name.empty() ? self.self().to_string() : e.registered_name;
    std::string state;
    try {
      state = who.format(who.server);
    } catch (...) {
      state = "<format_status failed>";
    }
    e.message = concat({"generic server ", name, " terminating: ", reason.to_string()});
    e.fields.emplace_back("name", name);
    e.fields.emplace_back("server", demangled_name(*who.type));
    e.fields.emplace_back("last_message", describe(m));
    e.fields.emplace_back("state", std::move(state));
    e.fields.emplace_back("reason", reason.to_string());
    if (m.what == last_message::kind::call) e.fields.emplace_back("client", m.caller.to_string());
    emit_event(rt, std::move(e));
  } catch (...) {
    // Out of memory building the report: the server still ends.
  }
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
