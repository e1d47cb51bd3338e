// A program linked with the core layer alone (no OTP, observability, net or distribution
// objects): the core has no link-time dependency on the layers above it. Its runtime starts
// without a logger (the layers' hook table is absent) and runs processes as usual.
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace {
struct ping {
  beamlet::pid from;
  int n;
};
struct pong {
  int n;
};
}  // namespace

int main() {
  using namespace std::chrono_literals;
  beamlet::runtime rt;
  beamlet::scoped_process me(rt);
  const beamlet::pid echo = me.spawn_link([](beamlet::process& self) -> beamlet::task<> {
    for (;;) {
      auto m = co_await self.receive(beamlet::on<ping>());
      const ping& p = m.get<ping>();
      self.send(p.from, pong{p.n + 1});
    }
  });
  int total = 0;
  for (int i = 0; i < 100; ++i) {
    me.send(echo, ping{me.self(), i});
    auto r = me.receive(beamlet::on<pong>(), beamlet::after(10s));
    if (!r) {
      std::puts("core alone: no reply");
      return 1;
    }
    total += r.get<pong>().n;
  }
  // A process that dies of an exception reports it through the event hook: with no logger
  // installed, the report goes nowhere instead of failing.
  (void)rt.spawn([](beamlet::process&) -> beamlet::task<> {
    throw std::runtime_error("nobody is listening");
    co_return;
  });
  std::printf("core alone: %d replies, sum %d\n", 100, total);
  return total == 5050 ? 0 : 1;
}
