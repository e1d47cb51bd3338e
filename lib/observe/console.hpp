// The operator's console (http_endpoint_options::console): the state its JSON API reads and the
// answers it builds. Everything here lives in the endpoint's process and is touched by it only,
// except the report ring, which the logger's thread fills. Nothing asks the processes it shows
// anything: pages are built from the runtime's introspection, so they answer while the system is
// overloaded. The page itself (HTML, script, style) is in console_assets.hpp; the streaming of
// samples to browsers is the I/O thread's (http_session.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/observe/http_endpoint.hpp>
#include <beamlet/observe/logger.hpp>

#include "http_pages.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
class basic_process;
class process;
namespace detail {
class runtime_core;

/// CPU time each scheduler thread has used, read from /proc (the kernel's own accounting), so
/// that utilisation costs the schedulers nothing: a scheduler that sleeps uses none.
class scheduler_clock {
 public:
  explicit scheduler_clock(runtime_core& rt) : rt_(rt) {}
  /// Nanoseconds of CPU per scheduler thread, by scheduler index; empty where /proc is not
  /// readable (or a thread has not started).
  std::vector<std::int64_t> read();

 private:
  runtime_core& rt_;
};

/// One sample of the overview: what the charts plot.
struct console_sample {
  std::int64_t time_ms = 0;         ///< wall clock, milliseconds since the epoch
  std::vector<double> utilisation;  ///< per scheduler, 0..1 over the last interval
  std::vector<std::size_t> run_queues;
  std::size_t global_queue = 0;
  std::size_t processes = 0;
  std::size_t timers = 0;
  std::int64_t rss_bytes = 0;
  double messages_per_s = 0, spawns_per_s = 0, exits_per_s = 0;
  std::uint64_t messages = 0;  ///< delivered since the start
  std::uint64_t alarms_seen = 0, reports_seen = 0;
  std::size_t alarms_active = 0;
  std::vector<std::pair<std::string, std::int64_t>> gauges;  ///< add_console_gauge's, by name
  std::string json() const;
};

/// The last reports and error events, filled by a log handler on the logger's thread.
struct report_ring {
  std::mutex mu;
  std::deque<std::string> events;  // JSON objects, oldest first
  std::uint64_t seen = 0;
  static constexpr std::size_t capacity = 100;
  void add(const log_event& e);
};

/// A request for the console, as the endpoint's process sees it.
struct console_request {
  const http_query& q;
  bool post = false;
  std::string_view token;  ///< the X-Beamlet-Token header ("" if absent)
  std::string_view body;
  std::string_view peer;  ///< the client's address, for the log
};

class console {
 public:
  console(basic_process& self, const http_endpoint_options& opts);
  ~console();
  console(const console&) = delete;
  console& operator=(const console&) = delete;

  /// Takes a sample, keeps it in the history and returns its JSON (one server-sent event).
  std::string sample();
  /// When the next sample is due.
  std::chrono::steady_clock::time_point next_sample() const noexcept { return next_; }

  /// A system monitor alarm (the console subscribes when nobody else has).
  void on_alarm(const monitor_alarm& a);

  /// The answer to a GET under /console; actions are answered by act() instead.
  http_answer get(const console_request& r);
  /// The path of actions (a POST; a GET of it is 405).
  static bool is_action(const http_query& q) noexcept { return q.path == "/console/api/action"; }
  /// Checks the token and the action's parameters: an answer when the action must not run
  /// (403, 400, 404), or nullopt when it may.
  std::optional<http_answer> refuse(const console_request& r) const;

 private:
  basic_process& self_;
  const http_endpoint_options& opts_;
  runtime_core& core_;
  scheduler_clock clock_{core_};
  std::vector<std::int64_t> cpu_ns_;
  std::chrono::steady_clock::time_point last_{}, next_{};
  std::uint64_t last_messages_ = 0, last_spawns_ = 0, last_exits_ = 0;
  std::deque<console_sample> history_;
  std::shared_ptr<report_ring> reports_ = std::make_shared<report_ring>();
  logger::handler_id handler_ = 0;
  bool subscribed_ = false;  // this process is the system monitor's subscriber
  std::uint64_t alarms_seen_ = 0;
  std::deque<std::string> alarm_log_;                            // JSON objects, oldest first
  std::unordered_map<std::uint64_t, std::string> queue_alarms_;  // on now, by pid serial
  std::unordered_map<const std::type_info*, std::string> type_names_;

  const std::string& type_name(const std::type_info* t);
  http_answer overview() const;
  http_answer processes(const http_query& q);
  http_answer process(const http_query& q);
  http_answer alarms() const;
  http_answer tree(const http_query& q);
};

/// The console's action, run in a process of its own once refuse() let it through: kill,
/// suspend, resume (sys), shed_on, shed_off, shed_auto (a dynamic supervisor's switch).
task<http_answer> run_console_action(process& self, const http_query& form, const std::string& peer,
                                     pid endpoint);

/// The gauges of the runtime's consoles (add_console_gauge), read now, by name.
std::vector<std::pair<std::string, std::int64_t>> read_console_gauges(runtime_core& rt);

/// The source `name` of the runtime's consoles (add_console_source), or nullptr.
std::shared_ptr<const console_source> find_console_source(runtime_core& rt, std::string_view name);

/// Compares a token in time that depends only on the expected token's length.
bool token_matches(std::string_view given, std::string_view expected) noexcept;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
