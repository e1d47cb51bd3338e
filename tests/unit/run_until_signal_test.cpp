// run_until_signal (beamlet/otp/run_until_signal.hpp): a service's main waits for SIGINT or
// SIGTERM, then stops its supervision tree in order; it also returns when the tree ends by itself.
// Each test sends the signal to this program (ctest runs every test in a program of its own).
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/run_until_signal.hpp>

#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

// A worker that notes when its supervisor stops it.
class noted_worker : public gen_server<noted_worker> {
 public:
  noted_worker(std::string name, journal* j) : name_(std::move(name)), j_(j) {}
  void init() { self().trap_exit(true); }
  void terminate(const exit_reason&) { j_->add(name_); }

 private:
  std::string name_;
  journal* j_;
};

// A child that ignores the shutdown its supervisor asks for. It acks once it traps exits: a
// shutdown that reached it before its first run would end it at once.
start_function stubborn_start() {
  return [](process& sup) -> task<start_result> {
    co_return co_await beamlet::start_link(sup, [](process& c, const starter& st) -> task<> {
      c.trap_exit(true);
      st.ack(c, start_result::ok(c.self()));
      for (;;) (void)co_await c.receive(on_any());
    });
  };
}

start_result start_top(scoped_process& me, std::vector<child_spec> children) {
  return supervisor::start_link(
      me, {}, [children] { return supervisor_init(supervisor_flags{}, children); });
}

// True once `sig` is caught by someone (run_until_signal has installed its handler).
bool caught(int sig) {
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  return now.sa_handler != SIG_DFL;
}

bool is_default(int sig) {
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  return now.sa_handler == SIG_DFL;
}

TEST(RunUntilSignal, ASignalStopsTheTreeInReverseStartOrder) {
  runtime rt;
  scoped_process me(rt);
  journal j;
  std::vector<child_spec> kids;
  for (std::string n : {"a", "b", "c"})
    kids.push_back(child_spec(n, worker_start<noted_worker>(n, &j)));
  const start_result top = start_top(me, kids);
  ASSERT_TRUE(top.is_ok());
  std::thread raiser([] {
    if (eventually([] { return caught(SIGTERM); })) ::kill(::getpid(), SIGTERM);
  });
  const run_outcome out = run_until_signal(rt, top.pid());
  raiser.join();
  EXPECT_EQ(out.signal, SIGTERM);
  EXPECT_EQ(out.reason, exit_reason::normal());
  EXPECT_EQ(out.exit_code(), 0);
  EXPECT_EQ(j.take(), (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_FALSE(rt.is_alive(top.pid()));
  // The mailbox that started (and is linked to) the tree lives on: it stopped with `normal`.
  EXPECT_TRUE(rt.is_alive(me.self()));
  // The signals are the program's own again.
  EXPECT_TRUE(is_default(SIGTERM));
  EXPECT_TRUE(is_default(SIGINT));
}

TEST(RunUntilSignal, ATreeThatEndsByItselfEndsTheWait) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  const start_result top = start_top(me, {});
  ASSERT_TRUE(top.is_ok());
  std::thread killer([&] {
    if (eventually([] { return caught(SIGINT); })) rt.exit(top.pid(), exit_reason::kill());
  });
  const run_outcome out = run_until_signal(rt, top.pid());
  killer.join();
  EXPECT_EQ(out.signal, 0);
  EXPECT_EQ(out.reason, exit_reason::killed());
  EXPECT_EQ(out.exit_code(), 1);
  EXPECT_TRUE(is_default(SIGINT));
  EXPECT_TRUE(is_default(SIGTERM));
}

TEST(RunUntilSignal, ATreeThatDoesNotStopInTimeIsKilled) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  const start_result top = start_top(
      me, {child_spec("stubborn", stubborn_start()).with_shutdown(shutdown_spec::infinity())});
  ASSERT_TRUE(top.is_ok());
  const auto children = supervisor::which_children(me, top.pid());
  ASSERT_EQ(children.size(), 1u);
  const pid stubborn = children[0].pid;
  std::thread raiser([] {
    if (eventually([] { return caught(SIGINT); })) ::kill(::getpid(), SIGINT);
  });
  const run_outcome out = run_until_signal(rt, top.pid(), {.shutdown = 200ms});
  raiser.join();
  EXPECT_EQ(out.signal, SIGINT);
  EXPECT_EQ(out.reason, exit_reason::killed());
  EXPECT_EQ(out.exit_code(), 1);
  EXPECT_TRUE(eventually([&] { return !rt.is_alive(stubborn); }));
}

TEST(RunUntilSignal, OneWaiterAtATimeAndOnlyCatchableSignals) {
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  const start_result top = start_top(me, {});
  ASSERT_TRUE(top.is_ok());
  EXPECT_THROW((void)run_until_signal(rt, top.pid(), {.signals = {SIGKILL}}),
               std::invalid_argument);
  EXPECT_TRUE(is_default(SIGKILL));
  run_outcome out;
  std::thread first([&] { out = run_until_signal(rt, top.pid()); });
  ASSERT_TRUE(eventually([] { return caught(SIGTERM); }));
  EXPECT_THROW((void)run_until_signal(rt, top.pid()), std::logic_error);
  ::kill(::getpid(), SIGTERM);
  first.join();
  EXPECT_EQ(out.signal, SIGTERM);
  EXPECT_EQ(out.reason, exit_reason::normal());
}

// A top supervisor that is not alive: nothing to wait for.
TEST(RunUntilSignal, ADeadTopReturnsAtOnce) {
  runtime rt;
  const run_outcome out = run_until_signal(rt, pid{});
  EXPECT_EQ(out.signal, 0);
  EXPECT_EQ(out.reason, exit_reason::noproc());
  EXPECT_TRUE(is_default(SIGTERM));
}

}  // namespace
}  // namespace beamlet::test
