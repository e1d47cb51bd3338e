// Cost axis: message passing.
#include <vector>

#include "bench_support.hpp"

namespace beamlet::bench {

namespace {
// Senders wait for an acknowledgement every `window` messages, so the receiver's backlog (and
// memory) stays bounded however the two are scheduled. The ack costs one round trip per window.
constexpr std::int64_t window = 1024;
struct ack {};
struct from_msg {
  pid from;
  std::int64_t value;
};
}  // namespace

// One iteration: one message from one process to another, received by selective receive.
void BM_SendReceive(benchmark::State& st) {
  runtime rt;
  run_in_process(st, rt, [](process& self, std::int64_t n) -> task<> {
    const pid me = self.self();
    const pid receiver = self.spawn_link([me, n](process& r) -> task<> {
      for (std::int64_t i = 0; i < n; ++i) {
        co_await r.receive(on<msg>());
        if (i % window == window - 1) r.send(me, ack{});
      }
      r.send(me, ack{});
    });
    for (std::int64_t i = 0; i < n; ++i) {
      self.send(receiver, msg{i});
      if (i % window == window - 1) co_await self.receive(on<ack>());
    }
    co_await self.receive(on<ack>());
  });
}
BENCHMARK(BM_SendReceive);

// One iteration: a round trip between two processes.
void BM_PingPong(benchmark::State& st) {
  runtime rt;
  run_in_process(st, rt, [](process& self, std::int64_t n) -> task<> {
    const pid me = self.self();
    const pid echo = self.spawn_link([me, n](process& e) -> task<> {
      for (std::int64_t i = 0; i < n; ++i) {
        auto m = co_await e.receive(on<msg>());
        e.send(me, msg{m.get<msg>().value});
      }
    });
    for (std::int64_t i = 0; i < n; ++i) {
      self.send(echo, msg{i});
      co_await self.receive(on<msg>());
    }
  });
}
BENCHMARK(BM_PingPong);

// One iteration: one message, sent by one of `senders` processes to a single receiver.
void BM_FanIn(benchmark::State& st) {
  runtime rt;
  const auto senders = static_cast<std::int64_t>(st.range(0));
  run_in_process(st, rt, [senders](process& self, std::int64_t n) -> task<> {
    const pid me = self.self();
    const std::int64_t per = n / senders;
    const std::int64_t total = per * senders;
    for (std::int64_t s = 0; s < senders; ++s) {
      self.spawn_link([me, per](process& p) -> task<> {
        for (std::int64_t i = 0; i < per; ++i) {
          p.send(me, from_msg{p.self(), i});
          if (i % window == window - 1) co_await p.receive(on<ack>());
        }
      });
    }
    for (std::int64_t i = 0; i < total; ++i) {
      auto m = co_await self.receive(on<from_msg>());
      const from_msg& f = m.get<from_msg>();
      if (f.value % window == window - 1) self.send(f.from, ack{});
    }
  });
}
BENCHMARK(BM_FanIn)->ArgName("senders")->Arg(1)->Arg(2)->Arg(4)->Arg(8);

}  // namespace beamlet::bench
