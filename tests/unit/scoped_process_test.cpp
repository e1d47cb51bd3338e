// Outside threads: a scoped_process gives a plain thread a pid, a queue and blocking receive.
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
struct request {
  pid from;
  int n;
};
struct reply {
  int n;
};
}  // namespace

TEST(ScopedProcess, RequestReplyWithTimeout) {
  runtime rt;
  const pid server = rt.spawn([](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<request>());
      self.send(m.get<request>().from, reply{m.get<request>().n * 2});
    }
  });
  scoped_process me(rt);
  rt.send(server, request{me.self(), 21});
  auto r = me.receive(on<reply>(), after(5s));
  ASSERT_TRUE(r);
  EXPECT_EQ(r.get<reply>().n, 42);
  // No reply comes: the timeout expires.
  const auto t0 = std::chrono::steady_clock::now();
  auto none = me.receive(on<reply>(), after(50ms));
  EXPECT_TRUE(none.timed_out());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  rt.exit(server, exit_reason::kill());
}

TEST(ScopedProcess, SelectiveReceiveSemantics) {
  runtime rt;
  scoped_process me(rt);
  me.send(me.self(), reply{1});
  me.send(me.self(), request{pid(), 2});
  auto r = me.receive(on<request>(), after(0ms));
  ASSERT_TRUE(r);
  EXPECT_EQ(r.get<request>().n, 2);
  EXPECT_EQ(me.message_queue_len(), 1u);
  auto x = me.receive(on<reply>([](reply rep) { return rep.n; }), after(0ms, [] { return -1; }));
  EXPECT_EQ(x, 1);
}

TEST(ScopedProcess, ManyThreadsEachWithOne) {
  runtime rt;
  const pid server = rt.spawn([](process& self) -> task<> {
    for (;;) {
      auto m = co_await self.receive(on<request>());
      self.send(m.get<request>().from, reply{m.get<request>().n + 1});
    }
  });
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      scoped_process me(rt);
      for (int i = 0; i < 500; ++i) {
        rt.send(server, request{me.self(), t * 1000 + i});
        auto r = me.receive(on<reply>(), after(5s));
        if (r && r.get<reply>().n == t * 1000 + i + 1) ++ok;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 2000);
  rt.exit(server, exit_reason::kill());
}

// A destroyed mailbox exits `normal`: its monitors and links fire.
TEST(ScopedProcess, DestructionIsNormalExit) {
  runtime rt;
  std::atomic<bool> ok{false};
  pid box_pid;
  {
    scoped_process box(rt);
    box_pid = box.self();
    rt.spawn([&, box_pid](process& self) -> task<> {
      (void)self.monitor(box_pid);
      self.send(box_pid, go{});
      auto d = co_await self.receive(on<down>(), after(5s));
      ok = d && d.get<down>().reason == exit_reason::normal();
    });
    auto g = box.receive(on<go>(), after(5s));
    ASSERT_TRUE(g);
  }
  EXPECT_TRUE(eventually([&] { return ok.load(); }));
  EXPECT_FALSE(rt.is_alive(box_pid));
}

// A mailbox linked to a crashing process, not trapping exits, is killed: receive throws.
TEST(ScopedProcess, AKilledOneThrowsOnReceive) {
  runtime rt;
  scoped_process me(rt);
  const pid p = me.spawn_link([](process& self) -> task<> {
    co_await self.receive(on<go>());
    co_await self.exit(exit_reason::error("crash"));
  });
  me.send(p, go{});
  try {
    (void)me.receive(on<reply>(), after(5s));
    ADD_FAILURE() << "receive returned";
  } catch (const exit_exception& e) {
    EXPECT_EQ(e.reason(), exit_reason::error("crash"));
  }
  EXPECT_THROW((void)me.receive(on<reply>(), after(0ms)), exit_exception);  // stays dead
}

// A trapping mailbox gets the EXIT as a message instead.
TEST(ScopedProcess, TrappingExits) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  const pid p = me.spawn_link(
      [](process& self) -> task<> { co_await self.exit(exit_reason::error("crash")); });
  auto m = me.receive(on<exit_message>(), after(5s));
  ASSERT_TRUE(m);
  EXPECT_EQ(m.get<exit_message>().from, p);
  EXPECT_EQ(m.get<exit_message>().reason, exit_reason::error("crash"));
}

TEST(ScopedProcess, RuntimeWait) {
  runtime rt;
  // The process is still waiting for `go` when wait() is called, so wait() sees its real reason.
  const pid p = rt.spawn([](process& self) -> task<> {
    co_await self.receive(on<go>());
    co_await self.sleep(50ms);
  });
  EXPECT_EQ(rt.wait(p, 20ms), std::nullopt);
  rt.send(p, go{});
  EXPECT_EQ(rt.wait(p, 5s), exit_reason::normal());
  EXPECT_EQ(rt.wait(p, 5s), exit_reason::noproc());  // already gone
}

}  // namespace beamlet::test
