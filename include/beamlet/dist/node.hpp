/// @file
/// beamlet/dist/node.hpp: making a runtime a node of an Erlang cluster.
///
/// start() gives a runtime a node name and a cookie, listens for other nodes, and registers
/// with epmd (or not, on a fixed port). From then on a pid can denote a process on another node:
/// send, link, unlink, exit, monitor and demonitor work on it as on a local one, and `{name,
/// node}` works with send and monitor (process.hpp). Connections are made on first use, one per
/// pair of nodes, written in order; each is a process of its own.
///
/// Semantics are OTP's: a link or monitor across a connection that is lost ends with
/// `noconnection`; a dead or unknown target gives `noproc`; a restarted node's old pids are dead.
/// Messages from other nodes arrive as `term` (term.hpp); a message sent to a remote pid is
/// encoded from a `term` or from a type registered with register_message<T>() (the common
/// standard types and string literals are registered already). A message of a type with no
/// mapping, or a term an Erlang node cannot take (an atom over 255 characters or not UTF-8, a
/// NaN), is not sent: it is logged as an error, and try_send says errc::not_encodable. Exit
/// reasons from other nodes keep their terms (reason_from_term), pids and bitstrings included.
///
/// Limits against a careless or hostile peer (node_options): packets up to max_packet (256 MiB),
/// terms as deep as they come (the decoder does not recurse), at most max_foreign_nodes unknown
/// node incarnations introduced per connection. A peer past one is disconnected, with the
/// reason logged; nothing else is affected.
///
/// Backpressure (OTP's busy_dist_port): past node_options::busy_limit bytes waiting for a peer,
/// a process that sends it a message is suspended, its message queued, until the connection has
/// drained to half the limit or ended; nothing is dropped and order is kept. A peer that reads
/// nothing at all is dropped after net_ticktime.
///
/// Fragments (OTP 22+): a message larger than node_options::fragment_size goes to a peer that
/// speaks fragments in pieces of that size, interleaved with the other processes' traffic, so
/// that a large message does not hold up the small ones and the ticks behind it. Order between
/// one sender and one receiver is kept: what a process sends after a large message waits for
/// its last fragment, and the sending process is suspended until that is written (so its
/// bytes, bounded that way, do not count toward busy_limit).
///
/// TLS (like `erl -proto_dist inet_tls`): node_options::tls, see tls.hpp.
///
/// Hidden or visible: by default the node is hidden (like `erl -hidden`): Erlang nodes list it
/// in nodes(hidden), `global` ignores it, and every node that talks to it connects to it
/// directly; its `pg` scope introduces itself to theirs (pg.hpp). With node_options::hidden =
/// false it is a visible node, as a plain `erl -name` is: a connection with another visible node
/// is visible (listed by nodes() on both sides), the node runs a `global` name server that
/// synchronises with the cluster's (global.hpp: names, locks, joining the fully connected
/// mesh, OTP 25's prevention of overlapping partitions), and Erlang's pg finds its scope.
///
/// The cookie authenticates, it does not encrypt: run plain distribution on a trusted network
/// only.
///
/// Thread-safety: every function may be called from any thread or process.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/dist/error.hpp>
#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/term.hpp>
#include <beamlet/dist/tls.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// How start() makes the runtime a node: its name and cookie, how peers find it, timeouts,
/// limits against a peer, TLS, and whether it is hidden.
struct node_options {
  /// `alive@host`; a name without `@` gets this machine's host name (short or long, as
  /// `long_names` says).
  std::string name;
  /// The shared secret; empty: read ~/.erlang.cookie (as erl does; created if missing).
  std::string cookie;
  bool long_names = false;  ///< host part with dots (`-name`) rather than without (`-sname`)
  /// The numeric address to listen on for peers; by default every IPv4 interface.
  std::string listen_address = "0.0.0.0";
  std::uint16_t port = 0;  ///< 0: any free port (published through epmd)
  /// Register with epmd (starting `epmd -daemon` if none answers); false: run on `port`, which
  /// then must be set, and find peers on their `epmd_port`-less fixed ports (peer_port).
  bool use_epmd = true;
  /// epmd's port; 0: $ERL_EPMD_PORT, or 4369.
  std::uint16_t epmd_port = 0;
  /// Without epmd: the port every peer listens on (OTP's ERL_DIST_PORT convention).
  std::uint16_t peer_port = 0;
  /// A connection silent for this long is lost (OTP's net_ticktime); ticks go out every
  /// quarter of it.
  std::chrono::milliseconds net_ticktime = std::chrono::seconds(60);
  /// How long the handshake with a peer may take (the TLS one included) before the attempt
  /// is given up; must be positive.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(7);
  /// How long an epmd lookup of a peer, and then the TCP connect to it, may each take; it also
  /// bounds registering with epmd in start() (dist_errc::timed_out).
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(7);
  /// The largest packet accepted from a peer; a larger one closes the connection (with the
  /// reason logged). 256 MiB, so that what an Erlang node sends in practice arrives: a lower
  /// limit trades that for a bound on what one packet can cost.
  std::size_t max_packet = 256u << 20;
  /// Bounds on the terms decoded from a peer (etf.hpp): by default none but max_terms, for the
  /// same reason. A packet past a limit closes the connection with the reason logged.
  decode_limits limits;
  /// Node incarnations one connection may introduce to this node's table (pids of nodes not
  /// yet known, mentioned in what the peer sends); past it the connection is closed as a
  /// misbehaving peer. See intern_node for how slots are shared and reclaimed.
  std::size_t max_foreign_nodes = 4096;
  /// Backpressure (OTP's dist_buf_busy_limit): when the bytes waiting for a peer in its
  /// connection (queued by senders, or taken and not yet handed to the socket, whose own queue
  /// holds up to 1 MiB more) pass this, the connection is busy until they are back at half of
  /// it. A process that sends
  /// a message to a busy connection is suspended (after its message is queued: nothing is
  /// dropped) until the connection is no longer busy or ends, and the system monitor reports
  /// busy_dist_port; an outside thread waits, at most net_ticktime. 0: no limit.
  std::size_t busy_limit = 1u << 20;
  /// Messages (and signals) whose encoding is larger than this go to a peer that speaks
  /// fragments in pieces of this size (OTP writes 64 KiB fragments), interleaved with other
  /// traffic. 0: every message is written whole (what a peer without fragments always gets).
  /// Below 1024 (other than 0): start() fails with bad_options.
  std::size_t fragment_size = 64u << 10;
  /// Distribution over TLS (tls.hpp), for every connection of the node; none: plain TCP.
  std::optional<tls_options> tls;
  /// A hidden node (`erl -hidden`); false: a visible one, which takes part in `global`
  /// (global.hpp) and appears in other visible nodes' nodes().
  bool hidden = true;
};

