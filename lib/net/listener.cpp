// Listening and accepting, on the listener's lane.
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include <beamlet/core/detail/socket_fd.hpp>

#include "errors.hpp"
#include "listener_state.hpp"
#include "replies.hpp"
#include "socket_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

namespace asio = boost::asio;

acceptor_core::acceptor_core(io_engine& e, unsigned l, listen_options o)
    : io(e), lane(l), opts(std::move(o)), acceptor(e.context(l)) {}

acceptor_core::~acceptor_core() {
  boost::system::error_code ec;
  acceptor.close(ec);
  if (counted_) io.open.fetch_sub(1, std::memory_order_relaxed);
}

std::error_code acceptor_core::open() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(opts.address, ec);
  if (ec) return make_error_code(net_errc::bad_address);
  const tcp::endpoint ep(address, opts.port);
  // Close-on-exec from the start (beamlet/core/detail/socket_fd.hpp): a child process that held
  // this listener would keep taking connections into its backlog after close().
  const int fd = ::beamlet::detail::open_tcp_socket(ep.protocol().family());
  if (fd < 0) return std::error_code(errno, std::system_category());
  if (acceptor.assign(ep.protocol(), fd, ec); ec) {
    ::close(fd);
    return to_error_code(ec);
  }
  listen_fd = fd;
  protocol_ = ep.protocol();
  if (opts.reuse_address) {
    if (acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec)
      return to_error_code(ec);
  }
  if (acceptor.bind(ep, ec); ec) return to_error_code(ec);
  if (acceptor.listen(opts.backlog, ec); ec) return to_error_code(ec);
  const auto local = acceptor.local_endpoint(ec);
  if (ec) return to_error_code(ec);
  port = local.port();
  counted_ = true;
  io.open.fetch_add(1, std::memory_order_relaxed);
  return {};
}

void acceptor_core::close() noexcept {
  if (closed.exchange(true, std::memory_order_acq_rel)) return;
  // The lanes of the listener and of a connecting process are not the same thread, so the
  // close posted to the listener's lane may run after a connect made later: shut the
  // listening socket down here. Linux then refuses new connections at once.
  if (listen_fd >= 0) ::shutdown(listen_fd, SHUT_RD);
  io.post(lane, [c = shared_from_this()] { c->on_close(); });
}

void acceptor_core::on_accept(std::uint64_t tag, pid to, timeout_value timeout) {
  if (closed.load(std::memory_order_acquire) || !acceptor.is_open()) {
    io.deliver(to, socket_reply{tag, make_error_code(net_errc::closed), {}});
    return;
  }
  waiter w{tag, to, ++serials_, nullptr};
  if (timeout.finite()) {
    w.timer = std::make_unique<asio::steady_timer>(io.context(lane), timeout.duration());
    w.timer->async_wait([self = shared_from_this(),
                         serial = w.serial](const boost::system::error_code& ec) {
      if (ec) return;
      auto& ws = self->waiters_;
      for (auto it = ws.begin(); it != ws.end(); ++it) {
        if (it->serial != serial) continue;
        self->io.deliver(it->to, socket_reply{it->tag, make_error_code(net_errc::timed_out), {}});
        ws.erase(it);
        break;
      }
      // Nobody waits: leave the connections in the kernel's backlog.
      if (ws.empty() && self->accepting_) {
        boost::system::error_code ignored;
        self->acceptor.cancel(ignored);
      }
    });
  }
  waiters_.push_back(std::move(w));
  accept_more();
}

void acceptor_core::accept_more() {
  if (spare_ && !waiters_.empty()) {
    tcp::socket s = std::move(*spare_);
    spare_.reset();
    hand_over(std::move(s));
  }
  if (accepting_ || waiters_.empty() || !acceptor.is_open()) return;
  accepting_ = true;
  // Readiness, then accept4 ourselves: Asio's accept makes descriptors a child would inherit.
  acceptor.async_wait(
      tcp::acceptor::wait_read,
      [self = shared_from_this()](const boost::system::error_code& ec) { self->on_readable(ec); });
}

