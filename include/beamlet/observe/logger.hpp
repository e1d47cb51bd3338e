/// @file
/// beamlet/observe/logger.hpp: the runtime's logger: levels, handlers, reports, overload
/// protection.
///
/// Every runtime has one logger, made with the runtime. Events (plain messages and the reports of
/// beamlet/core/log_event.hpp) are made on any thread, go through a bounded queue, and are
/// formatted and written by the logger's own thread (started on the first event), so logging never
/// blocks a scheduler on I/O. Defaults, like OTP's logger: level `notice`, one handler writing text
/// to stderr; crash, supervisor and gen_server reports are errors, so they are printed; progress
/// reports are `info`, so they are not.
///
///   beamlet::log(self, beamlet::log_level::warning, "cache miss rate " + std::to_string(r));
///   beamlet::logger::of(rt).set_level(beamlet::log_level::info);     // progress reports too
///   beamlet::logger::of(rt).set_reports(false);                      // no reports at all
///   beamlet::logger::of(rt).add_handler(beamlet::logger::json_lines("events.jsonl"));
///
/// Overload (OTP logger's drop mode): while more than `drop_threshold` events wait (default
/// 10,000), new events are dropped where they are made and counted; once the logger has caught
/// up, it writes one `logger_dropped` event saying how many were lost. Nothing blocks the
/// producer. On the runtime's orderly shutdown everything queued is written before the runtime
/// is gone, and so is everything queued when the logger is destroyed.
///
/// Thread-safety: every member may be called from any thread. Handlers run on the logger's
/// thread, one event at a time, in the order events were queued; an exception from a handler is
/// swallowed (and counted in stats().handler_errors), never lost in the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include <beamlet/core/config.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/log_event.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Where events go. Called on the logger's thread only.
class log_handler {
 public:
  virtual ~log_handler() = default;
  /// Writes one event; events come one at a time, in the order they were queued. An exception
  /// is swallowed and counted in logger::statistics::handler_errors.
  virtual void handle(const log_event& e) = 0;
  /// After each batch of events, and on flush(): push buffered output out.
  virtual void flush() {}
};

/// The runtime's logger (OTP's logger): one per runtime, made with it; reach it with of().
/// Levels, reports, handlers and overload protection are described in the file comment.
class logger final : public runtime_extension {
 public:
  /// The logger of `rt`.
  static logger& of(runtime& rt);
  /// The logger of the runtime `self` runs on.
  static logger& of(basic_process& self);

  /// Events less severe than `level` are dropped where they are made, before anything is built.
  /// Default: notice.
  void set_level(log_level level) noexcept;
  /// The level set by set_level.
  log_level level() const noexcept;
  /// Crash, supervisor, progress, gen_server and alarm reports on or off. Default: on.
  void set_reports(bool on) noexcept;
  /// Whether reports are on (set_reports).
  bool reports() const noexcept;

  /// Names a handler added with add_handler, for remove_handler. Never reused.
  using handler_id = std::uint64_t;
  /// Adds a handler: events handled from now on go to it too. Throws std::invalid_argument for
  /// a null handler.
  handler_id add_handler(std::unique_ptr<log_handler> h);
  /// Removes a handler once the events queued before the call have been handled. Unknown ids
  /// are ignored.
  void remove_handler(handler_id id);
  /// Removes every handler, the default stderr one included (events are then only counted).
  void clear_handlers();
  /// The id of the stderr handler every logger starts with.
  static constexpr handler_id default_handler = 1;

  /// The built-in handlers. Text: OTP-style report blocks, one block per event.
  static std::unique_ptr<log_handler> text(std::ostream& out);
  /// text(std::cerr): the handler every logger starts with.
  static std::unique_ptr<log_handler> stderr_text();
  /// One JSON object per line: time, level, pid, registered_name, report, msg, fields.
  static std::unique_ptr<log_handler> json_lines(std::ostream& out);
  /// To a file (appended); throws std::system_error if it cannot be opened.
  static std::unique_ptr<log_handler> json_lines(const std::string& path);
  /// Calls `f` with each event.
  static std::unique_ptr<log_handler> callback(std::function<void(const log_event&)> f);

  /// Queues a plain message (any thread). `about` is the process it concerns (may be null).
  void log(log_level level, std::string message, pid about = {});
  /// Queues an event as it is (its time is stamped if unset).
  void log(log_event e);
  /// Waits until every event queued before the call has been handled (returns at once when
  /// called from a handler).
  void flush();

  /// The logger's counters: totals since it was made, except `queued`.
  struct statistics {
    std::uint64_t handled = 0;         ///< events given to the handlers
    std::uint64_t dropped = 0;         ///< events dropped by overload protection
    std::uint64_t handler_errors = 0;  ///< exceptions thrown by handlers
    std::size_t queued = 0;            ///< waiting now
  };
  /// The counters now.
  statistics stats() const;
  /// Above this many waiting events, new ones are dropped. Default 10,000; at least 1.
  void set_drop_threshold(std::size_t n) noexcept;

  /// The text and JSON forms of one event, as the built-in handlers write them. Times are UTC.
  static std::string format_text(const log_event& e);
  /// The JSON form: one object, without the newline json_lines adds.
  static std::string format_json(const log_event& e);

  // -- runtime_extension ----------------------------------------------------------------------
  logger();
  ~logger() override;
  void attached(detail::runtime_core& rt) override;
  void stopping() noexcept override;

  struct state;

 private:
  std::shared_ptr<state> state_;
};

/// Logs a plain message about `self` (its pid and registered name are the metadata).
void log(basic_process& self, log_level level, std::string message);
/// Logs from a thread that is not a process.
void log(runtime& rt, log_level level, std::string message);

BEAMLET_END_NAMESPACE
