// beamlet/core/detail/scheduler_io.hpp: I/O that the scheduler threads run themselves.
//
// A layer that owns descriptors (the network layer) gives each scheduler its own event loop
// and installs a scheduler_io with install_hook (the rules of layer_hooks.hpp: it stays valid
// until the core is destroyed, and is installed as the last step of its extension's
// attached()). From then on each worker, on its own thread:
//  - calls flush(i) after a run in which one of its processes asked for I/O (request_poll), and
//    poll(i) every few dozen runs and on every round of the spin before it parks, so readiness
//    on its descriptors waits at most a few runs of a busy worker, and a busy worker makes one
//    readiness system call per few dozen runs, not one per run;
//  - parks in wait(i, deadline) instead of on its futex, and is woken from it by interrupt(i),
//    which any thread may call.
// Handlers run by poll are worker code: a process they wake runs next on the same worker, with
// no lock and no thread hop, which is the point. Handlers run by wait run while the worker is
// parked: the thread counts as an outside thread (current_scheduler says -1, epochs pin as for
// any thread), except that a process woken there is still queued on this worker, which then
// leaves its park to run it.
//
// Nothing here is stable API.
#pragma once

#include <chrono>
#include <cstddef>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

class runtime_core;

class scheduler_io {
 public:
  /// Runs what is ready on scheduler `index`'s loop without blocking; how many handlers ran.
  virtual std::size_t poll(unsigned index) noexcept = 0;
  /// Runs what the processes of scheduler `index` asked for (no readiness check: cheap).
  virtual void flush(unsigned index) noexcept = 0;
  /// Blocks until scheduler `index`'s loop has run a handler, interrupt(index) is called, or
  /// `deadline` passes (time_point::max(): no deadline). May return early.
  virtual void wait(unsigned index, std::chrono::steady_clock::time_point deadline) noexcept = 0;
  /// Makes a wait(index) in progress, or the next one, return soon. Any thread.
  virtual void interrupt(unsigned index) noexcept = 0;

 protected:
  ~scheduler_io() = default;
};

/// Installs (or, with null, removes) the schedulers' I/O. Every parked worker is woken (from
/// its futex or from the hook it parked in), so that it parks where it should from then on.
/// Thread-safe; the hook replaced must stay valid (layer_hooks.hpp).
void install_hook(runtime_core& rt, scheduler_io* io) noexcept;
/// (Scheduler indices are below scheduler_count, detail/core.hpp.)
/// The index of the scheduler of `rt` whose process code runs on this thread, or -1: another
/// thread, another runtime's worker, or a worker parked in wait().
int current_scheduler(const runtime_core& rt) noexcept;
/// Has this thread's scheduler call flush() as soon as the process now running suspends
/// (nothing on other threads).
void request_poll() noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
