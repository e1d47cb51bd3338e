// The operator's HTTP endpoint: Boost.Beast on one I/O thread, answers built by a process.
//
// Ownership, the part that is easy to get wrong. The endpoint's state (io_context, acceptor,
// the set of open sessions) is shared by the process, the public handle and the sessions. The
// I/O thread keeps every open session in `sessions` (so a session waiting for the process's
// answer, with no I/O pending, stays alive) and is the only thread that touches that set. A
// request travels to the process with a responder holding only weak references, so a request
// still queued when the endpoint stops keeps nothing alive: its answer is posted to an
// io_context that no longer runs and is dropped with it. A responder destroyed without having
// answered (the process died with the request queued) answers 503 itself.
//
// Stopping (the process's body is destroyed: stop(), an exit signal, the runtime's shutdown):
// the I/O thread closes the acceptor and every session; the pending operations then complete
// with errors, release their sessions, and run() returns for want of work; the thread is
// joined. Nothing is left behind.
#include <beamlet/http_endpoint.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <beamlet/metrics.hpp>
#include <beamlet/proc_lib.hpp>
#include <beamlet/process.hpp>
#include <beamlet/process_info.hpp>
#include <beamlet/receive.hpp>
#include <beamlet/runtime.hpp>
#include <beamlet/supervisor_stats.hpp>
#include <beamlet/top.hpp>

#include "http_pages.hpp"

BEAMLET_BEGIN_NAMESPACE

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {
class session;
}  // namespace

struct http_endpoint::state {
  explicit state(http_endpoint_options o) : opts(std::move(o)) {}

  http_endpoint_options opts;
  runtime* rt = nullptr;  // set for endpoints started with http_endpoint::start
  detail::runtime_core* core = nullptr;
  std::atomic<std::uint64_t> handler{0};  // the process's pid
  std::uint16_t port = 0;

  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::unordered_map<session*, std::shared_ptr<session>> sessions;  // I/O thread only

  std::atomic<std::size_t> open{0};
  std::atomic<std::uint64_t> connections{0}, requests{0}, rejected{0}, timeouts{0}, bad{0};

  std::mutex mu;
  std::condition_variable ended_cv;
  bool stopping = false;
  bool ended = false;
  std::thread thread;

  void listen();
  void start_thread(const std::shared_ptr<state>& self);
  void accept(const std::shared_ptr<state>& self);
  /// From the process's body destructor: closes everything, joins the thread.
  void shut_down() noexcept;
};

namespace {

using answer = detail::http_answer;

class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket s, std::shared_ptr<http_endpoint::state> st)
      : stream_(std::move(s)), st_(std::move(st)) {}

  void start() { read(); }

  /// Over max_connections: 503 and close.
  void reject() {
    keep_alive_ = false;
    write(answer{503, "text/plain; charset=utf-8", "beamlet: too many connections\n"}, 11, false);
  }

  void write(const answer& a, unsigned version, bool head) {
    res_ = {};
    res_.version(version);
    res_.result(a.status);
    res_.set(http::field::server, "beamlet");
    res_.set(http::field::content_type, a.content_type);
    res_.keep_alive(keep_alive_);
    res_.body() = head ? std::string() : a.body;
    res_.content_length(a.body.size());
    stream_.expires_after(st_->opts.request_timeout);
    http::async_write(stream_, res_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec || !self->keep_alive_) {
                          self->close();
                          return;
                        }
                        self->read();
                      });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    st_->open.fetch_sub(1, std::memory_order_relaxed);
    st_->sessions.erase(this);  // may destroy *this: nothing after
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(st_->opts.max_request_bytes));
    parser_->body_limit(st_->opts.max_request_bytes);
    stream_.expires_after(st_->opts.request_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec);

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::shared_ptr<http_endpoint::state> st_;
  bool keep_alive_ = true;
  bool closed_ = false;
};

