// A runtime's node: its identity, its connections (one process per peer node), and the core's
// remote hooks, which turn what a local process does to a remote pid into a command for the
// connection to that pid's node.
//
// Locking: `mu` guards the connection table. Hooks hold it shared while they send their command,
// and a connection that ends takes it exclusively to remove itself before it answers the commands
// left in its mailbox, so no command can reach a connection after that last look (OTP's
// guarantee that a link or monitor across a lost connection always gets noconnection).
#pragma once

#include <beamlet/core/config.hpp>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <beamlet/core/detail/remote.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/log_event.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/net/tcp.hpp>

#include "global_tables.hpp"
#include "pg_groups.hpp"
#include "tls.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// What a hook asks of a connection, made on the acting process's thread.
struct out_command {
  enum class kind : std::uint8_t {
    packet,     ///< `bytes` is a ready data packet (send, reg_send, exit2)
    link,       ///< packet, and record the link (local, remote)
    unlink,     ///< packet, and forget the link
    link_exit,  ///< packet (EXIT): local ended, and the link is gone
    monitor,    ///< packet, and record local's monitor `ref` of remote
    demonitor,  ///< packet, and forget the monitor
    down,       ///< local target ended: answer remote watcher's monitor `ref` (no bytes)
  };
  kind what = kind::packet;
  pid local;
  pid remote;
  std::uint64_t ref = 0;
  std::string name;  ///< a monitor by name: the name
  exit_reason reason;
  std::string bytes;
  /// The message's large binaries, left out of `bytes` (splice.hpp).
  splice_list splices;
  /// Larger than node_options::fragment_size: written in fragments to a peer that speaks
  /// them. What `local` sends after it waits for its last fragment.
  bool large = false;
  /// Large, and its sender is paused until it is written (outbox::fragmenting): its bytes are
  /// bounded by that pause, so they do not count toward busy (outbox::large instead).
  bool exempt = false;
  /// The packet's size: its bytes and its splices.
  std::size_t size() const noexcept { return bytes.size() + spliced_size(splices); }
};

/// What local processes have for one connection, in the order they did it: packets ready to
/// write, and the commands whose bookkeeping (or encoding) only the connection can do, each at
/// its place among the packets. Hooks append on their own threads, under `mu`; the connection
/// takes everything at once. One wake-up message per batch, not one message per packet.
struct outbox {
  struct op {
    std::size_t at;  ///< written after bytes[0, at)
    out_command cmd;
  };
  outbox() = default;
  outbox(const outbox&) = delete;
  outbox& operator=(const outbox&) = delete;
  ~outbox();

  std::mutex mu;
  std::string bytes;
  std::vector<op> ops;
  bool woken = false;   ///< an outbox_ready is on its way to the connection
  bool closed = false;  ///< the connection ended: deposits fail (and go to a new connection)

  // -- backpressure (node_options::busy_limit), under mu --
  std::size_t queued = 0;  ///< bytes deposited here and not taken by the connection yet
  std::size_t unsent = 0;  ///< bytes the connection took and has not handed to its socket yet
  /// queued + unsent went over the limit; cleared when they are back at half of it (or the
  /// connection ends). While set, a process that sends here is paused until it clears.
  bool busy = false;
  /// The processes paused for this connection, one pause each, lifted when busy clears.
  using pause_map = std::unordered_map<pid, beamlet::detail::pause_ticket>;
  pause_map paused;
  /// Outside threads that sent while busy wait on this (bounded by net_ticktime).
  std::condition_variable drained;

  // -- fragments (node_options::fragment_size), under mu --
  /// A sender with large messages on their way: how many, and the pause that holds it until
  /// the last is written (as a BEAM process is busy with its send until its last fragment is
  /// queued). While a sender is here, what it deposits goes into `ops` with its pid, so that
  /// the connection can keep it behind the fragments.
  struct large_sender {
    std::uint32_t messages = 0;
    beamlet::detail::pause_ticket pause;
  };
  std::unordered_map<pid, large_sender> fragmenting;
  std::size_t large = 0;  ///< bytes of exempt large messages not written yet

  /// Bytes that count toward the busy limit.
  std::size_t pending() const { return queued + unsent; }
  /// Bytes the connection has not written yet, for metrics and outbox_bytes().
  std::size_t unwritten() const { return queued + unsent + large; }
  /// Clears busy when pending() is at `low` or below (or `force`), and returns the pauses to
  /// lift, which the caller hands to remote_resume after letting go of mu.
  pause_map settle_locked(std::size_t low, bool force);
};
/// Lifts the pauses settle_locked returned.
void resume_all(beamlet::detail::runtime_core& rt, outbox::pause_map ts);
/// Tells a connection its outbox has something.
struct outbox_ready {};

