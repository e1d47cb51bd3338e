// Fragmented messages (DFLAG_FRAGMENTS), both ways. From an Erlang node: erl sends a message
// larger than its fragment size (64 KiB) in pieces, interleaved with other traffic on the
// connection; the node puts it back together, and small messages sent during the transfer
// arrive before it is complete. To an Erlang node: a 64 MiB message goes in fragments while
// another process's small messages keep making round trips (their latency measured), what its
// sender sends next arrives after it, and the sender is held until its last fragment is written
// (so a frozen peer bounds what it queues). With fragment_size 0 nothing gets past a large one.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace dist_fragment_cases {

using dist::term;

constexpr std::size_t big_size = std::size_t{64} << 20;

// What the sink saw, in order: small messages counted until the big one came.
struct arrivals {
  std::mutex mu;
  int smalls = 0;
  int smalls_before_big = -1;  // -1: the big one has not come
  std::size_t big_bytes = 0;
  bool big_intact = false;
};

TEST(DistFragments, ALargeMessageFromErlangArrivesWholeWhileSmallOnesOvertakeIt) {
  REQUIRE_ERL();
  arrivals seen;  // before the runtime: the sink reads it until the runtime is gone
  runtime rt;
  start_node(rt, "frag");
  erl_node erl("frag_peer");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  const pid sink = rt.spawn([&seen](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<term>());
      const term& t = m.get<term>();
      std::lock_guard lock(seen.mu);
      if (t.is_tuple() && t.size() == 2 && t[0].is_atom("big") && t[1].is_binary()) {
        const std::string& b = t[1].bin().bytes;
        bool intact = true;
        for (std::size_t i = 0; i < b.size() && intact; ++i)
          intact = static_cast<unsigned char>(b[i]) == (i & 255);
        seen.big_bytes = b.size();
        seen.big_intact = intact;
        seen.smalls_before_big = seen.smalls;
      } else if (t.is_tuple() && t.size() == 2 && t[0].is_atom("small")) {
        ++seen.smalls;
      }
    }
  });
  // A process on erl sends a small message every millisecond or so for a few seconds; the agent
  // asks it how many it has sent, then sends the big one. Those sent while the big one is on
  // its way come before its last piece.
  const term sent_before =
      erl.eval(me,
               "Small = spawn(fun() ->"
               "  Loop = fun L(I) when I > 3000 -> ok;"
               "             L(I) ->"
               "               receive {mark, From} -> From ! {mark, I - 1} after 0 -> ok end,"
               "               P ! {small, I}, timer:sleep(1), L(I + 1)"
               "           end,"
               "  Loop(1) end),"
               "Pattern = list_to_binary(lists:seq(0, 255)),"
               "Big = binary:copy(Pattern, Size div 256),"
               "timer:sleep(20), Small ! {mark, self()},"
               "N = receive {mark, M} -> M end,"
               "P ! {big, Big}, N.",
               {{"P", term(sink)}, {"Size", term(static_cast<std::int64_t>(big_size))}}, 60s);
  ASSERT_TRUE(sent_before.is_integer()) << sent_before.to_string();
  ASSERT_TRUE(eventually(
      [&] {
        std::lock_guard lock(seen.mu);
        return seen.smalls_before_big >= 0;
      },
      60s))
      << "the large message never arrived";
  std::lock_guard lock(seen.mu);
  EXPECT_EQ(seen.big_bytes, big_size);
  EXPECT_TRUE(seen.big_intact) << "the large message arrived with wrong bytes";
  std::printf(
      "%d small messages arrived before the 64 MiB one was complete, %lld of them sent "
      "before it\n",
      seen.smalls_before_big, static_cast<long long>(sent_before.integer()));
  // Those sent before it started came first anyway, and so may the one the small process sends
  // right after answering; more than those means some sent during its transfer got past it.
  // (Without fragments, the whole message is one packet and nothing sent after it gets past.)
  EXPECT_GT(seen.smalls_before_big, sent_before.integer() + 1)
      << "no small message got past the large one";
}

// -- to an Erlang node ------------------------------------------------------------------------

std::string pattern(std::size_t size) {
  std::string b(size, '\0');
  for (std::size_t i = 0; i < size; ++i) b[i] = static_cast<char>(i & 255);
  return b;
}

