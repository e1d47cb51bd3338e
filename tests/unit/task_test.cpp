// Process bodies as coroutines: nested helpers, results, exceptions, how a process ends.
#include <atomic>
#include <coroutine>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {

struct value {
  int v;
};

// A nested helper that itself suspends in a receive.
task<int> receive_value(process& self) {
  auto m = co_await self.receive(on<value>());
  co_return m.get<value>().v;
}

task<int> twice_nested(process& self) {
  const int a = co_await receive_value(self);
  const int b = co_await receive_value(self);
  co_return a + b;
}

task<> throws_inside(process& self) {
  co_await self.receive(on<value>());
  throw std::runtime_error("inner failure");
}

}  // namespace

TEST(Task, ReceiveInsideNestedCoroutines) {
  runtime rt;
  std::atomic<int> result{0};
  watched p(rt, [&](process& self) -> task<> { result = co_await twice_nested(self); });
  rt.send(p, value{20});
  rt.send(p, value{22});
  EXPECT_EQ(expect_exit(rt, p), exit_reason::normal());
  EXPECT_EQ(result.load(), 42);
}

// An exception from a nested task propagates to its awaiter, which may catch it.
TEST(Task, ExceptionPropagatesToAwaiter) {
  runtime rt;
  std::atomic<bool> caught{false};
  watched p(rt, [&](process& self) -> task<> {
    try {
      co_await throws_inside(self);
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "inner failure";
    }
  });
  rt.send(p, value{1});
  EXPECT_EQ(expect_exit(rt, p), exit_reason::normal());
  EXPECT_TRUE(caught);
}

// A process ends with reason `normal` when its body returns.
TEST(Task, BodyReturnIsNormalExit) {
  runtime rt;
  EXPECT_EQ(run_process(rt, [](process&) -> task<> { co_return; }), exit_reason::normal());
}

// An escaping exception ends the process with its type and what().
TEST(Task, EscapingExceptionIsExitReason) {
  runtime rt;
  watched p(rt, [](process& self) -> task<> { co_await throws_inside(self); });
  rt.send(p, value{1});
  const exit_reason r = expect_exit(rt, p);
  EXPECT_EQ(r.which(), exit_reason::kind::exception);
  EXPECT_EQ(r.exception_type(), "std::runtime_error");
  EXPECT_EQ(r.detail(), "inner failure");
}

// co_await self.exit(reason) ends the process with that reason, from any depth.
TEST(Task, ExitAwaitEndsWithReason) {
  runtime rt;
  auto deep = [](process& self) -> task<int> {
    co_await self.exit(exit_reason::error("custom"));
    ADD_FAILURE() << "resumed after exit";
    co_return 0;
  };
  EXPECT_EQ(run_process(rt, [&](process& self) -> task<> { co_await deep(self); }),
            exit_reason::error("custom"));
}

// Throwing exit_exception from plain code ends the process with the reason, unwrapped.
TEST(Task, ExitExceptionFromPlainCode) {
  runtime rt;
  auto helper = [] { throw exit_exception(exit_reason::shutdown("done")); };
  EXPECT_EQ(run_process(rt,
                        [&](process&) -> task<> {
                          helper();
                          co_return;
                        }),
            exit_reason::shutdown("done"));
}

// Killing a process destroys its frames: locals of every nested coroutine are destroyed.
TEST(Task, KilledProcessDestroysLocals) {
  runtime rt;
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  auto inner = [](process& self, std::shared_ptr<int> held) -> task<> {
    co_await self.receive(on<value>());  // never arrives
    (void)held;
  };
  watched p(rt, [&, a = std::move(alive)](process& self) mutable -> task<> {
    auto mine = a;
    a.reset();
    co_await inner(self, std::move(mine));
  });
  EXPECT_TRUE(eventually([&] { return rt.is_alive(p); }));
  rt.exit(p, exit_reason::kill());
  EXPECT_EQ(expect_exit(rt, p), exit_reason::killed());
  EXPECT_TRUE(eventually([&] { return watch.expired(); }));
}

