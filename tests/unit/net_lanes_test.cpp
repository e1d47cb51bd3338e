// Sockets served on every scheduler (docs/architecture.md, "Network I/O: on every scheduler"):
// connections made on several schedulers at once, a socket's requests made from one scheduler
// and then another, a scheduler that never goes idle, and a runtime that ends with sockets open
// on all of them.
#include <beamlet/net/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "net_support.hpp"

namespace beamlet::test {
namespace {

using net::framing;

runtime_options lane_runtime(unsigned n) {
  runtime_options o;
  o.schedulers = n;
  return o;
}

net::socket_options lane_framed() {
  net::socket_options o;
  o.framing = framing::prefix2;
  o.max_packet = 4096;
  return o;
}

net::tcp_listener lane_listener(runtime& rt, net::socket_options accepted) {
  net::listen_options o;
  o.accepted = accepted;
  auto l = net::listen(rt, o);
  if (!l) throw std::runtime_error("listen: " + l.error().message());
  return std::move(*l);
}

/// Accepts one connection and echoes its packets until the peer closes.
void spawn_lane_echo(runtime& rt, net::tcp_listener l) {
  rt.spawn([l](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, l);
    if (!s) co_return;
    for (;;) {
      auto p = co_await net::recv(self, *s);
      if (!p || !co_await net::send(self, *s, *p)) co_return;
    }
  });
}

std::size_t lane_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Many clients and servers, made by processes on four schedulers at once: every echo comes
// back whole and to the right client.
TEST(NetLanes, ConnectionsOnEverySchedulerEchoAtOnce) {
  runtime rt(lane_runtime(4));
  const net::tcp_listener l = lane_listener(rt, lane_framed());
  const std::uint16_t port = l.port();
  constexpr int connections = 16;
  constexpr int round_trips = 300;
  for (int i = 0; i < connections; ++i) spawn_lane_echo(rt, l);
  std::atomic<int> good{0};
  std::vector<pid> clients;
  for (int i = 0; i < connections; ++i) {
    clients.push_back(rt.spawn([i, port, &good](process& self) -> task<> {
      auto s = co_await net::connect(self, "127.0.0.1", port, lane_framed(), 10s);
      if (!s) co_return;
      for (int k = 0; k < round_trips; ++k) {
        const std::string out = std::to_string(i) + ":" + std::to_string(k);
        if (!co_await net::send(self, *s, out)) co_return;
        auto back = co_await net::recv(self, *s, 10s);
        if (!back || *back != out) co_return;
        // Now and then let another scheduler take this process: its next requests then come
        // from there.
        if (k % 7 == 0) co_await self.yield();
      }
      good.fetch_add(1);
    }));
  }
  for (pid c : clients) EXPECT_TRUE(rt.wait(c, 60s));
  EXPECT_EQ(good.load(), connections);
}

// A process sends while the kernel's buffer is full (so its packets queue on the socket's lane)
// and keeps being moved between schedulers by busy neighbours: the peer gets every byte in the
// order of the sends, whichever scheduler each send came from.
TEST(NetLanes, SendsFromSeveralSchedulersKeepTheirOrder) {
  runtime rt(lane_runtime(4));
  net::tcp_listener l = lane_listener(rt, {});
  std::atomic<bool> stop{false};
  for (int i = 0; i < 6; ++i) {
    rt.spawn([&stop](process& self) -> task<> {
      while (!stop.load(std::memory_order_relaxed)) co_await self.yield();
    });
  }
  constexpr int packets = 3000;
  constexpr std::size_t size = 1000;
  std::atomic<int> sent{0};
  rt.spawn([l, &sent](process& self) mutable -> task<> {
    auto s = co_await net::accept(self, l, 10s);
    if (!s) co_return;
    for (int k = 0; k < packets; ++k) {
      std::string p(size, static_cast<char>('a' + k % 26));
      const std::string n = std::to_string(k);
      p.replace(0, n.size(), n);
      if (!co_await net::send(self, *s, p)) co_return;
      sent.fetch_add(1);
      if (k % 3 == 0) co_await self.yield();
    }
    (void)co_await net::recv(self, *s, 30s);  // until the peer closes
  });
  raw_client c(l.port());
  // Read slowly at first, so that sends queue behind a full kernel buffer.
  EXPECT_TRUE(eventually([&] { return sent.load() > 100; }));
  const std::string got = c.recv_exact(packets * size, 30s);
  stop = true;
  ASSERT_EQ(got.size(), packets * size);
  for (int k = 0; k < packets; ++k) {
    std::string want(size, static_cast<char>('a' + k % 26));
    const std::string n = std::to_string(k);
    want.replace(0, n.size(), n);
    ASSERT_EQ(got.compare(static_cast<std::size_t>(k) * size, size, want), 0) << "packet " << k;
  }
}

// A scheduler that always has a process to run never parks in its event loop: it still polls
// it between runs, so its sockets are served.
TEST(NetLanes, ASchedulerThatNeverIdlesStillServesItsSockets) {
  runtime rt(lane_runtime(1));
  std::atomic<bool> stop{false};
  rt.spawn([&stop](process& self) -> task<> {
    while (!stop.load(std::memory_order_relaxed)) co_await self.yield();
  });
  net::tcp_listener l = lane_listener(rt, {});
  spawn_lane_echo(rt, l);
  raw_client c(l.port());
  for (int k = 0; k < 50; ++k) {
    const std::string out = "ping " + std::to_string(k);
    c.send(out);
    ASSERT_EQ(c.recv_exact(out.size(), 10s), out);
  }
  stop = true;
}

// A runtime that ends with connections open on all its schedulers, with reads pending and
// bytes queued, closes every descriptor.
TEST(NetLanes, ARuntimeEndsWithSocketsOpenOnEveryScheduler) {
  const std::size_t before = lane_descriptors();
  std::vector<std::unique_ptr<raw_client>> peers;
  {
    runtime rt(lane_runtime(4));
    net::tcp_listener l = lane_listener(rt, {});
    std::atomic<int> ready{0};
    for (int i = 0; i < 12; ++i) {
      rt.spawn([l, &ready](process& self) mutable -> task<> {
        auto s = co_await net::accept(self, l);
        if (!s) co_return;
        // More than the peer reads: the rest stays queued on the lane.
        (void)co_await net::send(self, *s, std::string(std::size_t{4} << 20, 'q'));
        ready.fetch_add(1);
        (void)co_await net::recv(self, *s);  // pending when the runtime ends
      });
    }
    for (int i = 0; i < 12; ++i) peers.push_back(std::make_unique<raw_client>(l.port()));
    ASSERT_TRUE(eventually([&] { return ready.load() == 12; }));
  }
  peers.clear();
  EXPECT_TRUE(eventually([&] { return lane_descriptors() <= before; }))
      << lane_descriptors() << " descriptors open, " << before << " before";
}

}  // namespace
}  // namespace beamlet::test
