// The network layer's per-runtime state: one event loop (an io_context) per scheduler, which
// that scheduler's thread runs itself (beamlet/core/detail/scheduler_io.hpp): between process
// runs, while it spins, and while it parks.
//
// Every socket, listener and connect belongs to one loop (its lane), chosen where it is made:
// the lane of the scheduler running the process that makes it, or, from another thread, the
// next lane in turn. Its system calls and handlers run on that lane's thread only, so socket
// state needs no locks (socket_state.hpp). A process asks its socket for something by posting
// a closure to the socket's lane: when the process runs on that lane's scheduler, the closure
// waits in a list of the lane's own and runs as soon as the process suspends (no lock, no
// thread hop); from elsewhere it goes through the io_context's queue. A handler that wakes a
// process puts it in its own scheduler's queue, so processes come to run where their sockets
// are.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/scheduler_io.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/observe/metrics.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

namespace core = ::beamlet::detail;

/// Cancels an Asio timer from a path that must not throw (a socket's or a listener's teardown).
/// Asio reports a failed cancel() only by exception here (its error_code overload is
/// deprecated and compiled out); on Linux's reactor cancelling a timer cannot fail, and were it
/// to, the handler still runs once and finds its socket closed, so there is nothing to undo.
template <class Timer>
void cancel_quietly(Timer& timer) noexcept {
  try {
    timer.cancel();
  } catch (const boost::system::system_error&) {
  }
}

class io_engine final : public runtime_extension, public core::scheduler_io {
 public:
  io_engine() = default;
  ~io_engine() override;

  /// Makes one lane per scheduler, adds the network layer's families to the runtime's
  /// metrics, and hands the lanes to the schedulers (last: nothing throws after it).
  void attached(core::runtime_core& rt) override;
  /// Every process has ended and the schedulers are joined: nothing runs a lane any more.
  void stopping() noexcept override;

  core::runtime_core& runtime() noexcept { return *rt_; }

  /// The lane for an object made by this thread: its scheduler's, or the next in turn.
  unsigned home() noexcept;
  /// The next lane in turn.
  unsigned next_lane() noexcept { return turn_.fetch_add(1, std::memory_order_relaxed) % lanes(); }
  unsigned lanes() const noexcept { return static_cast<unsigned>(lanes_.size()); }
  boost::asio::io_context& context(unsigned lane) noexcept { return lanes_[lane]->ioc; }

  /// Runs `f` on `lane`'s thread, after what was posted to that lane before it. Never throws:
  /// out of memory it is run nowhere, and what it owned is released (a socket then closes
  /// when its last reference goes).
  template <class F>
  void post(unsigned lane, F&& f) noexcept {
    lane_state& l = *lanes_[lane];
    // The lane's own list only while nothing posted from elsewhere waits: a process that moved
    // here from another scheduler has its earlier requests in the io_context's queue, and its
    // new ones must not pass them.
    if (core::current_scheduler(*rt_) == static_cast<int>(lane) &&
        l.crossing.load(std::memory_order_acquire) == 0) {
      request* r = nullptr;
      try {
        r = new request_of<std::decay_t<F>>(std::forward<F>(f));
      } catch (...) {
        return;
      }
      l.append(r);
      core::request_poll();
      return;
    }
    l.crossing.fetch_add(1, std::memory_order_relaxed);
    try {
      boost::asio::post(l.ioc, [&l, f = std::forward<F>(f)]() mutable {
        l.crossing.fetch_sub(1, std::memory_order_release);
        f();
      });
    } catch (...) {
      l.crossing.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  /// Sends `msg` to `to`; false if `to` is not alive (the message is destroyed).
  template <class T>
  bool deliver(pid to, T&& msg) noexcept {
    core::message_node* n = nullptr;
    try {
      n = core::make_message(std::forward<T>(msg));
    } catch (...) {
      return true;  // out of memory: lost, as a message to a process that is out of memory
    }
    return core::send_node_checked(*rt_, to, n, nullptr) != core::send_status::no_process;
  }

  std::uint64_t next_id() noexcept { return ids_.fetch_add(1, std::memory_order_relaxed); }

  /// Open sockets and listeners (states alive), for open_sockets(). Shared with the metrics
  /// collector, which may be called while the engine goes.
  std::shared_ptr<std::atomic<std::size_t>> open_count =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::atomic<std::size_t>& open = *open_count;

  // scheduler_io: called by scheduler `lane`'s thread (interrupt: by any thread).
  std::size_t poll(unsigned lane) noexcept override;
  void flush(unsigned lane) noexcept override;
  void wait(unsigned lane, std::chrono::steady_clock::time_point deadline) noexcept override;
  void interrupt(unsigned lane) noexcept override;

 private:
  struct request {
    request* next = nullptr;
    virtual ~request() = default;
    virtual void run() = 0;
  };
  template <class F>
  struct request_of final : request {
    explicit request_of(F&& fn) : f(std::move(fn)) {}
    explicit request_of(const F& fn) : f(fn) {}
    void run() override { f(); }
    F f;
  };
  struct lane_state {
    boost::asio::io_context ioc{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        boost::asio::make_work_guard(ioc)};
    /// Requests from processes running on this lane's scheduler (its thread only), in order.
    request* head = nullptr;
    request* tail = nullptr;
    /// Requests posted to ioc from other threads that have not started yet.
    std::atomic<std::uint64_t> crossing{0};

    void append(request* r) noexcept {
      (tail != nullptr ? tail->next : head) = r;
      tail = r;
    }
    ~lane_state();
  };
  static std::size_t run_own(lane_state& l) noexcept;

  std::atomic<std::uint64_t> ids_{1};
  std::atomic<unsigned> turn_{0};
  core::runtime_core* rt_ = nullptr;
  std::vector<std::unique_ptr<lane_state>> lanes_;
};

/// The acceptor pools' samples, for the metrics (acceptor_pool.cpp).
void write_pool_metrics(core::runtime_core& rt, metrics_writer& w);

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
