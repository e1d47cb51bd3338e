// beamlet/mailbox.hpp: a process identity for a plain thread.
//
// A mailbox gives a thread that is not a process (main, a test, a service's own threads) a pid
// and a message queue, so it can do what a process does: receive replies with a timeout, monitor
// and link to processes, trap exits, register a name. `receive` blocks the calling thread with
// the same selective-receive semantics as a process's co_await receive.
//
//   beamlet::mailbox me(rt);
//   rt.send(server, request{me.self()});
//   auto r = me.receive(on<reply>(), after(1s));     // blocks up to one second
//
// Thread-safety: like a process, a mailbox has one owner; use it from one thread at a time. Its
// pid may be sent anywhere. When the mailbox is destroyed it exits with reason `normal` (links
// and monitors fire). If an exit signal kills it (it is linked and does not trap exits), the
// next receive throws exit_exception with the reason. A mailbox must not outlive its runtime.
#pragma once

#include <utility>

#include <beamlet/config.hpp>
#include <beamlet/detail/core.hpp>
#include <beamlet/process.hpp>
#include <beamlet/receive.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

class mailbox final : public basic_process {
 public:
  explicit mailbox(runtime& rt);
  ~mailbox();

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
  explicit mailbox(const detail::external_handle& h) noexcept : basic_process(h.p, h.rt, h.self) {}
};

BEAMLET_END_NAMESPACE