// The body's captures live as long as the process (no lambda-coroutine dangling).
TEST(Task, CapturesOutliveSpawnCall) {
  runtime rt;
  std::atomic<int> seen{0};
  pid p;
  {
    std::string text = "captured";
    p = rt.spawn([text, &seen](process& self) -> task<> {
      co_await self.receive(on<value>());
      seen = static_cast<int>(text.size());
    });
  }
  rt.send(p, value{0});
  expect_gone(rt, p);
  EXPECT_EQ(seen.load(), 8);
}

// Awaiting something that is not beamlet's cannot hang a process forever unnoticed.
TEST(Task, ForeignAwaitEndsProcess) {
  runtime rt;
  const exit_reason r =
      run_process(rt, [](process&) -> task<> { co_await std::suspend_always{}; }).value();
  EXPECT_EQ(r.which(), exit_reason::kind::error);
  EXPECT_NE(r.detail().find("bad_await"), std::string::npos);
}

#if defined(__clang__)
namespace {
struct report {
  std::string text;
  std::vector<int> values;
};
task<std::string> make_text() {
  co_return std::string(64, 'x');  // long enough to live on the heap
}
}  // namespace

// The expressions GCC 12 miscompiles (docs/gcc12-coroutines.md) are fine with Clang: an
// aggregate temporary with a destructor, built from co_await results, in one full-expression,
// and a conditional operator around a co_await. Checked in the Clang build only.
TEST(Task, ClangHandlesAggregateTemporariesAcrossCoAwait) {
  runtime rt;
  const auto r = run_process(rt, [](process& self) -> task<> {
    for (int i = 0; i < 1000; ++i) {
      self.send(self.self(), report{co_await make_text(), {i, co_await make_text() != "" ? 1 : 0}});
      auto m = co_await self.receive(on<report>());
      EXPECT_EQ(m.get<report>().text.size(), 64u);
      EXPECT_EQ(m.get<report>().values, (std::vector<int>{i, 1}));
    }
  });
  EXPECT_EQ(r, exit_reason::normal());
}
#endif

// A process's coroutine resumes on whichever scheduler thread runs it next, and must charge
// its reductions to that thread's run. Clang 16 kept the address of the run's thread_local
// from before a suspension when the charge was inlined into the coroutine: a process that had
// moved charged the thread it came from and never yielded where it ran, starving the processes
// queued behind it (Fairness.CallersRetryingWhileTheServerRestarts, now and then). Here the
// coroutine is moved by hand, to a new thread at each step, and each thread's budget is read.
namespace {
struct detached {
  struct promise_type {
    detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

constexpr int hops = 4;
constexpr int fresh_budget = 1000;

/// Continues the coroutine on a new thread whose run has a fresh budget; records the budget
/// that thread's run has left once the coroutine suspends again or ends.
struct hop_to_new_thread {
  std::thread* thread;
  int* left;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    // The new thread resumes the coroutine only once this awaiter is done with the frame (the
    // next step reuses its storage).
    auto go = std::make_shared<std::atomic<bool>>(false);
    *thread = std::thread([h, go, left = left] {
      go->wait(false, std::memory_order_acquire);
      (void)detail::exchange_run_context({0, fresh_budget, 0});
      h.resume();
      *left = detail::exchange_run_context({}).budget;
    });
    go->store(true, std::memory_order_release);
    go->notify_one();
  }
  void await_resume() const noexcept {}
};

detached charge_then_hop(std::thread* threads, int* left) {
  for (int i = 0; i < hops; ++i) {
    (void)detail::must_yield();  // one reduction, from the thread running this step
    co_await hop_to_new_thread{&threads[i], &left[i]};
  }
}
}  // namespace

TEST(Task, ReductionsAreChargedToTheThreadThatRunsTheCoroutine) {
  const detail::run_context outside = detail::exchange_run_context({0, fresh_budget, 0});
  std::thread threads[hops];
  int left[hops] = {};
  charge_then_hop(threads, left);
  for (auto& t : threads) t.join();
  const int here = detail::exchange_run_context(outside).budget;
  EXPECT_EQ(here, fresh_budget - 1) << "the first step is charged here, and only it";
  for (int i = 0; i + 1 < hops; ++i)
    EXPECT_EQ(left[i], fresh_budget - 1) << "step " << i + 1 << " was charged to another thread";
  EXPECT_EQ(left[hops - 1], fresh_budget) << "the last thread only ends the coroutine";
}

}  // namespace beamlet::test
