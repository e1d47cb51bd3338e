// The owner's side of sockets: each operation checks ownership, posts a request to the socket's
// lane and, when it needs an answer, waits for it in a receive keyed on a fresh marked ref
// (so the wait costs the same whatever the mailbox holds, and an exit signal ends it at once).
// Timeouts are kept by the socket's lane, which always answers: no request is left dangling.
#include <beamlet/net/tcp.hpp>

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <beamlet/core/detail/socket_fd.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/receive.hpp>

#include "errors.hpp"
#include "listener_state.hpp"
#include "replies.hpp"
#include "socket_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net {

using detail::io_engine;
using detail::socket_state;
namespace asio = boost::asio;

namespace {

using error_result = unexpected<std::error_code>;

error_result failure(std::error_code ec) {
  return error_result(ec);
}
error_result failure(net_errc e) {
  return error_result(make_error_code(e));
}

io_engine& engine(basic_process& self) {
  return extension<io_engine>(self);
}

bool owned_by(const socket_state& st, const basic_process& self) noexcept {
  return st.owner.load(std::memory_order_acquire) == self.self().serial();
}

std::error_code check(const socket_options& o) {
  constexpr std::size_t gib = std::size_t{1} << 30;
  if (o.max_packet == 0 || o.max_packet > gib) return net_errc::bad_options;
  if (o.framing == framing::prefix1 && o.max_packet > 0xFF) return net_errc::bad_options;
  if (o.framing == framing::prefix2 && o.max_packet > 0xFFFF) return net_errc::bad_options;
  if (o.send_queue_limit == 0 || o.send_queue_limit > gib) return net_errc::bad_options;
  if (o.active.mode() == active_mode::kind::n && (o.active.count() < 1 || o.active.count() > 32767))
    return net_errc::bad_options;
  if (o.on_full != send_full::wait && o.on_full != send_full::error) return net_errc::bad_options;
  if (static_cast<unsigned>(o.framing) > static_cast<unsigned>(framing::line))
    return net_errc::bad_options;
  if (o.idle_timeout.finite() && o.idle_timeout.duration().count() <= 0)
    return net_errc::bad_options;
  return {};
}

/// One request to a lane and its answer: `run(tag, self)` runs there and answers with an R
/// carrying `tag`; the caller waits in a receive keyed on that fresh marked ref, so the wait
/// costs the same whatever its mailbox holds and an exit signal still ends it.
template <class R, class Run>
task<R> ask(process& self, io_engine& io, unsigned lane, Run run) {
  const ref tag = self.make_ref(marked);
  io.post(lane,
          [run = std::move(run), t = tag.value(), me = self.self()]() mutable { run(t, me); });
  auto clause = on<R>().when([t = tag.value()](const R& r) { return r.tag == t; });
  auto m = co_await self.receive(since(tag), clause);
  co_return std::move(m.template get<R>());
}

/// One connect, on the lane that will serve the socket: resolve if need be, connect, time out.
struct connect_op : std::enable_shared_from_this<connect_op> {
  connect_op(io_engine& e, unsigned l, std::uint64_t t, pid o, socket_options so)
      : io(e),
        lane(l),
        tag(t),
        to(o),
        opts(so),
        socket(e.context(l)),
        resolver(e.context(l)),
        timer(e.context(l)) {}

  io_engine& io;
  unsigned lane;
  std::uint64_t tag;
  pid to;
  socket_options opts;
  detail::tcp::socket socket;
  detail::tcp::resolver resolver;
  asio::steady_timer timer;
  bool done = false;
  std::vector<detail::tcp::endpoint> endpoints;  // to try, in order
  std::size_t next = 0;

