// spec §5: the proc_lib start protocol, in both ack_wait modes; §1.3 rules 19-20.
#include <beamlet/otp/proc_lib.hpp>

#include <string>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {

// Both modes must behave identically; every test runs twice.
class ProcLib : public ::testing::TestWithParam<ack_wait_mode> {};

std::string mode_name(const ::testing::TestParamInfo<ack_wait_mode>& p) {
  return p.param == ack_wait_mode::scan ? "scan" : "marker";
}

// A child body that acks `r` and then waits for `go`.
auto acks(start_result r) {
  return [r](process& self, const starter& st) -> task<> {
    st.ack(self, r);
    co_await self.receive(on<go>());
  };
}

// What is left in a mailbox, oldest first, as strings.
task<std::vector<std::string>> leftovers(process& self) {
  std::vector<std::string> out;
  for (;;) {
    auto m = co_await self.receive(on<junk>(), on<exit_message>(), on<down>(),
                                   on<init_ack_message>(), after(std::chrono::milliseconds(0)));
    if (m.timed_out()) break;
    if (auto* j = m.get_if<junk>())
      out.push_back("junk" + std::to_string(j->n));
    else if (m.is<exit_message>())
      out.push_back("EXIT " + m.get<exit_message>().reason.to_string());
    else if (m.is<down>())
      out.push_back("DOWN " + m.get<down>().reason.to_string());
    else
      out.push_back("ack");
  }
  co_return out;
}

}  // namespace

// §5 rule 2: the starter returns the child's Ret unchanged.
TEST_P(ProcLib, S5_2_AckReturnsRetUnchanged) {
  runtime rt;
  std::vector<start_result> got;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    got.push_back(co_await start_link(self, acks(start_result::ignore())));
    got.push_back(co_await start_link(self, acks(start_result::error(exit_reason::error("bad")))));
    const start_result ok = co_await start_link(self, [](process& c, const starter& st) -> task<> {
      st.ack(c, start_result::ok(c.self(), std::string("info")));
      co_await c.receive(on<go>());
    });
    got.push_back(ok);
    EXPECT_TRUE(ok.has_info());
    EXPECT_EQ(std::any_cast<std::string>(ok.info()), "info");
    self.send(ok.pid(), go{});
  });
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].is_ignore());
  EXPECT_EQ(got[1].reason(), exit_reason::error("bad"));
  EXPECT_TRUE(got[2].is_ok());
}

// §5 rule 3: a trapping starter gets {error, Reason} when the child exits before acking, and
// the EXIT is consumed.
TEST_P(ProcLib, S5_3_ChildDiesBeforeAckTrapping) {
  runtime rt;
  start_result r;
  std::vector<std::string> left;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    self.trap_exit(true);
    r = co_await start_link(self, [](process& c, const starter&) -> task<> {
      co_await c.exit(exit_reason::error("init_crash"));
    });
    left = co_await leftovers(self);
  });
  EXPECT_EQ(r.reason(), exit_reason::error("init_crash"));
  EXPECT_TRUE(left.empty()) << left.front();
}

// §5 rule 3: `normal` before the ack, trapping: {error, normal}.
TEST_P(ProcLib, S5_3_ChildExitsNormalBeforeAckTrapping) {
  runtime rt;
  start_result r;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    self.trap_exit(true);
    r = co_await start_link(self, [](process&, const starter&) -> task<> { co_return; });
  });
  EXPECT_EQ(r.reason(), exit_reason::normal());
}

// §5 rule 4: not trapping, an abnormal exit before the ack kills the starter (the link).
TEST_P(ProcLib, S5_4_AbnormalDeathKillsNonTrappingStarter) {
  runtime rt;
  std::atomic<bool> returned{false};
  const auto mode = GetParam();
  EXPECT_EQ(run_process(rt,
                        [&](process& self) -> task<> {
                          self.ack_wait(mode);
                          (void)co_await start_link(self, [](process& c, const starter&) -> task<> {
                            co_await c.exit(exit_reason::error("boom"));
                          });
                          returned = true;
                        }),
            exit_reason::error("boom"));
  EXPECT_FALSE(returned);
}

// §5 rule 4: not trapping, a `normal` exit before the ack: the starter hears nothing and waits
// for the timeout.
TEST_P(ProcLib, S5_4_NormalDeathWaitsForTimeout) {
  runtime rt;
  start_result r;
  std::atomic<long> waited{0};
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    const auto t0 = std::chrono::steady_clock::now();
    r = co_await start_link(self, [](process&, const starter&) -> task<> { co_return; },
                            {.timeout = 150ms});
    waited = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  });
  EXPECT_EQ(r.reason(), exit_reason::error("timeout"));
  EXPECT_GE(waited.load(), 150);
}

// §5 rule 3 / §4.1 rule 4: timeout: the child is unlinked and killed, its EXIT flushed.
TEST_P(ProcLib, S5_3_TimeoutKillsChildAndFlushes) {
  runtime rt;
  start_result r;
  pid child;
  std::vector<std::string> left;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    self.trap_exit(true);
    r = co_await start_link(self,
                            [&child](process& c, const starter&) -> task<> {
                              child = c.self();
                              co_await c.receive(on<go>());  // never acks
                            },
                            {.timeout = 50ms});
    co_await self.sleep(50ms);  // an EXIT, had it leaked, would be here by now
    left = co_await leftovers(self);
  });
  EXPECT_EQ(r.reason(), exit_reason::error("timeout"));
  EXPECT_FALSE(rt.is_alive(child));
  EXPECT_TRUE(left.empty());
}

