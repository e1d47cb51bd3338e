// The null pid and the null ref (default-constructed ids) at every entry point: each gives its
// documented result and touches nothing. The internal id tables use 0 as their empty-slot
// marker, which is what these tests guard against.
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/partition_supervisor.hpp>
#include <beamlet/otp/supervisor.hpp>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct poke {};
class counter : public gen_server<counter> {
 public:
  int handle_call(const get&, from<int>) { return 1; }
  void handle_cast(const poke&) {}
};
}  // namespace

TEST(NullIds, CancelTimerOfNullRefTouchesNothing) {
  runtime rt;
  scoped_process me(rt);
  const ref t = me.send_after(me.self(), tick{}, 10s);
  const std::size_t pending = rt.pending_timers();
  EXPECT_FALSE(rt.cancel_timer(ref{}).has_value());
  EXPECT_FALSE(me.cancel_timer(ref{}).has_value());
  EXPECT_EQ(rt.pending_timers(), pending);
  EXPECT_TRUE(rt.cancel_timer(t).has_value());  // the real timer is still there
  EXPECT_EQ(rt.pending_timers(), pending - 1);
}

TEST(NullIds, DemonitorOfNullRefKeepsTheMonitor) {
  runtime rt;
  scoped_process me(rt);
  const pid x = me.spawn(wait_for_any);
  const ref r = me.monitor(x);
  EXPECT_FALSE(me.demonitor(ref{}));
  EXPECT_FALSE(me.demonitor(ref{}, flush));
  EXPECT_EQ(me.monitors(), std::vector<pid>{x});
  me.exit(x, exit_reason::kill());
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, r);
  EXPECT_EQ(d.get<down>().reason, exit_reason::killed());
}

TEST(NullIds, UnlinkOfNullPidKeepsTheLink) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  const pid y = me.spawn(wait_for_any);
  me.link(y);
  me.unlink(pid{});
  me.exit(y, exit_reason::kill());
  auto e = me.receive(on<exit_message>(), after(5s));
  ASSERT_TRUE(e) << "the exit signal of the linked process was lost";
  EXPECT_EQ(e.get<exit_message>().from, y);
  EXPECT_EQ(e.get<exit_message>().reason, exit_reason::killed());
}

TEST(NullIds, LinkToNullPidIsNoproc) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  me.link(pid{});
  auto e = me.receive(on<exit_message>(), after(5s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.get<exit_message>().from, pid{});
  EXPECT_EQ(e.get<exit_message>().reason, exit_reason::noproc());
  // Not trapping: link raises noproc, as for any process that is not alive.
  const auto r = run_process(rt, [](process& self) -> task<> {
    self.link(pid{});
    co_return;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, exit_reason::noproc());
}

TEST(NullIds, MonitorOfNullPidIsNoproc) {
  runtime rt;
  scoped_process me(rt);
  const ref r = me.monitor(pid{});
  EXPECT_TRUE(static_cast<bool>(r));
  auto d = me.receive(on<down>(), after(5s));
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get<down>().ref, r);
  EXPECT_EQ(d.get<down>().pid, pid{});
  EXPECT_EQ(d.get<down>().reason, exit_reason::noproc());
  EXPECT_TRUE(me.monitors().empty());
}

TEST(NullIds, SendExitAndTimersToNullPidDoNothing) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t pending = rt.pending_timers();
  rt.send(pid{}, tick{});
  me.send(pid{}, tick{});
  rt.exit(pid{}, exit_reason::kill());
  me.exit(pid{}, exit_reason::kill());
  const ref t1 = rt.send_after(pid{}, tick{}, 10ms);
  const ref t2 = me.send_after(pid{}, tick{}, 10ms);
  EXPECT_EQ(rt.pending_timers(), pending);  // no timer armed for nobody
  EXPECT_FALSE(rt.cancel_timer(t1).has_value());
  EXPECT_FALSE(me.cancel_timer(t2).has_value());
  EXPECT_EQ(rt.process_count(), 1u);  // the mailbox only
  EXPECT_FALSE(me.receive(on_any(), after(50ms)));
}

TEST(NullIds, QueriesAndNamesOfNullPid) {
  runtime rt;
  scoped_process me(rt);
  EXPECT_FALSE(rt.is_alive(pid{}));
  EXPECT_FALSE(me.is_alive(pid{}));
  EXPECT_FALSE(rt.registered_name(pid{}).has_value());
  EXPECT_TRUE(rt.monitored_by(pid{}).empty());
  EXPECT_EQ(rt.register_name("nobody", pid{}), errc::not_alive);
  EXPECT_FALSE(rt.whereis("nobody").has_value());
  const auto r = rt.wait(pid{}, 5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, exit_reason::noproc());
}

TEST(NullIds, BehaviourCallsOnNullPid) {
  runtime rt;
  scoped_process me(rt);
  try {
    (void)call(me, server_ref<counter>(pid{}), get{});
    ADD_FAILURE() << "call to the null pid returned";
  } catch (const call_error& e) {
    EXPECT_EQ(e.which(), call_error::kind::noproc);
  }
  try {
    stop(me, server_ref<counter>(pid{}));
    ADD_FAILURE() << "stop of the null pid returned";
  } catch (const call_error& e) {
    EXPECT_EQ(e.reason(), exit_reason::noproc());
  }
  cast(me, server_ref<counter>(pid{}), poke{});  // dropped, like any cast to nobody

  const start_result dyn = dynamic_supervisor::start_link(me, {}, dynamic_supervisor_flags{});
  ASSERT_TRUE(dyn.is_ok());
  const auto t = dynamic_supervisor::terminate_child(me, dyn.pid(), pid{});
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, sup_errc::not_found);
  EXPECT_EQ(dynamic_supervisor::count_children(me, dyn.pid()), child_counts{});

  const start_result sup =
      supervisor::start_link(me, {}, [] { return supervisor_init(supervisor_flags{}, {}); });
  ASSERT_TRUE(sup.is_ok());
  run_process(rt, [&](process& self) -> task<> {
    const auto r = co_await supervisor::terminate_child(self, sup.pid(), pid{});
    EXPECT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, sup_errc::not_found);
  });
  // A partition route through a null supervisor pid names nothing.
  EXPECT_THROW((void)partition_supervisor::via(pid{}, 1).whereis(rt), exit_exception);
  dynamic_supervisor::stop(me, dyn.pid());
  supervisor::stop(me, sup.pid());
}

}  // namespace beamlet::test
