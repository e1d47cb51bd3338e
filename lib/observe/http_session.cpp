// The endpoint's connections and its accept loop, on its I/O thread (see http_server.hpp): the
// limits that keep one client from growing the endpoint or denying it to the others.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <beamlet/core/detail/socket_fd.hpp>
#include <beamlet/core/receive.hpp>

#include "http_server.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {
constexpr const char* text_type = "text/plain; charset=utf-8";
// What the status line and headers add to an answer's body, for the write budget.
constexpr std::size_t header_allowance = 256;
}  // namespace

struct http_session::impl {
  explicit impl(tcp::socket s) : stream(std::move(s)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
  http::response<http::string_body> res;
};

http_session::http_session(tcp::socket s, std::shared_ptr<http_endpoint::state> st,
                           std::string peer)
    : impl_(std::make_unique<impl>(std::move(s))), st_(std::move(st)), peer_(std::move(peer)) {}

http_session::~http_session() = default;

void http_session::start() {
  read();
}

void http_session::reject(const char* why) {
  keep_alive_ = false;
  write(http_answer{503, text_type, std::string("beamlet: ") + why + "\n"}, 11, false);
}

void http_session::write(http_answer&& a, unsigned version, bool head) {
  st_->answers.fetch_add(1, std::memory_order_relaxed);
  if (closed_) return;
  impl& m = *impl_;
  m.res = {};
  m.res.version(version);
  m.res.result(a.status);
  m.res.set(http::field::server, "beamlet");
  m.res.set(http::field::content_type, a.content_type);
  m.res.keep_alive(keep_alive_);
  const std::size_t length = a.body.size();
  if (!head) m.res.body() = std::move(a.body);
  m.res.content_length(length);
  queued_ = m.res.body().size() + header_allowance;
  queued_since_ = std::chrono::steady_clock::now();
  st_->queued += queued_;
  st_->queued_now.store(st_->queued, std::memory_order_relaxed);
  m.stream.expires_after(st_->opts.request_timeout);
  http::async_write(m.stream, m.res,
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->release_queued();
                      self->impl_->res.body().clear();
                      self->impl_->res.body().shrink_to_fit();
                      if (ec || !self->keep_alive_) {
                        self->close();
                        return;
                      }
                      self->read();
                    });
  st_->keep_within_budget(this);
}

void http_session::release_queued() noexcept {
  st_->queued -= queued_;
  st_->queued_now.store(st_->queued, std::memory_order_relaxed);
  queued_ = 0;
}

void http_session::close() {
  if (closed_) return;
  closed_ = true;
  release_queued();
  beast::error_code ec;
  impl_->stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  impl_->stream.close();
  st_->open.fetch_sub(1, std::memory_order_relaxed);
  if (streaming_) st_->streams.erase(this);
  if (peer_counted_)
    if (auto it = st_->per_peer.find(peer_); it != st_->per_peer.end() && --it->second == 0)
      st_->per_peer.erase(it);
  st_->sessions.erase(this);  // may destroy *this: nothing after
}

