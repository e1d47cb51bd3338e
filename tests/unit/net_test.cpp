// Sockets owned by processes (beamlet/net/tcp.hpp), over loopback: passive and active reads,
// framing, ownership and its hand-over, flow control, timeouts.
#include <beamlet/net/tcp.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <string>
#include <vector>

#include <beamlet/core/process_info.hpp>

#include "net_support.hpp"

extern char** environ;

namespace beamlet::test {
namespace {

using net::active_mode;
using net::framing;

/// A listener and its port.
struct listening {
  net::tcp_listener listener;
  std::uint16_t port = 0;
};
listening open_listener(runtime& rt, net::socket_options accepted = {}) {
  net::listen_options o;
  o.accepted = accepted;
  auto l = net::listen(rt, o);
  if (!l) throw std::runtime_error("listen: " + l.error().message());
  listening out;
  out.port = l->port();
  out.listener = std::move(*l);
  return out;
}

/// Accepts one connection and echoes every packet until the peer closes.
pid spawn_echo(runtime& rt, net::tcp_listener listener) {
  return rt.spawn([listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    for (;;) {
      auto p = co_await net::recv(self, *s);
      if (!p) co_return;
      CO_ASSERT_TRUE(co_await net::send(self, *s, *p));
    }
  });
}

TEST(Tcp, PassiveEchoOverLoopback) {
  runtime rt;
  auto [listener, port] = open_listener(rt);
  const pid server = spawn_echo(rt, listener);
  raw_client c(port);
  c.send("hello");
  EXPECT_EQ(c.recv_exact(5), "hello");
  c.send("world!");
  EXPECT_EQ(c.recv_exact(6), "world!");
  c.close();
  EXPECT_TRUE(rt.wait(server, 10s));
}

TEST(Tcp, AProcessConnectsSendsAndReceives) {
  runtime rt;
  net::socket_options framed;
  framed.framing = framing::prefix2;
  framed.max_packet = 1000;
  auto [listener, port] = open_listener(rt, framed);
  const pid server = spawn_echo(rt, listener);
  std::vector<std::string> got;
  auto r = run_process(rt, [&, p = port](process& self) -> task<> {
    net::socket_options o;
    o.framing = framing::prefix2;
    o.max_packet = 1000;
    auto s = co_await net::connect(self, "127.0.0.1", p, o, 5s);
    CO_ASSERT_TRUE(s);
    CO_ASSERT_EQ(s->owner(), self.self());
    CO_ASSERT_EQ(s->peer()->port, p);
    for (const char* m : {"one", "", "three"}) {
      CO_ASSERT_TRUE(co_await net::send(self, *s, m));
      auto back = co_await net::recv(self, *s, 5s);
      CO_ASSERT_TRUE(back);
      got.push_back(*back);
    }
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(got, (std::vector<std::string>{"one", "", "three"}));
  EXPECT_TRUE(rt.wait(server, 10s));  // the client's socket closed with its process
}

TEST(Tcp, ConnectErrorsAreErrorCodes) {
  runtime rt;
  std::uint16_t closed_port = 0;
  {
    auto l = open_listener(rt);
    closed_port = l.port;
    l.listener.close();
  }
  std::error_code refused, bad_host, bad_options;
  ASSERT_TRUE(run_process(rt, [&](process& self) -> task<> {
    auto a = co_await net::connect(self, "127.0.0.1", closed_port, {}, 5s);
    if (!a) refused = a.error();
    auto b = co_await net::connect(self, "no-such-host.invalid", 80, {}, 5s);
    if (!b) bad_host = b.error();
    net::socket_options o;
    o.max_packet = 0;
    auto c = co_await net::connect(self, "127.0.0.1", closed_port, o, 5s);
    if (!c) bad_options = c.error();
  }));
  EXPECT_EQ(refused, std::errc::connection_refused) << refused.message();
  EXPECT_TRUE(bad_host) << "a name that does not resolve";
  EXPECT_EQ(bad_options, net::net_errc::bad_options);
  EXPECT_FALSE(bad_options.message().empty());
}

TEST(Tcp, ConnectAndAcceptTimeOut) {
  runtime rt;
  // A listener whose backlog is full drops further handshakes, so a connect to it hangs.
  const int full = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(full, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(full, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(full, 0), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(full, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::uint16_t full_port = ntohs(a.sin_port);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int f = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(f, 0);
    (void)::connect(f, reinterpret_cast<sockaddr*>(&a), sizeof a);  // queued, or left waiting
    fillers.push_back(f);
  }
  auto [listener, port] = open_listener(rt);
  std::error_code connect_error, accept_error;
  std::string served;
  ASSERT_TRUE(run_process(rt, [&, l = listener, p = port](process& self) mutable -> task<> {
    auto c = co_await net::connect(self, "127.0.0.1", full_port, {}, 200ms);
    if (!c) connect_error = c.error();
    auto nobody = co_await net::accept(self, l, 50ms);
    if (!nobody) accept_error = nobody.error();
    // A connection that comes after a timed-out accept is not lost.
    const pid client = self.spawn([p](process& me) -> task<> {
      auto s = co_await net::connect(me, "127.0.0.1", p, {}, 5s);
      if (s) (void)co_await net::send(me, *s, "late but served");
      co_await me.receive(after(1s));
    });
    (void)client;
    auto s = co_await net::accept(self, l, 5s);
    CO_ASSERT_TRUE(s);
    auto got = co_await net::recv(self, *s, 5s);
    CO_ASSERT_TRUE(got);
    served = *got;
  }));
  ::close(full);
  for (int f : fillers) ::close(f);
  EXPECT_EQ(connect_error, net::net_errc::timed_out) << connect_error.message();
  EXPECT_EQ(accept_error, net::net_errc::timed_out);
  EXPECT_EQ(served, "late but served");
}

TEST(Framing, PrefixesArriveWholeHoweverTheBytesAreSplit) {
  runtime rt;
  net::socket_options o;
  o.framing = framing::prefix4;
  auto [listener, port] = open_listener(rt, o);
  std::vector<std::string> got;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    for (;;) {
      auto p = co_await net::recv(self, *s);
      if (!p) co_return;
      got.push_back(*p);
      CO_ASSERT_TRUE(co_await net::send(self, *s, "ack"));
    }
  });
  raw_client c(port);
  const std::string stream = prefix4("abc") + prefix4("") + prefix4(std::string(70000, 'x'));
  for (char ch : stream.substr(0, 9)) c.send(std::string(1, ch));  // byte by byte
  c.send(stream.substr(9));
  // Each packet is acknowledged with a prefixed "ack".
  EXPECT_EQ(c.recv_exact(3 * 7), prefix4("ack") + prefix4("ack") + prefix4("ack"));
  c.close();
  ASSERT_TRUE(rt.wait(server, 10s));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "abc");
  EXPECT_EQ(got[1], "");
  EXPECT_EQ(got[2], std::string(70000, 'x'));
}

TEST(Framing, LinesKeepTheirNewline) {
  runtime rt;
  net::socket_options o;
  o.framing = framing::line;
  o.max_packet = 64;
  auto [listener, port] = open_listener(rt, o);
  std::vector<std::string> got;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    for (;;) {
      auto p = co_await net::recv(self, *s);
      if (!p) co_return;
      got.push_back(*p);
    }
  });
  raw_client c(port);
  c.send("first li");
  c.send("ne\nsecond\nthi");
  c.send("rd\n");
  c.close();
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_EQ(got, (std::vector<std::string>{"first line\n", "second\n", "third\n"}));
}

TEST(Framing, PrefixSendsCheckTheSize) {
  runtime rt;
  net::socket_options o;
  o.framing = framing::prefix1;
  o.max_packet = 255;
  auto [listener, port] = open_listener(rt, o);
  std::error_code too_big;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    auto r = co_await net::send(self, *s, std::string(256, 'y'));
    if (!r) too_big = r.error();
    CO_ASSERT_TRUE(co_await net::send(self, *s, std::string(255, 'z')));
    (void)co_await net::recv(self, *s);
  });
  raw_client c(port);
  EXPECT_EQ(c.recv_exact(256), std::string(1, '\xFF') + std::string(255, 'z'));
  c.close();
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_EQ(too_big, net::net_errc::packet_too_large);
}

