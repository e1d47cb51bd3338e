// Sender lanes (spec §1.1): a process that many threads send to at once gets one lane per
// sender group, and every guarantee of the single inbox still holds: each sender's messages and
// signals arrive in order, a DOWN comes after what the dead process sent, queue lengths are
// exact, sends to an exited process fail.
#include <algorithm>
#include <array>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace inbox_lanes_cases {  // named: the unity build joins test files

struct tagged {
  int sender;
  int n;
};
struct drained {};

constexpr int lane_senders = 8;  // four threads and four processes

runtime_options four_schedulers() {
  runtime_options o;
  o.schedulers = 4;
  return o;
}

struct go_on {};  ///< ends a receiver's first phase

// What a receiver of bursts saw: each sender's order, and how many.
struct order_checker {
  std::array<int, lane_senders> next{};
  std::atomic<std::int64_t> got{0};
  std::atomic<bool> ordered{true};

  void take(const tagged& t) {
    if (t.n != next[static_cast<std::size_t>(t.sender)]++) ordered = false;
    got.fetch_add(1, std::memory_order_release);
  }
};

// A receiver that takes tagged messages forever.
pid spawn_checker(runtime& rt, order_checker& c) {
  return rt.spawn([&c](process& self) -> task<> {
    for (;;) c.take((co_await self.receive(on<tagged>())).get<tagged>());
  });
}

// Takes tagged messages until a go_on.
task<> check_until_go_on(process& self, order_checker& c) {
  for (;;) {
    auto m = co_await self.receive(on<tagged>(), on<go_on>());
    if (m.is<go_on>()) co_return;
    c.take(m.get<tagged>());
  }
}

// Takes tagged messages (sender k is ps[k]) and DOWNs until every process of `ps` is down;
// false if a DOWN came before all `per` messages of its process.
task<bool> downs_follow_messages(process& self, const std::vector<pid>& ps, int per) {
  std::vector<int> seen(ps.size());
  bool ordered = true;
  for (std::size_t downs = 0; downs < ps.size();) {
    auto m = co_await self.receive(on<tagged>(), on<down>());
    if (m.is<tagged>()) {
      ++seen[static_cast<std::size_t>(m.get<tagged>().sender)];
      continue;
    }
    const auto s =
        static_cast<std::size_t>(std::find(ps.begin(), ps.end(), m.get<down>().pid) - ps.begin());
    if (s >= ps.size() || seen[s] != per) ordered = false;
    ++downs;
  }
  co_return ordered;
}

// One burst: `per` messages from each of four threads and four processes at once, numbered on
// from `from`. Sender k of one burst and sender k of the next are different senders.
void burst(runtime& rt, pid to, int from, int per) {
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < 4; ++s) {
    threads.emplace_back([&rt, &started, to, s, from, per] {
      started.fetch_add(1);
      while (started.load() < 4) std::this_thread::yield();
      for (int i = 0; i < per; ++i) rt.send(to, tagged{s, from + i});
    });
  }
  std::vector<pid> procs;
  for (int s = 4; s < lane_senders; ++s) {
    procs.push_back(rt.spawn([to, s, from, per](process& self) -> task<> {
      for (int i = 0; i < per; ++i) self.send(to, tagged{s, from + i});
      co_return;
    }));
  }
  for (auto& t : threads) t.join();
  for (pid p : procs) expect_gone(rt, p);
}

std::size_t memory_of(runtime& rt, pid p) {
  auto info = process_info(rt, p);
  return info ? info->memory : 0;
}

enum class lanes_result { installed, no_contention, stuck };

// Bursts until the receiver has lanes (its memory grows by theirs: sixteen lanes of a cache line
// each are at least 1 KiB). Lanes come with contention, which a loaded machine may not give in
// forty bursts (the test then skips: it cannot look at lanes it did not get); `stuck` if the
// messages of a burst did not all arrive.
lanes_result burst_until_lanes(runtime& rt, pid to, order_checker& c, int& sent, int per) {
  auto all_in = [&] {
    return eventually([&] { return c.got.load() == std::int64_t{sent} * lane_senders; });
  };
  if (!all_in()) return lanes_result::stuck;
  const std::size_t before = memory_of(rt, to);
  for (int round = 0; round < 40; ++round) {
    burst(rt, to, sent, per);
    sent += per;
    if (!all_in()) return lanes_result::stuck;
    if (memory_of(rt, to) >= before + 1024) return lanes_result::installed;
  }
  return lanes_result::no_contention;
}

#define BEAMLET_GIVE_LANES(rt, receiver, c, sent)                                               \
  switch (burst_until_lanes(rt, receiver, c, sent, 20000 / stress_divisor)) {                   \
    case lanes_result::installed:                                                               \
      break;                                                                                    \
    case lanes_result::no_contention:                                                           \
      GTEST_SKIP() << "no contention in 40 bursts of " << lane_senders << " senders: no lanes"; \
    case lanes_result::stuck:                                                                   \
      FAIL() << c.got.load() << " of " << std::int64_t{sent} * lane_senders << " messages in";  \
  }

}  // namespace inbox_lanes_cases

using namespace inbox_lanes_cases;