/// Answers a request once, from the process (or 503 when dropped unanswered).
class responder {
 public:
  responder(std::weak_ptr<session> s, std::weak_ptr<http_endpoint::state> st, unsigned version,
            bool head)
      : session_(std::move(s)), state_(std::move(st)), version_(version), head_(head) {}
  responder(const responder&) = delete;
  responder& operator=(const responder&) = delete;
  ~responder() {
    if (!done_) respond(answer{503, "text/plain; charset=utf-8", "beamlet: no answer\n"});
  }

  void respond(answer a) noexcept {
    done_ = true;
    const auto st = state_.lock();
    if (st == nullptr) return;
    try {
      net::post(st->ioc, [s = session_, a = std::move(a), v = version_, h = head_]() {
        if (const auto live = s.lock()) live->write(a, v, h);
      });
    } catch (...) {
      // Out of memory: the connection times out instead.
    }
  }

 private:
  std::weak_ptr<session> session_;
  std::weak_ptr<http_endpoint::state> state_;
  unsigned version_;
  bool head_;
  bool done_ = false;
};

/// What the I/O thread sends the process.
struct http_request_message {
  std::string target;
  std::shared_ptr<responder> reply;
};

bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

void session::on_read(beast::error_code ec) {
  if (ec) {
    if (ec == beast::error::timeout) {
      st_->timeouts.fetch_add(1, std::memory_order_relaxed);
    } else if (ec == http::error::header_limit || ec == http::error::body_limit) {
      st_->bad.fetch_add(1, std::memory_order_relaxed);
      keep_alive_ = false;
      write(answer{413, "text/plain; charset=utf-8", "beamlet: request too large\n"}, 11, false);
      return;
    } else if (is_parse_error(ec) && ec != http::error::end_of_stream &&
               ec != http::error::partial_message) {
      st_->bad.fetch_add(1, std::memory_order_relaxed);
      keep_alive_ = false;
      write(answer{400, "text/plain; charset=utf-8", "beamlet: malformed request\n"}, 11, false);
      return;
    }
    close();
    return;
  }
  st_->requests.fetch_add(1, std::memory_order_relaxed);
  http::request<http::string_body> req = parser_->release();
  keep_alive_ = req.keep_alive();
  const unsigned version = req.version();
  const bool head = req.method() == http::verb::head;
  if (req.method() != http::verb::get && !head) {
    write(answer{405, "text/plain; charset=utf-8", "beamlet: only GET and HEAD\n"}, version, false);
    return;
  }
  try {
    auto r = std::make_shared<responder>(weak_from_this(), st_, version, head);
    const pid to(st_->handler.load(std::memory_order_acquire));
    // A dead process drops the message, and the responder answers 503 as it goes.
    detail::send_node(
        *st_->core, to,
        detail::make_message(http_request_message{std::string(req.target()), std::move(r)}));
  } catch (...) {
    keep_alive_ = false;
    write(answer{503, "text/plain; charset=utf-8", "beamlet: out of memory\n"}, version, head);
  }
}

/// The endpoint's process: answers requests until it is told to end.
task<> serve(process& self, std::shared_ptr<http_endpoint::state> st) {
  for (;;) {
    auto m = co_await self.receive(on<http_request_message>());
    http_request_message& r = m.get<http_request_message>();
    answer a;
    try {
      a = detail::route_http(self, st->opts, r.target);
    } catch (const std::exception& e) {
      a = answer{500, "text/plain; charset=utf-8", std::string("beamlet: ") + e.what() + "\n"};
    }
    r.reply->respond(std::move(a));
  }
}