TEST(Active, OnceDeliversOnePacketThenWaitsToBeAskedAgain) {
  runtime rt;
  net::socket_options o;
  o.framing = framing::line;
  o.active = active_mode::once();
  auto [listener, port] = open_listener(rt, o);
  std::vector<std::string> got;
  std::atomic<bool> first_seen{false};
  bool quiet_while_passive = false;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    auto first = co_await self.receive(on<net::tcp_data>(), after(10s));
    CO_ASSERT_TRUE(first.get_if<net::tcp_data>() != nullptr);
    CO_ASSERT_EQ(first.get<net::tcp_data>().socket, s->id());
    got.push_back(first.get<net::tcp_data>().data);
    first_seen = true;
    // Two more lines were sent at once; passive now, nothing comes.
    auto none = co_await self.receive(on<net::tcp_data>(), after(200ms));
    quiet_while_passive = none.timed_out();
    for (int i = 0; i < 2; ++i) {
      CO_ASSERT_TRUE(net::set_active(self, *s, active_mode::once()));
      auto m = co_await self.receive(on<net::tcp_data>(), after(10s));
      CO_ASSERT_TRUE(!m.timed_out());
      got.push_back(m.get<net::tcp_data>().data);
    }
    CO_ASSERT_TRUE(net::set_active(self, *s, active_mode::once()));
    auto end = co_await self.receive(on<net::tcp_closed>(), after(10s));
    CO_ASSERT_TRUE(!end.timed_out());
  });
  raw_client c(port);
  c.send("a\nb\nc\n");
  EXPECT_TRUE(eventually([&] { return first_seen.load(); }));
  c.close();
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_TRUE(quiet_while_passive);
  EXPECT_EQ(got, (std::vector<std::string>{"a\n", "b\n", "c\n"}));
}