  void start(const std::string& address, std::uint16_t port, timeout_value timeout) {
    if (timeout.finite()) {
      timer.expires_after(timeout.duration());
      timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || self->done) return;
        self->finish(make_error_code(net_errc::timed_out));
        boost::system::error_code ignored;
        self->resolver.cancel();
        self->socket.close(ignored);
      });
    }
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(address, ec);
    if (!ec) {
      connect_to(std::vector<detail::tcp::endpoint>{detail::tcp::endpoint(addr, port)});
      return;
    }
    resolver.async_resolve(
        address, std::to_string(port),
        [self = shared_from_this()](const boost::system::error_code& e,
                                    const detail::tcp::resolver::results_type& r) {
          if (self->done) return;
          if (e) {
            self->finish(detail::to_error_code(e));
            return;
          }
          std::vector<detail::tcp::endpoint> eps;
          for (const auto& entry : r) eps.push_back(entry.endpoint());
          self->connect_to(std::move(eps));
        });
  }

  // Each address in turn, on a socket opened close-on-exec (beamlet/core/detail/socket_fd.hpp),
  // which Asio's range connect would replace by one of its own for every attempt.
  void connect_to(std::vector<detail::tcp::endpoint> eps) {
    endpoints = std::move(eps);
    try_next(detail::to_error_code(asio::error::host_not_found));
  }

  void try_next(std::error_code last) {
    if (done) return;
    if (next >= endpoints.size()) {
      finish(last);
      return;
    }
    const detail::tcp::endpoint ep = endpoints[next++];
    boost::system::error_code ec;
    socket.close(ec);
    const int fd = ::beamlet::detail::open_tcp_socket(ep.protocol().family());
    if (fd < 0) {
      try_next(std::error_code(errno, std::system_category()));
      return;
    }
    if (socket.assign(ep.protocol(), fd, ec); ec) {
      ::close(fd);
      try_next(detail::to_error_code(ec));
      return;
    }
    socket.async_connect(ep, [self = shared_from_this()](const boost::system::error_code& e) {
      if (self->done) return;
      if (e) {
        self->try_next(detail::to_error_code(e));
        return;
      }
      self->connected();
    });
  }

  void connected() {
    done = true;
    timer.cancel();
    try {
      auto st = std::make_shared<socket_state>(io, lane, std::move(socket), opts, to);
      io.deliver(to, detail::socket_reply{tag, {}, tcp_socket(st)});
      st->start();
    } catch (...) {
      io.deliver(to,
                 detail::socket_reply{tag, std::make_error_code(std::errc::not_enough_memory), {}});
    }
  }

  void finish(std::error_code ec) {
    done = true;
    timer.cancel();
    io.deliver(to, detail::socket_reply{tag, ec, {}});
  }
};

using owner_message = std::variant<tcp_data, tcp_closed, tcp_error, tcp_passive>;

}  // namespace

// -- the handle -----------------------------------------------------------------------------------

tcp_socket& tcp_socket::operator=(tcp_socket&& other) noexcept {
  if (this != &other) {
    close();
    st_ = std::move(other.st_);
  }
  return *this;
}

tcp_socket::~tcp_socket() {
  close();
}

socket_id tcp_socket::id() const noexcept {
  return st_ != nullptr ? st_->id : 0;
}

void tcp_socket::close() noexcept {
  if (st_ == nullptr) return;
  std::shared_ptr<socket_state> st = std::move(st_);
  st->set_write_error(make_error_code(net_errc::closed));
  socket_state& s = *st;
  s.post([st = std::move(st)] { st->on_close(); });
}

std::size_t tcp_socket::queued_bytes() const noexcept {
  return st_ != nullptr ? st_->queued.load(std::memory_order_acquire) : 0;
}

pid tcp_socket::owner() const noexcept {
  return st_ != nullptr ? pid(st_->owner.load(std::memory_order_acquire)) : pid();
}

expected<endpoint, std::error_code> tcp_socket::local() const {
  if (st_ == nullptr) return failure(net_errc::no_handle);
  return st_->local_ep;
}

expected<endpoint, std::error_code> tcp_socket::peer() const {
  if (st_ == nullptr) return failure(net_errc::no_handle);
  return st_->peer_ep;
}

// -- operations -----------------------------------------------------------------------------------

task<expected<tcp_socket, std::error_code>> connect(process& self, std::string address,
                                                    std::uint16_t port, socket_options opts,
                                                    timeout_value timeout) {
  if (const std::error_code bad = check(opts)) co_return failure(bad);
  io_engine& io = engine(self);
  const unsigned lane = io.home();
  auto on_io = [&io, lane, address = std::move(address), port, opts, timeout](std::uint64_t t,
                                                                              pid me) mutable {
    auto op = std::make_shared<connect_op>(io, lane, t, me, opts);
    op->start(address, port, timeout);
  };
  detail::socket_reply r = co_await ask<detail::socket_reply>(self, io, lane, std::move(on_io));
  if (r.error) co_return failure(r.error);
  co_return std::move(r.socket);
}

