// The console's JSON API (see console.hpp): the overview's samples, the processes table, one
// process's detail, the tree, the alarms and reports.
#include "console.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/process_info.hpp>
#include <beamlet/core/system_monitor.hpp>
#include <beamlet/otp/supervisor_stats.hpp>

#include "console_assets.hpp"
#include "json.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {
namespace {

using clock = std::chrono::steady_clock;
constexpr const char* json_type = "application/json";
constexpr std::size_t alarm_log_capacity = 100;
constexpr std::size_t default_rows = 50;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void json_double(std::string& out, std::string_view key, double v) {
  out += ',';
  append_json_string(out, key);
  char buf[32];
  std::snprintf(buf, sizeof buf, ":%.4g", v);
  out += buf;
}

template <class T>
void json_array(std::string& out, std::string_view key, const std::vector<T>& v) {
  out += ',';
  append_json_string(out, key);
  out += ":[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    if constexpr (std::is_floating_point_v<T>) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", v[i]);
      out += buf;
    } else {
      out += std::to_string(v[i]);
    }
  }
  out += ']';
}

void json_pids(std::string& out, std::string_view key, const std::vector<pid>& v) {
  out += ',';
  append_json_string(out, key);
  out += ":[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, v[i].to_string());
  }
  out += ']';
}

void json_strings(std::string& out, std::string_view key, const std::vector<std::string>& v) {
  out += ',';
  append_json_string(out, key);
  out += ":[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, v[i]);
  }
  out += ']';
}

std::int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : 0;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

// -- scheduler_clock ------------------------------------------------------------------------------

std::vector<std::int64_t> scheduler_clock::read() {
  // The runtime's own threads, by the ids it recorded: names are not unique (two runtimes in
  // one program have the same scheduler names).
  const std::vector<int> tids = scheduler_threads(rt_);
  std::vector<std::int64_t> out(tids.size(), 0);
  for (std::size_t i = 0; i < tids.size(); ++i) {
    if (tids[i] <= 0) return {};
    // schedstat's first field: nanoseconds on a CPU (the kernel's scheduler accounting).
    const std::string path = "/proc/self/task/" + std::to_string(tids[i]) + "/schedstat";
    std::FILE* f = std::fopen(path.c_str(), "r");
    long long ns = 0;
    const bool ok = f != nullptr && std::fscanf(f, "%lld", &ns) == 1;
    if (f != nullptr) std::fclose(f);
    if (!ok) return {};
    out[i] = ns;
  }
  return out;
}

// -- samples and reports --------------------------------------------------------------------------

std::string console_sample::json() const {
  std::string out = "{\"time_ms\":" + std::to_string(time_ms);
  json_array(out, "utilisation", utilisation);
  json_array(out, "run_queues", run_queues);
  json_number(out, "global_queue", global_queue);
  json_number(out, "processes", processes);
  json_number(out, "timers", timers);
  json_number(out, "rss_bytes", static_cast<std::uint64_t>(rss_bytes));
  json_double(out, "messages_per_s", messages_per_s);
  json_double(out, "spawns_per_s", spawns_per_s);
  json_double(out, "exits_per_s", exits_per_s);
  json_number(out, "messages", messages);
  json_number(out, "alarms_seen", alarms_seen);
  json_number(out, "alarms_active", alarms_active);
  json_number(out, "reports_seen", reports_seen);
  out += ",\"gauges\":{";
  for (std::size_t i = 0; i < gauges.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, gauges[i].first);
    out += ':' + std::to_string(gauges[i].second);
  }
  return out + "}}";
}

void report_ring::add(const log_event& e) {
  std::string j = logger::format_json(e);
  std::lock_guard lock(mu);
  events.push_back(std::move(j));
  if (events.size() > capacity) events.pop_front();
  ++seen;
}

