// The connection process's state (connection.cpp, connection_handshake.cpp): one peer node,
// its socket and buffers, and the links and monitors that cross it. Used only by the process
// that runs it (connection_body), so nothing here is locked.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/net/tcp.hpp>

#include "connection_tables.hpp"
#include "fragments.hpp"
#include "node_state.hpp"
#include "node_table.hpp"
#include "tls.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// The socket options of a distribution connection (no framing: the handshake and the
/// connected phase frame their own packets).
net::socket_options raw_options(const node_options& o);

class connection {
 public:
  connection(process& self, node_state& node, std::string peer, std::shared_ptr<outbox> box)
      : self_(self),
        node_(node),
        me_(node.self),
        peer_(std::move(peer)),
        box_(std::move(box)),
        fragments_(node.opts.max_packet, max_fragmented),
        foreign_budget_(node.opts.max_foreign_nodes) {}

  /// Fragmented messages a peer may have under way at once (OTP has one per sending process;
  /// past this the peer is taken for a hostile one).
  static constexpr std::size_t max_fragmented = 1024;
  /// A packet at least this large, and at least half of the read buffer, is decoded in place:
  /// its binaries share the buffer rather than copy it. Smaller packets are copied out of the
  /// read buffer, so that a message kept by a process does not keep a whole read chunk.
  static constexpr std::size_t in_place_packet = 64u << 10;
  /// Write buffers larger than this are not kept for the next batch.
  static constexpr std::size_t spare_limit = 4u << 20;

  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Connects to the peer; tries again while the peer answers `nok` (it says it is connecting
  /// to us) and its connection does not come, for at most handshake_timeout.
  task<bool> initiate();
  task<bool> accept(net::tcp_socket s);
  task<std::string> run();
  /// Writes wbuf_; "" or why the write failed.
  task<std::string> flush();
  /// What is left of wbuf_ to write, for the outbox's busy state: lifts its pauses when that
  /// brings it back under half the limit.
  void set_unsent(std::size_t n);
  void finish(const std::string& why);

 private:
  // -- handshake --
  /// One attempt of initiate(); sets `nok_unanswered_` when the peer said `nok` and its own
  /// connection did not follow.
  task<bool> initiate_once();
  bool nok_unanswered_ = false;
  task<bool> accept_rest(std::uint64_t flags, std::uint32_t creation, std::string rest);
  bool established(std::uint64_t flags, std::uint32_t creation, std::string rest);
  void refuse(const std::string& why) {
    node_.log(log_level::error, "distribution: " +
                                    (peer_.empty() ? std::string("an incoming connection")
                                                   : "connection with '" + peer_ + "'") +
                                    " failed: " + why);
  }
  /// The TLS handshake on sock_ (node_options::tls): as the acceptor, or toward `host`.
  task<bool> start_tls(bool server, const std::string& host);
  /// A handshake packet: its length in 2 bytes, or in 4 over TLS (as inet_tls_dist has it).
  std::string frame(std::string_view body) const { return tls_ ? frame4(body) : frame2(body); }
  /// Writes `bytes` on sock_ (through TLS where the connection has it); "" or why not.
  task<std::string> write(std::string_view bytes);

  // -- connected phase --
  /// A command from the outbox, in its turn: kept behind its sender's fragments if it has
  /// some under way, else performed (a large message starts its fragments).
  void apply(out_command& c);
  /// Its bookkeeping, and its bytes into wbuf_.
  void perform(out_command& c);
  bool dispatch(std::string&& data);
  /// The whole packets in `buf` from `pos` (which moves past them); false when one is bad.
  /// A large one may take buf's characters (decoded in place), leaving buf what follows it.
  bool consume(std::string& buf, std::size_t& pos);
  /// Keeps `b`'s capacity for the next batch (spare_), unless it is larger than spare_limit.
  void keep_spare(std::string&& b) {
    if (b.capacity() > spare_limit) return;
    b.clear();
    spare_ = std::move(b);
  }
  /// One packet; with `buffer` (rbuf_ made a binary, p at `start` in it), decoded in place.
  bool packet(std::string_view p, const binary* buffer = nullptr, std::size_t start = 0);
  /// The control message (and message) of a whole packet, from `at`; `versioned`: each term
  /// has its version byte (the pass-through form). With `source` (a binary of exactly p's
  /// bytes), the message's large binaries refer to it in place.
  bool terms(std::string_view p, std::size_t at, bool versioned, const binary* source = nullptr);
  bool control(const term& ct, term* msg);
  void queue_packet(const term& control, const term* msg = nullptr) {
    if (auto r = append_packet(wbuf_, control, msg, me_); !r)
      node_.log(log_level::error, "distribution: a packet to '" + peer_ +
                                      "' cannot be encoded, so it is not sent: " + r.error());
  }
  bool current(pid remote) const {
    const std::uint32_t s = remote.node_slot();
    return s == peer_slot_ || s == name_slot_;
  }
  void lose_command(out_command& c, const exit_reason& why);
  /// Closes the outbox (later deposits go to a new connection), lifts the pauses taken for it
  /// and returns the commands it still held.
  std::vector<outbox::op> close_box();
  /// Takes everything the outbox holds into wbuf_, in order, applying the commands.
  void take_outbox();

  // -- fragments of large messages --
  /// One sender's large message under way, and what the sender sent after it.
  struct sender_stream {
    std::string packet;     ///< the whole packet (length and 131 'D' 0 header included)
    splice_list splices;    ///< its large binaries, left out of `packet`
    std::size_t total = 0;  ///< the packet's size, splices included
    std::size_t next = 0;   ///< where the next fragment's bytes start in the packet
    std::uint64_t sequence = 0;
    std::uint64_t left = 0;  ///< fragments still to write
    bool exempt = false;     ///< its bytes are outbox::large, not counted toward busy
    std::deque<out_command> held;
  };
  bool fragmenting() const { return dist_header_ && node_.opts.fragment_size != 0; }
  /// Starts `c`'s fragments in `s`.
  void begin_fragments(sender_stream& s, out_command&& c);
  /// One fragment of each large message under way into wbuf_ (the rest of the traffic goes
  /// between them); a sender whose message is done gets what it sent since.
  void write_fragments();
  /// The sender's large message is written: the outbox forgets it (and lifts its pause when
  /// it was its last).
  void large_done(pid sender, std::size_t exempt_bytes);
  /// Performs what `s` held until the next large message; false when nothing is left.
  bool release_held(sender_stream& s);

  process& self_;
  node_state& node_;
  const node_incarnation me_;
  std::string peer_;
  std::shared_ptr<outbox> box_;
  net::tcp_socket sock_;
  std::uint32_t peer_creation_ = 0;
  std::uint32_t peer_slot_ = 0;
  std::uint32_t name_slot_ = 0;
  bool registered_ = false;   // conns[peer_] names this process
  bool connected_ = false;    // the handshake completed
  bool dist_header_ = false;  // the peer speaks fragments: our packets keep their header
  bool finished_ = false;     // finish() ran (else the destructor lets the senders go)
  std::string cookie_;        // this peer's (set_cookie/2), or the node's
  std::string rbuf_;
  std::string wbuf_;
  std::string spare_;  ///< an empty buffer with capacity, for the outbox's next batch
  std::unique_ptr<tls_session> tls_;
  std::string tls_rest_;  // plaintext that came with the end of the TLS handshake
  connection_tables tables_;
  fragment_assembler fragments_;
  std::unordered_map<pid, sender_stream> streams_;
  std::uint64_t sequences_ = 0;
  /// Bytes taken from the outbox, counted toward busy and not in wbuf_ (held commands and
  /// counted large messages' unwritten fragments).
  std::size_t held_bytes_ = 0;
  /// New node incarnations this peer may still introduce (pids of nodes not yet known).
  std::size_t foreign_budget_;
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