// Senders on several cores at once give the receiver lanes; each sender's messages still arrive
// in the order sent, none lost.
TEST(InboxLanes, ContendedSendersKeepTheirOrder) {
  runtime rt(four_schedulers());
  order_checker c;
  const pid receiver = spawn_checker(rt, c);
  int sent = 0;
  BEAMLET_GIVE_LANES(rt, receiver, c, sent);
  // More bursts with the lanes in place. Each burst's senders are new threads and processes, and
  // different senders' messages have no order (rule 2): the next burst waits for this one.
  for (int i = 0; i < 3; ++i) {
    burst(rt, receiver, sent, 20000 / stress_divisor);
    sent += 20000 / stress_divisor;
    EXPECT_TRUE(eventually([&] { return c.got.load() == std::int64_t{sent} * lane_senders; }))
        << c.got.load() << " of " << std::int64_t{sent} * lane_senders;
  }
  EXPECT_TRUE(c.ordered);
  rt.exit(receiver, exit_reason::kill());
}

// A process's messages come before its DOWN (rule 3) when they travel through a lane and the
// DOWN is sent as the process ends; and a monitor of a process already gone gets its DOWN after
// what that process sent.
TEST(InboxLanes, MessagesComeBeforeTheSendersDown) {
  runtime rt(four_schedulers());
  order_checker c;
  std::atomic<int> verdict{-1};  // 1: every DOWN after its process's messages
  static constexpr int senders = 8;
  static constexpr int per = 2000;
  const pid receiver = rt.spawn([&](process& self) -> task<> {
    // First the burst that gives it lanes, then the monitored senders.
    co_await check_until_go_on(self, c);
    const pid me = self.self();
    std::vector<pid> ps;
    for (int s = 0; s < senders; ++s) {
      ps.push_back(self.spawn([me, s](process& p) -> task<> {
        for (int i = 0; i < per; ++i) p.send(me, tagged{s, i});
        co_return;
      }));
    }
    for (pid p : ps) (void)self.monitor(p);
    verdict = co_await downs_follow_messages(self, ps, per) ? 1 : 0;
  });
  int sent = 0;
  BEAMLET_GIVE_LANES(rt, receiver, c, sent);
  rt.send(receiver, go_on{});
  EXPECT_TRUE(eventually([&] { return verdict.load() >= 0; })) << "not every DOWN came";
  EXPECT_EQ(verdict.load(), 1) << "a DOWN overtook a message of its process";
  EXPECT_TRUE(c.ordered);
}

// A monitor set on a process that is already gone gets its DOWN (noproc) at once, and still
// after everything that process sent, though those messages wait in lanes and the DOWN is the
// receiver's own doing. Eight senders, so that their lanes fall on both sides of the
// receiver's own.
TEST(InboxLanes, ANoprocDownComesAfterTheGoneProcessesMessages) {
  runtime rt(four_schedulers());
  order_checker c;
  static constexpr int senders = 8;
  static constexpr int per = 100;
  std::vector<pid> ps(senders);
  std::atomic<bool> gone{false};
  std::atomic<int> verdict{-1};  // 1: every DOWN after its process's messages
  const pid receiver = rt.spawn([&](process& self) -> task<> {
    co_await check_until_go_on(self, c);
    // Busy, so that what the senders send stays in the inbox until the monitors are set.
    while (!gone.load()) std::this_thread::yield();
    for (pid p : ps) (void)self.monitor(p);
    verdict = co_await downs_follow_messages(self, ps, per) ? 1 : 0;
  });
  int sent = 0;
  BEAMLET_GIVE_LANES(rt, receiver, c, sent);
  rt.send(receiver, go_on{});
  for (int k = 0; k < senders; ++k) {
    ps[static_cast<std::size_t>(k)] = rt.spawn([receiver, k](process& self) -> task<> {
      for (int i = 0; i < per; ++i) self.send(receiver, tagged{k, i});
      co_return;
    });
  }
  for (pid p : ps) expect_gone(rt, p);
  gone = true;
  EXPECT_TRUE(eventually([&] { return verdict.load() >= 0; })) << "not every DOWN came";
  EXPECT_EQ(verdict.load(), 1) << "a noproc DOWN overtook a message of its process";
}

// Queue lengths count what waits in the lanes; a process with lanes that exits refuses later
// sends, and its links still get their exit signal.
TEST(InboxLanes, QueueLengthsAndExitWithLanes) {
  runtime rt(four_schedulers());
  order_checker c;
  struct hold {};
  std::atomic<bool> holding{false};
  const pid receiver = rt.spawn([&](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<tagged>(), on<hold>());
      if (m.is<hold>()) {
        holding = true;
        co_await self.receive(on<drained>());  // everything else stays queued
        continue;
      }
      c.take(m.get<tagged>());
    }
  });
  int sent = 0;
  BEAMLET_GIVE_LANES(rt, receiver, c, sent);
  rt.send(receiver, hold{});
  ASSERT_TRUE(eventually([&] { return holding.load(); }));
  constexpr int per = 1000;
  burst(rt, receiver, sent, per);
  auto info = process_info(rt, receiver);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->message_queue_len, std::size_t{per} * lane_senders);

  // A linked process learns of the exit; a send afterwards is refused.
  std::atomic<bool> told{false};
  const pid linked = rt.spawn([&](process& self) -> task<> {
    self.trap_exit(true);
    self.link(receiver);
    auto m = co_await self.receive(on<exit_message>());
    told = m.get<exit_message>().from == receiver;
  });
  ASSERT_TRUE(eventually([&] {
    auto i = process_info(rt, linked);
    return i && i->status == process_status::waiting;
  }));
  rt.exit(receiver, exit_reason::kill());
  EXPECT_TRUE(eventually([&] { return told.load(); }));
  expect_gone(rt, receiver);
  rt.send(receiver, tagged{0, 0});  // refused by the closed lanes: nothing leaks (ASan)
  EXPECT_FALSE(process_info(rt, receiver).has_value());
  EXPECT_TRUE(c.ordered);
}

}  // namespace beamlet::test
