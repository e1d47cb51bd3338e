// spec §2: links and exit signals.
#include <thread>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct linked_to {
  pid p;
};
}  // namespace

// Rule 1: link is bidirectional, idempotent, and a no-op on oneself.
TEST(Links, S2_1_BidirectionalIdempotentSelfNoop) {
  runtime rt;
  watched peer(rt, park_forever);
  watched p(rt, [&](process& self) -> task<> {
    self.link(self.self());  // no-op
    self.link(peer);
    self.link(peer);  // idempotent: one link
    co_await self.receive(on<go>());
    co_await self.exit(exit_reason::error("boom"));
  });
  rt.send(p, go{});
  EXPECT_EQ(expect_exit(rt, p), exit_reason::error("boom"));
  EXPECT_EQ(expect_exit(rt, peer), exit_reason::error("boom"));  // the other direction
}

// Rule 2: linking to a dead process: a trapping caller gets {'EXIT', Pid, noproc}.
TEST(Links, S2_2_LinkToDeadWhenTrapping) {
  runtime rt;
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  std::atomic<bool> ok{false};
  run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    self.link(dead);
    auto m = co_await self.receive(on<exit_message>(), after(1s));
    ok = m && m.get<exit_message>().from == dead &&
         m.get<exit_message>().reason == exit_reason::noproc();
  });
  EXPECT_TRUE(ok);
}

// Rule 2: ... and a non-trapping caller gets noproc raised (exit_exception).
TEST(Links, S2_2_LinkToDeadRaisesNoproc) {
  runtime rt;
  watched dead(rt, [](process&) -> task<> { co_return; });
  expect_exit(rt, dead);
  std::atomic<bool> caught{false};
  run_process(rt, [&](process& self) -> task<> {
    try {
      self.link(dead);
    } catch (const exit_exception& e) {
      caught = e.reason() == exit_reason::noproc();
    }
    co_return;
  });
  EXPECT_TRUE(caught);
  // Uncaught, it ends the process with noproc.
  EXPECT_EQ(run_process(rt,
                        [&](process& self) -> task<> {
                          self.link(dead);
                          co_return;
                        }),
            exit_reason::noproc());
}

// Rule 3: unlink always succeeds, and afterwards the link cannot affect the caller.
TEST(Links, S2_3_UnlinkRemovesLink) {
  runtime rt;
  watched peer(rt, [](process& self) -> task<> {
    co_await self.receive(on<go>());
    co_await self.exit(exit_reason::error("boom"));
  });
  watched p(rt, [&](process& self) -> task<> {
    self.unlink(peer);      // no link yet: fine
    self.unlink(pid(999));  // unknown pid: fine
    self.link(peer);
    self.unlink(peer);
    self.send(peer, go{});
    co_await self.sleep(100ms);
  });
  EXPECT_EQ(expect_exit(rt, peer), exit_reason::error("boom"));
  EXPECT_EQ(expect_exit(rt, p), exit_reason::normal());
}

// Rules 4 and 5: a linked non-trapping process dies with the same reason; `normal` is ignored.
TEST(Links, S2_4_5_PropagationToNonTrapping) {
  runtime rt;
  for (const exit_reason& r : {exit_reason::shutdown(), exit_reason::shutdown("x"),
                               exit_reason::error("custom"), exit_reason::normal()}) {
    watched a(rt, park_forever);
    watched b(rt, [&](process& self) -> task<> {
      self.link(a);
      co_await self.receive(on<go>());
      co_await self.exit(r);
    });
    rt.send(b, go{});
    EXPECT_EQ(expect_exit(rt, b), r);
    if (r.is_normal()) {
      std::this_thread::sleep_for(30ms);
      EXPECT_TRUE(rt.is_alive(a)) << "a normal exit must not kill a linked process";
      rt.exit(a, exit_reason::kill());
    } else {
      EXPECT_EQ(expect_exit(rt, a), r);
    }
  }
}

