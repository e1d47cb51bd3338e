// A minimal program using beamlet as a packaged dependency.
#include <beamlet/beamlet.hpp>

#include <chrono>
#include <cstdio>

struct ping {
  beamlet::pid from;
};
struct pong {};

int main() {
  using namespace std::chrono_literals;
  beamlet::runtime rt;
  const beamlet::pid echo = rt.spawn([](beamlet::process& self) -> beamlet::task<> {
    auto m = co_await self.receive(beamlet::on<ping>());
    self.send(m.get<ping>().from, pong{});
  });
  beamlet::mailbox me(rt);
  rt.send(echo, ping{me.self()});
  auto r = me.receive(beamlet::on<pong>(), beamlet::after(5s));
  std::puts(r ? "consumer: pong received" : "consumer: timed out");
  return r ? 0 : 1;
}
