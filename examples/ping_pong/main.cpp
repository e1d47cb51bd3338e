// ping_pong: two processes, a monitor, and a mailbox for the main thread.
//
// Run it: build-dev/examples/ping_pong/ping_pong (or build-release/..., by preset). It takes
// no options; --help says so.
#include <beamlet/beamlet.hpp>

#include <chrono>
#include <cstdio>
#include <string_view>

using namespace beamlet;
using namespace std::chrono_literals;

struct ping {
  pid from;
  int n;
};
struct pong {
  int n;
};
struct quit {};

// A process body is a coroutine taking its own `process&`. It can co_await a receive anywhere.
task<> echo(process& self) {
  for (;;) {
    // Selective receive: the oldest message matching any clause; give up after 5 s of silence.
    auto m = co_await self.receive(on<ping>(), on<quit>(), after(5s));
    if (auto* p = m.get_if<ping>()) {
      self.send(p->from, pong{p->n});
    } else {
      co_return;  // quit, or timeout: exit with reason `normal`
    }
  }
}

int main(int argc, char** argv) {
  if (argc > 1) {  // no options: --help, or a mistake
    const bool help = std::string_view(argv[1]) == "--help";
    std::fputs("usage: ping_pong   (no options; runs three pings and exits, in a moment)\n",
               help ? stdout : stderr);
    return help ? 0 : 2;
  }
  runtime rt;  // one scheduler thread per core
  const pid server = rt.spawn(echo);

  // The main thread is not a process; a mailbox gives it a pid and a blocking receive.
  scoped_process me(rt);
  const ref mon = me.monitor(server);

  for (int i = 1; i <= 3; ++i) {
    rt.send(server, ping{me.self(), i});
    auto r = me.receive(on<pong>(), after(1s));
    std::printf("ping %d -> %s\n", i,
                r ? ("pong " + std::to_string(r.get<pong>().n)).c_str() : "timeout");
  }

  rt.send(server, quit{});
  auto d = me.receive(on<down>().when([mon](const down& x) { return x.ref == mon; }), after(1s));
  std::printf("server %s exited: %s\n", server.to_string().c_str(),
              d ? d.get<down>().reason.to_string().c_str() : "(no DOWN)");
  return d && d.get<down>().reason.is_normal() ? 0 : 1;
}