void http_session::read() {
  impl& m = *impl_;
  m.parser.emplace();
  m.parser->header_limit(static_cast<std::uint32_t>(st_->opts.max_request_bytes));
  m.parser->body_limit(st_->opts.max_request_bytes);
  m.stream.expires_after(first_ ? st_->opts.header_timeout : st_->opts.request_timeout);
  http::async_read(
      m.stream, m.buffer, *m.parser,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

namespace {
bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}
}  // namespace

void http_session::on_read(const boost::system::error_code& ec) {
  if (closed_) return;
  if (ec) {
    if (ec == beast::error::timeout) {
      st_->timeouts.fetch_add(1, std::memory_order_relaxed);
    } else if (ec == http::error::header_limit || ec == http::error::body_limit) {
      st_->bad.fetch_add(1, std::memory_order_relaxed);
      keep_alive_ = false;
      write(http_answer{413, text_type, "beamlet: request too large\n"}, 11, false);
      return;
    } else if (is_parse_error(ec) && ec != http::error::end_of_stream &&
               ec != http::error::partial_message) {
      st_->bad.fetch_add(1, std::memory_order_relaxed);
      keep_alive_ = false;
      write(http_answer{400, text_type, "beamlet: malformed request\n"}, 11, false);
      return;
    }
    close();
    return;
  }
  first_ = false;
  st_->requests.fetch_add(1, std::memory_order_relaxed);
  http::request<http::string_body> req = impl_->parser->release();
  keep_alive_ = req.keep_alive();
  const unsigned version = req.version();
  const bool head = req.method() == http::verb::head;
  const bool post = req.method() == http::verb::post;
  std::string target(req.target());
  const std::string_view path = std::string_view(target).substr(0, target.find('?'));
  const bool console = st_->opts.console;
  if (req.method() != http::verb::get && !head &&
      !(post && console && path == "/console/api/action")) {
    write(http_answer{405, text_type,
                      console ? "beamlet: only GET and HEAD (and POST for console actions)\n"
                              : "beamlet: only GET and HEAD\n"},
          version, false);
    return;
  }
  try {
    if (console && !post && path == "/console/api/events") {
      if (head) {
        write(http_answer{405, text_type, "beamlet: the event stream is a GET\n"}, version, false);
        return;
      }
      // Streams stay open: a few per address, a share of all connections, so that streams
      // can never take every connection from a scrape.
      const std::size_t all = std::max<std::size_t>(1, st_->opts.max_connections / 8);
      const std::size_t mine = std::max<std::size_t>(1, st_->opts.max_connections_per_peer / 4);
      std::size_t from_peer = 0;
      for (const auto& [p, s] : st_->streams) from_peer += s->peer_ == peer_ ? 1 : 0;
      if (st_->streams.size() >= all || from_peer >= mine) {
        st_->rejected.fetch_add(1, std::memory_order_relaxed);
        keep_alive_ = false;
        write(http_answer{503, text_type, "beamlet: too many event streams open\n"}, version,
              false);
        return;
      }
      start_stream();
      return;
    }
    http_request_message m;
    m.scrape = path == "/metrics";
    m.reply = std::make_shared<http_responder>(weak_from_this(), st_, version, head);
    if (post) {
      m.post = true;
      m.token = std::string(req["X-Beamlet-Token"]);
      m.body = std::move(req.body());
      m.peer = peer_;
    }
    m.target = std::move(target);
    const pid to(st_->handler.load(std::memory_order_acquire));
    // A dead process drops the message, and the responder answers 503 as it goes.
    send_node(*st_->core, to, make_message(std::move(m)));
  } catch (...) {
    keep_alive_ = false;
    write(http_answer{503, text_type, "beamlet: out of memory\n"}, version, head);
  }
}

// -- the console's event stream -------------------------------------------------------------------

void http_session::start_stream() {
  streaming_ = true;
  keep_alive_ = false;
  st_->streams.emplace(this, shared_from_this());
  // Idle between events by design, so no timeout while it waits; each write must finish
  // within request_timeout (a client that stops reading is cut off once the kernel's buffers
  // are full), and stream_limit bounds what waits behind it.
  impl_->stream.expires_never();
  push_event(std::make_shared<const std::string>(
      "HTTP/1.1 200 OK\r\nServer: beamlet\r\nContent-Type: text/event-stream\r\n"
      "Cache-Control: no-store\r\nConnection: close\r\n\r\nretry: 2000\n\n"));
  // The client sends nothing more: a read completes only when it closes (or misbehaves).
  impl_->stream.socket().async_read_some(
      net::buffer(&stream_byte_, 1),
      [self = shared_from_this()](beast::error_code, std::size_t) { self->close(); });
}

void http_session::push_event(std::shared_ptr<const std::string> event) {
  if (closed_) return;
  if (stream_bytes_ + event->size() > stream_limit) {
    st_->slow_closed.fetch_add(1, std::memory_order_relaxed);
    close();
    return;
  }
  stream_bytes_ += event->size();
  events_.push_back(std::move(event));
  if (!stream_writing_) write_event();
}

void http_session::write_event() {
  stream_writing_ = true;
  const std::shared_ptr<const std::string>& e = events_.front();
  impl_->stream.expires_after(st_->opts.request_timeout);
  net::async_write(impl_->stream, net::buffer(*e),
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     self->stream_writing_ = false;
                     self->impl_->stream.expires_never();
                     self->stream_bytes_ -= self->events_.front()->size();
                     self->events_.pop_front();
                     if (ec) {
                       self->close();
                       return;
                     }
                     if (!self->closed_ && !self->events_.empty()) self->write_event();
                   });
}

// -- responder ------------------------------------------------------------------------------------

http_responder::~http_responder() {
  if (!done_) respond(http_answer{503, text_type, "beamlet: no answer\n"});
}

void http_responder::respond(http_answer a) noexcept {
  done_ = true;
  const auto st = state_.lock();
  if (st == nullptr) return;
  try {
    net::post(st->ioc, [s = session_, a = std::move(a), v = version_, h = head_]() mutable {
      if (const auto live = s.lock()) live->write(std::move(a), v, h);
    });
  } catch (...) {
    // Out of memory: the connection times out instead.
  }
}

}  // namespace detail

// -- the state's I/O side -------------------------------------------------------------------------

namespace {
namespace asio = boost::asio;

bool out_of_resources(const boost::system::error_code& ec) {
  const int v = ec.value();
  return ec.category() == boost::system::system_category() &&
         (v == EMFILE || v == ENFILE || v == ENOBUFS || v == ENOMEM);
}
}  // namespace

