// The logger: a bounded queue in front of a thread that runs the handlers.
//
// Producers (any thread: schedulers making crash reports, supervisors, user code) take the
// queue's mutex for a push and nothing else; formatting and I/O happen on the logger's thread,
// which is started by the first event, so a runtime that never logs has no logger thread. The
// thread takes the whole queue at once and handles it outside the lock. Overload protection
// is OTP logger's drop mode: past the threshold a push only counts the event, and the thread
// reports the count once it has caught up.
#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <fstream>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <beamlet/observe/logger.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {
// Set while this thread runs handlers: an event a handler makes is queued, never handled
// re-entrantly, and a flush from a handler returns at once.
thread_local bool in_handler = false;
}  // namespace

struct logger::state final : detail::event_sink {
  // Settings (read without the lock on the producer side).
  std::atomic<int> level{static_cast<int>(log_level::notice)};
  std::atomic<bool> reports{true};
  std::atomic<std::size_t> threshold{10'000};
  detail::runtime_core* rt = nullptr;

  mutable std::mutex mu;
  std::condition_variable work_cv;  // the logger thread waits here
  std::condition_variable done_cv;  // flush() waits here
  std::deque<log_event> queue;
  std::uint64_t enqueued = 0;  // events ever queued (the sequence flush() waits for)
  std::uint64_t handled = 0;
  std::uint64_t dropped = 0;          // total
  std::uint64_t dropped_pending = 0;  // not yet reported
  std::uint64_t handler_errors = 0;
  bool stop = false;
  bool synchronous = false;  // after the runtime stopped: events are handled by their producer
  std::thread thread;

  // Handlers are used by the logger thread while `handlers_mu` is held.
  std::mutex handlers_mu;
  std::vector<std::pair<handler_id, std::unique_ptr<log_handler>>> handlers;
  handler_id next_id = default_handler + 1;

  void emit(log_event&& e) noexcept override {
    try {
      std::unique_lock lock(mu);
      if (synchronous) {
        if (in_handler) {  // a handler logging after the thread stopped: nowhere to go
          ++dropped;
          return;
        }
        lock.unlock();
        std::vector<log_event> one;
        one.push_back(std::move(e));
        handle_batch(one);
        return;
      }
      if (queue.size() >= threshold.load(std::memory_order_relaxed)) {
        ++dropped;
        ++dropped_pending;
        return;
      }
      queue.push_back(std::move(e));
      ++enqueued;
      if (!thread.joinable() && !stop) {
        thread = std::thread([this] {
          ::pthread_setname_np(::pthread_self(), "beamlet-log");
          run();
        });
      }
      lock.unlock();
      work_cv.notify_one();
    } catch (...) {
      // Out of memory or no thread: the event is lost and counted.
      std::lock_guard lock(mu);
      ++dropped;
      ++dropped_pending;
    }
  }

  void run() {
    std::vector<log_event> batch;
    std::unique_lock lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty() && stop) return;
      batch.assign(std::make_move_iterator(queue.begin()), std::make_move_iterator(queue.end()));
      queue.clear();
      std::uint64_t lost = 0;
      if (dropped_pending != 0) lost = std::exchange(dropped_pending, 0);
      lock.unlock();
      if (lost != 0) batch.push_back(dropped_event(lost));
      const std::size_t n = batch.size() - (lost != 0 ? 1 : 0);
      handle_batch(batch);
      batch.clear();
      lock.lock();
      handled += n;
      done_cv.notify_all();
    }
  }

  static log_event dropped_event(std::uint64_t lost) {
    log_event e;
    e.level = log_level::warning;
    e.time = std::chrono::system_clock::now();
    e.report = "logger_dropped";
    e.message = "logger: " + std::to_string(lost) + " events were dropped (overload)";
    e.fields.emplace_back("dropped", std::to_string(lost));
    return e;
  }

  void handle_batch(std::vector<log_event>& batch) {
    std::lock_guard hl(handlers_mu);
    in_handler = true;
    std::uint64_t errors = 0;
    for (const auto& e : batch)
      for (auto& [id, h] : handlers) {
        try {
          h->handle(e);
        } catch (...) {
          ++errors;
        }
      }
    for (auto& [id, h] : handlers) {
      try {
        h->flush();
      } catch (...) {
        ++errors;
      }
    }
    in_handler = false;
    if (errors != 0) {
      std::lock_guard lock(mu);
      handler_errors += errors;
    }
  }

  void flush() {
    if (in_handler) return;  // from a handler: would wait for itself
    std::unique_lock lock(mu);
    const std::uint64_t target = enqueued;
    done_cv.wait(lock, [&] { return handled >= target || !thread.joinable(); });
  }

  // Writes everything queued, stops the thread; later events are handled by their producers.
  void shut_down() noexcept {
    std::thread t;
    {
      std::lock_guard lock(mu);
      stop = true;
      synchronous = true;
      t = std::move(thread);
    }
    work_cv.notify_one();
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
    std::lock_guard lock(mu);
    handled = enqueued;
    done_cv.notify_all();
  }
};

namespace {

class text_handler final : public log_handler {
 public:
  explicit text_handler(std::ostream& out) : out_(out) {}
  void handle(const log_event& e) override { out_ << logger::format_text(e) << '\n'; }
  void flush() override { out_.flush(); }

