// A socket's state, shared by its handle (held by the owner) and its lane's pending operations
// (io_engine.hpp). Everything below "lane only" is touched by its lane's thread alone; the owner
// posts requests (on_recv, on_send...) and reads the few atomics. The state outlives the handle
// while operations are pending: a closed socket's last handler releases it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <beamlet/net/tcp.hpp>

#include "framing.hpp"
#include "io_engine.hpp"
#include "replies.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

using tcp = boost::asio::ip::tcp;

struct socket_state : std::enable_shared_from_this<socket_state> {
  /// `s` belongs to `lane`'s io_context.
  socket_state(io_engine& e, unsigned lane, tcp::socket s, const socket_options& o,
               pid first_owner);
  ~socket_state();
  socket_state(const socket_state&) = delete;
  socket_state& operator=(const socket_state&) = delete;

  io_engine& io;
  const unsigned lane;  ///< the event loop (scheduler) that serves it
  const socket_id id;
  const socket_options opts;

  // -- read by the owner, written by whoever changes them --------------------------------------
  std::atomic<std::uint64_t> owner;    ///< the controlling process (pid serial)
  std::atomic<std::size_t> queued{0};  ///< bytes sent and not yet written
  std::atomic<bool> writable{true};    ///< false once send can only fail
  /// Why writes fail (closed, or the error that closed the socket).
  std::error_code write_error() const;
  void set_write_error(std::error_code ec);

  /// Runs `f` on the socket's lane (io_engine::post).
  template <class F>
  void post(F&& f) noexcept {
    io.post(lane, std::forward<F>(f));
  }

  // -- requests, run on the lane ---------------------------------------------------------------
  void on_recv(std::uint64_t tag, pid to, timeout_value timeout);
  void on_send(std::string bytes);
  void on_room(std::uint64_t tag, pid to, std::size_t need);
  void on_set_active(active_mode mode);
  /// controlling_process's first step: goes passive and answers with the mode it had.
  void on_pause(std::uint64_t tag, pid to);
  void on_close();
  /// The owner's direct write failed (see tcp.cpp's send): the socket fails as if we had.
  void on_write_failed(std::error_code ec);
  /// Starts reading if the options ask for an active socket from the start.
  void start();

  tcp::socket sock;   ///< lane only
  endpoint local_ep;  ///< fixed at creation, so any thread may read them
  endpoint peer_ep;
  /// The descriptor, for the owner's direct writes: valid until release_fd, which runs only
  /// after the owner has let go of the socket.
  int fd = -1;

 private:
  bool wants_packets() const noexcept;
  void deliver_ready();
  void report_end(bool& done);
  void read_more();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void arm_idle_timer(std::uint64_t serial);
  void write_more();
  void on_written(const boost::system::error_code& ec, std::size_t n);
  void arm_send_timer();
  void wake_writers(bool failed);
  void fail(std::error_code ec);
  void shut_down() noexcept;
  void release_fd() noexcept;
  bool to_owner_data(std::string data);
  template <class T>
  bool to_owner(T msg);

  // -- lane only -------------------------------------------------------------------------------
  framer in_;
  std::deque<std::string> ready_;  ///< complete packets nobody has asked for yet
  active_mode active_;
  struct recv_wait {
    std::uint64_t tag;
    pid to;
  };
  std::optional<recv_wait> recv_;
  std::unique_ptr<boost::asio::steady_timer> recv_timer_;
  std::uint64_t recv_serial_ = 0;  ///< tells a stale recv timer from the current one
  std::vector<char> buf_;          ///< the read buffer: grows while reads fill it (socket_io.cpp)
  bool reading_ = false;
  std::uint64_t read_serial_ = 0;  ///< tells a stale idle timer from the current one
  std::unique_ptr<boost::asio::steady_timer> idle_timer_;
  bool eof_ = false;           ///< the peer closed its side
  std::error_code error_;      ///< the read side's final error, if any
  bool end_reported_ = false;  ///< tcp_closed / the final recv error sent
  bool fd_closed_ = false;     ///< shut down: no more I/O (the descriptor may remain)
  bool released_ = false;      ///< the descriptor is closed
  bool closing_ = false;       ///< close requested: flush the writes, then close

  std::deque<std::string> out_;
  std::size_t out_offset_ = 0;  ///< bytes of out_.front() already written
  bool writing_ = false;
  std::unique_ptr<boost::asio::steady_timer> send_timer_;
  std::uint64_t write_progress_ = 0;
  struct room_wait {
    std::uint64_t tag;
    pid to;
    std::size_t need;
  };
  std::vector<room_wait> writers_;

  mutable std::mutex error_mu_;
  std::error_code write_error_;
};

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