namespace {
// Keeps the reports and events at error and above (crash, supervisor and gen_server reports
// are errors) for the alarms page.
class ring_handler final : public log_handler {
 public:
  explicit ring_handler(std::shared_ptr<report_ring> r) : ring_(std::move(r)) {}
  void handle(const log_event& e) override {
    if (!e.report.empty() || e.level <= log_level::error) ring_->add(e);
  }

 private:
  std::shared_ptr<report_ring> ring_;
};
}  // namespace

// -- console
// ----------------------------------------------------------------------------------------

console::console(basic_process& self, const http_endpoint_options& opts)
    : self_(self), opts_(opts), core_(*runtime_of(self)) {
  handler_ = logger::of(self).add_handler(std::make_unique<ring_handler>(reports_));
  if (!system_monitor_of(core_).subscriber) {
    system_monitor_settings s;
    s.subscriber = self.self();
    s.long_queue_enable = opts.console_long_queue;
    s.long_queue_disable = opts.console_long_queue / 2;
    s.long_schedule = std::chrono::milliseconds(100);
    s.busy_dist_port = true;
    set_system_monitor(core_, s);
    subscribed_ = true;
  }
  cpu_ns_ = clock_.read();
  const runtime_stats st = stats_of(core_);
  last_messages_ = st.messages_delivered;
  last_spawns_ = st.spawns;
  last_exits_ = st.exits_normal + st.exits_shutdown + st.exits_killed + st.exits_error;
  last_ = clock::now();
  next_ = last_ + opts.console_sample_interval;
}

console::~console() {
  logger::of(self_).remove_handler(handler_);
  if (subscribed_ && system_monitor_of(core_).subscriber == self_.self())
    set_system_monitor(core_, system_monitor_settings{});
}

std::string console::sample() {
  const auto now = clock::now();
  if (subscribed_ && system_monitor_of(core_).subscriber != self_.self()) {
    // Someone else subscribed since: the alarms go to them now, and no "off" will come for
    // the queues the console saw long.
    subscribed_ = false;
    queue_alarms_.clear();
  }
  const double dt = std::chrono::duration<double>(now - last_).count();
  const runtime_stats st = stats_of(core_);
  console_sample s;
  s.time_ms = wall_ms();
  s.run_queues = st.run_queues;
  s.global_queue = st.global_queue;
  s.processes = st.processes;
  s.timers = st.timers;
  s.rss_bytes = resident_bytes();
  s.messages = st.messages_delivered;
  const std::uint64_t exits =
      st.exits_normal + st.exits_shutdown + st.exits_killed + st.exits_error;
  if (dt > 0) {
    s.messages_per_s = static_cast<double>(st.messages_delivered - last_messages_) / dt;
    s.spawns_per_s = static_cast<double>(st.spawns - last_spawns_) / dt;
    s.exits_per_s = static_cast<double>(exits - last_exits_) / dt;
  }
  std::vector<std::int64_t> cpu = clock_.read();
  if (dt > 0 && cpu.size() == cpu_ns_.size()) {
    s.utilisation.resize(cpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i)
      s.utilisation[i] =
          std::clamp(static_cast<double>(cpu[i] - cpu_ns_[i]) / (dt * 1e9), 0.0, 1.0);
  }
  cpu_ns_ = std::move(cpu);
  s.gauges = read_console_gauges(core_);
  s.alarms_seen = alarms_seen_;
  s.alarms_active = queue_alarms_.size();
  {
    std::lock_guard lock(reports_->mu);
    s.reports_seen = reports_->seen;
  }
  last_messages_ = st.messages_delivered;
  last_spawns_ = st.spawns;
  last_exits_ = exits;
  last_ = now;
  next_ = now + opts_.console_sample_interval;
  std::string j = s.json();
  history_.push_back(std::move(s));
  while (history_.size() > opts_.console_history) history_.pop_front();
  return j;
}

