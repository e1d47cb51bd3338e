/// @file
/// beamlet/core/scoped_process.hpp: a process identity for a plain thread.
///
/// A scoped_process gives a thread that is not a process (main, a test, a service's own threads)
/// a pid and a message queue, so it can do what a process does: receive replies with a timeout,
/// monitor and link to processes, trap exits, register a name. `receive` blocks the calling thread
/// with the same selective-receive semantics as a process's co_await receive.
///
///   beamlet::scoped_process me(rt);
///   rt.send(server, request{me.self()});
///   auto r = me.receive(on<reply>(), after(1s));     // blocks up to one second
///
/// It is scoped: the identity lives as long as the object (CAF calls the same thing a
/// scoped_actor). Before 0.2 it was called `mailbox`, a word that also names every process's
/// message queue (mailbox_limit, spawn_options::mailbox); `mailbox` is kept as a deprecated alias
/// until 0.3.
///
/// Thread-safety: like a process, a scoped_process has one owner; use it from one thread at a
/// time. Its pid may be sent anywhere. When it is destroyed it exits with reason `normal` (links
/// and monitors fire). If an exit signal kills it (it is linked and does not trap exits), the
/// next receive throws exit_exception with the reason. It must not outlive its runtime.
#pragma once

#include <coroutine>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

/// A process identity for the thread that owns this object: a pid, a message queue, links,
/// monitors and a blocking receive (see the header comment). Not copyable or movable.
class scoped_process final : public basic_process {
 public:
  /// Enters `rt`'s process table as a new process. Throws system_limit_error if the table is
  /// full or the runtime is shutting down.
  explicit scoped_process(runtime& rt);
  /// Exits with reason `normal` (unless already dead): links and monitors fire.
  ~scoped_process();

  /// Blocking selective receive: `me.receive(on<T>()..., after(t))`.
  template <class... Args>
  auto receive(Args&&... args) {
    typename detail::receive_types<Args...>::request op(
        std::type_identity<typename detail::receive_types<Args...>::shape>{},
        std::forward<Args>(args)...);
    detail::receive_blocking(p_, op);
    return op.take_result();
  }

 private:
  explicit scoped_process(const detail::external_handle& h) noexcept
      : basic_process(h.p, h.rt, h.self) {}
};

namespace detail {

/// A receive an outside thread has already completed (blocking), as an awaitable that is
/// always ready: lets protocol coroutines written for processes run on a scoped_process.
template <class R>
class completed_receive {
 public:
  explicit completed_receive(R r) noexcept(std::is_nothrow_move_constructible_v<R>)
      : r_(std::move(r)) {}
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  R await_resume() { return std::move(r_); }

 private:
  R r_;
};

/// An outside thread waits in real time.
inline clock_time wait_now(const scoped_process&) noexcept {
  return std::chrono::steady_clock::now();
}

/// The scoped_process counterpart of receive_on(process&, ...): blocks the thread, then is ready.
template <class... Args>
auto receive_on(scoped_process& me, Args&&... args) {
  using R = decltype(me.receive(std::forward<Args>(args)...));
  static_assert(!std::is_void_v<R>, "receive_on: value-style receives only");
  return completed_receive<R>(me.receive(std::forward<Args>(args)...));
}

}  // namespace detail

/// The name before 0.2 (see the opening comment).
using mailbox [[deprecated("beamlet::mailbox is now beamlet::scoped_process")]] = scoped_process;

BEAMLET_END_NAMESPACE
