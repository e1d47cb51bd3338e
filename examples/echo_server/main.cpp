// echo_server: a supervised TCP echo server, each connection a process, and a load generator
// made of beamlet processes too. The walkthrough of docs/net.md.
//
//   echo_server                      serve on a free port, load it for 1 s with 20 clients, report
//   echo_server --clients 200 --seconds 3 --size 512
//   echo_server --port 7000 --serve  serve until interrupted (try: nc 127.0.0.1 7000)
//
// Loopback only. The load is bounded in connections (--clients, at most 1000) and in time
// (--seconds, at most 60). Exit status 0 if every echo came back intact.
#include <beamlet/beamlet.hpp>
#include <beamlet/net.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

using namespace beamlet;
using namespace std::chrono_literals;

// -- the server -----------------------------------------------------------------------------------

// A connection's process: the socket is its own, passive, raw bytes. recv suspends this process
// (and only it) until bytes arrive; an exit signal still ends it at once, closing the socket.
task<> echo(process& self, net::tcp_socket socket) {
  for (;;) {
    auto bytes = co_await net::recv(self, socket);
    if (!bytes) co_return;  // closed by the peer, or an error: the process ends, normal
    if (!co_await net::send(self, socket, *bytes)) co_return;
  }
}

// -- the load generator ---------------------------------------------------------------------------

struct load_result {
  std::atomic<std::uint64_t> round_trips{0};
  std::atomic<std::uint64_t> bad{0};
  std::atomic<std::uint64_t> failed{0};
};

// One client: sends `size` bytes, reads until they are all back, checks them, again.
task<> client(process& self, std::uint16_t port, std::size_t size,
              std::chrono::steady_clock::time_point until, load_result& out) {
  auto s = co_await net::connect(self, "127.0.0.1", port, {}, 5s);
  if (!s) {
    out.failed.fetch_add(1);
    co_return;
  }
  const std::string payload(size, static_cast<char>('a' + self.self().serial() % 26));
  while (std::chrono::steady_clock::now() < until) {
    if (!co_await net::send(self, *s, payload)) break;
    std::string back;
    while (back.size() < size) {
      auto part = co_await net::recv(self, *s, 5s);
      if (!part) break;
      back += *part;
    }
    if (back != payload) {
      out.bad.fetch_add(1);
      break;
    }
    out.round_trips.fetch_add(1, std::memory_order_relaxed);
  }
}

// -- main -----------------------------------------------------------------------------------------

namespace {
int usage(bool ok) {
  std::fputs(
      "usage: echo_server [--port N] [--serve] [--clients N] [--seconds S] [--size BYTES]\n"
      "  --port N      listen on 127.0.0.1:N (default: a free port)\n"
      "  --serve       serve until interrupted, no load\n"
      "  --clients N   concurrent load connections, 1..1000 (default 20)\n"
      "  --seconds S   load duration, 1..60 (default 1)\n"
      "  --size BYTES  message size, 1..65536 (default 64)\n",
      ok ? stdout : stderr);
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  long port = 0, clients = 20, seconds = 1, size = 64;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto number = [&](long lo, long hi, long& v) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      v = std::strtol(argv[++i], &end, 10);
      return *end == '\0' && v >= lo && v <= hi;
    };
    if (a == "--help") return usage(true);
    if (a == "--serve")
      serve = true;
    else if (a == "--port" && number(0, 65535, port)) {
    } else if (a == "--clients" && number(1, 1000, clients)) {
    } else if (a == "--seconds" && number(1, 60, seconds)) {
    } else if (a == "--size" && number(1, 65536, size)) {
    } else
      return usage(false);
  }

  runtime rt;
  scoped_process me(rt);

  // The supervision tree: a top supervisor with the acceptor pool under it.
  net::acceptor_pool_options pool;
  pool.name = "echo";
  pool.listen.port = static_cast<std::uint16_t>(port);
  pool.acceptors = 4;
  pool.max_connections = 2000;
  pool.handler = echo;
  const start_result top = supervisor::start_link(me, {}, [pool] {
    return supervisor_init(supervisor_flags{},
                           {child_spec("echo", net::acceptor_pool_start(pool))});
  });
  if (!top.is_ok()) {
    std::fprintf(stderr, "echo_server: could not start: %s\n", top.to_string().c_str());
    return 1;
  }
  const std::uint16_t bound = net::acceptor_pool::stats(rt, "echo")->port;
  std::printf("echo server on 127.0.0.1:%u (pid %s)\n", bound, top.pid().to_string().c_str());
  std::fflush(stdout);

  if (serve) {
    // Until Ctrl-C (or SIGTERM): then the tree stops in order, each connection getting its
    // child_spec's shutdown time to finish.
    const run_outcome out = run_until_signal(rt, top.pid());
    std::printf("stopped by signal %d\n", out.signal);
    return out.exit_code();
  } else {
    load_result result;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::vector<ref> done;
    std::vector<pid> loaders;
    for (long c = 0; c < clients; ++c) {
      const pid p = rt.spawn([&, until](process& self) -> task<> {
        co_await client(self, bound, static_cast<std::size_t>(size), until, result);
      });
      done.push_back(me.monitor(p));
      loaders.push_back(p);
    }
    for (std::size_t i = 0; i < done.size(); ++i) {
      const ref r = done[i];
      (void)me.receive(on<down>().when([r](const down& d) { return d.ref == r; }),
                       after(std::chrono::seconds(seconds + 30)));
    }
    const auto st = net::acceptor_pool::stats(rt, "echo");
    const double rate = static_cast<double>(result.round_trips) / static_cast<double>(seconds);
    std::printf(
        "%ld clients, %ld-byte messages, %ld s: %llu round trips (%.0f/s), %llu bad, "
        "%llu failed to connect; pool accepted %llu\n",
        clients, size, seconds, static_cast<unsigned long long>(result.round_trips.load()), rate,
        static_cast<unsigned long long>(result.bad.load()),
        static_cast<unsigned long long>(result.failed.load()),
        static_cast<unsigned long long>(st ? st->accepted : 0));
    if (result.bad != 0 || result.failed != 0 || result.round_trips == 0) return 1;
  }

  // Graceful stop: no new connections, the open ones get up to 2 s, then the tree goes.
  bool drained = false;
  const pid drainer = rt.spawn([&](process& self) -> task<> {
    drained = co_await net::acceptor_pool::drain(self, "echo", 2s);
  });
  (void)rt.wait(drainer, 10s);
  supervisor::stop(me, top.pid());
  std::printf("stopped (%s)\n", drained ? "drained" : "the last connections were stopped");
  return 0;
}
