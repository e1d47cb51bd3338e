// A program linked with the core layer alone (no OTP, observability, net or distribution
// objects): the core has no link-time dependency on the layers above it. Its runtime starts
// with an empty hook table (no startup entry, so no logger) and runs processes as usual; a hook
// installed later is called, and one removed is not.
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>

namespace {
struct ping {
  beamlet::pid from;
  int n;
};
struct pong {
  int n;
};

// Counts the crash reports it is given. Declared before the runtime, so it outlives the core,
// as a hook must.
class crash_counter final : public beamlet::detail::event_sink {
 public:
  void emit(beamlet::log_event&& e) noexcept override {
    if (e.report != "crash_report") return;
    const std::lock_guard lock(mu_);
    ++crashes_;
    cv_.notify_all();
  }
  // Waits (at most 10 s) for at least n reports; returns the count seen.
  int wait_for(int n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return crashes_ >= n; });
    return crashes_;
  }
  int count() {
    const std::lock_guard lock(mu_);
    return crashes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int crashes_ = 0;
};

// Spawns a process that dies of an exception and waits for its end.
void crash_one(beamlet::scoped_process& me, const char* why) {
  const beamlet::pid p = me.spawn([why](beamlet::process&) -> beamlet::task<> {
    throw std::runtime_error(why);
    co_return;
  });
  const beamlet::ref r = me.monitor(p);
  (void)me.receive(
      beamlet::on<beamlet::down>().when([r](const beamlet::down& d) { return d.ref == r; }),
      beamlet::after(std::chrono::seconds(10)));
}

bool check(bool ok, const char* what) {
  if (!ok) std::printf("core alone: %s\n", what);
  return ok;
}
}  // namespace

int main() {
  using namespace std::chrono_literals;
  namespace detail = beamlet::detail;
  crash_counter counter;
  beamlet::runtime rt;
  beamlet::scoped_process me(rt);
  if (!check(!detail::log_enabled(rt.core(), beamlet::log_level::emergency),
             "events are on with an empty hook table"))
    return 1;
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
  crash_one(me, "nobody is listening");
  // Installed, the hook gets the next crash report; removed, it gets no more, and the levels
  // are off again.
  detail::install_hook(rt.core(), &counter);
  detail::set_event_level(rt.core(), beamlet::log_level::info, true);
  if (!check(detail::report_enabled(rt.core(), beamlet::log_level::error),
             "reports are off with a sink installed"))
    return 1;
  crash_one(me, "counted");
  if (!check(counter.wait_for(1) == 1, "the installed sink did not get exactly one crash report"))
    return 1;
  detail::install_hook(rt.core(), static_cast<detail::event_sink*>(nullptr));
  if (!check(!detail::report_enabled(rt.core(), beamlet::log_level::emergency),
             "reports are on after the sink was removed"))
    return 1;
  crash_one(me, "not counted");
  // (A crash report is emitted before the DOWN that crash_one waits for.)
  if (!check(counter.count() == 1, "the removed sink got a report")) return 1;
  std::printf("core alone: %d replies, sum %d; 1 crash report through the installed hook\n", 100,
              total);
  return total == 5050 ? 0 : 1;
}
