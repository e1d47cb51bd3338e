// A listening socket. The handles (tcp_listener copies) share a listener_state whose
// destruction closes the acceptor; its lane's pending accepts hold the acceptor_core only, so
// the last handle going closes the listener even while accepts are pending. A connection is
// accepted on the listener's lane and moved to the next lane in turn.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <beamlet/net/tcp.hpp>

#include "io_engine.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

using tcp = boost::asio::ip::tcp;

struct acceptor_core : std::enable_shared_from_this<acceptor_core> {
  acceptor_core(io_engine& e, unsigned lane, listen_options o);
  ~acceptor_core();

  io_engine& io;
  const unsigned lane;
  const listen_options opts;
  tcp::acceptor acceptor;
  std::uint16_t port = 0;
  std::atomic<bool> closed{false};
  int listen_fd = -1;  ///< set by open()

  /// Opens, binds and listens (caller's thread, before any operation is pending).
  std::error_code open();
  /// Any thread: closes the listener. The kernel stops taking connections for it at once (a
  /// connect from then on is refused, as after gen_tcp:close), and the lane closes the acceptor
  /// next (on_close, posted). Only the first call acts; the descriptor stays open until
  /// on_close, so the shutdown cannot reach a number reused meanwhile.
  void close() noexcept;
  /// Lane: one accept for `to`, answered with a socket_reply; the socket is served by the next
  /// lane in turn, so a listener's connections spread over every scheduler.
  void on_accept(std::uint64_t tag, pid to, timeout_value timeout);
  /// Lane: closes the acceptor; pending accepts are answered with closed.
  void on_close() noexcept;

 private:
  struct waiter {
    std::uint64_t tag;
    pid to;
    std::uint64_t serial;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };
  void accept_more();
  void on_readable(const boost::system::error_code& ec);
  void on_accepted(const boost::system::error_code& ec, tcp::socket s);
  void hand_over(tcp::socket s);

  // Lane only. One system accept is pending at a time for all waiters, in their order;
  // a connection accepted after its waiter timed out goes to the next waiter.
  std::deque<waiter> waiters_;
  std::optional<tcp::socket> spare_;  ///< accepted after its waiter timed out
  tcp protocol_ = tcp::v4();          ///< the listener's, for the sockets it accepts
  bool accepting_ = false;
  bool counted_ = false;  ///< counted in io_engine::open (from open() to the close)
  std::uint64_t serials_ = 0;
};

struct listener_state {
  explicit listener_state(std::shared_ptr<acceptor_core> c) noexcept : core(std::move(c)) {}
  ~listener_state();
  listener_state(const listener_state&) = delete;
  listener_state& operator=(const listener_state&) = delete;
  std::shared_ptr<acceptor_core> core;
};

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
