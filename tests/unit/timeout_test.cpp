// Timeouts (beamlet/core/timeout.hpp): one rule for every operation that waits. Negative and NaN
// durations are rejected before anything happens; overlong and infinite ones mean infinity.
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/supervisor.hpp>

#include <cmath>
#include <limits>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
// Counts the calls it has seen, so a test can tell whether a request ever arrived.
class call_counter : public gen_server<call_counter> {
 public:
  int handle_call(const get&, from<int>) { return ++calls_; }

 private:
  int calls_ = 0;
};

using fsec = std::chrono::duration<double>;
const fsec nan_seconds(std::numeric_limits<double>::quiet_NaN());
const fsec inf_seconds(std::numeric_limits<double>::infinity());
}  // namespace

TEST(Timeouts, ConversionRules) {
  EXPECT_TRUE(timeout_value(5ms).finite());
  EXPECT_EQ(timeout_value(5ms).duration(), 5ms);
  EXPECT_EQ(timeout_value(fsec(0.0015)).duration(), 1500us);
  EXPECT_EQ(timeout_value(0ms).duration(), 0ms);
  EXPECT_EQ(timeout_value(fsec(-0.0)).duration(), 0ms);  // -0.0 is not negative
  // Overlong and infinite durations are infinity, never a wrapped negative value.
  EXPECT_TRUE(timeout_value(std::chrono::milliseconds::max()).is_infinity());
  EXPECT_TRUE(timeout_value(std::chrono::hours::max()).is_infinity());
  EXPECT_TRUE(timeout_value(std::chrono::nanoseconds::max()).is_infinity());
  EXPECT_TRUE(timeout_value(inf_seconds).is_infinity());
  EXPECT_TRUE(timeout_value(infinity).is_infinity());
  EXPECT_TRUE(timeout_value(std::nullopt).is_infinity());
  EXPECT_TRUE(timeout_value(std::optional<std::chrono::milliseconds>()).is_infinity());
  EXPECT_EQ(timeout_value(std::optional(7ms)).duration(), 7ms);
  // Negative and NaN are errors.
  EXPECT_THROW((void)timeout_value{-1ms}, timeout_value_error);
  EXPECT_THROW((void)timeout_value{std::chrono::milliseconds::min()}, timeout_value_error);
  EXPECT_THROW((void)timeout_value{fsec(-0.5)}, timeout_value_error);
  EXPECT_THROW((void)timeout_value{-inf_seconds}, timeout_value_error);
  EXPECT_THROW((void)timeout_value{nan_seconds}, timeout_value_error);
  EXPECT_EQ(timeout_value(1500us).milliseconds(), 2);
  EXPECT_FALSE(timeout_value(infinity).milliseconds().has_value());
}

TEST(Timeouts, AfterMaxWaitsForTheMessage) {
  runtime rt;
  scoped_process me(rt);
  rt.send_after(me.self(), tick{}, 100ms);
  // milliseconds::max() used to overflow into a negative timeout that fired at once.
  auto m = me.receive(on<tick>(), after(std::chrono::milliseconds::max()));
  EXPECT_TRUE(m);
  rt.send_after(me.self(), tick{}, 100ms);
  EXPECT_TRUE(me.receive(on<tick>(), after(inf_seconds)));
  EXPECT_THROW((void)me.receive(on<tick>(), after(nan_seconds)), timeout_value_error);
  const auto r = run_process(rt, [](process& self) -> task<> {
    self.send_after(self.self(), tick{}, 100ms);
    auto t = co_await self.receive(on<tick>(), after(std::chrono::hours::max()));
    EXPECT_TRUE(t);
  });
  EXPECT_EQ(r, exit_reason::normal());
}

// A bad call timeout is rejected before the request is sent: no monitor, no request at the
// server, no reply or DOWN left behind.
TEST(Timeouts, BadCallTimeoutHasNoSideEffect) {
  runtime rt;
  const auto r = run_process(rt, [](process& self) -> task<> {
    const start_result s = co_await call_counter::start_link(self, {});
    CO_ASSERT_TRUE(s.is_ok());
    const server_ref<call_counter> srv(s.pid());
    EXPECT_THROW((void)call(self, srv, get{}, -1ms), timeout_value_error);
    EXPECT_THROW((void)call(self, srv, get{}, nan_seconds), timeout_value_error);
    EXPECT_TRUE(self.monitors().empty());
    // The first request the server sees is this one; infinity and max() are accepted.
    EXPECT_EQ(co_await call(self, srv, get{}, infinity), 1);
    EXPECT_EQ(co_await call(self, srv, get{}, std::chrono::milliseconds::max()), 2);
    EXPECT_EQ(co_await call(self, srv, get{}, inf_seconds), 3);
    EXPECT_TRUE(self.monitors().empty());
    EXPECT_EQ(self.message_queue_len(), 0u);
    co_await stop(self, srv);
  });
  EXPECT_EQ(r, exit_reason::normal());
}

