/// @file
/// beamlet/net/tcp.hpp: TCP sockets owned by processes, as gen_tcp makes them in Erlang.
///
/// A socket has one controlling process, its owner: only the owner reads, writes, changes its
/// mode or hands it on (anyone else gets net_errc::not_owner). The handle, tcp_socket, is
/// move-only and closes the socket when it is destroyed, so a socket kept in its owner's frame
/// (or in a message queued to it) is closed when the owner dies, as a port linked to its owner
/// is. A socket whose owner is gone while data arrives is closed too.
///
/// Two ways to read:
///  * passive (active_mode::off, the default): `co_await recv(self, s)` suspends the process as a
///    receive does (an exit signal still ends it at once) until one packet is there;
///  * active: packets arrive as messages, tcp_data then, at the end, tcp_error and/or tcp_closed;
///    `once` delivers one packet and goes passive, `n(k)` delivers k and then sends tcp_passive,
///    `always` delivers everything (no receive-side backpressure: use it only for peers you
///    trust). While nobody wants the next packet the socket is not read, so a slow owner slows
///    the peer down through TCP's own window.
///
/// Framing (socket_options::framing): raw (whatever one read returns), 1-, 2- or 4-byte
/// big-endian length prefixes ({packet, N}: sends get the prefix added, receives have it
/// removed), or lines ending in '\n' (the newline is kept, as gen_tcp does). A frame larger
/// than max_packet is an error before anything is allocated for it, and closes the socket.
/// Memory follows the bytes that have arrived, not the length a header announces: an idle
/// connection holds a few KiB, and a frame's buffer grows as its bytes come. If memory for a
/// socket's data cannot be had, that socket fails with net_errc::out_of_memory and nothing else
/// does. A peer that closes or resets the connection in the middle of a frame is reported as
/// net_errc::truncated; idle_timeout closes a connection on which nothing arrives.
///
/// Writes: `co_await send(self, s, bytes)` queues the bytes and returns; the queue is bounded
/// (send_queue_limit): when a packet does not fit, send waits until it does (send_full::wait; a
/// packet larger than the limit waits for an empty queue) or fails at once (send_full::error).
/// While nothing is queued, send writes on the owner's own thread, without a hop. A write that
/// makes no progress for send_timeout closes the socket with timed_out. Bytes queued before a
/// close are written before the connection is shut down, as far as the peer takes them.
///
/// Ordering: packets reach the owner in the order the peer sent them; bytes go out in the order
/// send was called. Where I/O runs: on the schedulers (docs/architecture.md). A socket is
/// served by the event loop of the scheduler whose process made it (accepted ones: each
/// scheduler's in turn), which waits for
/// readiness, reads, writes what a send could not write at once, and hands results to processes
/// as messages.
///
/// Failure: every operation returns an error_code (beamlet/net/error.hpp), never throws for an
/// I/O failure; bad options are net_errc::bad_options. A runtime's sockets are all closed when it
/// shuts down; handles (sockets and listeners) must not outlive their runtime.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/net/error.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace net {

namespace detail {
struct socket_state;
struct listener_state;
}  // namespace detail

/// How the byte stream is cut into packets.
enum class framing : std::uint8_t {
  raw,      ///< each read is a packet (at most max_packet bytes)
  prefix1,  ///< {packet, 1}: a 1-byte length, then that many bytes
  prefix2,  ///< {packet, 2}
  prefix4,  ///< {packet, 4}
  line,     ///< up to and including '\n'
};

/// gen_tcp's {active, false | once | N | true}.
class active_mode {
 public:
  /// Which of the four modes, as made by off(), once(), n() and always().
  enum class kind : std::uint8_t { off, once, n, always };
  /// Passive ({active, false}): packets are read with recv.
  static active_mode off() noexcept { return active_mode(kind::off, 0); }
  /// One packet as a tcp_data message, then passive ({active, once}).
  static active_mode once() noexcept { return active_mode(kind::once, 1); }
  /// k packets, then tcp_passive; k must be positive (1..32767 as in OTP).
  static active_mode n(int k) noexcept { return active_mode(kind::n, k); }
  /// Every packet as a message, until the end ({active, true}); no receive-side backpressure.
  static active_mode always() noexcept { return active_mode(kind::always, 0); }

  /// Which mode this is.
  kind mode() const noexcept { return kind_; }
  /// The k of n(k); 1 for once(), 0 for off() and always().
  int count() const noexcept { return count_; }
  /// Same mode and same count.
  bool operator==(const active_mode&) const = default;