void console::on_alarm(const monitor_alarm& a) {
  ++alarms_seen_;
  std::string j = "{\"time_ms\":" + std::to_string(wall_ms());
  const char* kind = a.which == monitor_alarm::kind::long_message_queue ? "long_message_queue"
                     : a.which == monitor_alarm::kind::long_schedule    ? "long_schedule"
                                                                        : "busy_dist_port";
  json_field(j, "kind", kind);
  json_field(j, "pid", a.pid.to_string());
  json_field(j, "registered_name", registered_name_of(core_, a.pid));
  j += a.on ? ",\"on\":true" : ",\"on\":false";
  json_number(j, "queue_len", a.queue_len);
  json_number(j, "ran_us",
              static_cast<std::uint64_t>(
                  std::chrono::duration_cast<std::chrono::microseconds>(a.ran).count()));
  if (a.port) json_field(j, "port", a.port.to_string());
  j += '}';
  if (a.which == monitor_alarm::kind::long_message_queue) {
    if (a.on)
      queue_alarms_[a.pid.serial()] = j;
    else
      queue_alarms_.erase(a.pid.serial());
  }
  alarm_log_.push_back(std::move(j));
  if (alarm_log_.size() > alarm_log_capacity) alarm_log_.pop_front();
}

const std::string& console::type_name(const std::type_info* t) {
  auto it = type_names_.find(t);
  if (it == type_names_.end())
    it =
        type_names_.emplace(t, t != nullptr ? demangled_name(*t) : "beamlet::scoped_process").first;
  return it->second;
}

http_answer console::get(const console_request& r) {
  const http_query& q = r.q;
  if (q.path == "/console" || q.path == "/console/")
    return http_answer{200, "text/html; charset=utf-8", std::string(console_page())};
  if (q.path == "/console/api/overview") return overview();
  if (q.path == "/console/api/processes") return processes(q);
  if (q.path == "/console/api/process") return process(q);
  if (q.path == "/console/api/tree") return tree(q);
  if (q.path == "/console/api/alarms") return alarms();
  return http_answer{404, "text/plain; charset=utf-8", "beamlet: no such console page\n"};
}

http_answer console::overview() const {
  std::string out = "{\"interval_ms\":" + std::to_string(opts_.console_sample_interval.count());
  json_number(out, "schedulers", scheduler_count(core_));
  out += opts_.console_token.empty() ? ",\"actions\":false" : ",\"actions\":true";
  out += ",\"history\":[";
  for (std::size_t i = 0; i < history_.size(); ++i) {
    if (i > 0) out += ',';
    out += history_[i].json();
  }
  return http_answer{200, json_type, out + "]}\n"};
}

