// Prometheus text exposition (version 0.0.4): one HELP and TYPE line per metric family, then
// its samples. Label values are escaped as the format requires (backslash, quote, newline).
#include <beamlet/observe/metrics.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/observe/logger.hpp>
#include <beamlet/otp/supervisor_stats.hpp>

#include "app_metrics_render.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {

std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

/// The collectors the layers above (and applications) added to this runtime.
struct collector_registry final : runtime_extension {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const metrics_collector>, std::less<>> collectors;
};

}  // namespace

namespace {
std::string render(detail::runtime_core& core, const metrics_options& opts) {
  const detail::runtime_stats s = detail::stats_of(core);
  metrics_writer w;
  w.family("processes", "gauge", "Processes alive, scoped processes included.");
  w.sample("processes", s.processes);
  w.family("scoped_processes", "gauge", "Open scoped processes (outside threads' identities).");
  w.sample("scoped_processes", s.scoped_processes);
  w.family("spawns_total", "counter", "Processes spawned.");
  w.sample("spawns_total", s.spawns);
  w.family("exits_total", "counter", "Processes ended, by class of exit reason.");
  w.sample("exits_total", s.exits_normal, "reason=\"normal\"");
  w.sample("exits_total", s.exits_shutdown, "reason=\"shutdown\"");
  w.sample("exits_total", s.exits_killed, "reason=\"killed\"");
  w.sample("exits_total", s.exits_error, "reason=\"error\"");
  w.family("messages_total", "counter", "Messages that reached a process's queue.");
  w.sample("messages_total", s.messages_delivered);
  w.family("messages_dropped_total", "counter", "Messages bounded mailboxes refused or dropped.");
  w.sample("messages_dropped_total", s.messages_dropped);
  w.family("timers", "gauge", "Pending receive timeouts and send_after timers.");
  w.sample("timers", s.timers);
  w.family("run_queue_length", "gauge", "Runnable processes queued on each scheduler.");
  for (std::size_t i = 0; i < s.run_queues.size(); ++i)
    w.sample("run_queue_length", s.run_queues[i], "scheduler=\"" + std::to_string(i) + "\"");
  w.family("global_run_queue_length", "gauge", "Runnable processes not yet taken by a scheduler.");
  w.sample("global_run_queue_length", s.global_queue);

  const auto sups = supervisor_stats(core);
  auto sup_labels = [](const supervisor_statistics& x) {
    const std::string who =
        x.registered_name.empty() ? x.supervisor.to_string() : x.registered_name;
    return "supervisor=\"" + label_value(who) + "\",kind=\"" + x.kind + "\"";
  };
  w.family("supervisor_restarts_total", "counter", "Restart attempts, per supervisor.");
  for (const auto& x : sups) w.sample("supervisor_restarts_total", x.restarts, sup_labels(x));
  w.family("supervisor_start_child_total", "counter", "start_child requests, per supervisor.");
  for (const auto& x : sups)
    w.sample("supervisor_start_child_total", x.start_child_calls, sup_labels(x));
  w.family("supervisor_start_child_errors_total", "counter",
           "start_child requests that failed, per supervisor.");
  for (const auto& x : sups)
    w.sample("supervisor_start_child_errors_total", x.start_child_errors, sup_labels(x));
  w.family("supervisor_start_child_refused_total", "counter",
           "start_child requests refused by overload control, per supervisor and cause.");
  for (const auto& x : sups) {
    w.sample("supervisor_start_child_refused_total", x.rate_limited,
             sup_labels(x) + ",cause=\"rate_limited\"");
    w.sample("supervisor_start_child_refused_total", x.overloaded,
             sup_labels(x) + ",cause=\"overloaded\"");
  }
  w.family("supervisor_children", "gauge", "Children held, per supervisor.");
  for (const auto& x : sups) w.sample("supervisor_children", x.children, sup_labels(x));

  // The registered processes with the longest queues.
  std::vector<std::pair<std::size_t, std::string>> queues;
  for (const auto& [name, p] : detail::registered_processes(core))
    if (const auto d = detail::inspect(core, p)) queues.emplace_back(d->message_queue_len, name);
  const std::size_t k = std::min(opts.top_k, queues.size());
  std::partial_sort(queues.begin(), queues.begin() + static_cast<std::ptrdiff_t>(k), queues.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  w.family("message_queue_len", "gauge",
           "Messages queued, for the registered processes with the longest queues.");
  for (std::size_t i = 0; i < k; ++i)
    w.sample("message_queue_len", queues[i].first,
             "name=\"" + label_value(queues[i].second) + "\"");

  const logger::statistics ls = extension<logger>(core).stats();
  w.family("logger_events_total", "counter", "Events the logger handed to its handlers.");
  w.sample("logger_events_total", ls.handled);
  w.family("logger_dropped_total", "counter", "Events the logger dropped under overload.");
  w.sample("logger_dropped_total", ls.dropped);

  std::vector<std::shared_ptr<const metrics_collector>> extra;
  {
    auto& reg = extension<collector_registry>(core);
    std::lock_guard lock(reg.mu);
    for (const auto& [key, c] : reg.collectors) extra.push_back(c);
  }
  for (const auto& c : extra) (*c)(w);
  std::string out = w.take();
  detail::render_app_metrics(core, out);
  return out;
}
}  // namespace

void metrics_writer::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP beamlet_";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE beamlet_";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void metrics_writer::sample(std::string_view name, std::uint64_t value, std::string_view labels) {
  out_ += "beamlet_";
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    out_ += labels;
    out_ += '}';
  }
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

std::string metrics_writer::label(std::string_view key, std::string_view value) {
  std::string out(key);
  out += "=\"";
  out += label_value(value);
  out += '"';
  return out;
}

namespace detail {
void add_metrics_collector(runtime_core& rt, std::string key, metrics_collector collect) {
  auto c = std::make_shared<const metrics_collector>(std::move(collect));
  auto& reg = extension<collector_registry>(rt);
  std::lock_guard lock(reg.mu);
  reg.collectors[std::move(key)] = std::move(c);
}
void remove_metrics_collector(runtime_core& rt, std::string_view key) {
  auto& reg = extension<collector_registry>(rt);
  std::lock_guard lock(reg.mu);
  if (const auto it = reg.collectors.find(key); it != reg.collectors.end())
    reg.collectors.erase(it);
}
}  // namespace detail

void add_metrics_collector(runtime& rt, std::string key, metrics_collector collect) {
  detail::add_metrics_collector(rt.core(), std::move(key), std::move(collect));
}
void remove_metrics_collector(runtime& rt, std::string_view key) {
  detail::remove_metrics_collector(rt.core(), key);
}

std::string prometheus_metrics(runtime& rt, const metrics_options& opts) {
  return render(rt.core(), opts);
}

std::string prometheus_metrics(basic_process& self, const metrics_options& opts) {
  return render(*detail::runtime_of(self), opts);
}

BEAMLET_END_PRIVATE_NAMESPACE