 private:
  active_mode(kind k, int c) noexcept : kind_(k), count_(c) {}
  kind kind_;
  int count_;
};

/// What send does when the send queue is full.
enum class send_full : std::uint8_t {
  wait,   ///< suspend until the packet fits in the queue (backpressure)
  error,  ///< fail at once with net_errc::send_queue_full
};

/// How a socket behaves (gen_tcp's options): framing, limits, active mode, the send queue,
/// timeouts. Checked where a socket is made: a value out of range is net_errc::bad_options.
struct socket_options {
  /// gen_tcp's {packet, ...} option. (The member is named after its type, so the type is
  /// spelled qualified here; it was `packet` before 0.2.)
  net::framing framing = net::framing::raw;
  /// Largest packet received or sent, header excluded (a line counts its newline); for raw,
  /// the most one read returns. 1..1 GiB; at most 255 for prefix1 and 65,535 for prefix2.
  std::size_t max_packet = 1 << 20;
  /// How packets are read: with recv (off, the default), or as messages (active_mode).
  active_mode active = active_mode::off();
  /// Bytes queued by send and not yet taken by the kernel; 1 byte..1 GiB.
  std::size_t send_queue_limit = 1 << 20;
  /// What send does when a packet does not fit in the queue: wait (the default), or fail.
  send_full on_full = send_full::wait;
  /// A pending write that makes no progress for this long closes the socket with timed_out.
  /// gen_tcp's default is infinity; beamlet's is finite so that a peer that never reads cannot
  /// hold a writer forever.
  timeout_value send_timeout = std::chrono::seconds(30);
  /// gen_tcp's exit_on_close: when the peer closes its side, close ours too (true), or keep it
  /// open for writing (false: recv and active mode report closed, send still works).
  bool exit_on_close = true;
  bool nodelay = true;  ///< TCP_NODELAY
  /// A peer that sends nothing for this long has the socket closed with timed_out: slowloris
  /// protection that no handler has to remember. The clock runs from the moment the socket
  /// waits for bytes (a recv, or an active mode with credit) until bytes arrive; while
  /// received packets wait for the owner to take them the socket is not read and the clock
  /// does not run, so a slow owner is not taken for an idle peer. Infinity (the default), as
  /// in gen_tcp; otherwise positive.
  timeout_value idle_timeout = infinity;
};

/// An identity for messages: every socket a runtime opens has a distinct one.
using socket_id = std::uint64_t;

/// Active mode: a packet that arrived, sent to the owner.
struct tcp_data {
  socket_id socket;  ///< the socket it came from (tcp_socket::id())
  std::string data;  ///< the packet, without its length prefix (a line keeps its newline)
};
/// Active mode: the connection has ended (the peer closed it, or a tcp_error came first),
/// sent to the owner after every packet before it; the socket is passive from then on.
struct tcp_closed {
  socket_id socket;  ///< the socket that ended (tcp_socket::id())
};
/// Active mode: the connection failed; a tcp_closed follows it.
struct tcp_error {
  socket_id socket;       ///< the socket that failed (tcp_socket::id())
  std::error_code error;  ///< why: a net_errc (truncated, timed_out...) or the system's code
};
/// active_mode::n(k) has delivered its k packets; the socket is passive again.
struct tcp_passive {
  socket_id socket;  ///< the socket now passive (tcp_socket::id())
};

/// An address and port, numeric.
struct endpoint {
  std::string address;     ///< numeric: "127.0.0.1", "::1"
  std::uint16_t port = 0;  ///< the TCP port
};

/// The owner's handle on a connected socket. Move-only; destroying it closes the socket.
/// Sending it to another process in a message is how a socket changes hands (controlling_process
/// does that and more).
class tcp_socket {
 public:
  tcp_socket() noexcept = default;
  /// Takes over `other`'s socket; `other` is left empty.
  tcp_socket(tcp_socket&& other) noexcept = default;
  /// Closes the socket this handle holds, if any, then takes over `other`'s; `other` is left
  /// empty.
  tcp_socket& operator=(tcp_socket&& other) noexcept;
  tcp_socket(const tcp_socket&) = delete;
  tcp_socket& operator=(const tcp_socket&) = delete;
  ~tcp_socket();

