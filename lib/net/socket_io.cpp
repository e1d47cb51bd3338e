// A socket's lane's side of it: reading and framing on demand, writing the send queue,
// the timers, and the end of the connection. See socket_state.hpp for who touches what.
#include <algorithm>
#include <array>
#include <utility>

#include "errors.hpp"
#include "socket_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

namespace asio = boost::asio;

namespace {
// A socket's read buffer starts small and doubles while reads fill it, so an idle or trickling
// connection costs a few KiB and a busy one reads in large chunks.
constexpr std::size_t first_read = std::size_t{4} * 1024;
constexpr std::size_t read_chunk = std::size_t{64} * 1024;
constexpr std::size_t max_gather = 16;  // packets per write system call
}  // namespace

socket_state::socket_state(io_engine& e, unsigned home, tcp::socket s, const socket_options& o,
                           pid first_owner)
    : io(e),
      lane(home),
      id(e.next_id()),
      opts(o),
      owner(first_owner.serial()),
      sock(std::move(s)),
      in_(o.framing, o.max_packet),
      active_(o.active) {
  boost::system::error_code ec;
  const auto l = sock.local_endpoint(ec);
  if (!ec) local_ep = endpoint{l.address().to_string(), l.port()};
  const auto r = sock.remote_endpoint(ec);
  if (!ec) peer_ep = endpoint{r.address().to_string(), r.port()};
  if (o.nodelay) sock.set_option(tcp::no_delay(true), ec);
  sock.non_blocking(true, ec);
  fd = sock.native_handle();
  io.open.fetch_add(1, std::memory_order_relaxed);
}

socket_state::~socket_state() {
  release_fd();
}

std::error_code socket_state::write_error() const {
  std::lock_guard lock(error_mu_);
  return write_error_ ? write_error_ : make_error_code(net_errc::closed);
}

void socket_state::set_write_error(std::error_code ec) {
  {
    std::lock_guard lock(error_mu_);
    if (!write_error_) write_error_ = ec;
  }
  writable.store(false, std::memory_order_release);
}

template <class T>
bool socket_state::to_owner(T msg) {
  if (io.deliver(pid(owner.load(std::memory_order_acquire)), std::move(msg))) return true;
  // The owner is gone and nobody else may read: a port dies with its owner.
  on_close();
  return false;
}

bool socket_state::wants_packets() const noexcept {
  return recv_.has_value() || active_.mode() != active_mode::kind::off;
}

// -- reading --------------------------------------------------------------------------------------

void socket_state::on_recv(std::uint64_t tag, pid to, timeout_value timeout) {
  if (active_.mode() != active_mode::kind::off) {
    io.deliver(to, recv_reply{tag, make_error_code(net_errc::active_socket), {}});
    return;
  }
  recv_ = recv_wait{tag, to};
  const std::uint64_t serial = ++recv_serial_;
  deliver_ready();
  if (!recv_) return;
  if (timeout.finite()) {
    if (recv_timer_ == nullptr)
      recv_timer_ = std::make_unique<asio::steady_timer>(io.context(lane));
    recv_timer_->expires_after(timeout.duration());
    recv_timer_->async_wait(
        [self = shared_from_this(), serial](const boost::system::error_code& ec) {
          if (ec || !self->recv_ || self->recv_serial_ != serial) return;
          const recv_wait w = *self->recv_;
          self->recv_.reset();
          // What has arrived stays in the framer for the next recv.
          self->io.deliver(w.to, recv_reply{w.tag, make_error_code(net_errc::timed_out), {}});
        });
  }
  read_more();
}

void socket_state::on_set_active(active_mode mode) {
  active_ = mode;
  deliver_ready();
  read_more();
}

void socket_state::on_pause(std::uint64_t tag, pid to) {
  const active_mode was = active_;
  active_ = active_mode::off();
  io.deliver(to, pause_reply{tag, was});
}

void socket_state::start() {
  read_more();
}

void socket_state::deliver_ready() {
  while (!ready_.empty() && wants_packets()) {
    std::string packet = std::move(ready_.front());
    ready_.pop_front();
    if (recv_) {
      const recv_wait w = *recv_;
      recv_.reset();
      if (recv_timer_ != nullptr) recv_timer_->cancel();
      io.deliver(w.to, recv_reply{w.tag, {}, std::move(packet)});
      continue;
    }
    if (!to_owner(tcp_data{id, std::move(packet)})) return;
    if (active_.mode() == active_mode::kind::once) {
      active_ = active_mode::off();
    } else if (active_.mode() == active_mode::kind::n) {
      if (active_.count() > 1) {
        active_ = active_mode::n(active_.count() - 1);
      } else {
        active_ = active_mode::off();
        if (!to_owner(tcp_passive{id})) return;
      }
    }
  }
  if (!ready_.empty() || !(eof_ || error_)) return;
  // The peer's end, or an error, once every packet before it has been taken.
  const std::error_code why = error_ ? error_ : make_error_code(net_errc::closed);
  if (recv_) {
    const recv_wait w = *recv_;
    recv_.reset();
    if (recv_timer_ != nullptr) recv_timer_->cancel();
    end_reported_ = true;
    io.deliver(w.to, recv_reply{w.tag, why, {}});
  } else if (active_.mode() != active_mode::kind::off && !end_reported_) {
    end_reported_ = true;
    active_ = active_mode::off();
    if (error_ && !to_owner(tcp_error{id, error_})) return;
    (void)to_owner(tcp_closed{id});
  }
}

