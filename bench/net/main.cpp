// net_bench: echo round trips over loopback, for scripts/bench-net.
//
//   net_bench server beamlet|beamlet-active|asio [--port N] [--schedulers N]
//                                            prints "ready PORT", serves until SIGTERM
//                                            (--schedulers: beamlet's schedulers, or Asio's
//                                             threads; default one per core)
//   net_bench client --port N [--connections C] [--size BYTES] [--seconds S] [--warmup S]
//
// The client prints one JSON line (round trips/s, MiB/s both ways, p50/p99 latency in µs) and
// works against any echo server, the BEAM one of bench/beam/echo_server.exs included.
#include <cstdio>
#include <string>
#include <string_view>

#include "../common/cli.hpp"
#include "net_bench.hpp"

namespace {
int usage(bool ok) {
  std::fputs(
      "usage: net_bench server beamlet|beamlet-active|asio [--port N] [--schedulers N]\n"
      "       net_bench client --port N [--connections C] [--size BYTES] [--seconds S]"
      " [--warmup S]\n",
      ok ? stdout : stderr);
  return ok ? 0 : 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(false);
  const std::string_view mode = argv[1];
  if (mode == "--help") return usage(true);
  try {
    std::int64_t port = 0, connections = 1, size = 64, schedulers = 0;
    double seconds = 3, warmup = 0.5;
    std::string_view kind;
    int i = 2;
    if (mode == "server") {
      if (argc < 3) return usage(false);
      kind = argv[2];
      i = 3;
    } else if (mode != "client") {
      return usage(false);
    }
    for (; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (i + 1 >= argc) throw cli::error(std::string(a) + ": needs a value");
      const std::string_view v = argv[++i];
      if (a == "--port")
        port = cli::parse_count(a, v, 0, 65535);
      else if (a == "--connections")
        connections = cli::parse_count(a, v, 1, 10000);
      else if (a == "--size")
        size = cli::parse_count(a, v, 1, 1 << 20);
      else if (a == "--seconds")
        seconds = static_cast<double>(cli::parse_count(a, v, 1, 600));
      else if (a == "--schedulers")
        schedulers = cli::parse_count(a, v, 0, 1024);
      else if (a == "--warmup")
        warmup = static_cast<double>(cli::parse_count(a, v, 0, 60));
      else
        throw cli::error(std::string(a) + ": unknown option");
    }
    const auto p = static_cast<std::uint16_t>(port);
    if (mode == "client") {
      if (port == 0) throw cli::error("client: --port is required");
      return run_client(p, static_cast<int>(connections), static_cast<int>(size), seconds, warmup);
    }
    const auto sched = static_cast<unsigned>(schedulers);
    if (kind == "beamlet") return run_beamlet_server(p, false, sched);
    if (kind == "beamlet-active") return run_beamlet_server(p, true, sched);
    if (kind == "asio") return run_asio_server(p, sched);
    throw cli::error("server: unknown kind '" + std::string(kind) + "'");
  } catch (const cli::error& e) {
    std::fprintf(stderr, "net_bench: %s\n", e.what());
    return usage(false);
  }
}