/// A node's identity once started.
struct node_info {
  std::string name;            ///< the full node name, `alive@host`
  std::uint32_t creation = 0;  ///< its incarnation: epmd's number, or a random one without epmd
  std::uint16_t port = 0;      ///< the port the node listens on for peers
};

/// Starts distribution on `rt`. Errors (beamlet/dist/error.hpp): dist_errc::already_started,
/// bad_name, no_cookie, bad_options, epmd_unreachable, epmd_refused (the name is in use),
/// epmd_protocol, timed_out; or the listen socket's own error (std::errc::address_in_use...).
expected<node_info, std::error_code> start(runtime& rt, node_options opts);
/// Stops distribution: every connection is closed (links and monitors across them end with
/// noconnection), the name is unregistered from epmd. Returns false if it was not started.
bool stop(runtime& rt);
/// This runtime's node, if started.
std::optional<node_info> self(runtime& rt);
/// The node of `p`'s runtime, if started.
std::optional<node_info> self(basic_process& p);

/// The nodes this node is connected to now (erlang:nodes(connected)), sorted.
std::vector<std::string> nodes(runtime& rt);
/// Which connections nodes(rt, kind) lists.
enum class node_kind : std::uint8_t {
  connected,  ///< all (erlang:nodes(connected))
  visible,    ///< those where both nodes are visible (erlang:nodes(visible), i.e. nodes())
  hidden,     ///< the others (erlang:nodes(hidden))
};
/// The nodes this node is connected to now, of that kind (erlang:nodes/1), sorted.
std::vector<std::string> nodes(runtime& rt, node_kind kind);
/// Connects to `node` now (net_kernel:connect_node/1); waits until the handshake is done.
task<bool> connect_node(process& self, std::string node);
/// Closes the connection to `node` (erlang:disconnect_node/1). From the moment it returns, the
/// node is not among nodes(), watchers have had their nodedown, and anything sent to the node
/// goes on a new connection (made on first use); what was sent before still goes out on the
/// old one as it closes. False if there was no connection that is up (one still being set up
/// is left alone, as in OTP).
bool disconnect_node(runtime& rt, std::string_view node);