void socket_state::read_more() {
  if (reading_ || fd_closed_ || eof_ || error_ || !ready_.empty() || !wants_packets()) return;
  const std::size_t cap =
      opts.framing == framing::raw ? std::min(opts.max_packet, read_chunk) : read_chunk;
  try {
    if (buf_.empty()) buf_.resize(std::min(cap, first_read));
  } catch (const std::bad_alloc&) {
    fail(make_error_code(net_errc::out_of_memory));
    deliver_ready();
    return;
  }
  reading_ = true;
  const std::uint64_t serial = ++read_serial_;
  sock.async_read_some(asio::buffer(buf_),
                       [self = shared_from_this()](const boost::system::error_code& ec,
                                                   std::size_t n) { self->on_read(ec, n); });
  arm_idle_timer(serial);
}

void socket_state::arm_idle_timer(std::uint64_t serial) {
  if (!opts.idle_timeout.finite()) return;
  if (idle_timer_ == nullptr) idle_timer_ = std::make_unique<asio::steady_timer>(io.context(lane));
  idle_timer_->expires_after(opts.idle_timeout.duration());
  idle_timer_->async_wait([self = shared_from_this(), serial](const boost::system::error_code& ec) {
    // Stale when the read it guarded has completed (and another may be pending).
    if (ec || self->fd_closed_ || !self->reading_ || self->read_serial_ != serial) return;
    // Bytes already in the kernel are not silence: the peer spoke in time, and this I/O
    // thread, busy elsewhere, has the timer's expiry and the read's completion to run at once.
    boost::system::error_code unread;
    if (self->sock.available(unread) != 0 && !unread) {
      self->arm_idle_timer(serial);
      return;
    }
    self->fail(make_error_code(net_errc::timed_out));
    self->deliver_ready();
  });
}

void socket_state::on_read(const boost::system::error_code& ec, std::size_t n) {
  reading_ = false;
  if (fd_closed_) return;
  if (ec) {
    if (ec == asio::error::operation_aborted) return;
    // A frame the peer began and never finished is lost: say so, rather than a plain end.
    const bool cut = in_.pending() != 0;
    if (ec == asio::error::eof) {
      eof_ = true;
      if (cut && !error_) error_ = make_error_code(net_errc::truncated);
      if (opts.exit_on_close) {
        set_write_error(make_error_code(net_errc::closed));
        wake_writers(true);
        shut_down();
      }
    } else {
      fail(cut ? make_error_code(net_errc::truncated) : to_error_code(ec));
    }
    deliver_ready();
    return;
  }
  try {
    // Packets completed before a framing error are still delivered, then the error.
    if (const std::error_code bad = in_.feed(buf_.data(), n, ready_)) fail(bad);
    const std::size_t cap =
        opts.framing == framing::raw ? std::min(opts.max_packet, read_chunk) : read_chunk;
    if (n == buf_.size() && buf_.size() < cap) buf_.resize(std::min(cap, buf_.size() * 2));
  } catch (const std::bad_alloc&) {
    // This socket's frame could not be held: it fails, and only it.
    fail(make_error_code(net_errc::out_of_memory));
  }
  deliver_ready();
  read_more();
}

// -- writing --------------------------------------------------------------------------------------

void socket_state::on_send(std::string bytes) {
  if (fd_closed_) {
    queued.fetch_sub(bytes.size(), std::memory_order_acq_rel);
    return;
  }
  const std::size_t size = bytes.size();
  try {
    out_.push_back(std::move(bytes));
  } catch (const std::bad_alloc&) {
    queued.fetch_sub(size, std::memory_order_acq_rel);
    fail(make_error_code(net_errc::out_of_memory));
    deliver_ready();
    return;
  }
  write_more();
}

