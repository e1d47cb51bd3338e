// The console's actions (see console.hpp): the only requests that change anything, each a POST
// with the token, each logged. Each runs in a process of its own, so the endpoint goes on
// answering meanwhile: suspend and resume are sys requests, which wait (up to 2 s) for the
// server's answer.
#include <chrono>
#include <string>

#include <beamlet/core/process.hpp>
#include <beamlet/core/process_info.hpp>
#include <beamlet/observe/logger.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/sys.hpp>

#include "console.hpp"
#include "json.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {
namespace {

constexpr auto sys_timeout = std::chrono::milliseconds(2000);

http_answer text(unsigned status, std::string body) {
  return http_answer{status, "text/plain; charset=utf-8", "beamlet: " + std::move(body) + "\n"};
}

}  // namespace

std::optional<http_answer> console::refuse(const console_request& r) const {
  if (!r.post) return text(405, "actions are POSTs");
  if (opts_.console_token.empty()) return text(403, "console actions are off (no console_token)");
  if (!token_matches(r.token, opts_.console_token))
    return text(403, "a console action needs the X-Beamlet-Token header");
  return std::nullopt;
}

task<http_answer> run_console_action(process& self, const http_query& form, const std::string& peer,
                                     pid endpoint) {
  const std::string action(form.text("action"));
  const auto target = parse_local_pid(form.text("pid"));
  if (action != "kill" && action != "suspend" && action != "resume" && action != "shed_on" &&
      action != "shed_off" && action != "shed_auto")
    co_return bad_parameter("action (kill, suspend, resume, shed_on, shed_off or shed_auto)");
  if (!target) co_return bad_parameter("pid (<0.N.0>)");
  const pid p = *target;
  if (!process_info(self, p)) co_return text(404, "no such process: " + p.to_string());
  if (p == endpoint || p == self.self())
    co_return text(409, "the console does not act on its own endpoint");
  // Logged before it runs: an action that takes the service down is still on record.
  log(self, log_level::notice, "console: " + action + " " + p.to_string() + " (from " + peer + ")");
  if (action == "kill") {
    self.exit(p, exit_reason::kill());
  } else if (action == "suspend" || action == "resume") {
    server_ref<void> to(p);
    try {
      if (action == "suspend")
        co_await sys::suspend(self, to, sys_timeout);
      else
        co_await sys::resume(self, to, sys_timeout);
    } catch (const std::exception& e) {
      // Not a gen_server (it never answers system messages), or it died meanwhile.
      co_return text(409, action + " " + p.to_string() + " failed: " + e.what());
    }
  } else {
    const shedding mode = action == "shed_on"    ? shedding::on
                          : action == "shed_off" ? shedding::off
                                                 : shedding::automatic;
    if (!dynamic_supervisor::set_shedding(self, p, mode))
      co_return text(409, p.to_string() + " is not a dynamic supervisor");
  }
  std::string out = "{\"ok\":true";
  json_field(out, "action", action);
  json_field(out, "pid", p.to_string());
  out += "}\n";
  http_answer done{200, "application/json", std::move(out)};  // named: docs/gcc12-coroutines.md
  co_return done;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