TEST(Active, NDeliversNPacketsThenTcpPassive) {
  runtime rt;
  net::socket_options o;
  o.framing = framing::line;
  o.active = active_mode::n(2);
  auto [listener, port] = open_listener(rt, o);
  std::vector<std::string> events;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    // Up to tcp_passive the events must come (however loaded the machine); after it, 500 ms of
    // quiet says nothing more arrives.
    bool passive = false;
    for (;;) {
      auto m = co_await self.receive(on<net::tcp_data>(), on<net::tcp_passive>(),
                                     on<net::tcp_closed>(), after(passive ? 500ms : 10s));
      if (m.timed_out()) break;
      if (auto* d = m.get_if<net::tcp_data>()) events.push_back(d->data);
      if (m.get_if<net::tcp_passive>() != nullptr) {
        events.push_back("passive");
        passive = true;
      }
      if (m.get_if<net::tcp_closed>() != nullptr) events.push_back("closed");
    }
  });
  raw_client c(port);
  c.send("1\n2\n3\n");
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_EQ(events, (std::vector<std::string>{"1\n", "2\n", "passive"}));
}

TEST(Active, ThePeersCloseIsTcpClosedAfterTheData) {
  runtime rt;
  net::socket_options o;
  o.active = active_mode::always();
  auto [listener, port] = open_listener(rt, o);
  std::string data;
  bool closed = false;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    for (;;) {
      auto m = co_await self.receive(on<net::tcp_data>(), on<net::tcp_closed>(), after(10s));
      CO_ASSERT_TRUE(!m.timed_out());
      if (auto* d = m.get_if<net::tcp_data>()) data += d->data;
      if (m.get_if<net::tcp_closed>() != nullptr) break;
    }
    closed = true;
    auto again = co_await net::send(self, *s, "late");
    CO_ASSERT_EQ(again.error(), net::net_errc::closed);
  });
  raw_client c(port);
  c.send(std::string(100000, 'd'));
  c.close();
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_TRUE(closed);
  EXPECT_EQ(data, std::string(100000, 'd'));
}

TEST(Ownership, OnlyTheOwnerMayUseTheSocket) {
  runtime rt;
  scoped_process me(rt);
  auto [listener, port] = open_listener(rt);
  std::atomic<net::tcp_socket*> handle{nullptr};
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    handle = &*s;
    co_await self.receive(on<go>());
  });
  raw_client c(port);
  ASSERT_TRUE(eventually([&] { return handle.load() != nullptr; }));
  std::error_code on_recv, on_send, on_active, on_handover;
  ASSERT_TRUE(run_process(rt, [&](process& other) -> task<> {
    net::tcp_socket& s = *handle.load();
    auto a = co_await net::recv(other, s, 100ms);
    on_recv = a.error();
    auto b = co_await net::send(other, s, "x");
    on_send = b.error();
    on_active = net::set_active(other, s, active_mode::once()).error();
    auto d = co_await net::controlling_process(other, s, other.self());
    on_handover = d.error();
  }));
  me.send(server, go{});
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_EQ(on_recv, net::net_errc::not_owner);
  EXPECT_EQ(on_send, net::net_errc::not_owner);
  EXPECT_EQ(on_active, net::net_errc::not_owner);
  EXPECT_EQ(on_handover, net::net_errc::not_owner);
  EXPECT_TRUE(c.closed_by_peer());  // closed with its owner
}

TEST(Ownership, ControllingProcessMovesTheQueuedMessagesInOrder) {
  runtime rt;
  net::socket_options o;
  o.framing = framing::line;
  o.active = active_mode::always();
  auto [listener, port] = open_listener(rt, o);
  std::vector<std::string> got;
  const pid heir = rt.spawn([&](process& self) -> task<> {
    auto m = co_await self.receive(on<net::tcp_socket>(), after(10s));
    CO_ASSERT_TRUE(!m.timed_out());
    net::tcp_socket s = std::move(m.get<net::tcp_socket>());
    CO_ASSERT_EQ(s.owner(), self.self());
    for (;;) {
      auto d = co_await self.receive(on<net::tcp_data>(), on<net::tcp_closed>(), after(10s));
      CO_ASSERT_TRUE(!d.timed_out());
      if (d.get_if<net::tcp_closed>() != nullptr) co_return;
      got.push_back(d.get<net::tcp_data>().data);
    }
  });
  std::atomic<bool> accepted{false};
  const pid first = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    accepted = true;
    co_await self.receive(on<go>());  // lines pile up in this mailbox meanwhile
    CO_ASSERT_TRUE(co_await net::controlling_process(self, *s, heir));
    CO_ASSERT_FALSE(*s);
  });
  raw_client c(port);
  ASSERT_TRUE(eventually([&] { return accepted.load(); }));
  c.send("1\n2\n3\n");
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, first);
    return d && d->message_queue_len >= 3;
  }));
  scoped_process me(rt);
  me.send(first, go{});
  ASSERT_TRUE(rt.wait(first, 10s));
  c.send("4\n");
  c.close();
  ASSERT_TRUE(rt.wait(heir, 10s));
  EXPECT_EQ(got, (std::vector<std::string>{"1\n", "2\n", "3\n", "4\n"}));
}