http_answer console::processes(const http_query& q) {
  const auto started = clock::now();
  const auto n = q.number("n", default_rows);
  if (!n || *n == 0 || *n > opts_.max_page_entries)
    return bad_parameter("n (1 to " + std::to_string(opts_.max_page_entries) + ")");
  const auto offset = q.number("offset", 0);
  if (!offset || *offset > (std::size_t{1} << 40)) return bad_parameter("offset");
  std::string_view sort = q.text("sort");
  if (sort.empty()) sort = "message_queue_len";
  if (sort != "message_queue_len" && sort != "memory" && sort != "reductions" && sort != "pid")
    return bad_parameter("sort (message_queue_len, memory, reductions or pid)");
  std::string_view order = q.text("order");
  if (order.empty()) order = sort == "pid" ? "asc" : "desc";
  if (order != "asc" && order != "desc") return bad_parameter("order (asc or desc)");
  const std::string filter = lowered(q.text("filter"));

  std::unordered_map<std::uint64_t, std::string> names;
  for (auto& [name, p] : registered_processes(core_)) names.emplace(p.serial(), std::move(name));
  const auto name_of = [&](pid p) -> std::string_view {
    const auto it = names.find(p.serial());
    return it == names.end() ? std::string_view() : std::string_view(it->second);
  };
  std::unordered_map<const std::type_info*, bool> type_matches;
  const auto matches = [&](const process_sample& s) {
    if (filter.empty()) return true;
    auto it = type_matches.find(s.initial_call);
    if (it == type_matches.end())
      it = type_matches
               .emplace(s.initial_call,
                        lowered(type_name(s.initial_call)).find(filter) != std::string::npos)
               .first;
    return it->second || lowered(name_of(s.id)).find(filter) != std::string::npos ||
           s.id.to_string().find(filter) != std::string::npos;
  };
  const auto key = [sort](const process_sample& s) -> std::uint64_t {
    if (sort == "message_queue_len") return s.message_queue_len;
    if (sort == "memory") return s.memory;
    if (sort == "reductions") return s.reductions;
    return s.id.serial();
  };
  const bool desc = order == "desc";
  const auto before = [&](const process_sample& a, const process_sample& b) {
    const std::uint64_t ka = key(a), kb = key(b);
    if (ka != kb) return desc ? ka > kb : ka < kb;
    return a.id < b.id;
  };
  // One pass that keeps the first offset + n in a heap whose top is the last of them: a page
  // of a million processes without a million-entry vector or a sort of it.
  const std::size_t want = *offset + *n;
  std::vector<process_sample> kept;
  std::size_t total = 0;
  visit_processes(core_, [&](const process_sample& s) {
    if (!matches(s)) return;
    ++total;
    if (kept.size() < want) {
      kept.push_back(s);
      std::push_heap(kept.begin(), kept.end(), before);
    } else if (before(s, kept.front())) {
      std::pop_heap(kept.begin(), kept.end(), before);
      kept.back() = s;
      std::push_heap(kept.begin(), kept.end(), before);
    }
  });
  std::sort_heap(kept.begin(), kept.end(), before);
  const std::size_t from = std::min<std::size_t>(*offset, kept.size());
  const std::size_t to = kept.size();
  const std::vector<process_sample>& all = kept;

  std::string out = "{";
  json_field(out, "sort", sort, true);
  json_field(out, "order", order);
  json_field(out, "filter", filter);
  json_number(out, "offset", std::min<std::size_t>(*offset, total));
  json_number(out, "total", total);
  out += ",\"processes\":[";
  for (std::size_t i = from; i < to; ++i) {
    const process_sample& s = all[i];
    if (i > from) out += ',';
    out += '{';
    json_field(out, "pid", s.id.to_string(), true);
    json_field(out, "registered_name", name_of(s.id));
    json_field(out, "initial_call", type_name(s.initial_call));
    json_number(out, "message_queue_len", s.message_queue_len);
    json_number(out, "memory", s.memory);
    json_number(out, "reductions", s.reductions);
    out += '}';
  }
  out += ']';
  json_number(
      out, "took_us",
      static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started).count()));
  return http_answer{200, json_type, out + "}\n"};
}