// On erl: `echo` answers {ping, From, I} with {pong, I}, and {count, From} with how many pings
// it has answered. `big` takes its first two messages in arrival order: when the first (the big
// one) is there, it asks echo for its count and tells the sender {arrived, Count}; then it
// checks the binary and tells the sender {checked, Size, Intact, Second}.
struct erl_side {
  pid echo;
  pid big;
};
erl_side start_erl_side(erl_node& erl, scoped_process& me) {
  const term t = erl.eval(me,
                          "Echo = spawn(fun() ->"
                          "  Loop = fun L(N) -> receive {ping, F, I} -> F ! {pong, I}, L(N + 1);"
                          "                             {count, F} -> F ! {count, N}, L(N) end end,"
                          "  Loop(0) end),"
                          "Big = spawn(fun() ->"
                          "  {big, From, Bin} = receive M1 -> M1 end,"
                          "  Echo ! {count, self()},"
                          "  From ! {arrived, receive {count, C} -> C end},"
                          "  Second = receive M2 -> M2 end,"
                          "  Pattern = list_to_binary(lists:seq(0, 255)),"
                          "  Intact = Bin =:= binary:copy(Pattern, byte_size(Bin) div 256),"
                          "  From ! {checked, byte_size(Bin), Intact, Second}"
                          "  end),"
                          "{Echo, Big}.");
  if (!t.is_tuple() || t.size() != 2 || !t[0].is_pid() || !t[1].is_pid()) return {};
  return {t[0].pid(), t[1].pid()};
}

// What the processes of one transfer saw (declared before the runtime, which they outlive).
struct transfer {
  std::atomic<bool> big_sent{false};  // the big send has returned
  std::atomic<bool> arrived{false};   // erl has all of it
  std::atomic<bool> checked{false};
  std::mutex mu;
  std::int64_t answered = -1;  // pings echo had answered when it arrived
  std::size_t size = 0;
  bool intact = false;
  bool after_it = false;             // the sender's next message came second
  std::vector<double> latencies_us;  // round trips completed while it was on its way
};