/// Owns the endpoint's sockets on behalf of its process: the process's body holds one, and the
/// runtime destroys the body when the process ends, whether or not it ever ran (a process
/// killed before its first run has no coroutine frame to clean up after it). Move-only, so
/// exactly one owner shuts the endpoint down.
class endpoint_owner {
 public:
  explicit endpoint_owner(std::shared_ptr<http_endpoint::state> st) : st_(std::move(st)) {}
  endpoint_owner(endpoint_owner&&) noexcept = default;
  endpoint_owner& operator=(endpoint_owner&&) = delete;
  ~endpoint_owner() {
    if (st_ != nullptr) st_->shut_down();
  }
  const std::shared_ptr<http_endpoint::state>& state() const noexcept { return st_; }

 private:
  std::shared_ptr<http_endpoint::state> st_;
};

/// The body when started with http_endpoint::start.
class endpoint_body {
 public:
  using initial_call = http_endpoint;
  explicit endpoint_body(std::shared_ptr<http_endpoint::state> st) : owner_(std::move(st)) {}
  task<> operator()(process& self) { co_await serve(self, owner_.state()); }

 private:
  endpoint_owner owner_;
};

/// The body when started by a supervisor (proc_lib start_link).
class endpoint_child {
 public:
  using initial_call = http_endpoint;
  explicit endpoint_child(std::shared_ptr<http_endpoint::state> st) : owner_(std::move(st)) {}
  task<> operator()(process& self, const starter& st) {
    const auto& s = owner_.state();
    s->handler.store(self.self().serial(), std::memory_order_release);
    s->start_thread(s);
    st.ack(self, start_result::ok(self.self()));
    co_await serve(self, s);
  }

 private:
  endpoint_owner owner_;
};

void check(const http_endpoint_options& o) {
  if (o.max_connections == 0 || o.max_request_bytes == 0 || o.request_timeout.count() <= 0)
    throw std::invalid_argument(
        "beamlet::http_endpoint: max_connections, max_request_bytes and request_timeout must be "
        "positive");
  beast::error_code ec;
  (void)net::ip::make_address(o.address, ec);
  if (ec)
    throw std::invalid_argument("beamlet::http_endpoint: not a numeric address: " + o.address);
  for (const http_page& p : o.pages)
    if (p.path.empty() || p.path.front() != '/' || !p.render)
      throw std::invalid_argument(
          "beamlet::http_endpoint: a page needs a path starting with '/' "
          "and a render function (path: \"" +
          p.path + "\")");
}

}  // namespace

// -- state
// ------------------------------------------------------------------------------------------

void http_endpoint::state::listen() {
  // Error codes, not Boost's exceptions: what escapes is a std::system_error, as documented.
  auto fail = [](const char* what, const boost::system::error_code& ec) {
    throw std::system_error(std::error_code(ec.value(), std::system_category()),
                            std::string("beamlet::http_endpoint: ") + what);
  };
  boost::system::error_code ec;
  const auto address = net::ip::make_address(opts.address, ec);
  if (ec) fail("bad address", ec);
  const tcp::endpoint ep(address, opts.port);
  if (acceptor.open(ep.protocol(), ec); ec) fail("socket", ec);
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec) fail("setsockopt", ec);
  if (acceptor.bind(ep, ec); ec) fail("bind", ec);
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) fail("listen", ec);
  const auto local = acceptor.local_endpoint(ec);
  if (ec) fail("getsockname", ec);
  port = local.port();
}

void http_endpoint::state::start_thread(const std::shared_ptr<state>& self) {
  std::lock_guard lock(mu);
  if (stopping) return;
  accept(self);
  thread = std::thread([this] {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (...) {
        // A handler threw (out of memory): keep serving.
      }
    }
  });
}

void http_endpoint::state::accept(const std::shared_ptr<state>& self) {
  acceptor.async_accept([self](beast::error_code ec, tcp::socket s) {
    if (ec == net::error::operation_aborted || !self->acceptor.is_open()) return;
    if (!ec) {
      self->connections.fetch_add(1, std::memory_order_relaxed);
      self->open.fetch_add(1, std::memory_order_relaxed);
      auto sess = std::make_shared<session>(std::move(s), self);
      self->sessions.emplace(sess.get(), sess);
      if (self->sessions.size() > self->opts.max_connections) {
        self->rejected.fetch_add(1, std::memory_order_relaxed);
        sess->reject();
      } else {
        sess->start();
      }
    }
    self->accept(self);
  });
}