TEST(Timeouts, SendAfterInfinityAndErrors) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t pending = rt.pending_timers();
  EXPECT_THROW((void)me.send_after(me.self(), tick{}, -1ms), timeout_value_error);
  EXPECT_THROW((void)rt.send_after(me.self(), tick{}, nan_seconds), timeout_value_error);
  EXPECT_EQ(rt.pending_timers(), pending);  // nothing armed
  const ref t = rt.send_after(me.self(), tick{}, std::chrono::milliseconds::max());
  EXPECT_FALSE(me.receive(on<tick>(), after(100ms)));  // never fires (it used to, at once)
  const auto left = rt.cancel_timer(t);
  ASSERT_TRUE(left);
  EXPECT_GT(*left, std::chrono::hours(24 * 365));
  EXPECT_EQ(rt.pending_timers(), pending);
}

TEST(Timeouts, BadStartTimeoutIsRejectedBeforeSpawning) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t before = rt.process_count();
  EXPECT_THROW((void)call_counter::start_link(me, {.timeout = -5ms}), timeout_value_error);
  EXPECT_THROW((void)dynamic_supervisor::start_link(me, {.timeout = nan_seconds}, {}),
               timeout_value_error);
  EXPECT_EQ(rt.process_count(), before);
  // An overlong start timeout is infinity: the start succeeds.
  const start_result s = call_counter::start_link(me, {.timeout = std::chrono::hours::max()});
  EXPECT_TRUE(s.is_ok());
  stop(me, server_ref<call_counter>(s.pid()));
}

namespace {
// Traps exits and takes 100 ms to stop, so a shutdown that kills at once is visible.
class slow_stopper : public gen_server<slow_stopper> {
 public:
  void init() { self().trap_exit(true); }
  task<> terminate(const exit_reason&) { co_await self().sleep(100ms); }
};
}  // namespace

// A shutdown time of milliseconds::max() is "wait as long as it takes", not "kill at once".
TEST(Timeouts, ShutdownTimeoutMaxWaits) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  const start_result sup = dynamic_supervisor::start_link(me, {}, dynamic_supervisor_flags{});
  ASSERT_TRUE(sup.is_ok());
  const auto c = dynamic_supervisor::start_child(
      me, sup.pid(),
      child_spec("w", worker_start<slow_stopper>())
          .with_shutdown(shutdown_spec::timeout(std::chrono::milliseconds::max())));
  ASSERT_TRUE(c.has_value());
  const pid child = c->pid();
  const ref mon = me.monitor(child);
  ASSERT_TRUE(dynamic_supervisor::terminate_child(me, sup.pid(), child).has_value());
  auto d = me.receive(on<down>().when([&](const down& x) { return x.ref == mon; }), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().reason, exit_reason::shutdown());
  dynamic_supervisor::stop(me, sup.pid());
}

namespace {
struct arm {
  using reply_type = void;
};
// {noreply, S, T} with T overlong: no timeout.
class idle_timeout : public gen_server<idle_timeout> {
 public:
  gen::call_result<void> handle_call(const arm&, from<void>) {
    return gen::reply().after(std::chrono::milliseconds::max());
  }
  void handle_info(any_message m) {
    if (m.is<timeout_message>()) ++timeouts;
  }
  static inline std::atomic<int> timeouts{0};
};
}  // namespace

TEST(Timeouts, ResultTimeoutMaxIsNoTimeout) {
  runtime rt;
  scoped_process me(rt);
  const start_result s = idle_timeout::start_link(me, {});
  ASSERT_TRUE(s.is_ok());
  call(me, server_ref<idle_timeout>(s.pid()), arm{});
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(idle_timeout::timeouts.load(), 0);
  EXPECT_THROW((void)gen::noreply().after(-1ms), timeout_value_error);
  stop(me, server_ref<idle_timeout>(s.pid()));
}

}  // namespace beamlet::test