// §5 rule 5: the unlinked start monitors the child: {error, R} on an early death, and the DOWN
// is flushed after a successful ack.
TEST_P(ProcLib, S5_5_StartMonitors) {
  runtime rt;
  start_result died;
  start_result fine;
  std::vector<std::string> left;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    died = co_await start(self, [](process&, const starter&) -> task<> { co_return; });
    fine = co_await start(self, [](process& c, const starter& st) -> task<> {
      st.ack(c, start_result::ok(c.self()));
      co_return;  // exits right after acking
    });
    co_await self.sleep(30ms);
    left = co_await leftovers(self);
  });
  EXPECT_EQ(died.reason(), exit_reason::normal());
  EXPECT_TRUE(fine.is_ok());
  EXPECT_TRUE(left.empty());
}

// §5 rule 6: after a successful ack the child's later exit reaches a trapping starter as a
// stray EXIT.
TEST_P(ProcLib, S5_6_StrayExitAfterAck) {
  runtime rt;
  std::vector<std::string> left;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    self.trap_exit(true);
    const start_result r = co_await start_link(self, [](process& c, const starter& st) -> task<> {
      st.ack(c, start_result::error(exit_reason::error("late")));
      co_await c.exit(exit_reason::error("late"));
    });
    EXPECT_EQ(r.reason(), exit_reason::error("late"));
    // The stray EXIT; anything else the child sent would have arrived before it.
    CO_ASSERT_TRUE(co_await eventually_in(self, [&] { return self.message_queue_len() >= 1; }));
    left = co_await leftovers(self);
  });
  EXPECT_EQ(left, std::vector<std::string>{"EXIT late"});
}

// Both modes, under a 100k-message backlog: the same return values and the same mailbox
// afterwards; only the cost differs (§1.3 rules 19-20, §11 case 57).
TEST_P(ProcLib, IdenticalResultsUnderBacklog) {
  runtime rt;
  const int backlog = 100000 / stress_divisor;
  std::vector<std::string> results;
  std::size_t left_len = 0;
  std::uint64_t examined = 0;
  run_process(rt, [&](process& self) -> task<> {
    self.ack_wait(GetParam());
    self.trap_exit(true);
    for (int i = 0; i < backlog; ++i) self.send(self.self(), junk{i});
    (void)self.message_queue_len();
    const std::uint64_t before = self.messages_examined();
    const start_result a = co_await start_link(self, acks(start_result::ignore()));
    const start_result b = co_await start_link(self, [](process& c, const starter&) -> task<> {
      co_await c.exit(exit_reason::error("crash"));
    });
    const start_result c = co_await start_link(
        self, [](process& x, const starter&) -> task<> { co_await x.receive(on<go>()); },
        {.timeout = 20ms});
    examined = self.messages_examined() - before;
    results = {a.to_string(), b.to_string(), c.to_string()};
    left_len = self.message_queue_len();
    // The backlog itself is untouched and in order.
    auto first = co_await self.receive(on<junk>(), after(0ms));
    EXPECT_EQ(first.get<junk>().n, 0);
  });
  EXPECT_EQ(results, (std::vector<std::string>{"ignore", "{error,crash}", "{error,timeout}"}));
  EXPECT_EQ(left_len, static_cast<std::size_t>(backlog));
  if (GetParam() == ack_wait_mode::scan) {
    EXPECT_GE(examined, 3u * static_cast<std::uint64_t>(backlog));  // every wait scans it
  } else {
    // Marker waits skip it; only the failure paths (flush, timeout cleanup) scan.
    EXPECT_LT(examined, 3u * static_cast<std::uint64_t>(backlog));
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ProcLib,
                         ::testing::Values(ack_wait_mode::scan, ack_wait_mode::marker), mode_name);

// §1.3 rule 19: the success path of a marker start does not look at the backlog at all.
TEST(ProcLibCost, S1_3_19_MarkerStartSkipsBacklog) {
  runtime rt;
  std::uint64_t scan_examined = 0;
  std::uint64_t marker_examined = 0;
  run_process(rt, [&](process& self) -> task<> {
    for (int i = 0; i < 10000; ++i) self.send(self.self(), junk{i});
    (void)self.message_queue_len();
    std::uint64_t before = self.messages_examined();
    (void)co_await start_link(self, acks(start_result::ignore()), {.wait = ack_wait_mode::scan});
    scan_examined = self.messages_examined() - before;
    before = self.messages_examined();
    (void)co_await start_link(self, acks(start_result::ignore()), {.wait = ack_wait_mode::marker});
    marker_examined = self.messages_examined() - before;
  });
  EXPECT_GE(scan_examined, 10000u);
  EXPECT_LE(marker_examined, 2u);
}

TEST(ProcLibCost, AckWaitIsAProcessFlag) {
  runtime rt;
  run_process(rt, [&](process& self) -> task<> {
    EXPECT_EQ(self.ack_wait(), ack_wait_mode::scan);  // OTP's behaviour by default
    EXPECT_EQ(self.ack_wait(ack_wait_mode::marker), ack_wait_mode::scan);
    EXPECT_EQ(self.ack_wait(), ack_wait_mode::marker);
    co_return;
  });
}

// From an outside thread.
TEST(ProcLibCost, StartLinkFromMailbox) {
  runtime rt;
  scoped_process me(rt);
  const start_result r = start_link(me, [](process& c, const starter& st) -> task<> {
    st.ack(c, start_result::ok(c.self()));
    co_await c.receive(on<go>());
  });
  ASSERT_TRUE(r.is_ok());
  rt.send(r.pid(), go{});
}

}  // namespace beamlet::test
