// Fragmented messages from an Erlang node (DFLAG_FRAGMENTS): erl sends a message larger than
// its fragment size (64 KiB) in pieces, interleaved with other traffic on the connection; the
// node puts it back together. A 64 MiB binary arrives whole and intact while small messages from
// another Erlang process, sent during the transfer, arrive before it is complete; and messages
// both ways keep the distribution header's form (every other dist test exercises that too).
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace dist_fragment_cases
}  // namespace beamlet::test