  /// True while the handle holds a socket: false once moved from or closed, or made empty.
  explicit operator bool() const noexcept { return st_ != nullptr; }
  /// The socket's id, as its active-mode messages carry it; 0 for an empty handle.
  socket_id id() const noexcept;
  /// Closes the socket: queued bytes are still written, then the connection is shut down. Any
  /// thread; idempotent; the handle becomes empty.
  void close() noexcept;
  /// Bytes queued by send and not yet written.
  std::size_t queued_bytes() const noexcept;
  /// The process that owns the socket now.
  pid owner() const noexcept;
  /// This side's address and port; net_errc::no_handle for an empty handle.
  expected<endpoint, std::error_code> local() const;
  /// The peer's address and port; net_errc::no_handle for an empty handle.
  expected<endpoint, std::error_code> peer() const;

  /// For the layer itself.
  explicit tcp_socket(std::shared_ptr<detail::socket_state> st) noexcept : st_(std::move(st)) {}
  /// For the layer itself: the socket's shared state.
  const std::shared_ptr<detail::socket_state>& state() const noexcept { return st_; }

 private:
  std::shared_ptr<detail::socket_state> st_;
};

/// Connects to address:port (numeric, or a host name resolved off the schedulers) within
/// `timeout`. The calling process owns the socket.
task<expected<tcp_socket, std::error_code>> connect(process& self, std::string address,
                                                    std::uint16_t port, socket_options opts = {},
                                                    timeout_value timeout = infinity);

/// One packet, in passive mode. A timeout leaves what has arrived for the next recv.
task<expected<std::string, std::error_code>> recv(process& self, tcp_socket& s,
                                                  timeout_value timeout = infinity);

/// Queues `data` as one packet (the framing's prefix is added). Returns once it is queued;
/// waits while the queue is full under send_full::wait.
task<expected<void, std::error_code>> send(process& self, tcp_socket& s, std::string_view data);

/// Changes the active mode (owner only). From off, reading starts at once.
expected<void, std::error_code> set_active(basic_process& self, tcp_socket& s, active_mode mode);

/// gen_tcp:controlling_process: makes `new_owner` the owner, moves the socket's messages
/// already queued to the caller (tcp_data, tcp_closed, tcp_error, tcp_passive) to it, in order,
/// and sends it the handle as a tcp_socket message ahead of them; `s` is left empty. If
/// `new_owner` is not alive the handle is dropped with the message and the socket closes.
task<expected<void, std::error_code>> controlling_process(process& self, tcp_socket& s,
                                                          pid new_owner);

// -- listening ------------------------------------------------------------------------------------

/// Where and how listen() listens, and the options every accepted socket gets.
struct listen_options {
  /// The numeric address to bind, IPv4 or IPv6 (net_errc::bad_address otherwise); by default
  /// the loopback interface only.
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0: any free port (see tcp_listener::port)
  /// Connections the kernel holds until they are accepted (listen(2)'s backlog); positive.
  int backlog = 1024;
  /// SO_REUSEADDR, so that a restarted server can bind its port again at once.
  bool reuse_address = true;
  socket_options accepted{};  ///< the options of every accepted socket
};

/// A listening socket. Copies share it (acceptors in a pool each hold one); it is closed by
/// close() or when the last copy goes.
class tcp_listener {
 public:
  tcp_listener() noexcept = default;
  /// True when the handle holds a listener (false for a default-made one).
  explicit operator bool() const noexcept { return st_ != nullptr; }
  /// The port it listens on (the one chosen, with port 0); 0 for an empty handle.
  std::uint16_t port() const noexcept;
  /// Stops listening: pending and later accepts fail with net_errc::closed. Any thread.
  void close() noexcept;
  /// True once closed (by any copy), and for an empty handle.
  bool closed() const noexcept;

  /// For the layer itself.
  explicit tcp_listener(std::shared_ptr<detail::listener_state> st) noexcept : st_(std::move(st)) {}
  /// For the layer itself: the listener's shared state.
  const std::shared_ptr<detail::listener_state>& state() const noexcept { return st_; }

 private:
  std::shared_ptr<detail::listener_state> st_;
};

/// Opens a listening socket (bind errors such as EADDRINUSE come back as they are).
expected<tcp_listener, std::error_code> listen(runtime& rt, listen_options opts);
/// The same, in the runtime of `self`.
expected<tcp_listener, std::error_code> listen(basic_process& self, listen_options opts);

/// Waits for a connection; the calling process owns it. EMFILE and ENFILE come back as errors
/// (an acceptor backs off and tries again, see acceptor_pool.hpp).
task<expected<tcp_socket, std::error_code>> accept(process& self, tcp_listener& l,
                                                   timeout_value timeout = infinity);

/// Sockets and listeners open in this runtime (for leak checks and metrics).
std::size_t open_sockets(runtime& rt);

}  // namespace net
BEAMLET_END_NAMESPACE
