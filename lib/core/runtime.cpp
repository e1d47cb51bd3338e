#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include <beamlet/core/detail/layer_hooks.hpp>

#include "block_counter.hpp"
#include "process_ops.hpp"
#include "runtime_core.hpp"
#include "signals.hpp"

// The layers' hook table is optional: a weak reference, null in a program with the core alone.
#pragma weak beamlet_layer_hooks

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

namespace {

runtime_options normalized(runtime_options o) {
  if (o.schedulers == 0) o.schedulers = std::max(1u, std::thread::hardware_concurrency());
  if (o.schedulers > max_schedulers)
    throw std::invalid_argument("beamlet: runtime_options::schedulers must be at most " +
                                std::to_string(max_schedulers) + ", got " +
                                std::to_string(o.schedulers));
  if (o.max_processes == 0 || o.max_processes > max_process_limit)
    throw std::invalid_argument("beamlet: runtime_options::max_processes must be in 1.." +
                                std::to_string(max_process_limit) + ", got " +
                                std::to_string(o.max_processes));
  if (o.shutdown_grace < std::chrono::milliseconds::zero())
    throw std::invalid_argument("beamlet: runtime_options::shutdown_grace must not be negative");
  if (o.reductions < 1) o.reductions = 1;
  if (o.clock != nullptr && !o.clock->is_manual()) {
    // The steady clock is the default (no indirection for it); a clock of one's own would need
    // timers that sleep in its time, which the timer service does not do.
    if (dynamic_cast<steady_runtime_clock*>(o.clock.get()) == nullptr)
      throw std::invalid_argument(
          "beamlet: runtime_options::clock must be null, a steady_runtime_clock or a manual_clock");
    o.clock = nullptr;
  }
  return o;
}

}  // namespace

runtime_core::runtime_core(const runtime_options& o)
    : options(normalized(o)),
      uses_manual_clock(options.clock != nullptr),
      epoch(options.schedulers),
      table(options.max_processes),
      timers(*this),
      sched(*this, options.schedulers) {}

// shutdown() throws only when called on one of this runtime's own workers; by the time the
// last reference goes, the runtime handle has shut down and joined them.
runtime_core::~runtime_core() {  // NOLINT(bugprone-exception-escape)
  shutdown();
  epoch.free_all_shared();
  // The hooks belong to extensions, destroyed with the members after this body: from here on
  // the slots are empty.
  hooks.events.store(nullptr, std::memory_order_release);
  hooks.remote.store(nullptr, std::memory_order_release);
  sched.install_io(nullptr);
  // The extensions go in the order they were made, not in the order std::vector's destructor
  // happens to use (unspecified: libstdc++ goes front to back, libc++ back to front). An
  // extension made on another's first use comes after it (the network's I/O engine after the
  // node that listens through it), and the first one's destructor may still use it.
  destroying_extensions_ = true;
  for (auto& entry : extensions_) entry.second.reset();
}

void runtime_core::start() {
  timers.start();
  sched.start();
  lock_guard lock(shutdown_mu_);
  started_ = true;
}

std::uint64_t runtime_core::new_ref() noexcept {
  struct refs_tag;
  return next_from_blocks<refs_tag>();
}

pin::pin(runtime_core& rt) noexcept {
  worker* w = current_worker();
  if (w == nullptr || &w->sched.rt() != &rt) guard_.emplace(rt.epoch);
}

void runtime_core::retire(proc* p) noexcept {
  retire(p, &free_proc);
}

void runtime_core::retire(void* object, void (*free)(void*) noexcept) noexcept {
  worker* w = current_worker();
  try {
    if (w != nullptr && &w->sched.rt() == this)
      epoch.retire(w->retired, object, free);
    else
      epoch.retire_shared(object, free);
  } catch (...) {
    // Could not record the retirement (out of memory): leak the object rather than free it
    // while another thread may still read it.
  }
}

runtime_extension& extension_slot(runtime_core& rt, const void* key, extension_factory make) {
  lock_guard lock(rt.extensions_mu_);  // recursive: attached() may look up others
  if (rt.destroying_extensions_)
    throw std::logic_error(
        "beamlet: an extension was looked up while the runtime destroys its extensions (an "
        "extension's destructor must not look others up: keep a reference in attached())");
  for (auto& [k, e] : rt.extensions_)
    if (k == key) return *e;
  std::unique_ptr<runtime_extension> made = make();
  runtime_extension& ref = *made;
  // In the list before attached(): once attached() has installed a hook (its last step, as
  // layer_hooks.hpp asks), nothing may throw and free the extension under it.
  rt.extensions_.emplace_back(key, std::move(made));
  try {
    ref.attached(rt);
  } catch (...) {
    const auto it = std::find_if(rt.extensions_.begin(), rt.extensions_.end(),
                                 [key](const auto& entry) { return entry.first == key; });
    std::unique_ptr<runtime_extension> failed = std::move(it->second);
    rt.extensions_.erase(it);
    throw;
  }
  return ref;
}

void runtime_core::stop_extensions() noexcept {
  std::vector<runtime_extension*> all;
  {
    lock_guard lock(extensions_mu_);
    for (auto& [k, e] : extensions_) all.push_back(e.get());
  }
  for (runtime_extension* e : all) e->stopping();
}

void core_release::operator()(runtime_core* rt) const noexcept {
  rt->release();
}

