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
        const std::string_view b = t[1].bin().bytes();
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

// On erl, one process takes everything of the transfer in the order it arrives (erts delivers
// a connection's messages in wire order): {ping, From, I} is answered with {pong, I} and
// counted; `after` before the big message means the order broke; {big, From, Bin} is answered
// with {arrived, PingsBeforeIt} at once and {checked, Size, Intact, OrderKept} after a look.
pid start_erl_sink(erl_node& erl, scoped_process& me) {
  const term t =
      erl.eval(me,
               "Echo = fun E() -> receive {ping, F, I} -> F ! {pong, I}, E(); _ -> E() end end,"
               "spawn(fun() ->"
               "  Loop = fun L(N, AfterFirst) ->"
               "    receive"
               "      {ping, F, I} -> F ! {pong, I}, L(N + 1, AfterFirst);"
               "      'after' -> L(N, true);"
               "      {big, From, Bin} ->"
               "        From ! {arrived, N},"
               "        Pattern = list_to_binary(lists:seq(0, 255)),"
               "        Intact = Bin =:= binary:copy(Pattern, byte_size(Bin) div 256),"
               "        From ! {checked, byte_size(Bin), Intact, not AfterFirst},"
               "        Echo()"
               "    end"
               "  end,"
               "  Loop(0, false) end).");
  return t.is_pid() ? t.pid() : pid();
}

// What the processes of one transfer saw (declared before the runtime, which they outlive).
struct transfer {
  std::atomic<bool> big_sent{false};  // the big send has returned
  std::atomic<bool> checked{false};
  std::mutex mu;
  std::int64_t answered = -1;  // pings that arrived before the big message was complete
  std::size_t size = 0;
  bool intact = false;
  bool order_kept = false;           // the big sender's next message came after it
  std::vector<double> latencies_us;  // of the pings' round trips
};

constexpr int burst = 20;

// Sends a 64 MiB binary to erl with the given fragment size; once the send has returned (the
// message is in the outbox), another process sends a burst of small pings to the same erl
// process and times their answers. With fragments the pings get past the big message; written
// whole, none can: erl's process sees them in wire order, so this does not depend on timing.
std::int64_t send_big(std::size_t fragment_size) {
  transfer seen;
  const std::string payload = pattern(big_size);
  runtime rt;
  dist::node_options o = loopback_options("fragout");
  o.fragment_size = fragment_size;
  auto n = dist::start(rt, o);
  EXPECT_TRUE(n) << n.error().message();
  if (!n) return -1;
  erl_node erl("fragout_peer");
  scoped_process me(rt);
  EXPECT_TRUE(erl.wait_up(me));
  const pid sink = start_erl_sink(erl, me);
  EXPECT_TRUE(sink);
  if (!sink) return -1;
  rt.spawn([&seen, sink](process& self) -> task<> {
    while (!seen.big_sent.load()) co_await self.receive(after(1ms));
    std::vector<std::chrono::steady_clock::time_point> sent;
    for (std::int64_t i = 0; i < burst; ++i) {
      sent.push_back(std::chrono::steady_clock::now());
      self.send(sink, term::make_tuple({term::make_atom("ping"), term(self.self()), term(i)}));
    }
    for (int got = 0; got < burst; ++got) {
      auto m = co_await self.receive(on<term>(), after(120s));
      if (!m) co_return;
      const term& t = m.get<term>();
      if (!t.is_tuple() || t.size() != 2 || !t[1].is_integer()) continue;
      const auto i = static_cast<std::size_t>(t[1].integer());
      if (i >= sent.size()) continue;
      const std::chrono::duration<double, std::micro> rtt =
          std::chrono::steady_clock::now() - sent[i];
      std::lock_guard lock(seen.mu);
      seen.latencies_us.push_back(rtt.count());
    }
  });
  rt.spawn([&seen, &payload, sink](process& self) -> task<> {
    self.send(sink, term::make_tuple(
                        {term::make_atom("big"), term(self.self()), term::make_binary(payload)}));
    // Sent before the sender's pause takes hold: it must still come after the big one.
    self.send(sink, term::make_atom("after"));
    seen.big_sent.store(true);
    for (int got = 0; got < 2;) {
      auto m = co_await self.receive(on<term>(), after(120s));
      if (!m) co_return;
      const term& t = m.get<term>();
      std::lock_guard lock(seen.mu);
      if (t.is_tuple() && t.size() == 2 && t[0].is_atom("arrived") && t[1].is_integer()) {
        seen.answered = t[1].integer();
        ++got;
      } else if (t.is_tuple() && t.size() == 4 && t[0].is_atom("checked")) {
        seen.size = t[1].is_integer() ? static_cast<std::size_t>(t[1].integer()) : 0;
        seen.intact = t[2].is_atom("true");
        seen.order_kept = t[3].is_atom("true");
        seen.checked.store(true);
        ++got;
      }
    }
  });
  EXPECT_TRUE(eventually([&] { return seen.checked.load(); }, 180s))
      << "the large message was not received and checked";
  EXPECT_TRUE(eventually(
      [&] {
        std::lock_guard lock(seen.mu);
        return seen.latencies_us.size() == burst;
      },
      60s))
      << "not every ping was answered";
  std::lock_guard lock(seen.mu);
  EXPECT_EQ(seen.size, big_size);
  EXPECT_TRUE(seen.intact) << "the large message arrived with wrong bytes";
  EXPECT_TRUE(seen.order_kept) << "what its sender sent next got past the large message";
  std::vector<double> l = seen.latencies_us;
  std::sort(l.begin(), l.end());
  std::printf(
      "fragment_size %zu: %lld of %d pings sent after the 64 MiB message arrived before it was "
      "complete; their round trips p50 %.0f us, max %.0f us\n",
      fragment_size, static_cast<long long>(seen.answered), burst,
      l.empty() ? 0.0 : l[l.size() / 2], l.empty() ? 0.0 : l.back());
  return seen.answered;
}

TEST(DistFragments, ALargeMessageToErlangGoesInFragmentsWhileSmallOnesKeepFlowing) {
  REQUIRE_ERL();
  // Every ping was sent after the big message was in the outbox, all at once; in fragments
  // they get past it (the connection writes them after the fragment it is writing).
  EXPECT_EQ(send_big(64u << 10), burst) << "small messages did not get past the large one";
}

TEST(DistFragments, WithoutFragmentsNothingGetsPastALargeMessage) {
  REQUIRE_ERL();
  // The control for the case above: written whole, the big packet is ahead of every ping on
  // the wire.
  EXPECT_EQ(send_big(0), 0) << "pings got past a message that was written whole";
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
