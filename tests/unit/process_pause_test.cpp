// The core's pause (beamlet/core/detail/remote.hpp), which the distribution layer takes for a
// process that sent to a busy connection: the process finishes its run, and its body does not
// go on until every pause is lifted, whatever arrives meanwhile; it still handles signals.
#include <beamlet/core/detail/remote.hpp>
#include <beamlet/core/process_info.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {
namespace process_pause_cases {

using detail::pause_ticket;

// The tickets a process took, handed to the test.
struct tickets {
  std::mutex mu;
  std::vector<pause_ticket> held;
  void add(pause_ticket t) {
    std::lock_guard lock(mu);
    held.push_back(t);
  }
  std::size_t size() {
    std::lock_guard lock(mu);
    return held.size();
  }
  pause_ticket take() {
    std::lock_guard lock(mu);
    pause_ticket t = held.front();
    held.erase(held.begin());
    return t;
  }
};

bool suspended(runtime& rt, pid p) {
  const auto d = process_info(rt, p);
  return d && d->status == process_status::suspended;
}

TEST(ProcessPause, APausedBodyWaitsForEveryResumeWhateverArrives) {
  tickets ts;  // these outlive the runtime, which ends the process
  std::atomic<int> step{0};
  runtime rt;
  const pid p = rt.spawn([&](process& self) -> task<> {
    // Two pauses in one run (two busy connections): both must be lifted.
    ts.add(detail::remote_pause_running(rt.core()));
    ts.add(detail::remote_pause_running(rt.core()));
    step.store(1);
    co_await self.yield();  // where the pause takes effect
    step.store(2);
    co_await self.receive(on<int>());
    co_await self.receive(on<int>());
    step.store(3);
  });
  ASSERT_TRUE(eventually([&] { return ts.size() == 2 && suspended(rt, p); }));
  EXPECT_EQ(step.load(), 1);
  // Messages wake it only to take them in: the body stays where it is.
  rt.send(p, 1);
  rt.send(p, 2);
  EXPECT_FALSE(eventually([&] { return step.load() != 1; }, 200ms));
  detail::remote_resume(rt.core(), ts.take());
  EXPECT_FALSE(eventually([&] { return step.load() != 1; }, 200ms));
  EXPECT_TRUE(suspended(rt, p));
  detail::remote_resume(rt.core(), ts.take());
  // Both lifted: it goes on, and the two messages that came meanwhile are there.
  EXPECT_TRUE(eventually([&] { return step.load() == 3; }));
}

TEST(ProcessPause, APauseTakenBeforeAReceiveHoldsTheBodyWhenTheReceiveCompletes) {
  tickets ts;  // these outlive the runtime, which ends the process
  std::atomic<int> step{0};
  runtime rt;
  const pid p = rt.spawn([&](process& self) -> task<> {
    ts.add(detail::remote_pause_running(rt.core()));
    co_await self.receive(on<int>());  // parks: nothing has come yet
    step.store(1);
  });
  ASSERT_TRUE(eventually([&] { return ts.size() == 1; }));
  rt.send(p, 7);
  // It has taken the message in (its receive is complete), and still does not go on.
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, p);
    return d && d->messages_received == 1 && d->message_queue_len == 0;
  }));
  EXPECT_FALSE(eventually([&] { return step.load() != 0; }, 200ms));
  EXPECT_TRUE(suspended(rt, p));
  detail::remote_resume(rt.core(), ts.take());
  EXPECT_TRUE(eventually([&] { return step.load() == 1; }));
}

TEST(ProcessPause, APausedProcessCanBeKilledAndALateResumeIsHarmless) {
  tickets ts;
  runtime rt;
  scoped_process me(rt);
  const pid p = rt.spawn([&](process& self) -> task<> {
    ts.add(detail::remote_pause_running(rt.core()));
    for (;;) co_await self.yield();
  });
  const ref m = me.monitor(p);
  ASSERT_TRUE(eventually([&] { return suspended(rt, p); }));
  rt.exit(p, exit_reason::kill());
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, m);
  EXPECT_EQ(d.get<down>().reason.which(), exit_reason::kind::killed);
  detail::remote_resume(rt.core(), ts.take());  // to a dead process: dropped, and freed
}

TEST(ProcessPause, OnlyAProcessOfThatRuntimeCanBePaused) {
  std::atomic<int> checked{0};
  runtime rt;
  const pause_ticket t = detail::remote_pause_running(rt.core());  // an outside thread
  EXPECT_FALSE(t.who);
  EXPECT_EQ(t.resume, nullptr);
  scoped_process me(rt);
  EXPECT_FALSE(detail::remote_pause_running(rt.core()).who);
  EXPECT_FALSE(detail::running_process(rt.core()));
  // A process of another runtime is not this runtime's to pause (its resume would never come).
  runtime other;
  rt.spawn([&](process&) -> task<> {
    const bool theirs =
        !detail::running_process(other.core()) && !detail::remote_pause_running(other.core()).who;
    const bool ours = static_cast<bool>(detail::running_process(rt.core()));
    checked.store(theirs && ours ? 1 : 2);
    co_return;
  });
  ASSERT_TRUE(eventually([&] { return checked.load() != 0; }));
  EXPECT_EQ(checked.load(), 1);
}

}  // namespace process_pause_cases
}  // namespace beamlet::test
