// beamlet/core/testing.hpp and virtual time (beamlet/core/clock.hpp): the helpers users test with.
#include <beamlet/core/testing.hpp>

#include <memory>
#include <string>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct pong {
  int n;
};
}  // namespace

TEST(Testing, AssertReceiveReturnsTheMessage) {
  runtime rt;
  scoped_process me(rt);
  const pid echo = rt.spawn([](process& self) -> task<> {
    auto m = co_await self.receive(on<ping>());
    self.send(m.get<ping>().from, pong{7});
  });
  rt.send(echo, ping{me.self()});
  EXPECT_EQ(testing::assert_receive<pong>(me).n, 7);
  // A guard selects among several.
  me.send(me.self(), pong{1});
  me.send(me.self(), pong{2});
  EXPECT_EQ(testing::assert_receive<pong>(me, 1s, [](const pong& p) { return p.n == 2; }).n, 2);
  EXPECT_EQ(me.message_queue_len(), 1u);  // pong{1} stays
}

TEST(Testing, FailuresSayWhat) {
  runtime rt;
  scoped_process me(rt);
  me.send(me.self(), tick{});
  try {
    (void)testing::assert_receive<pong>(me, 20ms);
    ADD_FAILURE() << "assert_receive returned";
  } catch (const testing::assertion_failure& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no message of type"), std::string::npos) << what;
    EXPECT_NE(what.find("pong"), std::string::npos) << what;
    EXPECT_NE(what.find("20 ms"), std::string::npos) << what;
    EXPECT_NE(what.find("1 other messages queued"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(testing::refute_receive<pong>(me, 20ms));
  EXPECT_THROW(testing::refute_receive<tick>(me, 20ms), testing::assertion_failure);
}

TEST(Testing, InsideAProcessAndExitReasons) {
  runtime rt;
  const auto ok = testing::run(rt, [](process& self) -> task<> {
    self.send(self.self(), pong{3});
    const pong p = co_await testing::assert_receive<pong>(self);
    EXPECT_EQ(p.n, 3);
    co_await testing::refute_receive<pong>(self, 10ms);
  });
  EXPECT_EQ(ok, exit_reason::normal());
  // An assertion that fails inside a process ends it with that exception as its reason.
  testing::watched w(rt, [](process& self) -> task<> {
    (void)co_await testing::assert_receive<pong>(self, 10ms);
  });
  const exit_reason r = w.reason();
  EXPECT_EQ(r.which(), exit_reason::kind::exception);
  EXPECT_NE(r.exception_type().find("assertion_failure"), std::string::npos);
  EXPECT_TRUE(testing::eventually([&] { return !rt.is_alive(w); }));
}

// Under a manual clock, process timers and receive timeouts move only with advance().
TEST(VirtualTime, TimersAndTimeoutsFollowTheClock) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  const clock_time t0 = rt.now();
  EXPECT_EQ(rt.now(), t0);  // frozen
  std::atomic<int> timeouts{0};
  const pid p = rt.spawn([&](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<ping>(), after(10s));
      if (m.timed_out()) {
        ++timeouts;
        self.send(me.self(), tick{});
      } else {
        self.send(m.get<ping>().from, pong{0});
      }
    }
  });
  rt.send_after(me.self(), pong{42}, std::chrono::hours(1));
  rt.send(p, ping{me.self()});
  (void)testing::assert_receive<pong>(me);
  // Nothing happens in real time (which also leaves the process time to block in its next
  // receive, whose deadline is virtual now + 10 s)...
  testing::refute_receive<tick>(me, 200ms);
  testing::refute_receive<pong>(me, 10ms);
  // ...until virtual time passes.
  clock->advance(9s);
  testing::refute_receive<tick>(me, 50ms);
  clock->advance(1s);
  (void)testing::assert_receive<tick>(me);
  EXPECT_EQ(timeouts.load(), 1);
  clock->advance(std::chrono::hours(1));
  EXPECT_EQ(testing::assert_receive<pong>(me).n, 42);
  EXPECT_EQ(rt.now() - t0, std::chrono::hours(1) + 10s);
  // The hour also ended its next receive: it may be counting and sending right now, into
  // `timeouts` and `me`, which end with this scope. Killed and gone before they do.
  rt.exit(p, exit_reason::kill());
  ASSERT_TRUE(rt.wait(p, 10s));
}

TEST(VirtualTime, OnlyManualOrSteadyClocks) {
  class odd_clock final : public runtime_clock {
   public:
    time_point now() const noexcept override { return {}; }
  };
  EXPECT_THROW(runtime({.clock = std::make_shared<odd_clock>()}), std::invalid_argument);
  runtime rt({.clock = std::make_shared<steady_runtime_clock>()});
  EXPECT_GT(rt.now().time_since_epoch().count(), 0);
}

}  // namespace beamlet::test
