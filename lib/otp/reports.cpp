#include "reports.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <beamlet/core/extension.hpp>
#include <beamlet/core/log_event.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/otp/supervisor_stats.hpp>

#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

std::string_view restart_name(restart_type r) {
  switch (r) {
    case restart_type::permanent:
      return "permanent";
    case restart_type::transient:
      return "transient";
    case restart_type::temporary:
      return "temporary";
  }
  return "undefined";
}

std::string shutdown_name(const shutdown_spec& s) {
  switch (s.which()) {
    case shutdown_spec::kind::brutal_kill:
      return "brutal_kill";
    case shutdown_spec::kind::infinite:
      return "infinity";
    case shutdown_spec::kind::timeout:
      return std::to_string(s.time().count());
  }
  return "undefined";
}

// An id as an Erlang string literal: "cache".
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

log_event report_event(basic_process& self, log_level level, std::string_view kind) {
  log_event e;
  e.level = level;
  e.pid = self.self();
  e.registered_name = registered_name_of(*runtime_of(self), self.self());
  e.report = std::string(kind);
  return e;
}

}  // namespace

std::string supervisor_name(basic_process& self, std::string_view module) {
  const std::string name = registered_name_of(*runtime_of(self), self.self());
  if (!name.empty()) return concat({"{local,", name, "}"});
  return concat({"{", self.self().to_string(), ",", module, "}"});
}

std::string describe_child(const child_spec& spec, pid child) {
  return concat({"[{pid,", child ? child.to_string() : std::string("undefined"), "},{id,",
                 quoted(spec.id), "},{start,", demangled_name(spec.start.target()),
                 "},{restart_type,", restart_name(spec.restart), "},{significant,",
                 spec.significant ? "true" : "false", "},{shutdown,",
                 shutdown_name(spec.effective_shutdown()), "},{child_type,",
                 spec.type == child_type::supervisor ? "supervisor" : "worker", "}]"});
}

void supervisor_report(basic_process& self, std::string_view module, std::string_view context,
                       std::string_view reason, const child_spec& spec, pid child) {
  runtime_core& rt = *runtime_of(self);
  if (!report_enabled(rt, log_level::error)) return;
  log_event e = report_event(self, log_level::error, "supervisor_report");
  const std::string sup = supervisor_name(self, module);
  e.message = concat({"supervisor ", sup, " ", context, ": ", reason});
  e.fields.emplace_back("supervisor", sup);
  e.fields.emplace_back("errorContext", std::string(context));
  e.fields.emplace_back("reason", std::string(reason));
  e.fields.emplace_back("offender", describe_child(spec, child));
  emit_event(rt, std::move(e));
}

void progress_report(basic_process& self, std::string_view module, const child_spec& spec,
                     pid child) {
  runtime_core& rt = *runtime_of(self);
  if (!report_enabled(rt, log_level::info)) return;
  log_event e = report_event(self, log_level::info, "progress_report");
  const std::string sup = supervisor_name(self, module);
  e.message = concat({"supervisor ", sup, " started ", child.to_string()});
  e.fields.emplace_back("supervisor", sup);
  e.fields.emplace_back("started", describe_child(spec, child));
  emit_event(rt, std::move(e));
}

bool clean_shutdown(const child_spec& spec, const exit_reason& reason) {
  using k = exit_reason::kind;
  const bool permanent = spec.restart == restart_type::permanent;
  const bool brutal = spec.effective_shutdown().which() == shutdown_spec::kind::brutal_kill;
  switch (reason.which()) {
    case k::killed:
      // Expected from brutal_kill only: a child killed after its shutdown time did not stop.
      return brutal;
    case k::shutdown:
      return (!brutal && reason.detail().empty()) || !permanent;
    case k::normal:
      return !permanent;
    default:
      return false;
  }
}

// -- counters ------------------------------------------------------------------------------------

namespace {
class supervisor_registry final : public runtime_extension {
 public:
  void add(const std::shared_ptr<supervisor_counters>& c) {
    std::lock_guard lock(mu_);
    all_[c->self] = c;
  }
  void remove(pid p) noexcept {
    std::lock_guard lock(mu_);
    all_.erase(p);
  }
  std::vector<std::shared_ptr<supervisor_counters>> list() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<supervisor_counters>> out;
    out.reserve(all_.size());
    for (auto& [p, c] : all_) out.push_back(c);
    return out;
  }
  std::shared_ptr<supervisor_counters> find(pid p) {
    std::lock_guard lock(mu_);
    const auto it = all_.find(p);
    return it == all_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<pid, std::shared_ptr<supervisor_counters>> all_;
};
}  // namespace

void supervisor_registration::enroll(basic_process& self, const char* kind) {
  counters_->self = self.self();
  counters_->kind = kind;
  rt_ = runtime_of(self);
  extension<supervisor_registry>(*rt_).add(counters_);
}

std::shared_ptr<supervisor_counters> find_supervisor(runtime_core& rt, pid sup) {
  return extension<supervisor_registry>(rt).find(sup);
}

supervisor_registration::~supervisor_registration() {
  if (rt_ != nullptr) extension<supervisor_registry>(*rt_).remove(counters_->self);
}

}  // namespace detail

std::vector<supervisor_statistics> supervisor_stats(runtime& rt) {
  return supervisor_stats(rt.core());
}

std::vector<supervisor_statistics> supervisor_stats(detail::runtime_core& rt) {
  std::vector<supervisor_statistics> out;
  for (const auto& c : extension<detail::supervisor_registry>(rt).list()) {
    supervisor_statistics s;
    s.supervisor = c->self;
    s.registered_name = detail::registered_name_of(rt, c->self);
    s.kind = c->kind;
    s.restarts = c->restarts.load(std::memory_order_relaxed);
    s.start_child_calls = c->start_child_calls.load(std::memory_order_relaxed);
    s.start_child_errors = c->start_child_errors.load(std::memory_order_relaxed);
    s.children = c->children.load(std::memory_order_relaxed);
    s.rate_limited = c->rate_limited.load(std::memory_order_relaxed);
    s.overloaded = c->overloaded.load(std::memory_order_relaxed);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.supervisor < b.supervisor; });
  return out;
}

BEAMLET_END_PRIVATE_NAMESPACE