void http_endpoint::state::shut_down() noexcept {
  std::thread t;
  {
    std::lock_guard lock(mu);
    stopping = true;
    t = std::move(thread);
  }
  if (!t.joinable()) {
    // Never served (ended before its first run): no other thread touches the acceptor.
    beast::error_code ec;
    acceptor.close(ec);
  } else {
    try {
      net::post(ioc, [this] {
        beast::error_code ec;
        acceptor.close(ec);
        std::vector<std::shared_ptr<session>> all;
        for (auto& [p, s] : sessions) all.push_back(s);
        for (auto& s : all) s->close();
      });
    } catch (...) {
      ioc.stop();
    }
    t.join();
  }
  std::lock_guard lock(mu);
  ended = true;
  ended_cv.notify_all();
}

// -- the handle -----------------------------------------------------------------------------------

http_endpoint http_endpoint::start(runtime& rt, http_endpoint_options opts) {
  check(opts);
  auto st = std::make_shared<state>(std::move(opts));
  st->rt = &rt;
  st->core = &rt.core();
  st->listen();  // throws std::system_error
  const pid p = rt.spawn(endpoint_body(st));
  st->handler.store(p.serial(), std::memory_order_release);
  st->start_thread(st);
  return http_endpoint(std::move(st));
}

http_endpoint::http_endpoint(http_endpoint&&) noexcept = default;

http_endpoint& http_endpoint::operator=(http_endpoint&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
  }
  return *this;
}

http_endpoint::~http_endpoint() {
  stop();
}

std::uint16_t http_endpoint::port() const noexcept {
  return state_ != nullptr ? state_->port : 0;
}

pid http_endpoint::process() const noexcept {
  return state_ != nullptr ? pid(state_->handler.load(std::memory_order_acquire)) : pid();
}

void http_endpoint::stop() {
  if (state_ == nullptr) return;
  {
    std::unique_lock lock(state_->mu);
    if (!state_->ended) {
      lock.unlock();
      state_->rt->exit(process(), exit_reason::shutdown());
      lock.lock();
      state_->ended_cv.wait(lock, [&] { return state_->ended; });
    }
  }
  // The sockets are closed; the process is a moment away from leaving the table.
  (void)state_->rt->wait(process(), infinity);
  state_.reset();
}

http_endpoint::statistics http_endpoint::stats() const {
  statistics s;
  if (state_ == nullptr) return s;
  s.open_connections = state_->open.load(std::memory_order_relaxed);
  s.connections = state_->connections.load(std::memory_order_relaxed);
  s.requests = state_->requests.load(std::memory_order_relaxed);
  s.rejected = state_->rejected.load(std::memory_order_relaxed);
  s.timeouts = state_->timeouts.load(std::memory_order_relaxed);
  s.bad_requests = state_->bad.load(std::memory_order_relaxed);
  return s;
}

start_function http_endpoint_start(http_endpoint_options opts) {
  check(opts);
  return start_function([opts](process& sup) -> task<start_result> {
           auto st = std::make_shared<http_endpoint::state>(opts);
           st->core = detail::runtime_of(sup);
           std::optional<std::string> failed;
           try {
             st->listen();
           } catch (const std::system_error& e) {
             failed = e.what();
           }
           if (failed) {
             std::string term = "{listen_error,\"";
             term += *failed;
             term += "\"}";
             co_return start_result::error(exit_reason::error(std::move(term)));
           }
           endpoint_child body(std::move(st));  // a named local: see docs/gcc12-coroutines.md
           co_return co_await start_link(sup, std::move(body));
         })
      .naming<http_endpoint>();
}

BEAMLET_END_NAMESPACE
