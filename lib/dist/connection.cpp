// One connection to one peer node, as a process: the handshake (either side), then the
// connected phase: commands from local processes become packets written in arrival order, and
// packets from the peer become messages and signals for local processes. The connection keeps
// the links and monitors that cross it, so that losing it ends each with `noconnection`.
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/receive.hpp>

#include <map>
#include <random>
#include <set>

#include "connection_tables.hpp"
#include "epmd.hpp"
#include "node_state.hpp"
#include "node_table.hpp"
#include "stream.hpp"
#include "term_access.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace dist::detail {

namespace {

using clock_type = std::chrono::steady_clock;
namespace core = beamlet::detail;

// Never inlined: the handshake coroutines call it, and inlined into one, the thread_local's
// address may be kept across a suspension and so be another thread's (beamlet/core/task.hpp).
[[gnu::noinline]] std::uint32_t random_challenge() {
  thread_local std::mt19937 gen{std::random_device{}()};
  return static_cast<std::uint32_t>(gen());
}

net::socket_options raw_options(const node_options& o) {
  net::socket_options s;
  s.packet = net::framing::raw;
  s.max_packet = 1 << 20;
  s.send_queue_limit = 8u << 20;
  s.send_timeout = o.net_ticktime;
  return s;
}

class connection {
 public:
  connection(process& self, node_state& node, std::string peer, std::shared_ptr<outbox> box)
      : self_(self),
        node_(node),
        me_(node.self),
        peer_(std::move(peer)),
        box_(std::move(box)),
        foreign_budget_(node.opts.max_foreign_nodes) {}

  task<bool> initiate();
  task<bool> accept(net::tcp_socket s);
  task<std::string> run();
  /// Writes wbuf_; "" or why the write failed.
  task<std::string> flush();
  void finish(const std::string& why);

 private:
  // -- handshake --
  task<bool> accept_rest(std::uint64_t flags, std::uint32_t creation, std::string rest);
  bool established(std::uint64_t flags, std::uint32_t creation, std::string rest);
  void refuse(const std::string& why) {
    node_.log(log_level::error, "distribution: connection with '" + peer_ + "' failed: " + why);
  }

  // -- connected phase --
  void apply(out_command& c);
  bool dispatch(std::string&& data);
  bool packet(std::string_view p);
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
  /// Takes everything the outbox holds into wbuf_, in order, applying the commands.
  void take_outbox();

