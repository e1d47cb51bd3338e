// Flow control and timeouts of sockets (beamlet/net/tcp.hpp): the bounded send queue under both
// policies, a stalled writer cut off by send_timeout, recv timeouts that keep the data.
#include <beamlet/net/tcp.hpp>

#include <atomic>
#include <string>

#include "net_support.hpp"

namespace beamlet::test {
namespace {

net::tcp_listener listener_with(runtime& rt, const net::socket_options& accepted,
                                std::uint16_t& port) {
  net::listen_options o;
  o.accepted = accepted;
  auto l = net::listen(rt, o);
  if (!l) throw std::runtime_error("listen: " + l.error().message());
  port = l->port();
  return std::move(*l);
}

/// A byte pattern that shows reordering or loss: byte i is i mod 251.
std::string pattern(std::size_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((from + i) % 251);
  return s;
}

TEST(Recv, ATimeoutLeavesTheDataForTheNextRecv) {
  runtime rt;
  net::socket_options o;
  o.framing = net::framing::line;
  std::uint16_t port = 0;
  auto listener = listener_with(rt, o, port);
  std::error_code first;
  std::string second;
  std::atomic<bool> timed_out{false};
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    auto a = co_await net::recv(self, *s, 50ms);
    first = a.error();
    timed_out = true;
    auto b = co_await net::recv(self, *s, 10s);
    CO_ASSERT_TRUE(b);
    second = *b;
  });
  raw_client c(port);
  c.send("part");  // not a whole line yet
  ASSERT_TRUE(eventually([&] { return timed_out.load(); }));
  c.send("ial\n");
  ASSERT_TRUE(rt.wait(server, 10s));
  EXPECT_EQ(first, net::net_errc::timed_out);
  EXPECT_EQ(second, "partial\n");
}

TEST(Send, AFullQueueFailsAtOnceUnderTheErrorPolicy) {
  runtime rt;
  net::socket_options o;
  o.send_queue_limit = 64 * 1024;
  o.on_full = net::send_full::error;
  std::uint16_t port = 0;
  auto listener = listener_with(rt, o, port);
  std::size_t accepted_bytes = 0;
  std::error_code refused;
  const pid server = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    const std::string chunk(16 * 1024, 'q');
    for (int i = 0; i < 100'000; ++i) {  // the peer never reads: the kernel fills, then we do
      auto r = co_await net::send(self, *s, chunk);
      if (!r) {
        refused = r.error();
        break;
      }
      accepted_bytes += chunk.size();
    }
    CO_ASSERT_TRUE(s->queued_bytes() <= 64u * 1024u + 16u * 1024u);
  });
  raw_client c(port);
  ASSERT_TRUE(rt.wait(server, 20s));
  EXPECT_EQ(refused, net::net_errc::send_queue_full);
  EXPECT_GT(accepted_bytes, 0u);
}

TEST(Send, AFullQueueSuspendsTheWriterUntilThePeerReads) {
  runtime rt;
  net::socket_options o;
  o.send_queue_limit = 32 * 1024;
  std::uint16_t port = 0;
  auto listener = listener_with(rt, o, port);
  constexpr std::size_t total = 8 * 1024 * 1024;  // far more than the queue and the kernel hold
  constexpr std::size_t chunk = 4096;
  std::atomic<std::size_t> queued_peak{0};
  std::atomic<std::size_t> sent{0};
  const pid writer = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    for (std::size_t at = 0; at < total; at += chunk) {
      CO_ASSERT_TRUE(co_await net::send(self, *s, pattern(at, chunk)));
      sent = at + chunk;
      queued_peak = std::max(queued_peak.load(), s->queued_bytes());
    }
    co_await self.receive(on<go>());  // keep the socket until the reader has it all
  });
  raw_client c(port);
  // The writer stalls: it cannot get more than the kernel's buffers plus the queue ahead.
  ASSERT_TRUE(eventually([&] {
    const std::size_t before = sent.load();
    std::this_thread::sleep_for(100ms);
    // No progress, and parked (not merely starved of CPU by a loaded machine).
    const auto w = process_info(rt, writer);
    return before > 0 && sent.load() == before && w && w->status == process_status::waiting;
  }));
  const std::size_t stalled_at = sent.load();
  EXPECT_LT(stalled_at, total);
  const auto d = process_info(rt, writer);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, process_status::waiting);
  // Reading everything lets it finish, and every byte arrives once, in order.
  const std::string all = c.recv_exact(total, 60s);
  ASSERT_EQ(all.size(), total);
  EXPECT_TRUE(all == pattern(0, total));
  EXPECT_LE(queued_peak.load(), 32u * 1024u + chunk);
  scoped_process me(rt);
  me.send(writer, go{});
  ASSERT_TRUE(rt.wait(writer, 10s));
}

TEST(Send, AStalledWriteIsCutOffBySendTimeout) {
  runtime rt;
  net::socket_options o;
  o.send_queue_limit = 16 * 1024;
  o.send_timeout = 200ms;
  std::uint16_t port = 0;
  auto listener = listener_with(rt, o, port);
  std::error_code ended;
  const pid writer = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    const std::string chunk(8192, 'w');
    for (;;) {
      auto r = co_await net::send(self, *s, chunk);
      if (!r) {
        ended = r.error();
        co_return;
      }
    }
  });
  raw_client c(port);  // never reads
  ASSERT_TRUE(rt.wait(writer, 20s));
  EXPECT_EQ(ended, net::net_errc::timed_out) << ended.message();
  EXPECT_TRUE(c.closed_by_peer());
}

TEST(Send, AnExitSignalEndsAWriterWaitingForRoom) {
  runtime rt;
  net::socket_options o;
  o.send_queue_limit = 8 * 1024;
  o.send_timeout = infinity;
  std::uint16_t port = 0;
  auto listener = listener_with(rt, o, port);
  const pid writer = rt.spawn([&, listener](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, listener);
    CO_ASSERT_TRUE(s);
    const std::string chunk(8192, 'w');
    for (;;) CO_ASSERT_TRUE(co_await net::send(self, *s, chunk));
  });
  raw_client c(port);  // never reads
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, writer);
    return d && d->status == process_status::waiting;
  }));
  std::this_thread::sleep_for(100ms);
  rt.exit(writer, exit_reason::error("enough"));
  EXPECT_TRUE(rt.wait(writer, 10s));
  EXPECT_TRUE(c.closed_by_peer());
}

}  // namespace
}  // namespace beamlet::test
