// The echo servers compared by bench/net: beamlet (an acceptor pool, a process per connection)
// and plain Boost.Asio with C++20 coroutines on one thread (the floor: what Asio alone costs).
// Both echo raw bytes as they come.
// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <beamlet/beamlet.hpp>
#include <beamlet/net.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "net_bench.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

std::atomic<bool> stop_requested{false};

void wait_for_signal() {
  std::signal(SIGTERM, [](int) { stop_requested = true; });
  std::signal(SIGINT, [](int) { stop_requested = true; });
  while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// -- beamlet
// ----------------------------------------------------------------------------------------

beamlet::task<> echo_passive(beamlet::process& self, beamlet::net::tcp_socket s) {
  for (;;) {
    auto bytes = co_await beamlet::net::recv(self, s);
    if (!bytes) co_return;
    if (!co_await beamlet::net::send(self, s, *bytes)) co_return;
  }
}

// Active mode with a credit of 64 packets: the socket's lane pushes data without being asked for
// each packet, and the credit is topped up when it runs out (tcp_passive).
beamlet::task<> echo_active(beamlet::process& self, beamlet::net::tcp_socket s) {
  namespace net = beamlet::net;
  if (!net::set_active(self, s, net::active_mode::n(64))) co_return;
  for (;;) {
    auto m = co_await self.receive(beamlet::on<net::tcp_data>(), beamlet::on<net::tcp_passive>(),
                                   beamlet::on<net::tcp_closed>(), beamlet::on<net::tcp_error>());
    if (auto* d = m.get_if<net::tcp_data>()) {
      if (!co_await net::send(self, s, d->data)) co_return;
    } else if (m.get_if<net::tcp_passive>() != nullptr) {
      if (!net::set_active(self, s, net::active_mode::n(64))) co_return;
    } else {
      co_return;
    }
  }
}

// -- plain Asio -----------------------------------------------------------------------------------

asio::awaitable<void> asio_session(tcp::socket s) {
  char buf[65536];
  try {
    for (;;) {
      const std::size_t n = co_await s.async_read_some(asio::buffer(buf), asio::use_awaitable);
      co_await asio::async_write(s, asio::buffer(buf, n), asio::use_awaitable);
    }
  } catch (const std::exception&) {
    // The client went away.
  }
}

// Accepts on the first context and hands each connection to the next context in turn, each
// run by a thread of its own (Asio's io_context-per-core pattern, as beamlet's schedulers do).
asio::awaitable<void> asio_listen(tcp::acceptor& acceptor,
                                  std::vector<std::unique_ptr<asio::io_context>>& contexts) {
  for (std::size_t next = 0;; ++next) {
    asio::io_context& to = *contexts[next % contexts.size()];
    tcp::socket s = co_await acceptor.async_accept(to, asio::use_awaitable);
    s.set_option(tcp::no_delay(true));
    asio::co_spawn(to, asio_session(std::move(s)), asio::detached);
  }
}

}  // namespace

int run_beamlet_server(std::uint16_t port, bool active, unsigned schedulers) {
  beamlet::runtime rt(beamlet::runtime_options{.schedulers = schedulers});
  beamlet::scoped_process me(rt);
  beamlet::net::acceptor_pool_options pool;
  pool.name = "echo";
  pool.listen.port = port;
  pool.acceptors = 4;
  pool.max_connections = 100000;
  if (active)
    pool.handler = echo_active;
  else
    pool.handler = echo_passive;
  const beamlet::start_result top = beamlet::supervisor::start_link(me, {}, [pool] {
    return beamlet::supervisor_init(
        beamlet::supervisor_flags{},
        {beamlet::child_spec("echo", beamlet::net::acceptor_pool_start(pool))
             .with_type(beamlet::child_type::supervisor)});
  });
  if (!top.is_ok()) {
    std::fprintf(stderr, "net_bench: beamlet server did not start: %s\n", top.to_string().c_str());
    return 1;
  }
  std::printf("ready %u\n", beamlet::net::acceptor_pool::stats(rt, "echo")->port);
  std::fflush(stdout);
  wait_for_signal();
  beamlet::supervisor::stop(me, top.pid());
  return 0;
}

int run_asio_server(std::uint16_t port, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  for (unsigned i = 0; i < threads; ++i) contexts.push_back(std::make_unique<asio::io_context>(1));
  asio::io_context& first = *contexts.front();
  tcp::acceptor acceptor(first, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  acceptor.listen(asio::socket_base::max_listen_connections);
  asio::co_spawn(first, asio_listen(acceptor, contexts), asio::detached);
  std::printf("ready %u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  for (auto& c : contexts) work.push_back(asio::make_work_guard(*c));
  std::vector<std::thread> running;
  for (auto& c : contexts) running.emplace_back([&ioc = *c] { ioc.run(); });
  wait_for_signal();
  for (auto& c : contexts) c->stop();
  for (std::thread& t : running) t.join();
  return 0;
}