/// Sent to a connection by whoever wants it to end (disconnect_node, stop, a replacement).
/// Whoever removes a connection from the table (the sender, or the connection as it ends)
/// reports its nodedown.
struct conn_stop {
  std::string why;
};

/// A socket accepted for a connection already being made: the simultaneous-connect case, in
/// which the node with the smaller name takes the peer's connection instead of its own.
struct adopt_socket {
  net::tcp_socket socket;
  std::uint64_t flags = 0;
  std::uint32_t creation = 0;
  std::unique_ptr<tls_session> tls;  ///< the socket's TLS session, with node_options::tls
};

struct conn_entry {
  pid process;
  bool established = false;
  std::uint32_t peer_creation = 0;
  std::shared_ptr<outbox> box;
  bool visible = false;  ///< both nodes published (neither hidden): `global` syncs with it
};

class node_state final : public runtime_extension, public beamlet::detail::remote_hooks {
 public:
  /// Also adds the layer's metrics (dist_outbox_bytes, dist_busy_pauses_total).
  void attached(beamlet::detail::runtime_core& rt) override;
  void stopping() noexcept override;

  beamlet::detail::runtime_core& rt() const { return *rt_; }
  bool running() const { return running_.load(std::memory_order_acquire); }

  // Set by start() before running_ (then read-only until stop).
  node_options opts;
  node_incarnation self;
  std::string cookie;  ///< the node's own (set_cookie(rt, cookie) changes it, under mu)
  /// Cookies for particular nodes (erlang:set_cookie/2), under mu.
  std::unordered_map<std::string, std::string> node_cookies;
  /// The cookie to use with `peer`.
  std::string cookie_for(const std::string& peer);
  std::uint16_t port = 0;
  std::shared_ptr<tls_context> tls;  ///< with node_options::tls (set by start())
  pid kernel;
  pid rex;               ///< serves rpc calls (rpc_client.cpp)
  pid group_leader;      ///< what rpc_call names as the remote call's group leader
  pid pg_scope;          ///< the pg scope process, registered as `pg` (pg.cpp)
  pg_groups pg;          ///< its membership tables
  pid global_server;     ///< a visible node's `global_name_server` (global_server.cpp)
  global_tables global;  ///< its names, locks and known nodes

  /// The capability flags this node sends in its handshakes.
  std::uint64_t our_flags() const { return flag::ours | (opts.hidden ? 0 : flag::published); }
  /// Whether the connection to `node` is up and visible.
  bool is_visible(std::string_view node);
  net::tcp_listener listener;

  void set_running(bool on) { running_.store(on, std::memory_order_release); }

  // -- connections --------------------------------------------------------------------------
  std::shared_mutex mu;
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  /// By peer node name (looked up by string_view on the hot path).
  std::unordered_map<std::string, conn_entry, name_hash, std::equal_to<>> conns;
  /// The connection for `node`, made (as an initiator) if there is none. Caller holds `mu`
  /// exclusively. Null pid when not running.
  pid ensure_connection_locked(const std::string& node);
  /// Gives `cmd` to the connection for `node`, making one if needed. `message`: it carries a
  /// message (SEND, REG_SEND), whose sender a busy connection pauses.
  bool post(std::string_view node, out_command&& cmd, bool message = false);
  /// post() for a ready message packet (the send path). A large one is moved out of `packet`
  /// rather than copied.
  bool post_bytes(std::string_view node, std::string& packet);
  /// Processes paused by a busy connection so far (busy_dist_port events).
  std::atomic<std::uint64_t> busy_pauses{0};
  void post_stop(const std::string& node, std::string why);

  // -- node monitors (guarded by mu) ---------------------------------------------------------
  std::vector<std::pair<pid, std::string>> node_watchers;  ///< monitor_node
  std::vector<pid> all_nodes_watchers;                     ///< monitor_nodes
  /// A connection to `node` came up, or ended (`was_up`: after its handshake completed).
  void node_event(const std::string& node, bool up, bool was_up);