 private:
  std::ostream& out_;
};

class json_handler final : public log_handler {
 public:
  explicit json_handler(std::ostream& out) : out_(&out) {}
  explicit json_handler(const std::string& path)
      : file_(std::make_unique<std::ofstream>(path, std::ios::app)), out_(file_.get()) {
    if (!*file_)
      throw std::system_error(errno, std::generic_category(),
                              "beamlet::logger::json_lines: cannot open " + path);
  }
  void handle(const log_event& e) override { *out_ << logger::format_json(e) << '\n'; }
  void flush() override { out_->flush(); }

 private:
  std::unique_ptr<std::ofstream> file_;
  std::ostream* out_;
};

class callback_handler final : public log_handler {
 public:
  explicit callback_handler(std::function<void(const log_event&)> f) : f_(std::move(f)) {}
  void handle(const log_event& e) override { f_(e); }

 private:
  std::function<void(const log_event&)> f_;
};

}  // namespace

logger::logger() : state_(std::make_shared<state>()) {
  state_->handlers.emplace_back(default_handler, stderr_text());
}

logger::~logger() {
  state_->shut_down();
}

void logger::attached(detail::runtime_core& rt) {
  state_->rt = &rt;
  // The state lives as long as this extension, hence as long as the runtime's core.
  detail::install_hook(rt, state_.get());
  detail::set_event_level(rt, level(), reports());
}

void logger::stopping() noexcept {
  state_->shut_down();
}

logger& logger::of(runtime& rt) {
  return extension<logger>(rt);
}

logger& logger::of(basic_process& self) {
  return extension<logger>(self);
}

void logger::set_level(log_level l) noexcept {
  state_->level.store(static_cast<int>(l), std::memory_order_relaxed);
  if (state_->rt != nullptr) detail::set_event_level(*state_->rt, l, reports());
}

log_level logger::level() const noexcept {
  return static_cast<log_level>(state_->level.load(std::memory_order_relaxed));
}

void logger::set_reports(bool on) noexcept {
  state_->reports.store(on, std::memory_order_relaxed);
  if (state_->rt != nullptr) detail::set_event_level(*state_->rt, level(), on);
}

bool logger::reports() const noexcept {
  return state_->reports.load(std::memory_order_relaxed);
}

logger::handler_id logger::add_handler(std::unique_ptr<log_handler> h) {
  if (h == nullptr) throw std::invalid_argument("beamlet::logger::add_handler: null handler");
  std::lock_guard lock(state_->handlers_mu);
  const handler_id id = state_->next_id++;
  state_->handlers.emplace_back(id, std::move(h));
  return id;
}

void logger::remove_handler(handler_id id) {
  flush();
  std::unique_ptr<log_handler> gone;  // destroyed outside the lock
  std::lock_guard lock(state_->handlers_mu);
  auto& hs = state_->handlers;
  for (auto it = hs.begin(); it != hs.end(); ++it)
    if (it->first == id) {
      gone = std::move(it->second);
      hs.erase(it);
      return;
    }
}

void logger::clear_handlers() {
  flush();
  std::vector<std::pair<handler_id, std::unique_ptr<log_handler>>> gone;
  std::lock_guard lock(state_->handlers_mu);
  gone.swap(state_->handlers);
}

std::unique_ptr<log_handler> logger::text(std::ostream& out) {
  return std::make_unique<text_handler>(out);
}

std::unique_ptr<log_handler> logger::stderr_text() {
  return std::make_unique<text_handler>(std::cerr);
}

std::unique_ptr<log_handler> logger::json_lines(std::ostream& out) {
  return std::make_unique<json_handler>(out);
}

std::unique_ptr<log_handler> logger::json_lines(const std::string& path) {
  return std::make_unique<json_handler>(path);
}

std::unique_ptr<log_handler> logger::callback(std::function<void(const log_event&)> f) {
  if (!f) throw std::invalid_argument("beamlet::logger::callback: empty function");
  return std::make_unique<callback_handler>(std::move(f));
}

void logger::log(log_level l, std::string message, pid about) {
  if (static_cast<int>(l) > state_->level.load(std::memory_order_relaxed)) return;
  log_event e;
  e.level = l;
  e.pid = about;
  if (about && state_->rt != nullptr)
    e.registered_name = detail::registered_name_of(*state_->rt, about);
  e.message = std::move(message);
  log(std::move(e));
}

void logger::log(log_event e) {
  const int l = static_cast<int>(e.level);
  if (l > state_->level.load(std::memory_order_relaxed)) return;
  if (!e.report.empty() && !reports()) return;
  if (e.time == std::chrono::system_clock::time_point{}) e.time = std::chrono::system_clock::now();
  state_->emit(std::move(e));
}

void logger::flush() {
  state_->flush();
}

logger::statistics logger::stats() const {
  std::lock_guard lock(state_->mu);
  return {state_->handled, state_->dropped, state_->handler_errors, state_->queue.size()};
}

void logger::set_drop_threshold(std::size_t n) noexcept {
  state_->threshold.store(n == 0 ? 1 : n, std::memory_order_relaxed);
}

void log(basic_process& self, log_level level, std::string message) {
  logger::of(self).log(level, std::move(message), self.self());
}

void log(runtime& rt, log_level level, std::string message) {
  logger::of(rt).log(level, std::move(message));
}

BEAMLET_END_PRIVATE_NAMESPACE
