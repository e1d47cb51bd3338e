// A minimal program using beamlet as a packaged dependency, including the installed testing
// helpers (beamlet/core/testing.hpp).
#include <beamlet/beamlet.hpp>
#include <beamlet/core/testing.hpp>

#include <chrono>
#include <cstdio>
#include <string>

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
  beamlet::scoped_process me(rt);
  rt.send(echo, ping{me.self()});
  try {
    (void)beamlet::testing::assert_receive<pong>(me, 5s);
    beamlet::testing::refute_receive<pong>(me, 10ms);
  } catch (const beamlet::testing::assertion_failure& e) {
    std::printf("consumer: %s\n", e.what());
    return 1;
  }
  const auto reason =
      beamlet::testing::run(rt, [](beamlet::process&) -> beamlet::task<> { co_return; });
  if (!reason || !reason->is_normal()) return 1;
  // The observability layer links too: a log event, process_info and the metrics text.
  beamlet::log(rt, beamlet::log_level::notice, "consumer: logging works");
  beamlet::logger::of(rt).flush();
  if (!beamlet::process_info(rt, me.self())) return 1;
  if (beamlet::prometheus_metrics(rt).find("beamlet_processes") == std::string::npos) return 1;
  // The library linked is the version of the headers included.
  if (std::string(beamlet::version().string) != BEAMLET_VERSION_STRING) {
    std::printf("consumer: headers %s, library %s\n", BEAMLET_VERSION_STRING,
                beamlet::version().string);
    return 1;
  }
  std::puts("consumer: pong received");
  return 0;
}