http_answer console::process(const http_query& q) {
  const auto p = parse_local_pid(q.text("pid"));
  if (!p) return bad_parameter("pid (<0.N.0>)");
  const auto d = process_info(self_, *p);
  if (!d) return http_answer{404, "text/plain; charset=utf-8", "beamlet: no such process\n"};
  std::unordered_map<pid, const supervisor_statistics*> sups;
  const std::vector<supervisor_statistics> stats = supervisor_stats(core_);
  for (const auto& s : stats) sups.emplace(s.supervisor, &s);
  std::string out = "{";
  json_field(out, "pid", d->pid.to_string(), true);
  json_field(out, "status", to_string(d->status));
  out += d->complete ? ",\"complete\":true" : ",\"complete\":false";
  out += d->trap_exit ? ",\"trap_exit\":true" : ",\"trap_exit\":false";
  json_field(out, "registered_name", d->registered_name);
  json_field(out, "initial_call", d->initial_call);
  json_field(out, "waiting_for", d->waiting_for);
  json_number(out, "message_queue_len", d->message_queue_len);
  json_number(out, "messages_received", d->messages_received);
  json_number(out, "messages_examined", d->messages_examined);
  json_number(out, "mailbox_capacity", d->mailbox_capacity);
  json_number(out, "messages_dropped", d->messages_dropped);
  json_number(out, "reductions", d->reductions);
  json_number(out, "memory", d->memory);
  json_number(out, "queue_bytes", d->queue_bytes);
  json_field(out, "parent", d->parent ? d->parent.to_string() : std::string());
  json_pids(out, "links", d->links);
  json_pids(out, "monitors", d->monitors);
  json_strings(out, "monitored_names", d->monitored_names);
  json_pids(out, "monitored_by", d->monitored_by);
  json_strings(out, "queued_types", d->queued_types);
  out += ",\"labels\":{";
  for (std::size_t i = 0; i < d->labels.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, d->labels[i].first);
    out += ':';
    append_json_string(out, d->labels[i].second);
  }
  out += '}';
  if (const auto it = sups.find(d->pid); it != sups.end()) {
    json_field(out, "supervisor_kind", it->second->kind);
    json_number(out, "supervisor_children", it->second->children);
    json_number(out, "supervisor_restarts", it->second->restarts);
  }
  // The supervisor path: the ancestors from the root down, each marked if it supervises.
  out += ",\"supervisor_path\":[";
  for (std::size_t i = d->ancestors.size(); i-- > 0;) {
    const pid a = d->ancestors[i];
    if (i + 1 < d->ancestors.size()) out += ',';
    out += '{';
    json_field(out, "pid", a.to_string(), true);
    json_field(out, "registered_name", registered_name_of(core_, a));
    const auto it = sups.find(a);
    json_field(out, "kind", it != sups.end() ? std::string_view(it->second->kind) : "");
    out += '}';
  }
  return http_answer{200, json_type, out + "]}\n"};
}

http_answer console::tree(const http_query& q) {
  const auto n = q.number("max_children", opts_.tree_max_children);
  if (!n || *n > opts_.max_page_entries)
    return bad_parameter("max_children (at most " + std::to_string(opts_.max_page_entries) + ")");
  const auto offset = q.number("offset", 0);
  if (!offset) return bad_parameter("offset");
  std::optional<pid> root;
  if (!q.text("supervisor").empty()) {
    root = parse_local_pid(q.text("supervisor"));
    if (!root) return bad_parameter("supervisor");
  }
  auto page = render_tree(self_, *n, opts_.max_page_entries, *offset, root);
  if (!page) return http_answer{404, "text/plain; charset=utf-8", "beamlet: no such supervisor\n"};
  return http_answer{200, json_type, std::move(*page)};
}

http_answer console::alarms() const {
  std::string out = "{";
  const pid sub = system_monitor_of(core_).subscriber;
  out += subscribed_ ? "\"subscribed\":true" : "\"subscribed\":false";
  json_field(out, "subscriber", sub ? sub.to_string() : std::string());
  json_number(out, "alarms_seen", alarms_seen_);
  out += ",\"active\":[";
  bool first = true;
  for (const auto& [serial, j] : queue_alarms_) {
    if (!first) out += ',';
    first = false;
    out += j;
  }
  out += "],\"alarms\":[";
  for (std::size_t i = alarm_log_.size(); i-- > 0;) {
    out += alarm_log_[i];
    if (i > 0) out += ',';
  }
  out += "],\"reports\":[";
  {
    std::lock_guard lock(reports_->mu);
    for (std::size_t i = reports_->events.size(); i-- > 0;) {
      out += reports_->events[i];
      if (i > 0) out += ',';
    }
    json_number(out += ']', "reports_seen", reports_->seen);
  }
  return http_answer{200, json_type, out + "}\n"};
}

bool token_matches(std::string_view given, std::string_view expected) noexcept {
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= g ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0 && !expected.empty();
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
