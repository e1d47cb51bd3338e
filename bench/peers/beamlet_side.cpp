#include <beamlet/beamlet.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "workloads.hpp"

namespace peers::beamlet_side {

using namespace beamlet;
using namespace std::chrono_literals;

namespace {
using clock_type = std::chrono::steady_clock;
double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}
struct msg {
  std::int64_t value;
};
struct ack {};
struct stop {};

/// Runs `body` in a process and returns the time it reports.
template <class Body>
double in_process(Body body) {
  runtime rt;
  std::atomic<bool> done{false};
  double ns = 0;
  rt.spawn([&](process& self) -> task<> {
    ns = co_await body(self);
    done.store(true, std::memory_order_release);
  });
  while (!done.load(std::memory_order_acquire)) std::this_thread::sleep_for(1ms);
  return ns;
}
}  // namespace

double spawn_exit(std::int64_t n) {
  return in_process([n](process& self) -> task<double> {
    const auto t0 = clock_type::now();
    for (std::int64_t i = 0; i < n; ++i) {
      (void)self.spawn_monitor([](process&) -> task<> { co_return; });
      co_await self.receive(on<down>());
    }
    co_return ns_since(t0);
  });
}

double send_receive(std::int64_t n) {
  return in_process([n](process& self) -> task<double> {
    const pid me = self.self();
    const pid receiver = self.spawn_link([me, n](process& r) -> task<> {
      for (std::int64_t i = 0; i < n; ++i) {
        co_await r.receive(on<msg>());
        if (i % window == window - 1) r.send(me, ack{});
      }
      r.send(me, ack{});
    });
    const auto t0 = clock_type::now();
    for (std::int64_t i = 0; i < n; ++i) {
      self.send(receiver, msg{i});
      if (i % window == window - 1) co_await self.receive(on<ack>());
    }
    co_await self.receive(on<ack>());
    co_return ns_since(t0);
  });
}

double ping_pong(std::int64_t n) {
  return in_process([n](process& self) -> task<double> {
    const pid me = self.self();
    const pid echo = self.spawn_link([me, n](process& e) -> task<> {
      for (std::int64_t i = 0; i < n; ++i) {
        auto m = co_await e.receive(on<msg>());
        e.send(me, msg{m.get<msg>().value});
      }
    });
    const auto t0 = clock_type::now();
    for (std::int64_t i = 0; i < n; ++i) {
      self.send(echo, msg{i});
      co_await self.receive(on<msg>());
    }
    co_return ns_since(t0);
  });
}

double monitor(std::int64_t n) {
  return in_process([n](process& self) -> task<double> {
    const pid target =
        self.spawn_link([](process& t) -> task<> { co_await t.receive(on<stop>()); });
    const auto t0 = clock_type::now();
    for (std::int64_t i = 0; i < n; ++i) self.demonitor(self.monitor(target));
    const double ns = ns_since(t0);
    self.send(target, stop{});
    co_return ns;
  });
}

double down_fan_out(int watchers) {
  runtime rt;
  std::atomic<int> monitoring{0};
  std::atomic<int> downs{0};
  const pid target = rt.spawn([](process& self) -> task<> { co_await self.receive(on<stop>()); });
  for (int i = 0; i < watchers; ++i) {
    rt.spawn([&](process& self) -> task<> {
      (void)self.monitor(target);
      monitoring.fetch_add(1, std::memory_order_relaxed);
      co_await self.receive(on<down>());
      downs.fetch_add(1, std::memory_order_relaxed);
      // Stay alive (as on the CAF side): the measure is the delivery, not the watchers' exits.
      co_await self.receive(on<stop>());
    });
  }
  while (monitoring.load() < watchers) std::this_thread::sleep_for(1ms);
  const auto t0 = clock_type::now();
  rt.exit(target, exit_reason::kill());
  while (downs.load(std::memory_order_relaxed) < watchers) std::this_thread::sleep_for(20us);
  return ns_since(t0);
}

double down_fan_in(int dying) {
  runtime rt;
  std::vector<pid> victims;
  std::atomic<bool> ready{false}, all_down{false};
  rt.spawn([&, dying](process& self) -> task<> {
    victims.reserve(static_cast<std::size_t>(dying));
    for (int i = 0; i < dying; ++i) {
      const pid p = self.spawn([](process& d) -> task<> { co_await d.receive(on<stop>()); });
      (void)self.monitor(p);
      victims.push_back(p);
    }
    ready.store(true, std::memory_order_release);
    for (int i = 0; i < dying; ++i) co_await self.receive(on<down>());
    all_down.store(true, std::memory_order_release);
  });
  while (!ready.load(std::memory_order_acquire)) std::this_thread::sleep_for(1ms);
  const auto t0 = clock_type::now();
  for (const pid p : victims) rt.exit(p, exit_reason::kill());
  while (!all_down.load(std::memory_order_acquire)) std::this_thread::sleep_for(20us);
  return ns_since(t0);
}

}  // namespace peers::beamlet_side