  process& self_;
  node_state& node_;
  const node_incarnation me_;
  std::string peer_;
  std::shared_ptr<outbox> box_;
  net::tcp_socket sock_;
  std::uint32_t peer_creation_ = 0;
  std::uint32_t peer_slot_ = 0;
  std::uint32_t name_slot_ = 0;
  bool registered_ = false;  // conns[peer_] names this process
  bool connected_ = false;   // the handshake completed
  std::string cookie_;       // this peer's (set_cookie/2), or the node's
  std::string rbuf_;
  std::string wbuf_;
  connection_tables tables_;
  /// New node incarnations this peer may still introduce (pids of nodes not yet known).
  std::size_t foreign_budget_;
};

// -- handshake --------------------------------------------------------------------------------

task<bool> connection::initiate() {
  registered_ = true;  // ensure_connection_locked registered us
  const node_options& o = node_.opts;
  const auto at = peer_.find('@');
  if (at == std::string::npos || at == 0 || at + 1 == peer_.size()) {
    refuse("not a node name");
    co_return false;
  }
  std::string alive = peer_.substr(0, at);
  std::string host = peer_.substr(at + 1);
  std::uint16_t port = o.peer_port;
  if (o.use_epmd) {
    std::string h = host;
    auto p = co_await epmd_lookup(self_, std::move(h), std::move(alive), epmd_port(o.epmd_port),
                                  o.connect_timeout);
    if (!p) {
      refuse(p.error());
      co_return false;
    }
    port = *p;
  }
  const net::socket_options so = raw_options(o);
  std::string h = host;
  auto c = co_await net::connect(self_, std::move(h), port, so, o.connect_timeout);
  if (!c) {
    refuse("connect: " + c.error().message());
    co_return false;
  }
  sock_ = std::move(*c);
  cookie_ = node_.cookie_for(peer_);
  const std::string hello = name_packet(flag::ours, me_.creation, me_.name);
  if (auto r1 = co_await net::send(self_, sock_, hello); !r1) co_return false;
  stream_reader in(clock_type::now() + o.handshake_timeout);
  auto status = co_await in.packet2(self_, sock_);
  if (!status) {
    refuse("no status: " + status.error());
    co_return false;
  }
  if (*status == "snok") {
    // A simultaneous connect the peer won: its own connection comes to us through the kernel,
    // which hands the socket to this process.
    sock_.close();
    auto s = co_await self_.receive(on<net::tcp_socket>(), after(o.handshake_timeout));
    if (!s) {
      refuse("simultaneous connect: the peer's connection never came");
      co_return false;
    }
    sock_ = std::move(s.get<net::tcp_socket>());
    auto a = co_await self_.receive(on<adopt_socket>(), after(o.handshake_timeout));
    if (!a) co_return false;
    const adopt_socket& ad = a.get<adopt_socket>();
    std::string none;
    co_return co_await accept_rest(ad.flags, ad.creation, std::move(none));
  }
  if (*status == "salive") {
    const std::string yes = frame2("strue");  // we have no connection: the peer's is stale
    if (auto r2 = co_await net::send(self_, sock_, yes); !r2) co_return false;
  } else if (*status != "sok" && *status != "sok_simultaneous") {
    refuse("refused by the peer (" + status->substr(status->empty() ? 0 : 1) + ")");
    co_return false;
  }
  auto got = co_await in.packet2(self_, sock_);
  const auto ch = got ? parse_challenge(*got) : std::nullopt;
  if (!ch) {
    refuse("bad challenge");
    co_return false;
  }
  const std::uint64_t flags = ch->flags;
  const std::uint32_t creation = ch->creation;
  if (ch->name != peer_) {
    refuse("the peer answered with another name");
    co_return false;
  }
  if ((flags & flag::required) != flag::required) {
    refuse("the peer lacks required capabilities");
    co_return false;
  }
  const std::uint32_t mine = random_challenge();
  std::string reply = "r";
  put32(reply, mine);
  reply += digest(cookie_, ch->challenge);
  const std::string reply_packet = frame2(reply);
  if (auto r3 = co_await net::send(self_, sock_, reply_packet); !r3) co_return false;
  auto ack = co_await in.packet2(self_, sock_);
  if (!ack) {
    refuse("no acknowledgement (a wrong cookie?): " + ack.error());
    co_return false;
  }
  if (const auto d = parse_challenge_ack(*ack); !d || *d != digest(cookie_, mine)) {
    refuse("the peer's digest is wrong (a different cookie)");
    co_return false;
  }
  co_return established(flags, creation, in.take_rest());
}

task<bool> connection::accept(net::tcp_socket s) {
  sock_ = std::move(s);
  const node_options& o = node_.opts;
  stream_reader in(clock_type::now() + o.handshake_timeout);
  auto got = co_await in.packet2(self_, sock_);
  auto name = got ? parse_name(*got) : std::nullopt;
  if (!name) co_return false;  // not a version-6 peer
  const std::uint64_t flags = name->flags;
  const std::uint32_t creation = name->creation;
  peer_ = std::move(name->name);
  if ((flags & flag::required) != flag::required || peer_.find('@') == std::string::npos) {
    const std::string no = frame2("snot_allowed");
    auto sent = co_await net::send(self_, sock_, no);
    (void)sent;
    co_return false;
  }
  enum class decision { ok, nok, simultaneous, alive } d = decision::ok;
  pid other;
  {
    std::unique_lock lock(node_.mu);
    auto it = node_.conns.find(peer_);
    if (it == node_.conns.end()) {
      box_ = std::make_shared<outbox>();
      node_.conns[peer_] = conn_entry{self_.self(), false, 0, box_};
      registered_ = true;
    } else if (!it->second.established) {
      d = me_.name > peer_ ? decision::nok : decision::simultaneous;
      other = it->second.process;
    } else {
      d = decision::alive;
      other = it->second.process;
    }
  }
  if (d == decision::nok) {
    node_.log(log_level::notice, "distribution: simultaneous connect with '" + peer_ +
                                     "': our own attempt goes on, this one is refused");
    const std::string no = frame2("snok");
    auto sent = co_await net::send(self_, sock_, no);
    (void)sent;
    co_return false;
  }
  if (d == decision::simultaneous) {
    node_.log(log_level::notice,
              "distribution: simultaneous connect with '" + peer_ + "': its attempt replaces ours");
    const std::string ok = frame2("sok_simultaneous");
    if (auto r4 = co_await net::send(self_, sock_, ok); !r4) co_return false;
    if (auto r5 = co_await net::controlling_process(self_, sock_, other); !r5) co_return false;
    self_.send(other, adopt_socket{{}, flags, creation});
    co_return false;
  }
  if (d == decision::alive) {
    const std::string alive = frame2("salive");
    if (auto r6 = co_await net::send(self_, sock_, alive); !r6) co_return false;
    auto answer = co_await in.packet2(self_, sock_);
    if (!answer || *answer != "strue") co_return false;
    // The peer restarted: the old connection is stale. End it, then take its place.
    const ref m = self_.monitor(other);
    self_.send(other, conn_stop{"the peer reconnected"});
    const auto is_gone = [m](const down& x) { return x.ref == m; };
    auto gone = co_await self_.receive(on<down>().when(is_gone), after(o.handshake_timeout));
    (void)gone;
    std::unique_lock lock(node_.mu);
    if (node_.conns.count(peer_) != 0) co_return false;
    box_ = std::make_shared<outbox>();
    node_.conns[peer_] = conn_entry{self_.self(), false, 0, box_};
    registered_ = true;
  } else {
    const std::string ok = frame2("sok");
    if (auto r7 = co_await net::send(self_, sock_, ok); !r7) co_return false;
  }
  std::string rest = in.take_rest();
  co_return co_await accept_rest(flags, creation, std::move(rest));
}

task<bool> connection::accept_rest(std::uint64_t flags, std::uint32_t creation, std::string rest) {
  const node_options& o = node_.opts;
  cookie_ = node_.cookie_for(peer_);
  const std::uint32_t mine = random_challenge();
  const std::string challenge = challenge_packet(flag::ours, mine, me_.creation, me_.name);
  if (auto r8 = co_await net::send(self_, sock_, challenge); !r8) co_return false;
  stream_reader in(clock_type::now() + o.handshake_timeout);
  auto got = co_await in.packet2(self_, sock_);
  const auto reply = got ? parse_challenge_reply(*got) : std::nullopt;
  if (!reply) {
    refuse("no challenge reply");
    co_return false;
  }
  if (reply->digest != digest(cookie_, mine)) {
    node_.log(log_level::error, "distribution: connection attempt from node '" + peer_ +
                                    "' rejected: invalid challenge reply (a different cookie)");
    co_return false;
  }
  std::string ack = "a";
  ack += digest(cookie_, reply->challenge);
  const std::string ack_packet = frame2(ack);
  if (auto r9 = co_await net::send(self_, sock_, ack_packet); !r9) co_return false;
  rest += in.take_rest();
  co_return established(flags, creation, std::move(rest));
}

bool connection::established(std::uint64_t /*flags*/, std::uint32_t creation, std::string rest) {
  peer_creation_ = creation;
  peer_slot_ = intern_pinned(peer_, creation);
  name_slot_ = intern_pinned(peer_, 0);
  rbuf_ = std::move(rest);
  {
    std::unique_lock lock(node_.mu);
    auto it = node_.conns.find(peer_);
    // disconnect_node during the handshake took us out of the table: the attempt is void.
    if (it == node_.conns.end() || it->second.process != self_.self()) return false;
    it->second = conn_entry{self_.self(), true, creation, box_};
    registered_ = true;
  }
  connected_ = true;
  node_.node_event(peer_, true, false);
  return true;
}

// -- connected phase --------------------------------------------------------------------------

void connection::apply(out_command& c) {
  using k = out_command::kind;
  if (c.what != k::down && c.remote && !current(c.remote)) {
    // A pid of an earlier incarnation of the peer: that process is dead.
    if (c.what == k::link)
      core::remote_exit_in(node_.rt(), c.remote, c.local, exit_reason::noproc(), true);
    if (c.what == k::monitor)
      core::remote_down_in(node_.rt(), c.local, c.ref, c.remote, exit_reason::noproc(), {});
    return;
  }
  switch (c.what) {
    case k::packet:
      break;
    case k::link:
      tables_.links.insert({c.local, c.remote});
      break;
    case k::unlink:
    case k::link_exit:
      tables_.links.erase({c.local, c.remote});
      break;
    case k::monitor:
      tables_.watching[c.ref] = watch{c.local, c.remote, std::move(c.name)};
      break;
    case k::demonitor:
      tables_.watching.erase(c.ref);
      break;
    case k::down: {
      auto it = tables_.watched.find(c.ref);
      if (it == tables_.watched.end()) return;
      const watched_by& w = it->second;
      term from = w.name.empty() ? term(c.local) : term::make_atom(w.name);
      queue_packet(term::make_tuple({term(ctl::monitor_p_exit), std::move(from), term(w.watcher),
                                     w.ref, reason_to_term(c.reason)}));
      tables_.forget_watched(it);
      return;
    }
  }
  wbuf_ += c.bytes;
}

void connection::take_outbox() {
  std::string bytes;
  std::vector<outbox::op> ops;
  {
    std::lock_guard lock(box_->mu);
    bytes.swap(box_->bytes);
    ops.swap(box_->ops);
    box_->woken = false;
  }
  if (ops.empty() && wbuf_.empty()) {
    wbuf_.swap(bytes);  // the common case: only packets, nothing to copy
    return;
  }
  std::size_t at = 0;
  for (auto& o : ops) {
    wbuf_.append(bytes, at, o.at - at);
    at = o.at;
    apply(o.cmd);
  }
  wbuf_.append(bytes, at, std::string::npos);
}

void connection::lose_command(out_command& c, const exit_reason& why) {
  using k = out_command::kind;
  if (c.what == k::link) core::remote_exit_in(node_.rt(), c.remote, c.local, why, true);
  if (c.what == k::monitor)
    core::remote_down_in(node_.rt(), c.local, c.ref, c.remote, why, std::move(c.name));
}

task<std::string> connection::flush() {
  // In slices: a socket takes at most max_packet bytes per send, and a batch can be larger.
  constexpr std::size_t slice = 512u << 10;
  std::string failed;
  for (std::size_t off = 0; off < wbuf_.size(); off += slice) {
    const std::string_view part = std::string_view(wbuf_).substr(off, slice);
    auto r = co_await net::send(self_, sock_, part);
    if (!r) {
      failed = "send: " + r.error().message();
      break;
    }
  }
  wbuf_.clear();
  co_return failed;
}

task<std::string> connection::run() {
  const node_options& o = node_.opts;
  const auto tick = std::max(o.net_ticktime / 4, std::chrono::milliseconds(1));
  // Reading is bounded: after `window` packets the socket pauses until we ask for more, so a
  // peer that floods us is held back by TCP instead of growing our mailbox.
  constexpr int window = 64;
  if (!net::set_active(self_, sock_, net::active_mode::n(window))) co_return "socket gone";
  auto last_in = clock_type::now();
  auto last_out = last_in;
  if (!rbuf_.empty() && !dispatch(std::string())) co_return "a malformed packet";
  const net::socket_id sid = sock_.id();
  bool stopping = false;
  for (;;) {
    auto m = co_await self_.receive(on<outbox_ready>(), on<net::tcp_data>(), on<net::tcp_passive>(),
                                    on<net::tcp_closed>(), on<net::tcp_error>(), on<conn_stop>(),
                                    on<exit_message>(), after(tick));
    const auto now = clock_type::now();
    if (m.is<outbox_ready>()) {
      take_outbox();
    } else if (m.is<net::tcp_data>()) {
      auto& d = m.get<net::tcp_data>();
      if (d.socket != sid) continue;
      last_in = now;
      if (!dispatch(std::move(d.data))) co_return "a malformed packet";
    } else if (m.is<net::tcp_passive>()) {
      if (!net::set_active(self_, sock_, net::active_mode::n(window))) co_return "socket gone";
    } else if (m.is<net::tcp_closed>()) {
      co_return "the peer closed the connection";
    } else if (m.is<net::tcp_error>()) {
      co_return m.get<net::tcp_error>().error.message();
    } else if (m.is<conn_stop>()) {
      stopping = true;
    }
    if (now - last_in > o.net_ticktime) {
      node_.log(log_level::error,
                "distribution: node '" + peer_ + "' not responding (net_tick_timeout)");
      co_return "net_tick_timeout";
    }
    if (wbuf_.empty() && now - last_out >= tick) wbuf_.append(4, '\0');  // a tick
    if (!wbuf_.empty()) {
      std::string failed = co_await flush();
      if (!failed.empty()) co_return failed;
      last_out = clock_type::now();
    }
    if (stopping) {
      // What processes sent before the stop still reaches the peer.
      take_outbox();
      std::string failed = co_await flush();
      (void)failed;
      co_return m.get<conn_stop>().why;
    }
  }
}

bool connection::dispatch(std::string&& data) {
  if (rbuf_.empty())
    rbuf_.swap(data);  // the common case: the chunk holds whole packets
  else
    rbuf_.append(data);
  std::size_t pos = 0;
  bool ok = true;
  while (ok) {
    std::string_view p;
    std::uint32_t len = 0;
    const cut_result r = cut_packet(rbuf_, pos, node_.opts.max_packet, p, len);
    if (r == cut_result::need_more) break;
    if (r == cut_result::too_large) {
      refuse("a packet of " + std::to_string(len) + " bytes, over the limit");
      return false;
    }
    if (r == cut_result::not_data) {
      refuse("a packet that is not a pass-through data packet");
      return false;
    }
    if (r == cut_result::data) ok = packet(p);
  }
  rbuf_.erase(0, pos);
  return ok;
}

bool connection::packet(std::string_view p) {
  const decode_limits& limits = node_.opts.limits;
  std::size_t at = 1;
  // The hot path: SEND {2, Unused, To} is taken apart without building the control tuple.
  static constexpr char send_head[] = {'\x83', '\x68', '\x03', '\x61', '\x02'};
  if (p.size() > 8 &&
      p.substr(1, sizeof send_head) == std::string_view(send_head, sizeof send_head)) {
    std::size_t fast = 1 + sizeof send_head;
    auto unused = decode_counting(p, fast, &me_, false, limits, &foreign_budget_);
    auto to = unused ? decode_counting(p, fast, &me_, false, limits, &foreign_budget_) : unused;
    if (to && to->is_pid() && fast < p.size()) {
      auto msg = decode_counting(p, fast, &me_, true, limits, &foreign_budget_);
      if (!msg || fast != p.size()) {
        refuse("a malformed message: " + (msg ? std::string("bytes after it") : msg.error()));
        return false;
      }
      const pid dest = term_access::raw_pid(*to);  // not kept: its slot is not pinned
      if (!dest.is_remote()) deliver_to_local(node_.rt(), me_, dest, std::move(*msg));
      return true;
    }
  }
  auto ct = decode_counting(p, at, &me_, true, limits, &foreign_budget_);
  if (!ct) {
    refuse("a malformed control message: " + ct.error());
    return false;
  }
  std::optional<term> msg;
  if (at < p.size()) {
    auto mt = decode_counting(p, at, &me_, true, limits, &foreign_budget_);
    if (!mt || at != p.size()) {
      refuse("a malformed message: " + (mt ? std::string("bytes after it") : mt.error()));
      return false;
    }
    msg = std::move(*mt);
  }
  return control(*ct, msg ? &*msg : nullptr);
}

}  // namespace

