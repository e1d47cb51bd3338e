/// @file
/// beamlet/core/task.hpp: the coroutine type of process bodies and their helpers.
///
/// A `task<T>` is lazy: nothing runs until it is co_awaited (or, for a process body, until the
/// scheduler first runs the process). Awaiting a task transfers control to it symmetrically and
/// resumes the awaiter when it finishes, without growing the thread's stack, so helpers may nest
/// to any depth and may themselves co_await a receive. An exception escaping a task is rethrown
/// in its awaiter; one escaping the process body ends the process (exit_reason::exception).
///
/// The transfer is a tail call only when the compiler makes it one (not at -O0, not under
/// sanitizers), so beamlet also bounds the stack itself: when a chain of transfers inside a
/// running process has used stack_budget bytes, the next transfer is handed to the scheduler,
/// which continues it from the bottom of the stack. Programs see only an extra yield.
///
/// Awaiting a task costs one reduction of the process's budget (runtime_options::reductions),
/// like a receive: a process whose budget is spent yields at the co_await, even when the task
/// would have completed or thrown without suspending, so no loop of co_awaits can keep a
/// scheduler thread from the other processes.
///
/// Destroying a suspended task destroys its frame and, through the awaited-task objects its frame
/// holds, every frame below it: that is how a killed process runs the destructors of all its
/// coroutine locals. Frames are allocated with beamlet's size-class allocator.
///
/// Thread-safety: a task is owned by one process and runs on one thread at a time.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/allocator.hpp>

BEAMLET_BEGIN_NAMESPACE

template <class T = void>
class task;

namespace detail {

/// Stack a chain of task transfers may use before it is continued from the scheduler.
inline constexpr std::size_t stack_budget = std::size_t{256} << 10;

/// What the scheduler tells the process running on this thread about its current run. It lives
/// in a thread_local of the library's and is reached only through the functions below.
struct run_context {
  /// The lowest address a chain of task transfers may reach (0 outside processes).
  std::uintptr_t stack_floor = 0;
  /// Reductions left in this run (BEAM's budget). Every receive and every task awaited
  /// charges one; at zero the process yields at that co_await.
  int budget = 0;
  /// Bytes of coroutine frames made (less those freed) in this run: the scheduler moves them to
  /// the process's count when the run ends.
  std::int32_t frame_bytes = 0;
};

// Why these are calls into the library and never inline reads of a thread_local: a process's
// coroutines resume on whichever scheduler thread runs it next, and compilers keep the address
// of a thread_local across a suspension point when the access is inlined into a coroutine
// (LLVM issues 47179 and 63022; GCC hoists it out of loops the same way). A process looping on
// `co_await` then charged its reductions to the thread it first ran on and never yielded on the
// one it had moved to, which starved every process queued behind it there. A call into another
// translation unit computes the address afresh each time; noinline keeps it so under LTO.

/// Charges one reduction; true when the running process must yield now (its budget is spent,
/// or the transfer chain has used up its stack).
[[gnu::noinline]] bool must_yield() noexcept;
/// Whether a chain of task transfers has used up the stack this run may use.
[[gnu::noinline]] bool stack_exhausted() noexcept;
/// A coroutine frame, counted in the running process's frame bytes.
[[gnu::noinline]] void* allocate_frame(std::size_t size);
[[gnu::noinline]] void deallocate_frame(void* p, std::size_t size) noexcept;
/// Replaces this run's frame-byte count; returns the count it had.
[[gnu::noinline]] std::int32_t exchange_frame_bytes(std::int32_t bytes) noexcept;
/// Replaces this thread's run context (run_to_completion); returns the one it had.
[[gnu::noinline]] run_context exchange_run_context(const run_context& c) noexcept;

/// Makes the running process yield, to continue with `h` when the scheduler runs it next.
/// Returns the handle to transfer to now (a no-op).
std::coroutine_handle<> continue_from_scheduler(std::coroutine_handle<> h) noexcept;

class task_promise_base {
 public:
  static void* operator new(std::size_t size) { return allocate_frame(size); }
  static void operator delete(void* p, std::size_t size) noexcept { deallocate_frame(p, size); }

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct final_awaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      auto c = h.promise().continuation_;
      if (!c) return std::noop_coroutine();
      if (stack_exhausted()) return continue_from_scheduler(c);
      return c;
    }
    void await_resume() noexcept {}
  };
  final_awaiter final_suspend() noexcept { return {}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }
  const std::exception_ptr& exception() const noexcept { return exception_; }

 protected:
  void rethrow_if_failed() {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_;
  std::exception_ptr exception_;
};