// Rule 4: a process killed with `kill` propagates `killed` to its links.
TEST(Links, S2_4_KilledPropagatesKilled) {
  runtime rt;
  std::atomic<bool> ok{false};
  watched watcher(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    const pid victim = self.spawn_link(park_forever);
    self.exit(victim, exit_reason::kill());
    auto m = co_await self.receive(on<exit_message>(), after(5s));
    ok = m && m.get<exit_message>().from == victim &&
         m.get<exit_message>().reason == exit_reason::killed();
  });
  expect_exit(rt, watcher);
  EXPECT_TRUE(ok);
}

// Rule 5: a process that exits with `kill` by itself sends an ordinary trappable `kill`; a
// non-trapping peer dies with `kill`, not `killed`.
TEST(Links, S2_5_SelfExitKillIsTrappable) {
  runtime rt;
  std::atomic<bool> trapped{false};
  watched trapper(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    const pid k =
        self.spawn_link([](process& c) -> task<> { co_await c.exit(exit_reason::kill()); });
    auto m = co_await self.receive(on<exit_message>(), after(5s));
    trapped =
        m && m.get<exit_message>().from == k && m.get<exit_message>().reason == exit_reason::kill();
  });
  expect_exit(rt, trapper);
  EXPECT_TRUE(trapped);

  watched plain(rt, [](process& self) -> task<> {
    self.spawn_link([](process& c) -> task<> { co_await c.exit(exit_reason::kill()); });
    co_await self.receive(on<go>());
  });
  EXPECT_EQ(expect_exit(rt, plain), exit_reason::kill());
}

// Rule 6: a trapping process turns every exit signal, `normal` included, into a message.
TEST(Links, S2_6_TrapExitTurnsSignalsIntoMessages) {
  runtime rt;
  std::vector<exit_reason> seen;
  watched p(rt, [&](process& self) -> task<> {
    EXPECT_FALSE(self.trap_exit(true));  // returns the old value
    EXPECT_TRUE(self.trap_exit());
    self.spawn_link([](process&) -> task<> { co_return; });
    self.spawn_link([](process& c) -> task<> { co_await c.exit(exit_reason::shutdown()); });
    for (int i = 0; i < 2; ++i) {
      auto m = co_await self.receive(on<exit_message>());
      seen.push_back(m.get<exit_message>().reason);
    }
  });
  EXPECT_EQ(expect_exit(rt, p), exit_reason::normal());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(std::find(seen.begin(), seen.end(), exit_reason::normal()) != seen.end());
  EXPECT_TRUE(std::find(seen.begin(), seen.end(), exit_reason::shutdown()) != seen.end());
}

// Rule 7: exit(Pid, kill) is untrappable; the target ends with `killed`.
TEST(Links, S2_7_ExitKillIsUntrappable) {
  runtime rt;
  watched p(rt, [](process& self) -> task<> {
    self.trap_exit(true);
    for (;;) co_await self.receive(on_any());
  });
  rt.exit(p, exit_reason::kill());
  EXPECT_EQ(expect_exit(rt, p), exit_reason::killed());
}

// Rule 7: exit(Pid, normal) is ignored by a non-trapping target, trapped by a trapping one, and
// ends the caller when the target is the caller itself.
TEST(Links, S2_7_ExitNormal) {
  runtime rt;
  watched plain(rt, park_forever);
  rt.exit(plain, exit_reason::normal());
  std::this_thread::sleep_for(30ms);
  EXPECT_TRUE(rt.is_alive(plain));
  rt.exit(plain, exit_reason::kill());

  std::atomic<bool> trapped{false};
  std::atomic<bool> trapping{false};
  watched trapper(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    trapping = true;
    auto m = co_await self.receive(on<exit_message>());
    trapped = m.get<exit_message>().reason == exit_reason::normal() && !m.get<exit_message>().from;
  });
  // Signals are handled when a process is scheduled in, so wait until it really traps.
  ASSERT_TRUE(eventually([&] { return trapping.load(); }));
  rt.exit(trapper, exit_reason::normal());
  expect_exit(rt, trapper);
  EXPECT_TRUE(trapped);

  EXPECT_EQ(run_process(rt,
                        [](process& self) -> task<> {
                          self.exit(self.self(), exit_reason::normal());
                          ADD_FAILURE() << "exit(self(), normal) returned";
                          co_return;
                        }),
            exit_reason::normal());
}