task<expected<std::string, std::error_code>> recv(process& self, tcp_socket& s,
                                                  timeout_value timeout) {
  // A copy, not a reference: it keeps the state alive across the co_await below.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  const std::shared_ptr<socket_state> st = s.state();
  if (st == nullptr) co_return failure(net_errc::no_handle);
  if (!owned_by(*st, self)) co_return failure(net_errc::not_owner);
  auto on_io = [st, timeout](std::uint64_t t, pid me) { st->on_recv(t, me, timeout); };
  detail::recv_reply r = co_await ask<detail::recv_reply>(self, st->io, st->lane, std::move(on_io));
  if (r.error) co_return failure(r.error);
  co_return std::move(r.data);
}

task<expected<void, std::error_code>> send(process& self, tcp_socket& s, std::string_view data) {
  // A copy, not a reference: it keeps the state alive across the co_await below.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  const std::shared_ptr<socket_state> st = s.state();
  if (st == nullptr) co_return failure(net_errc::no_handle);
  if (!owned_by(*st, self)) co_return failure(net_errc::not_owner);
  if (!st->writable.load(std::memory_order_acquire)) co_return failure(st->write_error());
  std::string header;
  if (const std::error_code bad =
          detail::frame_header(st->opts.framing, data.size(), st->opts.max_packet, header))
    co_return failure(bad);
  const std::size_t n = header.size() + data.size();
  std::size_t q = st->queued.load(std::memory_order_acquire);
  std::size_t skip = 0;  // bytes already written directly
  if (q == 0) {
    // Nothing queued, so the lane is not writing: write here, without a thread hop. The
    // descriptor stays valid while we own the socket (socket_state::shut_down).
    iovec parts[2] = {{header.data(), header.size()},
                      {const_cast<char*>(data.data()), data.size()}};
    msghdr msg{};
    msg.msg_iov = parts;
    msg.msg_iovlen = 2;
    const ssize_t w = ::sendmsg(st->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w == static_cast<ssize_t>(n)) co_return expected<void, std::error_code>();
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      const std::error_code ec(errno, std::system_category());
      st->set_write_error(ec);
      st->post([st, ec] { st->on_write_failed(ec); });
      co_return failure(ec);
    }
    skip = w > 0 ? static_cast<std::size_t>(w) : 0;  // the rest goes through the queue
  }
  if (skip == 0 && q != 0 && q + n > st->opts.send_queue_limit) {
    if (st->opts.on_full == send_full::error) co_return failure(net_errc::send_queue_full);
    auto on_io = [st, n](std::uint64_t t, pid me) { st->on_room(t, me, n); };
    const detail::room_reply r =
        co_await ask<detail::room_reply>(self, st->io, st->lane, std::move(on_io));
    if (r.error) co_return failure(r.error);
  }
  std::string bytes;
  bytes.reserve(n);
  bytes += header;
  bytes.append(data);
  bytes.erase(0, skip);
  st->queued.fetch_add(bytes.size(), std::memory_order_acq_rel);
  st->post([st, b = std::move(bytes)]() mutable { st->on_send(std::move(b)); });
  co_return expected<void, std::error_code>();
}

expected<void, std::error_code> set_active(basic_process& self, tcp_socket& s, active_mode mode) {
  // A copy: the lane's task below holds the state after this returns.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  const std::shared_ptr<socket_state> st = s.state();
  if (st == nullptr) return failure(net_errc::no_handle);
  if (!owned_by(*st, self)) return failure(net_errc::not_owner);
  if (mode.mode() == active_mode::kind::n && (mode.count() < 1 || mode.count() > 32767))
    return failure(net_errc::bad_options);
  st->post([st, mode] { st->on_set_active(mode); });
  return {};
}

