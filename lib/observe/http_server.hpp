// The HTTP endpoint's I/O side (beamlet/observe/http_endpoint.hpp): the state that the endpoint's
// process, its public handle and its connections share, and the connections themselves.
//
// Ownership, the part that is easy to get wrong. The state (io_context, acceptor, the set of
// open sessions) is shared by the process, the public handle and the sessions. The I/O thread
// keeps every open session in `sessions` (so a session waiting for the process's answer, with no
// I/O pending, stays alive) and is the only thread that touches that set and every field marked
// "I/O thread". A request travels to the process with a responder holding only weak
// references, so a request still queued when the endpoint stops keeps nothing alive: its answer
// is posted to an io_context that no longer runs and is dropped with it. A responder destroyed
// without having answered (the process died with the request queued) answers 503 itself.
//
// Stopping (the process's body is destroyed: stop(), an exit signal, the runtime's shutdown):
// the I/O thread closes the acceptor and every session; the pending operations then complete
// with errors, release their sessions, and run() returns for want of work; the thread is
// joined. Nothing is left behind.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/observe/http_endpoint.hpp>

#include "http_pages.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {
class http_session;
}  // namespace detail

struct http_endpoint::state {
  explicit state(http_endpoint_options o) : opts(std::move(o)) {}

  http_endpoint_options opts;
  runtime* rt = nullptr;  // set for endpoints started with http_endpoint::start
  detail::runtime_core* core = nullptr;
  std::atomic<std::uint64_t> handler{0};  // the process's pid
  std::uint16_t port = 0;

  boost::asio::io_context ioc{1};
  boost::asio::ip::tcp::acceptor acceptor{ioc};
  boost::asio::steady_timer accept_backoff{ioc};  // I/O thread
  std::chrono::milliseconds backoff{0};           // I/O thread
  std::unordered_map<detail::http_session*, std::shared_ptr<detail::http_session>>
      sessions;                                           // I/O thread
  std::unordered_map<std::string, std::size_t> per_peer;  // I/O thread: open, by address
  std::size_t queued = 0;                                 // I/O thread: answers' bytes unwritten
  /// The console's event streams (a subset of `sessions`), each sent every sample.
  std::unordered_map<detail::http_session*, std::shared_ptr<detail::http_session>>
      streams;  // I/O thread

  std::atomic<std::size_t> open{0}, queued_now{0};
  /// The console's helper processes running now (http_endpoint.cpp: spawn_helper); shared
  /// with them, as they may outlive the endpoint.
  std::shared_ptr<std::atomic<int>> console_helpers = std::make_shared<std::atomic<int>>(0);
  std::atomic<std::uint64_t> connections{0}, requests{0}, answers{0}, rejected{0},
      rejected_per_peer{0}, timeouts{0}, bad{0}, accept_errors{0}, slow_closed{0};

  std::mutex mu;
  std::condition_variable ended_cv;
  bool stopping = false;
  bool ended = false;
  std::thread thread;

  /// Binds and listens; the operating system's error if it cannot.
  std::error_code listen();
  void start_thread(const std::shared_ptr<state>& self);
  void accept(const std::shared_ptr<state>& self);
  /// From the process's body destructor: closes everything, joins the thread.
  void shut_down() noexcept;
  /// A session's answer of `bytes` is queued: close the connections whose answers have waited
  /// longest while the total is over max_queued_bytes (I/O thread).
  void keep_within_budget(detail::http_session* writing);
  /// Sends `json` as one server-sent event to every console stream (I/O thread).
  void broadcast(const std::string& json);
  statistics snapshot() const;
};

namespace detail {

/// What the I/O thread sends the endpoint's process for each request.
struct http_request_message {
  std::string target;
  bool scrape = false;  ///< a /metrics request, answered ahead of the others
  std::shared_ptr<class http_responder> reply;
  // For the console's actions (the only POSTs):
  bool post = false;
  std::string token;  ///< the X-Beamlet-Token header
  std::string body;
  std::string peer;  ///< the client's address
};

/// Answers a request once, from the process (or 503 when dropped unanswered).
class http_responder {
 public:
  http_responder(std::weak_ptr<http_session> s, std::weak_ptr<http_endpoint::state> st,
                 unsigned version, bool head)
      : session_(std::move(s)), state_(std::move(st)), version_(version), head_(head) {}
  http_responder(const http_responder&) = delete;
  http_responder& operator=(const http_responder&) = delete;
  ~http_responder();

  void respond(http_answer a) noexcept;

 private:
  std::weak_ptr<http_session> session_;
  std::weak_ptr<http_endpoint::state> state_;
  unsigned version_;
  bool head_;
  bool done_ = false;
};

/// One connection, on the I/O thread.
class http_session : public std::enable_shared_from_this<http_session> {
 public:
  http_session(boost::asio::ip::tcp::socket s, std::shared_ptr<http_endpoint::state> st,
               std::string peer);
  ~http_session();

  void start();
  /// Over a connection limit: 503 and close.
  void reject(const char* why);
  void write(http_answer&& a, unsigned version, bool head);
  void close();
  /// Turns the connection into a console event stream (text/event-stream, until either side
  /// closes): the answer's head now, then every event broadcast.
  void start_stream();
  /// Queues one event; a client that has left more than stream_limit bytes unread is cut off.
  void push_event(std::shared_ptr<const std::string> event);
  static constexpr std::size_t stream_limit = std::size_t{1} << 20;

  /// The accept loop counted this session in its peer's connections (close uncounts it).
  void counted_in_peer() noexcept { peer_counted_ = true; }
  std::size_t queued() const noexcept { return queued_; }
  std::chrono::steady_clock::time_point queued_since() const noexcept { return queued_since_; }

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::shared_ptr<http_endpoint::state> st_;
  std::string peer_;
  bool keep_alive_ = true;
  bool closed_ = false;
  bool first_ = true;  // no request read yet: header_timeout applies
  bool peer_counted_ = false;
  std::size_t queued_ = 0;
  std::chrono::steady_clock::time_point queued_since_{};

  // The event stream's state: events not yet written, oldest first.
  bool streaming_ = false;
  bool stream_writing_ = false;
  std::size_t stream_bytes_ = 0;
  std::deque<std::shared_ptr<const std::string>> events_;
  char stream_byte_ = 0;  // where a read that only waits for the client's close puts a byte

  void read();
  void on_read(const boost::system::error_code& ec);
  void write_event();
  void release_queued() noexcept;
};

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
