/// @file
/// beamlet/otp/run_until_signal.hpp: a service's main: serve until SIGINT or SIGTERM, then stop
/// the supervision tree in order.
///
///   int main() {
///     beamlet::runtime rt;
///     beamlet::scoped_process me(rt);
///     const auto top = beamlet::supervisor::start_link(me, {}, init);
///     if (!top.is_ok()) return 1;
///     return beamlet::run_until_signal(rt, top.pid()).exit_code();
///   }
///
/// The calling thread (not a process) blocks until one of the signals arrives or the top
/// supervisor ends by itself (it gave up after too many restarts, or something killed it). On a
/// signal the tree is stopped as OTP stops an application: the top supervisor terminates its
/// children in reverse start order, each within its own child_spec shutdown, and then exits
/// with reason `normal`, so the mailbox that started it (linked to it) lives on. If the whole
/// stop takes longer than `run_options::shutdown`, the top supervisor and every process it or
/// its descendants spawned are killed (a child that traps exits would outlive its supervisor's
/// death otherwise).
///
/// The signals are caught only while this waits: their previous dispositions are restored as
/// soon as one arrives, so a second Ctrl-C during a slow stop ends the program the usual way.
/// Signal dispositions belong to the whole program, so only one call may wait at a time: a
/// second concurrent call throws std::logic_error. A signal that cannot be caught (SIGKILL,
/// SIGSTOP, a bad number) throws std::invalid_argument before anything is changed. Call it from
/// an outside thread: it blocks the thread (a process would block its scheduler).
#pragma once

#include <csignal>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Options of run_until_signal.
struct run_options {
  /// The signals that stop the service.
  std::vector<int> signals{SIGINT, SIGTERM};
  /// How long the tree may take to stop before it is killed. OTP waits for a top supervisor
  /// without limit; a service under an init system usually has a deadline of its own.
  timeout_value shutdown = infinity;
};

/// How run_until_signal ended.
struct run_outcome {
  /// The signal that started the stop; 0 when the top supervisor ended by itself.
  int signal = 0;
  /// The top supervisor's exit reason: `normal` after a clean stop, `killed` after a stop that
  /// overran run_options::shutdown, or whatever it ended with by itself.
  exit_reason reason;
  /// 0 for a clean stop on a signal, 1 otherwise: what a service's main returns.
  int exit_code() const noexcept { return signal != 0 && reason.is_normal() ? 0 : 1; }
};

/// Blocks until a signal of `opts.signals` arrives or `top` ends, then stops `top` (a
/// supervisor) in order and returns once it has ended. A `top` that is not alive returns at
/// once with reason `noproc`.
run_outcome run_until_signal(runtime& rt, pid top, const run_options& opts = {});

BEAMLET_END_NAMESPACE
