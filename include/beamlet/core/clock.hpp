/// @file
/// beamlet/core/clock.hpp: the time processes live in.
///
/// A runtime reads time from one runtime_clock (runtime_options::clock). It governs what
/// processes wait for: receive timeouts inside processes, send_after timers, gen_server result
/// timeouts, start and shutdown timeouts run by processes, and the supervisors' restart
/// intensity windows. Outside threads (a scoped_process's blocking receive, runtime::wait, the
/// blocking forms of call and the supervisor API) always wait in real time: they live outside the
/// runtime.
///
/// The default is the steady clock. A manual_clock makes a runtime's time virtual: it moves only
/// when a test calls advance(), which fires every timer that has become due before it returns
/// (delivery itself is asynchronous, as always). A test of "3 restarts within 5 s" then takes
/// microseconds, and cannot be flaky:
///
///   auto clock = std::make_shared<beamlet::manual_clock>();
///   beamlet::runtime rt({.clock = clock});
///   ... crash a child ...;  clock->advance(2100ms);  ... crash it again ...
///
/// Thread-safety: now() and advance() may be called from any thread. One clock may serve several
/// runtimes; it must outlive them (the runtime holds a shared_ptr).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// A point in a runtime's time, the one spelling of it in beamlet's API: what runtime::now(),
/// process::now() and runtime_clock::now() return, and what deadlines are. The steady clock's
/// time point, whichever runtime_clock is in use (a manual_clock counts from its own origin).
using clock_time = std::chrono::steady_clock::time_point;

/// Where a runtime reads its time (runtime_options::clock). beamlet has two: the steady
/// clock (steady_runtime_clock, the default) and virtual time (manual_clock); a runtime rejects
/// any other clock that is not manual, since its timers sleep in steady time.
class runtime_clock {
 public:
  /// std::chrono's names for a clock's types (clock_time and its duration).
  using time_point = clock_time;
  /// The clock's tick: clock_time::duration (nanoseconds on the usual standard libraries).
  using duration = clock_time::duration;

  virtual ~runtime_clock() = default;
  /// The current time (monotonic).
  virtual time_point now() const noexcept = 0;
  /// True when time moves only through advance() (timers are then fired by it).
  virtual bool is_manual() const noexcept { return false; }

  /// For runtimes: `f` runs (on the advancing thread) after each advance of a manual clock.
  /// Returns an id for unsubscribe. A real clock never calls it.
  virtual std::uint64_t subscribe(std::function<void()> f) {
    (void)f;
    return 0;
  }
  /// Removes the callback subscribe() returned `id` for; an advance() running it is waited
  /// for. Unknown ids are ignored.
  virtual void unsubscribe(std::uint64_t id) noexcept { (void)id; }
};

/// std::chrono::steady_clock.
class steady_runtime_clock final : public runtime_clock {
 public:
  time_point now() const noexcept override { return std::chrono::steady_clock::now(); }
};

/// Virtual time for tests: starts at an arbitrary fixed point and moves only by advance().
class manual_clock final : public runtime_clock {
 public:
  manual_clock() = default;

  time_point now() const noexcept override {
    return time_point(duration(ticks_.load(std::memory_order_acquire)));
  }
  bool is_manual() const noexcept override { return true; }

  /// Moves time forward by `d` (negative values are ignored) and fires, on this thread, every
  /// timer of every subscribed runtime that is due by then.
  void advance(duration d) {
    if (d > duration::zero()) ticks_.fetch_add(d.count(), std::memory_order_acq_rel);
    // Under the lock, so that a runtime that unsubscribes (shuts down) waits for this to end.
    std::lock_guard lock(mu_);
    for (const auto& l : listeners_) l.f();
  }

  std::uint64_t subscribe(std::function<void()> f) override {
    std::lock_guard lock(mu_);
    listeners_.push_back({++next_id_, std::move(f)});
    return next_id_;
  }
  /// Removes the callback `id`, after waiting for an advance() in progress.
  void unsubscribe(std::uint64_t id) noexcept override {
    std::lock_guard lock(mu_);
    std::erase_if(listeners_, [id](const listener& l) { return l.id == id; });
  }

 private:
  struct listener {
    std::uint64_t id;
    std::function<void()> f;
  };
  // One hour in: deadlines computed from it never underflow the clock's epoch.
  std::atomic<duration::rep> ticks_{
      std::chrono::duration_cast<duration>(std::chrono::hours(1)).count()};
  std::mutex mu_;
  std::vector<listener> listeners_;
  std::uint64_t next_id_ = 0;
};

BEAMLET_END_NAMESPACE
