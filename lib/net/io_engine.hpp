// The network layer's per-runtime state: one io_context and the thread that runs it
// ("beamlet-io" in top -H).
//
// Every socket system call happens on that thread; processes talk to it by posting closures
// and hear back through messages (deliver). Socket state is touched by that thread only, apart
// from a few atomics the owner reads (see socket_state.hpp), so sockets need no locks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/observe/metrics.hpp>

BEAMLET_BEGIN_NAMESPACE
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

class io_engine final : public runtime_extension {
 public:
  io_engine();
  ~io_engine() override;

  /// Adds the network layer's families to the runtime's metrics.
  void attached(core::runtime_core& rt) override;
  /// Every process has ended: stop the thread (nothing can be delivered any more).
  void stopping() noexcept override;

  boost::asio::io_context& context() noexcept { return ioc_; }
  core::runtime_core& runtime() noexcept { return *rt_; }

  /// Runs `f` on the I/O thread. Never throws: out of memory it is run nowhere, and what it
  /// owned is released (a socket then closes when its last reference goes).
  template <class F>
  void post(F&& f) noexcept {
    try {
      boost::asio::post(ioc_, std::forward<F>(f));
    } catch (...) {
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

 private:
  std::atomic<std::uint64_t> ids_{1};
  core::runtime_core* rt_ = nullptr;
  boost::asio::io_context ioc_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

/// The acceptor pools' samples, for the metrics (acceptor_pool.cpp).
void write_pool_metrics(core::runtime_core& rt, metrics_writer& w);

}  // namespace net::detail
BEAMLET_END_NAMESPACE