void http_endpoint::state::accept(const std::shared_ptr<state>& self) {
  // Readiness, then accept4 here: Asio's accept makes descriptors that a child process would
  // inherit (beamlet/core/detail/socket_fd.hpp).
  acceptor.async_wait(asio::ip::tcp::acceptor::wait_read, [self](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
    asio::ip::tcp::socket s(self->ioc);
    if (!ec) {
      const int fd = ::beamlet::detail::accept_tcp_socket(self->acceptor.native_handle());
      if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        self->accept(self);  // another wake-up took it
        return;
      }
      if (fd < 0) {
        ec.assign(errno, boost::system::system_category());
      } else {
        boost::system::error_code pe;
        const auto local = self->acceptor.local_endpoint(pe);
        s.assign(pe ? asio::ip::tcp::v4() : local.protocol(), fd, ec);
        if (ec) ::close(fd);
      }
    }
    if (ec) {
      if (!out_of_resources(ec)) {
        self->accept(self);  // one connection's trouble (ECONNABORTED...): the next one
        return;
      }
      // Out of descriptors or memory: retrying at once would spin on the same error.
      self->accept_errors.fetch_add(1, std::memory_order_relaxed);
      self->backoff = std::clamp(self->backoff * 2, std::chrono::milliseconds(10),
                                 std::chrono::milliseconds(1000));
      self->accept_backoff.expires_after(self->backoff);
      self->accept_backoff.async_wait([self](const boost::system::error_code& e) {
        if (!e) self->accept(self);
      });
      return;
    }
    self->backoff = std::chrono::milliseconds(0);
    std::shared_ptr<detail::http_session> sess;
    try {
      boost::system::error_code pe;
      if (self->opts.send_buffer != 0)
        s.set_option(asio::socket_base::send_buffer_size(static_cast<int>(self->opts.send_buffer)),
                     pe);
      const auto remote = s.remote_endpoint(pe);
      std::string peer = pe ? std::string() : remote.address().to_string();
      sess = std::make_shared<detail::http_session>(std::move(s), self, peer);
      // Counted as soon as the session exists: its close() uncounts it, whatever follows.
      self->connections.fetch_add(1, std::memory_order_relaxed);
      self->open.fetch_add(1, std::memory_order_relaxed);
      self->sessions.emplace(sess.get(), sess);
      const std::size_t from_peer = ++self->per_peer[peer];
      sess->counted_in_peer();
      if (self->sessions.size() > self->opts.max_connections) {
        self->rejected.fetch_add(1, std::memory_order_relaxed);
        sess->reject("too many connections");
      } else if (from_peer > self->opts.max_connections_per_peer) {
        self->rejected.fetch_add(1, std::memory_order_relaxed);
        self->rejected_per_peer.fetch_add(1, std::memory_order_relaxed);
        sess->reject("too many connections from this address");
      } else {
        sess->start();
      }
    } catch (...) {
      // Out of memory for this connection: it is dropped (its socket closes), the next is taken.
      if (sess) sess->close();
    }
    self->accept(self);
  });
}

void http_endpoint::state::keep_within_budget(detail::http_session* writing) {
  while (queued > opts.max_queued_bytes) {
    // The slowest reader is the one whose answer has waited longest.
    detail::http_session* oldest = nullptr;
    for (const auto& [p, s] : sessions)
      if (p != writing && p->queued() != 0 &&
          (oldest == nullptr || p->queued_since() < oldest->queued_since()))
        oldest = p;
    if (oldest == nullptr) return;  // only the answer being written: it goes out alone
    slow_closed.fetch_add(1, std::memory_order_relaxed);
    oldest->close();
  }
}

void http_endpoint::state::broadcast(const std::string& json) {
  if (streams.empty()) return;
  const auto event = std::make_shared<const std::string>("data: " + json + "\n\n");
  std::vector<std::shared_ptr<detail::http_session>> all;  // push_event may close (and erase)
  all.reserve(streams.size());
  for (const auto& [p, s] : streams) all.push_back(s);
  for (const auto& s : all) s->push_event(event);
}

http_endpoint::statistics http_endpoint::state::snapshot() const {
  statistics s;
  s.open_connections = open.load(std::memory_order_relaxed);
  s.connections = connections.load(std::memory_order_relaxed);
  s.requests = requests.load(std::memory_order_relaxed);
  s.answers = answers.load(std::memory_order_relaxed);
  s.rejected = rejected.load(std::memory_order_relaxed);
  s.rejected_per_peer = rejected_per_peer.load(std::memory_order_relaxed);
  s.timeouts = timeouts.load(std::memory_order_relaxed);
  s.bad_requests = bad.load(std::memory_order_relaxed);
  s.accept_errors = accept_errors.load(std::memory_order_relaxed);
  s.queued_bytes = queued_now.load(std::memory_order_relaxed);
  s.slow_closed = slow_closed.load(std::memory_order_relaxed);
  return s;
}

BEAMLET_END_PRIVATE_NAMESPACE