// Defined in connection_control.cpp: the handling of one control message.
bool handle_control(node_state& node, process& self, const node_incarnation& me,
                    const std::string& peer, connection_tables& tables, std::string& out,
                    const term& ct, term* msg, std::string& error);

namespace {

bool connection::control(const term& ct, term* msg) {
  std::string error;
  if (!handle_control(node_, self_, me_, peer_, tables_, wbuf_, ct, msg, error)) {
    refuse(error);
    return false;
  }
  return true;
}

void connection::finish(const std::string& why) {
  const exit_reason lost = exit_reason::error("noconnection");
  bool mine = false;  // still in the table: we report our end (else whoever removed us did)
  {
    std::unique_lock lock(node_.mu);
    auto it = node_.conns.find(peer_);
    if (it != node_.conns.end() && it->second.process == self_.self()) {
      node_.conns.erase(it);
      mine = true;
    }
  }
  if (sock_) sock_.close();
  // Commands posted before we left the table: links and monitors they carry are lost too.
  // (A deposit that finds the outbox closed goes to a new connection instead.)
  if (box_) {
    std::vector<outbox::op> ops;
    {
      std::lock_guard lock(box_->mu);
      box_->closed = true;
      ops.swap(box_->ops);
      box_->bytes.clear();
    }
    for (auto& o : ops) lose_command(o.cmd, lost);
  }
  tables_.lose(node_.rt(), lost);
  if (connected_)
    node_.log(log_level::notice, "distribution: connection to '" + peer_ + "' closed: " + why);
  if (mine && connected_) {
    node_.node_event(peer_, false, true);
  } else if (mine && registered_) {
    node_.node_event(peer_, false, false);  // monitor_node of a node that could not be reached
  }
}

}  // namespace

task<> connection_body(process& self, node_state& node, std::string peer,
                       std::shared_ptr<outbox> box) {
  self.trap_exit(true);  // exit signals end us through finish(), never half-way
  const bool accepting = peer.empty();
  connection c(self, node, std::move(peer), std::move(box));
  std::string why = "closed";
  try {
    bool up = false;
    if (accepting) {
      // The kernel hands us the socket it accepted.
      auto s = co_await self.receive(on<net::tcp_socket>(), after(node.opts.handshake_timeout));
      if (s) up = co_await c.accept(std::move(s.get<net::tcp_socket>()));
    } else {
      up = co_await c.initiate();
    }
    if (up) why = co_await c.run();
  } catch (const std::exception& e) {
    why = e.what();
  }
  c.finish(why);
}

}  // namespace dist::detail
BEAMLET_END_NAMESPACE