task<expected<void, std::error_code>> controlling_process(process& self, tcp_socket& s,
                                                          pid new_owner) {
  const std::shared_ptr<socket_state> st = s.state();
  if (st == nullptr) co_return failure(net_errc::no_handle);
  if (!owned_by(*st, self)) co_return failure(net_errc::not_owner);
  if (new_owner == self.self()) co_return expected<void, std::error_code>();
  // 1. Passive, so that nothing more is delivered to us.
  auto on_io = [st](std::uint64_t t, pid me) { st->on_pause(t, me); };
  const detail::pause_reply paused =
      co_await ask<detail::pause_reply>(self, st->io, st->lane, std::move(on_io));
  const active_mode was = paused.was;
  // 2. What was delivered to us already, in order.
  const socket_id id = st->id;
  std::vector<owner_message> moved;
  for (;;) {
    auto mine = [id](const auto& m) { return m.socket == id; };
    auto m = co_await self.receive(on<tcp_data>().when(mine), on<tcp_closed>().when(mine),
                                   on<tcp_error>().when(mine), on<tcp_passive>().when(mine),
                                   after(std::chrono::milliseconds(0)));
    if (m.timed_out()) break;
    if (auto* d = m.get_if<tcp_data>())
      moved.emplace_back(std::move(*d));
    else if (auto* c = m.get_if<tcp_closed>())
      moved.emplace_back(*c);
    else if (auto* e = m.get_if<tcp_error>())
      moved.emplace_back(*e);
    else if (auto* p = m.get_if<tcp_passive>())
      moved.emplace_back(*p);
  }
  // 3. The new owner: the handle first, then those messages, then the lane's.
  st->owner.store(new_owner.serial(), std::memory_order_release);
  self.send(new_owner, std::move(s));
  for (owner_message& m : moved)
    std::visit([&](auto& x) { self.send(new_owner, std::move(x)); }, m);
  st->post([st, was] { st->on_set_active(was); });
  co_return expected<void, std::error_code>();
}

// -- listening ------------------------------------------------------------------------------------

std::uint16_t tcp_listener::port() const noexcept {
  return st_ != nullptr ? st_->core->port : 0;
}

void tcp_listener::close() noexcept {
  if (st_ == nullptr) return;
  st_->core->close();
}

bool tcp_listener::closed() const noexcept {
  return st_ == nullptr || st_->core->closed.load(std::memory_order_acquire);
}

namespace {
expected<tcp_listener, std::error_code> listen_in(io_engine& io, listen_options opts) {
  if (const std::error_code bad = check(opts.accepted)) return failure(bad);
  if (opts.backlog < 1) return failure(net_errc::bad_options);
  try {
    auto c = std::make_shared<detail::acceptor_core>(io, io.home(), std::move(opts));
    if (const std::error_code ec = c->open()) return failure(ec);
    return tcp_listener(std::make_shared<detail::listener_state>(std::move(c)));
  } catch (const std::bad_alloc&) {
    return failure(std::make_error_code(std::errc::not_enough_memory));
  }
}
}  // namespace

expected<tcp_listener, std::error_code> listen(runtime& rt, listen_options opts) {
  return listen_in(extension<io_engine>(rt), std::move(opts));
}

expected<tcp_listener, std::error_code> listen(basic_process& self, listen_options opts) {
  return listen_in(engine(self), std::move(opts));
}

task<expected<tcp_socket, std::error_code>> accept(process& self, tcp_listener& l,
                                                   timeout_value timeout) {
  if (!l) co_return failure(net_errc::no_handle);
  const std::shared_ptr<detail::acceptor_core> c = l.state()->core;
  if (c->closed.load(std::memory_order_acquire)) co_return failure(net_errc::closed);
  auto on_io = [c, timeout](std::uint64_t t, pid me) { c->on_accept(t, me, timeout); };
  detail::socket_reply r =
      co_await ask<detail::socket_reply>(self, c->io, c->lane, std::move(on_io));
  if (r.error) co_return failure(r.error);
  co_return std::move(r.socket);
}

std::size_t open_sockets(runtime& rt) {
  return extension<io_engine>(rt).open.load(std::memory_order_relaxed);
}

}  // namespace net
BEAMLET_END_PRIVATE_NAMESPACE