// Rule 7: any other reason: a non-trapping target exits with it, a trapping one gets the
// message; sending to a dead target has no effect.
TEST(Links, S2_7_ExitOtherReasons) {
  runtime rt;
  watched plain(rt, park_forever);
  rt.exit(plain, exit_reason::error("stop_now"));
  EXPECT_EQ(expect_exit(rt, plain), exit_reason::error("stop_now"));
  rt.exit(plain, exit_reason::error("again"));  // dead: no effect

  std::atomic<bool> trapped{false};
  std::atomic<bool> sender_ok{false};
  std::atomic<bool> trapping{false};
  watched trapper(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    trapping = true;
    auto m = co_await self.receive(on<exit_message>());
    trapped = m.get<exit_message>().reason == exit_reason::error("why");
    sender_ok = static_cast<bool>(m.get<exit_message>().from);
  });
  ASSERT_TRUE(eventually([&] { return trapping.load(); }));
  run_process(rt, [&](process& self) -> task<> {
    self.exit(trapper, exit_reason::error("why"));
    co_return;
  });
  expect_exit(rt, trapper);
  EXPECT_TRUE(trapped);
  EXPECT_TRUE(sender_ok);
}

// Rule 7: exit(self(), kill) ends the caller with `killed`, trapping or not.
TEST(Links, S2_7_ExitSelfKill) {
  runtime rt;
  EXPECT_EQ(run_process(rt,
                        [](process& self) -> task<> {
                          self.trap_exit(true);
                          self.exit(self.self(), exit_reason::kill());
                          co_return;
                        }),
            exit_reason::killed());
}

// An exit signal reaches a process that never receives, at its next yield.
TEST(Links, S2_7_ExitReachesAYieldingProcess) {
  runtime rt;
  watched spinner(rt, [](process& self) -> task<> {
    for (;;) co_await self.yield();
  });
  std::this_thread::sleep_for(20ms);
  rt.exit(spinner, exit_reason::error("stop_spinning"));
  EXPECT_EQ(expect_exit(rt, spinner), exit_reason::error("stop_spinning"));
}

// A process killed before it first runs never runs its body.
TEST(Links, S2_7_KilledBeforeFirstRun) {
  runtime rt({.schedulers = 1});
  std::atomic<bool> ran{false};
  std::atomic<bool> killed_first{false};
  // On one scheduler, the spawner keeps the thread until it suspends: the kill is queued before
  // the child is first scheduled.
  run_process(rt, [&](process& self) -> task<> {
    const auto r = self.spawn_monitor([&](process&) -> task<> {
      ran = true;
      co_return;
    });
    self.exit(r.pid, exit_reason::kill());
    auto d = co_await self.receive(on<down>());
    killed_first = d.get<down>().reason == exit_reason::killed();
  });
  EXPECT_TRUE(killed_first);
  EXPECT_FALSE(ran);
}

// spawn_link links before the child can run: a child that dies at once still takes the
// (non-trapping) parent with it.
TEST(Links, SpawnLinkIsAtomic) {
  runtime rt;
  watched parent(rt, [](process& self) -> task<> {
    self.spawn_link([](process& c) -> task<> { co_await c.exit(exit_reason::error("early")); });
    co_await self.receive(on<go>());
  });
  EXPECT_EQ(expect_exit(rt, parent), exit_reason::error("early"));
}

}  // namespace beamlet::test