void socket_state::write_more() {
  if (writing_ || out_.empty() || fd_closed_) return;
  std::array<asio::const_buffer, max_gather> bufs;
  std::size_t count = 0;
  for (auto it = out_.begin(); it != out_.end() && count < max_gather; ++it, ++count) {
    const std::size_t skip = count == 0 ? out_offset_ : 0;
    bufs[count] = asio::buffer(it->data() + skip, it->size() - skip);
  }
  writing_ = true;
  // The buffer sequence is copied into the operation; the strings stay in out_ until written.
  sock.async_write_some(
      bufs, [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        self->on_written(ec, n);
      });
  arm_send_timer();
}

void socket_state::on_written(const boost::system::error_code& ec, std::size_t n) {
  writing_ = false;
  if (fd_closed_ || ec) {
    if (!fd_closed_ && ec != asio::error::operation_aborted) {
      fail(to_error_code(ec));
      deliver_ready();
    }
    if (closing_) release_fd();
    return;
  }
  ++write_progress_;
  queued.fetch_sub(n, std::memory_order_acq_rel);
  while (n != 0) {
    const std::size_t left = out_.front().size() - out_offset_;
    if (n >= left) {
      n -= left;
      out_.pop_front();
      out_offset_ = 0;
    } else {
      out_offset_ += n;
      n = 0;
    }
  }
  wake_writers(false);
  if (!out_.empty()) {
    write_more();
    return;
  }
  if (send_timer_ != nullptr) send_timer_->cancel();
  if (closing_) release_fd();
}

void socket_state::on_write_failed(std::error_code ec) {
  if (fd_closed_) return;
  fail(ec);
  deliver_ready();
}

void socket_state::arm_send_timer() {
  if (!opts.send_timeout.finite()) return;
  if (send_timer_ == nullptr) send_timer_ = std::make_unique<asio::steady_timer>(io.context(lane));
  send_timer_->expires_after(opts.send_timeout.duration());
  send_timer_->async_wait(
      [self = shared_from_this(), p = write_progress_](const boost::system::error_code& ec) {
        if (ec || self->fd_closed_ || !self->writing_ || self->write_progress_ != p) return;
        self->fail(make_error_code(net_errc::timed_out));
        self->deliver_ready();
      });
}

void socket_state::on_room(std::uint64_t tag, pid to, std::size_t need) {
  if (!writable.load(std::memory_order_acquire)) {
    io.deliver(to, room_reply{tag, write_error()});
    return;
  }
  writers_.push_back(room_wait{tag, to, need});
  wake_writers(false);
}

void socket_state::wake_writers(bool failed) {
  if (writers_.empty()) return;
  const std::size_t q = queued.load(std::memory_order_acquire);
  const std::size_t limit = opts.send_queue_limit;
  std::vector<room_wait> still;
  for (const room_wait& w : writers_) {
    if (failed)
      io.deliver(w.to, room_reply{w.tag, write_error()});
    else if (q == 0 || q + w.need <= limit)
      io.deliver(w.to, room_reply{w.tag, {}});
    else
      still.push_back(w);
  }
  writers_ = std::move(still);
}

// -- the end --------------------------------------------------------------------------------------

void socket_state::fail(std::error_code ec) {
  if (!error_) error_ = ec;
  set_write_error(ec);
  wake_writers(true);
  shut_down();
}

void socket_state::on_close() {
  if (closing_) return;
  closing_ = true;
  recv_.reset();
  active_ = active_mode::off();
  set_write_error(make_error_code(net_errc::closed));
  wake_writers(true);
  if (!writing_ && out_.empty()) release_fd();
  // Otherwise the queued bytes are written first (bounded by send_timeout).
}

// No more I/O: the connection is shut down both ways and what was queued is dropped. The
// descriptor itself stays allocated until release_fd, because the owner may be writing to it
// directly (tcp.cpp's send) at this very moment: closing it here could hand its number to a
// new socket under the owner's feet.
void socket_state::shut_down() noexcept {
  if (fd_closed_) return;
  fd_closed_ = true;
  writable.store(false, std::memory_order_release);
  boost::system::error_code ec;
  if (recv_timer_ != nullptr) cancel_quietly(*recv_timer_);
  if (send_timer_ != nullptr) cancel_quietly(*send_timer_);
  if (idle_timer_ != nullptr) cancel_quietly(*idle_timer_);
  sock.shutdown(tcp::socket::shutdown_both, ec);
  sock.cancel(ec);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < out_.size(); ++i)
    dropped += out_[i].size() - (i == 0 ? out_offset_ : 0);
  out_.clear();
  out_offset_ = 0;
  queued.fetch_sub(std::min(dropped, queued.load(std::memory_order_acquire)),
                   std::memory_order_acq_rel);
}

// Only once the owner has let go (on_close, posted after its last write) or the state goes.
void socket_state::release_fd() noexcept {
  shut_down();
  if (released_) return;
  released_ = true;
  boost::system::error_code ec;
  sock.close(ec);
  io.open.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
