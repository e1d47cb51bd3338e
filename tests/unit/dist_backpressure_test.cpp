// Backpressure on a distribution connection (node_options::busy_limit): a real Erlang node is
// frozen (SIGSTOP), so it reads nothing, and what beamlet sends it fills the socket buffers and
// then the connection's outbox. Past the limit a sending process is suspended (status
// `suspended`, a busy_dist_port alarm) with its message queued; an outside thread waits; when
// the node is thawed everything arrives, in order, and the senders go on. A peer that stays
// frozen is still dropped after net_ticktime, and its suspended senders go on.
#include <beamlet/core/process_info.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/system_monitor.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace dist_backpressure_cases {

using dist::term;

constexpr std::size_t busy_limit = 1u << 20;
// Each message's binary: under the fragment size, so every message counts toward busy (a
// large one pauses its sender by itself: dist_fragment_test.cpp).
constexpr std::size_t chunk = 60000;

dist::node_options backpressure_options(const std::string& base) {
  dist::node_options o = loopback_options(base);
  o.busy_limit = busy_limit;
  return o;
}

term seq_message(int i, const std::string& payload) {
  return term::make_tuple(
      {term::make_atom("seq"), term(static_cast<std::int64_t>(i)), term::make_binary(payload)});
}

bool suspended(runtime& rt, pid p) {
  const auto d = process_info(rt, p);
  return d && d->status == process_status::suspended;
}

// An Erlang process that counts the {seq, I, _} messages it gets and checks that I runs 0, 1,
// 2...; {get, From} answers {sink, Count, InOrder}. Registered as bp_sink.
pid start_sink(erl_node& erl, scoped_process& me) {
  const term p = erl.eval(me,
                          "P = spawn(fun() ->"
                          "  Loop = fun L(N, Ok) ->"
                          "    receive"
                          "      {seq, I, _} -> L(N + 1, Ok andalso I =:= N);"
                          "      {get, From} -> From ! {sink, N, Ok}, L(N, Ok)"
                          "    end"
                          "  end,"
                          "  Loop(0, true)"
                          "end),"
                          "register(bp_sink, P), P.");
  return p.is_pid() ? p.pid() : pid();
}

// Whether `sender` comes to a stop, suspended (for half a second, within a minute). A sender
// that is merely waiting for a busy core is not suspended, so it is not taken for stopped.
bool stalls(runtime& rt, pid sender, const std::atomic<int>& count) {
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    if (!suspended(rt, sender)) {
      (void)eventually([&] { return suspended(rt, sender); }, 1s);
      continue;
    }
    const int before = count.load();
    if (!eventually([&] { return count.load() != before; }, 500ms) && suspended(rt, sender))
      return true;
  }
  return false;
}

