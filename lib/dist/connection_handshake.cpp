// The distribution handshake, either side (OTP's dist handshake, version 6 with version 5
// fallback as erl negotiates): names, flags and creations exchanged, the cookie proven by MD5
// challenges, then the connection registered as its peer's. A failure is logged and closes the
// connection; nothing has been registered for it by then.
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/receive.hpp>

#include <random>

#include "connection.hpp"
#include "epmd.hpp"
#include "stream.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
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

}  // namespace

net::socket_options raw_options(const node_options& o) {
  net::socket_options s;
  s.framing = net::framing::raw;
  s.max_packet = 1 << 20;
  s.send_queue_limit = 1u << 20;
  s.send_timeout = o.net_ticktime;
  return s;
}

// -- TLS --------------------------------------------------------------------------------------

task<bool> connection::start_tls(bool server, const std::string& host) {
  auto made = tls_session::make(*node_.tls, server, host);
  if (!made) {
    refuse("TLS: " + made.error());
    co_return false;
  }
  tls_ = std::move(*made);
  const auto deadline = clock_type::now() + node_.opts.handshake_timeout;
  for (;;) {
    std::string out;
    std::string error;
    const tls_session::step st = tls_->handshake(out, error);
    if (!out.empty()) {
      // Sent on failure too: it is the alert that tells the peer why.
      auto r = co_await net::send(self_, sock_, out);
      if (!r && st != tls_session::step::failed) {
        refuse("TLS handshake: send: " + r.error().message());
        co_return false;
      }
    }
    if (st == tls_session::step::done) break;
    if (st == tls_session::step::failed) {
      refuse(error);
      co_return false;
    }
    const auto now = clock_type::now();
    if (now >= deadline) {
      refuse("TLS handshake: timed out");
      co_return false;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    auto chunk = co_await net::recv(self_, sock_, left + std::chrono::milliseconds(1));
    if (!chunk) {
      refuse("TLS handshake: " + chunk.error().message());
      co_return false;
    }
    tls_->put(*chunk);
  }
  std::string error;
  if (!tls_->open({}, tls_rest_, error)) {
    refuse(error);
    co_return false;
  }
  co_return true;
}

task<std::string> connection::write(std::string_view bytes) {
  if (!tls_) {
    auto r = co_await net::send(self_, sock_, bytes);
    co_return r ? std::string() : "send: " + r.error().message();
  }
  std::string cipher;
  std::string error;
  if (!tls_->seal(bytes, cipher, error)) co_return error;
  if (cipher.empty()) co_return std::string();
  auto r = co_await net::send(self_, sock_, cipher);
  co_return r ? std::string() : "send: " + r.error().message();
}

// -- handshake --------------------------------------------------------------------------------

task<bool> connection::initiate() {
  // A peer says `nok` when it has a connection to us pending: normally its own attempt, which
  // comes to us next (a simultaneous connect). It may also be the end of a connection we have
  // just closed that it has not finished tearing down, and then nothing comes: the attempt is
  // made again rather than given up (with what it carries), until the peer's connection comes
  // or the handshake time is spent.
  const auto until = clock_type::now() + node_.opts.handshake_timeout;
  for (;;) {
    nok_unanswered_ = false;
    if (co_await initiate_once()) co_return true;
    if (!nok_unanswered_) co_return false;
    node_.log(log_level::notice, "distribution: '" + peer_ +
                                     "' said it is connecting to us, and did not: trying again");
    if (clock_type::now() >= until) {
      refuse("simultaneous connect: the peer's connection never came");
      co_return false;
    }
  }
}

task<bool> connection::initiate_once() {
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
  if (node_.tls && !co_await start_tls(false, host)) co_return false;
  cookie_ = node_.cookie_for(peer_);
  const std::string hello = frame(name_packet(node_.our_flags(), me_.creation, me_.name));
  if (!(co_await write(hello)).empty()) co_return false;
  stream_reader in(clock_type::now() + o.handshake_timeout, tls_.get(),
                   std::exchange(tls_rest_, {}));
  auto status = co_await in.packet(self_, sock_, tls_ ? 4 : 2);
  if (!status) {
    refuse("no status: " + status.error());
    co_return false;
  }
  if (*status == "snok") {
    // A simultaneous connect the peer won: its own connection comes to us through the kernel,
    // which hands the socket to this process.
    sock_.close();
    tls_.reset();
    // The peer's connection is already under way when it says so: a short wait.
    auto s = co_await self_.receive(on<net::tcp_socket>(),
                                    after(std::min<std::chrono::milliseconds>(
                                        o.handshake_timeout, std::chrono::milliseconds(500))));
    if (!s) {
      nok_unanswered_ = true;
      co_return false;
    }
    sock_ = std::move(s.get<net::tcp_socket>());
    auto a = co_await self_.receive(on<adopt_socket>(), after(o.handshake_timeout));
    if (!a) co_return false;
    adopt_socket& ad = a.get<adopt_socket>();
    tls_ = std::move(ad.tls);  // the session the acceptor made on that socket
    std::string none;
    co_return co_await accept_rest(ad.flags, ad.creation, std::move(none));
  }
  if (*status == "salive") {
    const std::string yes = frame("strue");  // we have no connection: the peer's is stale
    if (!(co_await write(yes)).empty()) co_return false;
  } else if (*status != "sok" && *status != "sok_simultaneous") {
    refuse("refused by the peer (" + status->substr(status->empty() ? 0 : 1) + ")");
    co_return false;
  }
  auto got = co_await in.packet(self_, sock_, tls_ ? 4 : 2);
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
  const std::string reply_packet = frame(reply);
  if (!(co_await write(reply_packet)).empty()) co_return false;
  auto ack = co_await in.packet(self_, sock_, tls_ ? 4 : 2);
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
  if (node_.tls && !co_await start_tls(true, {})) co_return false;
  stream_reader in(clock_type::now() + o.handshake_timeout, tls_.get(),
                   std::exchange(tls_rest_, {}));
  auto got = co_await in.packet(self_, sock_, tls_ ? 4 : 2);
  auto name = got ? parse_name(*got) : std::nullopt;
  if (!name) co_return false;  // not a version-6 peer
  const std::uint64_t flags = name->flags;
  const std::uint32_t creation = name->creation;
  peer_ = std::move(name->name);
  if ((flags & flag::required) != flag::required || peer_.find('@') == std::string::npos) {
    const std::string no = frame("snot_allowed");
    (void)co_await write(no);
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
    const std::string no = frame("snok");
    (void)co_await write(no);
    co_return false;
  }
  if (d == decision::simultaneous) {
    node_.log(log_level::notice,
              "distribution: simultaneous connect with '" + peer_ + "': its attempt replaces ours");
    const std::string ok = frame("sok_simultaneous");
    if (!(co_await write(ok)).empty()) co_return false;
    if (auto r5 = co_await net::controlling_process(self_, sock_, other); !r5) co_return false;
    self_.send(other, adopt_socket{{}, flags, creation, std::move(tls_)});
    co_return false;
  }
  if (d == decision::alive) {
    const std::string alive = frame("salive");
    if (!(co_await write(alive)).empty()) co_return false;
    auto answer = co_await in.packet(self_, sock_, tls_ ? 4 : 2);
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
    const std::string ok = frame("sok");
    if (!(co_await write(ok)).empty()) co_return false;
  }
  std::string rest = in.take_rest();
  co_return co_await accept_rest(flags, creation, std::move(rest));
}

task<bool> connection::accept_rest(std::uint64_t flags, std::uint32_t creation, std::string rest) {
  const node_options& o = node_.opts;
  cookie_ = node_.cookie_for(peer_);
  const std::uint32_t mine = random_challenge();
  const std::string challenge =
      frame(challenge_packet(node_.our_flags(), mine, me_.creation, me_.name));
  if (!(co_await write(challenge)).empty()) co_return false;
  stream_reader in(clock_type::now() + o.handshake_timeout, tls_.get(),
                   std::exchange(tls_rest_, {}));
  auto got = co_await in.packet(self_, sock_, tls_ ? 4 : 2);
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
  const std::string ack_packet = frame(ack);
  if (!(co_await write(ack_packet)).empty()) co_return false;
  rest += in.take_rest();
  co_return established(flags, creation, std::move(rest));
}

bool connection::established(std::uint64_t flags, std::uint32_t creation, std::string rest) {
  // Both sides speak fragments (we always do): every packet then has a distribution header.
  dist_header_ = (flags & flag::ours & flag::fragments) != 0;
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
    // Visible only if both sides publish themselves (as OTP decides it).
    it->second.visible = !node_.opts.hidden && (flags & flag::published) != 0;
    registered_ = true;
  }
  connected_ = true;
  node_.node_event(peer_, true, false);
  return true;
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