  // -- remote_hooks --------------------------------------------------------------------------
  beamlet::detail::send_status send(pid to, beamlet::detail::message_node* n) noexcept override;
  void send_named(pid from, std::string_view name, std::string_view node,
                  beamlet::detail::message_node* n) noexcept override;
  bool link(pid from, pid to) noexcept override;
  void unlink(pid from, pid to) noexcept override;
  bool exit(pid from, pid to, const exit_reason& reason, bool via_link) noexcept override;
  bool monitor(pid watcher, pid target, std::uint64_t ref) noexcept override;
  pid monitor_named(pid watcher, std::string_view name, std::string_view node,
                    std::uint64_t ref) noexcept override;
  void demonitor(pid watcher, pid target, std::uint64_t ref) noexcept override;
  void down(pid watcher, pid target, std::uint64_t ref,
            const exit_reason& reason) noexcept override;

  /// Logs a distribution event (an error or a notice) through the runtime's logger.
  void log(log_level level, std::string message) const noexcept;

 private:
  bool packet_to(pid to, out_command::kind what, pid local, const term& control,
                 const term* message, std::uint64_t ref = 0);

  /// Deposits into the outbox of the connection for `node`, made if there is none, under `mu`
  /// (false when the node is not running or `node` is this one).
  bool deposit_to(std::string_view node, std::string_view bytes, out_command* cmd, bool message,
                  pid sender = pid(), std::string* owned = nullptr);
  /// What a deposit did, and what its caller still has to do.
  enum class deposited : std::uint8_t {
    no,  ///< the connection has ended meanwhile
    yes,
    wait,  ///< yes, into a busy outbox, by an outside thread: it waits for the drain
  };
  /// Appends to the connection's outbox; a message sent into a busy outbox pauses its sending
  /// process (a busy_dist_port event).
  /// `sender`: whose deposit it is, when known (else the acting process is asked, if it is
  /// needed: for a large message, or while some sender has one under way).
  /// `owned`: the string `bytes` is, which a large message may be moved out of.
  deposited deposit(outbox& box, pid conn, std::string_view bytes, out_command* cmd, bool message,
                    pid sender, std::string* owned);
  /// An outside thread's wait for a busy outbox to drain, at most net_ticktime.
  void wait_drained(outbox& box);

  beamlet::detail::runtime_core* rt_ = nullptr;
  std::atomic<bool> running_{false};
};

/// The message payload of `n` as a term, if its type is registered (register_message).
std::optional<term> message_term(beamlet::detail::message_node* n);

/// Delivers `msg` to local `to`: as the reply of a call that dist::call made (`{Tag, Reply}`
/// with a tag of this node's calls), which the caller takes only while it still waits for it
/// (a late reply is dropped at the door, as OTP's alias drops it); as a plain message
/// otherwise.
void deliver_to_local(beamlet::detail::runtime_core& rt, const node_incarnation& me, pid to,
                      term&& msg);

struct connection_tables;  // connection_tables.hpp
/// Handles one control message `ct` (with its message `msg`, if any) that arrived from `peer`
/// (connection_control.cpp); false, with `error` set, closes the connection. Anything to send
/// back is appended to `out`.
bool handle_control(node_state& node, process& self, const node_incarnation& me,
                    const std::string& peer, connection_tables& tables, std::string& out,
                    const term& ct, term* msg, std::string& error);
/// A SPAWN_REQUEST from `peer` (rpc.cpp): spawns the requested function, or answers with the
/// error; the reply is appended to `out`.
bool handle_spawn_request(node_state& node, process& self, const node_incarnation& me,
                          std::string& out, const std::string& peer, const term& ct, term* msg);

/// The body of a connection process: as the initiator toward `peer` (with the outbox the
/// connection table holds for it), or (with an empty peer and no outbox) as the acceptor of the
/// socket the kernel sends it.
task<> connection_body(process& self, node_state& node, std::string peer,
                       std::shared_ptr<outbox> box);
/// The body of the net kernel: publishes the node, accepts connections.
task<> kernel_body(process& self, node_state& node, net::tcp_listener listener, pid starter);
/// `rex` and the group leader of rpc calls (rpc_client.cpp).
task<> rex_body(process& self, node_state& node);
task<> group_leader_body(process& self, node_state& node);
/// The pg scope process (pg.cpp).
task<> pg_body(process& self, node_state& node);
/// A visible node's global name server, registered as `global_name_server`
/// (global_server.cpp); it spawns and links its locker (global_locker.cpp).
task<> global_body(process& self, node_state& node);

/// What the kernel tells start() once the node is published (creation 0 and `error` set on
/// failure); start() answers with kernel_go.
struct kernel_ready {
  std::uint32_t creation = 0;
  std::error_code error;
};
struct kernel_go {};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