TEST(DistBackpressure, SendersToAFrozenPeerAreSuspendedAndNothingIsLost) {
  REQUIRE_ERL();
  // What the processes share with the test outlives the runtime, which ends them.
  std::atomic<int> sent{0};
  std::atomic<bool> outside_done{false};
  runtime rt;
  auto n = dist::start(rt, backpressure_options("bp"));
  ASSERT_TRUE(n) << n.error().message();
  erl_node erl("bp_peer");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  const pid sink = start_sink(erl, me);
  ASSERT_TRUE(sink);
  scoped_process alarms(rt);
  system_monitor_settings sm;
  sm.subscriber = alarms.self();
  sm.busy_dist_port = true;
  set_system_monitor(rt, sm);

  const std::int64_t rss_before = resident_bytes();
  erl.freeze();
  // 117 MiB in all: far more than the socket buffers and the socket's own queue hold.
  constexpr int total = 2048;
  const pid sender = rt.spawn([&sent, sink](process& self) -> task<> {
    const std::string payload(chunk, 'x');
    for (int i = 0; i < total; ++i) {
      self.send(sink, seq_message(i, payload));
      sent.store(i + 1, std::memory_order_relaxed);
      co_await self.yield();
    }
  });
  // The sender may be suspended and resumed a few times while the socket's own queue and the
  // kernel's buffers fill; once they are full nothing drains, and it stays suspended.
  ASSERT_TRUE(stalls(rt, sender, sent)) << "the sender never stopped; it sent " << sent.load();
  const int at = sent.load();
  EXPECT_TRUE(suspended(rt, sender));
  EXPECT_LT(at, total / 2) << "the sender went far past what the buffers between us hold";
  // What this process holds for the frozen peer: the outbox (about the limit), the socket's
  // queue (1 MiB) and the message being encoded; 117 MiB without backpressure.
  const std::int64_t grown = resident_bytes() - rss_before;
  // (Not under a sanitizer: its shadow memory grows with what the process touches.)
  if (!sanitized) {
    EXPECT_LT(grown, std::int64_t{48} << 20) << "the sender's memory grew by " << grown;
  }
  std::printf("stalled after %d messages of %zu bytes; resident memory grew by %lld KiB\n", at,
              chunk, static_cast<long long>(grown >> 10));
  const auto queued = dist::outbox_bytes(rt, erl.name());
  ASSERT_TRUE(queued);
  EXPECT_GT(*queued, busy_limit / 2);  // busy until back at half the limit
  EXPECT_LE(*queued, busy_limit + 2 * (chunk + 64)) << "the outbox grew past the limit";

  // The sender's alarm. Any process that sends to the busy connection is paused and alarmed
  // too, as in OTP: the node's pg scope, whose discover to the peer (which runs no pg) is
  // retried now and then, may come first.
  bool senders_alarm = false;
  while (!senders_alarm) {
    auto a = alarms.receive(on<monitor_alarm>(), after(5s));
    ASSERT_TRUE(a) << "no busy_dist_port alarm for the sender";
    EXPECT_EQ(a.get<monitor_alarm>().which, monitor_alarm::kind::busy_dist_port);
    EXPECT_TRUE(a.get<monitor_alarm>().port);
    senders_alarm = a.get<monitor_alarm>().pid == sender;
  }

  // Another process that sends (by name) is suspended at its first send, and a suspended
  // process can still be killed.
  const std::string peer = erl.name();
  const pid victim = rt.spawn([peer](process& self) -> task<> {
    for (;;) {
      self.send("bp_sink", peer, term::make_tuple({term::make_atom("other")}));
      co_await self.yield();
    }
  });
  (void)me.monitor(victim);
  ASSERT_TRUE(eventually([&] { return suspended(rt, victim); }, 10s));
  rt.exit(victim, exit_reason::kill());
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d) << "a suspended process could not be killed";
  EXPECT_EQ(d.get<down>().reason.which(), exit_reason::kind::killed);

  // An outside thread waits too (at most net_ticktime), its message queued.
  std::thread outside([&] {
    rt.send(sink, term::make_tuple({term::make_atom("outside")}));
    outside_done.store(true);
  });
  EXPECT_FALSE(eventually([&] { return outside_done.load(); }, 300ms));

  erl.thaw();
  EXPECT_TRUE(eventually([&] { return sent.load() == total; }, 60s))
      << "the sender did not go on after the drain: " << sent.load() << " sent";
  outside.join();
  EXPECT_TRUE(outside_done.load());
  const term got = erl.eval(me, "S ! {get, self()}, receive {sink, N, Ok} -> {N, Ok} end.",
                            {{"S", term(sink)}}, 60s);
  EXPECT_EQ(got,
            term::make_tuple({term(static_cast<std::int64_t>(total)), term::make_atom("true")}))
      << got.to_string();
  EXPECT_TRUE(eventually([&] { return dist::outbox_bytes(rt, erl.name()).value_or(1) == 0; }));
}

TEST(DistBackpressure, AFrozenPeerIsStillDroppedAfterTheTickTimeAndItsSendersGoOn) {
  REQUIRE_ERL();
  std::atomic<bool> give_up{false};  // outlives the runtime, which ends the sender
  runtime rt;
  dist::node_options o = backpressure_options("bp_tick");
  o.net_ticktime = std::chrono::milliseconds(2000);
  o.handshake_timeout = std::chrono::milliseconds(1000);
  auto n = dist::start(rt, o);
  ASSERT_TRUE(n) << n.error().message();
  erl_node erl("bp_tick_peer");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  const pid sink = start_sink(erl, me);
  ASSERT_TRUE(sink);
  dist::monitor_node(me, erl.name());

  erl.freeze();
  const pid sender = rt.spawn([&give_up, sink](process& self) -> task<> {
    const std::string payload(chunk, 'x');
    for (int i = 0; !give_up.load(std::memory_order_relaxed); ++i) {
      self.send(sink, seq_message(i, payload));
      co_await self.yield();
    }
  });
  (void)me.monitor(sender);
  ASSERT_TRUE(eventually([&] { return suspended(rt, sender); }, 60s));
  // The write makes no progress for net_ticktime: the connection goes, and with it the pause.
  auto nd = me.receive(on<dist::nodedown>(), after(30s));
  ASSERT_TRUE(nd) << "a frozen peer was never dropped";
  give_up.store(true);
  auto d = me.receive(on<down>(), after(30s));
  ASSERT_TRUE(d) << "the suspended sender never went on after the connection was lost";
  EXPECT_EQ(d.get<down>().reason.which(), exit_reason::kind::normal);
  erl.thaw();
}

}  // namespace dist_backpressure_cases
}  // namespace beamlet::test