struct transfer_result {
  std::int64_t answered = -1;
  std::size_t trips = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Sends a 64 MiB binary to erl with the given fragment size while another process pings erl's
// echo, one round trip at a time, from the moment the big send has returned.
transfer_result send_big(std::size_t fragment_size) {
  transfer seen;
  const std::string payload = pattern(big_size);
  transfer_result out;
  runtime rt;
  dist::node_options o = loopback_options("fragout");
  o.fragment_size = fragment_size;
  auto n = dist::start(rt, o);
  EXPECT_TRUE(n) << n.error().message();
  if (!n) return out;
  erl_node erl("fragout_peer");
  scoped_process me(rt);
  EXPECT_TRUE(erl.wait_up(me));
  const erl_side side = start_erl_side(erl, me);
  EXPECT_TRUE(side.echo && side.big);
  if (!side.echo || !side.big) return out;
  rt.spawn([&seen, echo = side.echo](process& self) -> task<> {
    while (!seen.big_sent.load()) co_await self.receive(after(1ms));
    for (std::int64_t i = 0; !seen.arrived.load(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      self.send(echo, term::make_tuple({term::make_atom("ping"), term(self.self()), term(i)}));
      if (!co_await self.receive(on<term>(), after(60s))) co_return;
      if (seen.arrived.load()) break;  // this one may have ended after the big one
      const std::chrono::duration<double, std::micro> rtt = std::chrono::steady_clock::now() - t0;
      std::lock_guard lock(seen.mu);
      seen.latencies_us.push_back(rtt.count());
    }
  });
  rt.spawn([&seen, &payload, big = side.big](process& self) -> task<> {
    self.send(big, term::make_tuple(
                       {term::make_atom("big"), term(self.self()), term::make_binary(payload)}));
    // Sent before the sender's pause takes hold: it must still come second.
    self.send(big, term::make_atom("after"));
    seen.big_sent.store(true);
    for (int got = 0; got < 2;) {
      auto m = co_await self.receive(on<term>(), after(60s));
      if (!m) co_return;
      const term& t = m.get<term>();
      std::lock_guard lock(seen.mu);
      if (t.is_tuple() && t.size() == 2 && t[0].is_atom("arrived") && t[1].is_integer()) {
        seen.answered = t[1].integer();
        seen.arrived.store(true);
        ++got;
      } else if (t.is_tuple() && t.size() == 4 && t[0].is_atom("checked")) {
        seen.size = t[1].is_integer() ? static_cast<std::size_t>(t[1].integer()) : 0;
        seen.intact = t[2].is_atom("true");
        seen.after_it = t[3].is_atom("after");
        seen.checked.store(true);
        ++got;
      }
    }
  });
  EXPECT_TRUE(eventually([&] { return seen.checked.load(); }, 120s))
      << "the large message was not received and checked";
  std::lock_guard lock(seen.mu);
  EXPECT_EQ(seen.size, big_size);
  EXPECT_TRUE(seen.intact) << "the large message arrived with wrong bytes";
  EXPECT_TRUE(seen.after_it) << "what its sender sent next got past the large message";
  out.answered = seen.answered;
  std::vector<double> l = seen.latencies_us;
  std::sort(l.begin(), l.end());
  out.trips = l.size();
  if (!l.empty()) {
    out.p50_us = l[l.size() / 2];
    out.p99_us = l[std::min(l.size() - 1, l.size() * 99 / 100)];
  }
  std::printf(
      "fragment_size %zu: %lld pings answered before the 64 MiB message was complete; "
      "%zu round trips during it, p50 %.0f us, p99 %.0f us\n",
      fragment_size, static_cast<long long>(out.answered), out.trips, out.p50_us, out.p99_us);
  return out;
}

TEST(DistFragments, ALargeMessageToErlangGoesInFragmentsWhileSmallOnesKeepFlowing) {
  REQUIRE_ERL();
  const transfer_result r = send_big(64u << 10);
  // Every ping was sent after the big message was in the outbox; in fragments they get past it
  // (on loopback about a dozen round trips while 64 MiB cross, each waiting mostly for the
  // kernel's socket buffers; written whole, none).
  EXPECT_GE(r.answered, 3) << "small messages did not get past the large one";
}

TEST(DistFragments, WithoutFragmentsNothingGetsPastALargeMessage) {
  REQUIRE_ERL();
  // The control for the case above: written whole, the big packet is ahead of every ping on
  // the wire. (Echo may answer the first ping before `big` asks it for its count.)
  const transfer_result r = send_big(0);
  EXPECT_GE(r.answered, 0);
  EXPECT_LE(r.answered, 2) << "pings got past a message that was written whole";
}

// A peer that stops reading holds a large message's sender: its pause lasts until the last
// fragment is written, so it queues one large message at a time, however many it means to send.
TEST(DistFragments, TheSenderOfALargeMessageIsHeldUntilItIsWritten) {
  REQUIRE_ERL();
  constexpr std::size_t size = std::size_t{32} << 20;  // past the socket's queue and buffers
  constexpr int total = 3;
  std::atomic<int> sent{0};
  const std::string payload(size, 'x');
  runtime rt;
  start_node(rt, "fraghold");
  erl_node erl("fraghold_peer");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  // Counts {seq, I, Bin} in order; {get, From} answers {N, InOrder}.
  const term sink = erl.eval(me,
                             "spawn(fun() ->"
                             "  Loop = fun L(N, Ok) ->"
                             "    receive"
                             "      {seq, I, B} -> L(N + 1, Ok andalso I =:= N andalso"
                             "                               byte_size(B) =:= Size);"
                             "      {get, From} -> From ! {N, Ok}, L(N, Ok)"
                             "    end"
                             "  end,"
                             "  Loop(0, true) end).",
                             {{"Size", term(static_cast<std::int64_t>(size))}});
  ASSERT_TRUE(sink.is_pid()) << sink.to_string();
  erl.freeze();
  const pid sender = rt.spawn([&sent, &payload, to = sink.pid()](process& self) -> task<> {
    for (int i = 0; i < total; ++i) {
      self.send(to, term::make_tuple({term::make_atom("seq"), term(static_cast<std::int64_t>(i)),
                                      term::make_binary(payload)}));
      sent.store(i + 1);
      co_await self.yield();
    }
  });
  ASSERT_TRUE(eventually(
      [&] {
        const auto d = process_info(rt, sender);
        return d && d->status == process_status::suspended;
      },
      30s))
      << "the sender was not suspended";
  // Held for a while: the peer reads nothing, so its first message cannot be all written.
  EXPECT_FALSE(eventually([&] { return sent.load() > 1; }, 500ms));
  EXPECT_EQ(sent.load(), 1);
  const auto queued = dist::outbox_bytes(rt, erl.name());
  ASSERT_TRUE(queued);
  // The message, and at most a round of fragments taken and not yet handed to the socket.
  EXPECT_LE(*queued, size + 2 * (64u << 10)) << "more than one large message is queued";
  erl.thaw();
  EXPECT_TRUE(eventually([&] { return sent.load() == total; }, 60s))
      << "the sender did not go on: " << sent.load() << " sent";
  // All of them, in order (the last may still be on its way when the sender has gone on).
  const term all =
      term::make_tuple({term(static_cast<std::int64_t>(total)), term::make_atom("true")});
  term got;
  EXPECT_TRUE(eventually(
      [&] {
        got = erl.eval(me, "S ! {get, self()}, receive R -> R end.", {{"S", sink}}, 60s);
        return got == all;
      },
      60s))
      << got.to_string();
}

}  // namespace dist_fragment_cases
}  // namespace beamlet::test