/// erlang:set_cookie/1: this node's cookie, for connections made from now on.
void set_cookie(runtime& rt, std::string cookie);
/// erlang:set_cookie/2: the cookie for connections with `node` (its own and ours, both ways),
/// instead of this node's.
void set_cookie(runtime& rt, std::string_view node, std::string cookie);
/// erlang:get_cookie/0,1 (the node's own, or the one set for `node`).
std::string get_cookie(runtime& rt);
/// The cookie for connections with `node`: the one set_cookie/2 set, else the node's own.
std::string get_cookie(runtime& rt, std::string_view node);

/// What monitor_nodes sends when a connection to `node` comes up.
struct nodeup {
  std::string node;  ///< the node now connected
};
/// What monitor_node and monitor_nodes send when the connection to `node` is lost
/// (monitor_node's also when it cannot be made).
struct nodedown {
  std::string node;  ///< the node the connection was with
};
/// erlang:monitor_node(Node, Flag): with `on`, one `nodedown` when the connection to `node` is
/// lost (at once if it cannot be made; connecting if needed); each call adds one. With off,
/// removes one.
void monitor_node(basic_process& self, std::string_view node, bool on = true);
/// net_kernel:monitor_nodes(Flag): `nodeup` and `nodedown` for every connection.
void monitor_nodes(basic_process& self, bool on = true);

/// Bytes waiting to be written to `node` (queued by senders, or taken by its connection and
/// not yet handed to the socket); nullopt when there is no connection to it. Also exported as
/// the metric dist_outbox_bytes{node="..."}.
std::optional<std::size_t> outbox_bytes(runtime& rt, std::string_view node);

/// Erlang's node/1: the node a pid is on; `nonode\@nohost` for a local pid of a runtime with
/// no node started (as Erlang says), "" for a remote pid whose node is no longer known.
std::string node_name(runtime& rt, pid p);

namespace detail {
using encode_fn = term (*)(beamlet::detail::message_node*);
void register_encoder(const beamlet::detail::type_descriptor* type, encode_fn f);
}  // namespace detail

/// Lets messages of type T be sent to remote pids (T needs a term mapping: term_traits<T>).
template <class T>
void register_message() {
  static_assert(term_mapped<T>, "register_message<T>: T needs a term_traits<T> mapping");
  detail::register_encoder(beamlet::detail::tag_of<T>(), [](beamlet::detail::message_node* n) {
    return dist::to_term(beamlet::detail::payload<T>(n));
  });
}

/// A C++ function other nodes can call: it gets the call's arguments and returns its value.
using rpc_function = std::function<term(const term_list& args)>;
/// Makes `module:function(Args...)` callable from other nodes with rpc:call, erpc:call and
/// rpc_call.
/// Each call runs in a process of its own; an exception becomes the call's error
/// ({cpp_exception, What}); a function nobody registered is `undef`, as in Erlang.
void register_rpc(runtime& rt, std::string module, std::string function, rpc_function f);

/// rpc:call(Node, Module, Function, Args, Timeout) from C++: runs Module:Function(Args...) on
/// `node` (an Erlang or Elixir node; or a beamlet node, which serves what register_rpc
/// registered) and returns its value. The error is what rpc:call returns inside
/// {badrpc, Reason}: `nodedown`, `timeout`, {'EXIT', {undef, ...}} and so on. (As with rpc:call,
/// a function that itself returns {badrpc, X} is indistinguishable from a failure.) Output the
/// function prints (io:format) is logged at info level on this node.
task<expected<term, term>> rpc_call(process& self, std::string node, std::string module,
                                    std::string function, term_list args,
                                    timeout_value timeout = std::chrono::seconds(5));

/// exit reasons as terms, both ways: `normal`, `shutdown`, `{shutdown, D}`, `kill`, `killed`,
/// `noproc`, an error term (parsed from its text when it is Erlang syntax), an exception as
/// `{exception, Type, What}`. A reason made by reason_from_term keeps its term
/// (`r.value<term>()`), and reason_to_term gives that term back unchanged: reasons that come
/// from other nodes keep their pids, references, funs and bitstrings, however often relayed.
term reason_to_term(const exit_reason& r);
/// The exit reason a term stands for (the inverse of reason_to_term); it keeps `t`.
exit_reason reason_from_term(const term& t);

}  // namespace dist
BEAMLET_END_NAMESPACE