void acceptor_core::on_readable(const boost::system::error_code& ec) {
  if (ec) {
    on_accepted(ec, tcp::socket(io.context(lane)));
    return;
  }
  const int fd = ::beamlet::detail::accept_tcp_socket(acceptor.native_handle());
  if (fd < 0 && closed.load(std::memory_order_acquire)) {
    // close() shut it down: the close it posted answers the waiters.
    accepting_ = false;
    return;
  }
  if (fd < 0) {
    // Nothing after all (another accept took it), or a connection that ended while it waited
    // in the backlog: wait for the next one, as Asio's accept does.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EPROTO) {
      accepting_ = false;
      accept_more();
      return;
    }
    on_accepted(boost::system::error_code(errno, boost::system::system_category()),
                tcp::socket(io.context(lane)));
    return;
  }
  tcp::socket s(io.context(lane));
  boost::system::error_code assigned;
  if (s.assign(protocol_, fd, assigned); assigned) {
    ::close(fd);
    on_accepted(assigned, tcp::socket(io.context(lane)));
    return;
  }
  on_accepted({}, std::move(s));
}

void acceptor_core::on_accepted(const boost::system::error_code& ec, tcp::socket s) {
  accepting_ = false;
  if (ec == asio::error::operation_aborted) {
    if (!acceptor.is_open()) return;  // on_close answered the waiters
    accept_more();                    // a cancel for want of waiters; one may have come since
    return;
  }
  if (!ec && waiters_.empty()) {
    // Its waiter timed out as it came: keep it for the next one.
    spare_.emplace(std::move(s));
    return;
  }
  if (ec) {
    if (waiters_.empty()) return;
    // EMFILE and friends: the waiter backs off; the connection waits in the backlog.
    waiter w = std::move(waiters_.front());
    waiters_.pop_front();
    if (w.timer != nullptr) w.timer->cancel();
    io.deliver(w.to, socket_reply{w.tag, to_error_code(ec), {}});
  } else {
    hand_over(std::move(s));
  }
  accept_more();
}

void acceptor_core::hand_over(tcp::socket s) {
  waiter w = std::move(waiters_.front());
  waiters_.pop_front();
  if (w.timer != nullptr) w.timer->cancel();
  try {
    // The next lane in turn (nothing is pending on it yet): its first packet's wake-up brings
    // its owner there, so the connections spread over the schedulers.
    const unsigned home = io.next_lane();
    if (home != lane) {
      tcp::socket moved(io.context(home));
      boost::system::error_code ec;
      const int fd = s.release(ec);
      if (ec) {
        io.deliver(w.to, socket_reply{w.tag, to_error_code(ec), {}});
        return;
      }
      if (moved.assign(protocol_, fd, ec); ec) {
        ::close(fd);
        io.deliver(w.to, socket_reply{w.tag, to_error_code(ec), {}});
        return;
      }
      s = std::move(moved);
    }
    auto st = std::make_shared<socket_state>(io, home, std::move(s), opts.accepted, w.to);
    // If the waiter is gone, the handle dies with the message and the socket closes.
    io.deliver(w.to, socket_reply{w.tag, {}, tcp_socket(st)});
    // On its lane (reading is idempotent, so a request of the owner's may come first).
    st->post([st] { st->start(); });
  } catch (...) {
    io.deliver(w.to, socket_reply{w.tag, std::make_error_code(std::errc::not_enough_memory), {}});
  }
}

void acceptor_core::on_close() noexcept {
  closed.store(true, std::memory_order_release);
  boost::system::error_code ec;
  acceptor.close(ec);
  if (std::exchange(counted_, false)) io.open.fetch_sub(1, std::memory_order_relaxed);
  if (spare_) spare_->close(ec);
  spare_.reset();
  for (waiter& w : waiters_) {
    if (w.timer != nullptr) cancel_quietly(*w.timer);
    io.deliver(w.to, socket_reply{w.tag, make_error_code(net_errc::closed), {}});
  }
  waiters_.clear();
}

listener_state::~listener_state() {
  core->close();
}

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