template <class T>
class task_promise final : public task_promise_base {
 public:
  task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) {
    value_.emplace(std::forward<U>(v));
  }
  T take() {
    rethrow_if_failed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class task_promise<void> final : public task_promise_base {
 public:
  task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() { rethrow_if_failed(); }
};

/// GCC 12 miscompiles an aggregate temporary with a destructor inside a co_await expression
/// (double free; see docs/gcc12-coroutines.md). APIs that are always co_awaited and take such
/// an argument by value (call's request, gen_server start arguments, proc_lib child bodies)
/// reject it at compile time on that compiler: pass a named variable instead.
template <class Arg>
inline constexpr bool coroutine_safe_argument =
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
    std::is_lvalue_reference_v<Arg> || !std::is_aggregate_v<std::remove_cvref_t<Arg>> ||
    std::is_trivially_destructible_v<std::remove_cvref_t<Arg>>;
#else
    true;
#endif

}  // namespace detail

/// The coroutine type of process bodies and of the helpers they co_await: a function returning
/// `task<T>` may co_await receives, calls and other tasks, and yields a T (void by default) to
/// its awaiter. Lazy, move-only, and owner of its frame (see the header comment).
template <class T>
class [[nodiscard]] task {
 public:
  /// The coroutine promise, what makes a function returning task<T> a coroutine (internal).
  using promise_type = detail::task_promise<T>;
  /// The handle of the task's coroutine frame, as release() gives it up.
  using handle_type = std::coroutine_handle<promise_type>;

  /// An empty task, owning no frame: only to be assigned to or destroyed.
  task() noexcept = default;
  /// Takes ownership of the frame `h` (how a coroutine's promise makes its task).
  explicit task(handle_type h) noexcept : h_(h) {}
  /// Takes `o`'s frame; `o` is left empty.
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  /// Destroys this task's frame, if any, and takes `o`'s; `o` is left empty.
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() {
    if (h_) h_.destroy();
  }

  /// Awaiting runs the task to completion and yields its result (or rethrows its exception).
  auto operator co_await() && noexcept {
    struct awaiter {
      handle_type h;
      bool await_ready() const noexcept { return !h || h.done(); }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
        h.promise().set_continuation(caller);
        // Every awaited task is a reduction, so a loop of tasks that complete (or throw)
        // without ever suspending still yields when the budget is spent (fairness).
        if (detail::must_yield()) return detail::continue_from_scheduler(h);
        return h;
      }
      T await_resume() { return h.promise().take(); }
    };
    return awaiter{h_};
  }

  /// Gives up ownership of the coroutine frame (the runtime takes process bodies this way).
  handle_type release() noexcept { return std::exchange(h_, {}); }

 private:
  handle_type h_;
};

namespace detail {

/// Runs `t` to completion on the calling thread, which is not running a process: how the
/// blocking forms of call/stop/start (for an outside thread's scoped_process) share their protocol
/// with the coroutine forms. Every co_await inside must complete without suspending, which a
/// scoped_process's receive does (it blocks the thread instead); see receive_on in
/// scoped_process.hpp.
template <class T>
T run_to_completion(task<T> t) {
  auto h = t.release();
  struct owner {
    std::coroutine_handle<task_promise<T>> h;
    run_context saved;
    ~owner() {
      h.destroy();
      (void)exchange_run_context(saved);
    }
  } o{h,
      // No budget and no stack floor here: nothing may ask this thread to yield.
      exchange_run_context(run_context{0, std::numeric_limits<int>::max(), 0})};
  h.resume();
  if (!h.done())
    throw std::logic_error("beamlet: a blocking operation suspended (use a scoped_process)");
  return h.promise().take();
}

template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>(std::coroutine_handle<task_promise<T>>::from_promise(*this));
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>(std::coroutine_handle<task_promise<void>>::from_promise(*this));
}
}  // namespace detail

BEAMLET_END_NAMESPACE