void runtime_core::shutdown() {
  if (worker* w = current_worker(); w != nullptr && &w->sched.rt() == this) {
    // It would wait for the very process that called it to exit.
    throw std::logic_error("beamlet: runtime::shutdown() called from inside one of its processes");
  }
  lock_guard lock(shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (!started_) return;

  // Phase 1: ask every process to stop, as an exit signal `shutdown` from outside. Mailboxes
  // belong to their threads and are left alone for now.
  {
    pin guard(*this);
    std::vector<pid> targets;
    table.for_each([&](proc* p) {
      if (!p->external) targets.push_back(p->id());
    });
    for (pid t : targets)
      deliver(*this, t,
              make_node<exit_signal>(exit_tag, exit_signal{pid(), exit_reason::shutdown(), false}));
  }
  // Wait for them on the exits themselves (each one wakes this thread while `draining` is
  // set), not by polling. The grace period is real time even under a manual_clock: it bounds
  // how long this thread blocks, and nothing would advance a manual clock meanwhile.
  const auto deadline = deadline_after(std::chrono::steady_clock::now(), options.shutdown_grace);
  draining.store(true, std::memory_order_seq_cst);
  {
    unique_lock drain_lock(drain_mu);
    drain_lock.wait_until(drain_cv, deadline, [&] {
      return table.size_seq_cst() <= scoped_processes.load(std::memory_order_seq_cst);
    });
  }
  draining.store(false, std::memory_order_relaxed);

  // Phase 2: nothing runs any more.
  closed.store(true);
  timers.stop();
  sched.stop();

  // Phase 3: end what is left without running it. With the workers joined, this thread is the
  // only one running process code. Mailboxes are owned by their threads, so they get the same
  // `shutdown` exit signal as everyone else (their next receive reports it) instead of having
  // their state torn down from here.
  {
    pin guard(*this);
    std::vector<proc*> rest;
    table.for_each([&](proc* p) { rest.push_back(p); });
    for (proc* p : rest)
      if (!p->external) exit_process(p, exit_reason::shutdown());
    for (proc* p : rest)
      if (p->external)
        deliver(
            *this, p->id(),
            make_node<exit_signal>(exit_tag, exit_signal{pid(), exit_reason::shutdown(), false}));
  }
  sched.clear_queues();
  stop_extensions();
  // Free what no outside thread can still reach; the rest goes with the last reference.
  epoch.try_advance();
  epoch.try_advance();
  epoch.collect_shared();
}

}  // namespace detail

// -- runtime
// ---------------------------------------------------------------------------------------

runtime::runtime() : runtime(runtime_options{}) {}

runtime::runtime(runtime_options options) : core_(new detail::runtime_core(options)) {
  core_->start();
  try {
    // Null when the program has the core alone (see beamlet/core/detail/layer_hooks.hpp).
    const detail::layer_hooks* layers = &beamlet_layer_hooks;
    if (layers != nullptr && layers->runtime_started != nullptr) layers->runtime_started(*this);
  } catch (...) {
    core_->shutdown();  // (core_ gives its reference back as the constructor unwinds)
    throw;
  }
}

// Destroyed from inside one of its own processes, shutdown throws and the program terminates,
// as runtime.hpp says: the destructor would wait for the very process that runs it.
runtime::~runtime() {  // NOLINT(bugprone-exception-escape)
  core_->shutdown();
}

void runtime::shutdown() {
  core_->shutdown();
}

std::optional<std::chrono::nanoseconds> runtime::cancel_timer(ref timer) {
  if (!timer) return std::nullopt;
  return core_->timers.cancel_send_after(timer);
}

std::size_t runtime::pending_timers() const noexcept {
  return core_->timers.pending();
}

void runtime::exit(pid target, const exit_reason& reason) {
  if (!target) return;
  detail::pin guard(*core_);
  detail::deliver(*core_, target,
                  detail::make_node<detail::exit_signal>(
                      detail::exit_tag, detail::exit_signal{pid(), reason, false}));
}

std::optional<exit_reason> runtime::wait(pid target, timeout_value timeout) {
  scoped_process me(*this);
  const ref r = me.monitor(target);
  auto m = me.receive(on<down>().when([r](const down& d) { return d.ref == r; }), after(timeout));
  if (m.timed_out()) {
    me.demonitor(r);
    return std::nullopt;
  }
  return m.get<down>().reason;
}

std::error_code runtime::register_name(std::string_view name, pid p) {
  detail::pin guard(*core_);
  return core_->names.register_name(name, core_->table.lookup(p));
}

std::error_code runtime::unregister_name(std::string_view name) {
  detail::pin guard(*core_);
  return core_->names.unregister_name(name, core_->table);
}

std::optional<pid> runtime::whereis(std::string_view name) const {
  return core_->names.whereis(name);
}

std::vector<std::string> runtime::registered() const {
  return core_->names.names();
}

clock_time runtime::now() const noexcept {
  return core_->now();
}

bool runtime::is_alive(pid p) const noexcept {
  return detail::is_alive_in(*core_, p);
}

std::optional<std::string> runtime::registered_name(pid p) const {
  detail::pin guard(*core_);
  return core_->names.name_of(core_->table.lookup(p));
}

std::vector<pid> runtime::monitored_by(pid p) const {
  std::vector<pid> out;
  detail::pin guard(*core_);
  detail::proc* q = core_->table.lookup(p);
  if (q == nullptr) return out;
  detail::lock_guard lock(q->watchers_lock);
  for (const auto& s : q->watchers)
    if (s.ref != 0) out.push_back(s.watcher);
  return out;
}

std::size_t runtime::process_count() const noexcept {
  return core_->table.size();
}

unsigned runtime::schedulers() const noexcept {
  return core_->options.schedulers;
}

BEAMLET_END_PRIVATE_NAMESPACE