TEST(Ownership, TheSocketClosesWhenItsOwnerIsKilled) {
  runtime rt;
  const std::size_t before = net::open_sockets(rt);
  auto [listener, port] = open_listener(rt);
  std::atomic<bool> accepted{false};
  const pid owner = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    accepted = true;
    (void)co_await net::recv(self, *s);  // blocked here when the kill comes
  });
  raw_client c(port);
  ASSERT_TRUE(eventually([&] { return accepted.load(); }));
  rt.exit(owner, exit_reason::kill());
  ASSERT_TRUE(rt.wait(owner, 10s));  // the waiting recv did not hold it
  EXPECT_TRUE(c.closed_by_peer());
  listener.close();
  EXPECT_TRUE(eventually([&] { return net::open_sockets(rt) == before; }));
}

// A service that starts a child process (a helper, a port program, an erl node) must not hand
// it its sockets: the child's copy of a listener would go on taking connections that nobody
// accepts after close(). Found by the chaos soak, where erl nodes started mid-run held the
// acceptor pool's old listener. (Connections end at close() whoever holds a copy, because the
// close shuts them down; they are checked here too, so that it stays so.)
struct close_now {};

/// Whether a connect to the port is refused, without blocking: a listener that nobody accepts
/// from completes handshakes until its backlog is full, then leaves them pending.
bool connection_refused(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  int err = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    err = errno;
    pollfd p{fd, POLLOUT, 0};
    if (err == EINPROGRESS && ::poll(&p, 1, 200) == 1) {
      socklen_t len = sizeof err;
      (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  ::close(fd);
  return err == ECONNREFUSED;
}

TEST(Tcp, AChildProcessInheritsNoSocket) {
  runtime rt;
  auto [listener, port] = open_listener(rt);
  // An outside listener for the outgoing connection (close-on-exec itself, so the child holds
  // nothing of the test's own).
  const int outside = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(outside, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(outside, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(outside, 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(outside, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::uint16_t outside_port = ntohs(a.sin_port);

  // Both sockets are made, then a child is started, then each is closed.
  std::atomic<int> ready{0};
  const pid holder =
      rt.spawn([&, l = listener, op = outside_port](process& self) mutable -> task<> {
        auto in = co_await net::accept(self, l);
        CO_ASSERT_TRUE(in);
        auto out = co_await net::connect(self, "127.0.0.1", op, {}, 5s);
        CO_ASSERT_TRUE(out);
        ready = 1;
        co_await self.receive(on<close_now>());  // the child runs
      });
  raw_client c(port);
  ASSERT_TRUE(eventually([&] { return ready.load() == 1; }));
  const int accepted_outside = ::accept4(outside, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted_outside, 0);

  char sleep_cmd[] = "sleep";
  char thirty[] = "30";
  char* argv[] = {sleep_cmd, thirty, nullptr};
  pid_t child = 0;
  ASSERT_EQ(::posix_spawnp(&child, "sleep", nullptr, nullptr, argv, environ), 0);

  rt.send(holder, close_now{});  // its process ends: both sockets close
  ASSERT_TRUE(rt.wait(holder, 10s));
  listener.close();
  const bool accepted_side_ended = c.closed_by_peer(5s);
  pollfd p{accepted_outside, POLLIN, 0};
  char byte = 0;
  const bool connected_side_ended =
      ::poll(&p, 1, 5000) == 1 && ::recv(accepted_outside, &byte, 1, 0) == 0;
  const bool listener_refuses = eventually([&] { return connection_refused(port); }, 5s);

  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(accepted_outside);
  ::close(outside);
  EXPECT_TRUE(accepted_side_ended) << "an accepted socket stayed open in the child";
  EXPECT_TRUE(connected_side_ended) << "a connected socket stayed open in the child";
  EXPECT_TRUE(listener_refuses) << "a closed listener kept listening in the child";
}

}  // namespace
}  // namespace beamlet::test
