/// @file
/// beamlet/core/process.hpp: what a process can do.
///
/// A process is a coroutine with a mailbox. Its body is any callable `task<>(process&)`; the
/// callable (with its captures) lives as long as the process. The body runs on one scheduler
/// thread at a time, may move between threads at any suspension point, and is never preempted
/// between suspension points: a long computation should `co_await self.yield()` now and then.
///
/// Guarantees (rule numbers refer to docs/spec.md):
///  * Ordering: signals from one sender to one receiver are observed in send order, whatever
///    their kind: messages, exit signals, link/unlink and DOWNs (§1.1 rule 1). Everything a
///    process sent before it died reaches a watcher before the DOWN/EXIT caused by its death
///    (rule 3).
///  * Sending never fails and never blocks: a message to a dead pid is dropped (rule 4).
///  * A process ends when its body returns (reason `normal`), when it co_awaits `exit(reason)`,
///    when an exception escapes its body (kind::exception with type and what()), or when an exit
///    signal kills it (§2). Its coroutine frames are destroyed then, running the destructors of
///    every local, before its links and monitors are notified.
///  * An exit signal that kills a process takes effect at its next suspension point (receive,
///    yield, sleep); a process blocked in receive is woken for it.
///
/// Thread-safety: a `process&` may only be used by the process itself, inside its body. Other
/// threads use `runtime` (or a `scoped_process`), addressing the process by pid.
#pragma once

#include <chrono>
#include <coroutine>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <beamlet/core/clock.hpp>
#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/mailbox_limit.hpp>
#include <beamlet/core/priority.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/task.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Result of spawn_monitor: the new process and the monitor on it.
struct spawn_result {
  /// The new process.
  beamlet::pid pid;
  /// The monitor on it; the null ref when none was asked for (spawn_opt without monitor).
  beamlet::ref monitor;
};

/// Options of spawn_opt: link and/or monitor the child atomically with its creation, and bound
/// its mailbox (beamlet/core/mailbox_limit.hpp).
struct spawn_options {
  /// Link the child to the spawner (spawn_link).
  bool link = false;
  /// Monitor the child; the ref is returned in spawn_result::monitor (spawn_monitor).
  bool monitor = false;
  bool marked = false;  ///< with monitor: the monitor ref carries a receive marker
  /// Capacity 0 (the default): unbounded. A policy outside the enum throws
  /// std::invalid_argument from the spawn.
  mailbox_limit mailbox{};
};

/// How a process waits for a child's init acknowledgement in proc_lib-style starts (see
/// beamlet/otp/proc_lib.hpp). A process flag, like trap_exit: a supervisor sets it once and every
/// start function it runs follows it.
enum class ack_wait_mode : std::uint8_t {
  scan,    ///< keyed on the child's pid, as OTP 25-27: examines the whole mailbox
  marker,  ///< keyed on a fresh marked ref: skips the backlog (erlang/otp PR #11633)
};
/// The enum's name before 0.2 (it is now the name of the process flag's accessors).
using ack_wait [[deprecated("beamlet::ack_wait is now beamlet::ack_wait_mode")]] = ack_wait_mode;

/// Tag for demonitor: also remove a DOWN for this monitor that is already queued.
struct flush_t {
  explicit constexpr flush_t() = default;
};
/// `demonitor(r, flush)`: demonitor(Ref, [flush]).
inline constexpr flush_t flush{};

namespace detail {
template <class F>
pid spawn_body(runtime_core& rt, proc* parent, F&& body, spawn_options flags, ref* monitor_ref);
}  // namespace detail

/// The operations shared by coroutine processes and scoped processes (outside threads).
class basic_process {
 public:
  basic_process(const basic_process&) = delete;
  basic_process& operator=(const basic_process&) = delete;

  /// This process's pid.
  pid self() const noexcept { return self_; }

  // -- messages ----------------------------------------------------------------------------------

  /// Sends `msg` to `to`. Never fails: a message to a dead process is dropped.
  template <message T>
  void send(pid to, T&& msg) const {
    detail::send_node(*rt_, to, detail::make_message(std::forward<T>(msg)));
  }
  /// Sends to a registered name; errc::not_registered when nobody holds it (spec §1.1
  /// rule 5, where Erlang raises badarg).
  template <message T>
  [[nodiscard]] std::error_code send(std::string_view name, T&& msg) const {
    return detail::send_node_named(*rt_, name, detail::make_message(std::forward<T>(msg)));
  }
  /// `{name, node} ! msg`: sends to the process registered as `name` on another node
  /// (beamlet/dist.hpp). As in OTP, nothing is reported: the message is dropped when the node
  /// cannot be reached or nobody there holds the name.
  template <message T>
  void send(std::string_view name, std::string_view node, T&& msg) const {
    detail::send_node_remote_named(*rt_, self_, name, node,
                                   detail::make_message(std::forward<T>(msg)));
  }
  /// Sends `msg` to `to` and says whether it was queued: {} when it was (under drop_oldest: it
  /// was queued, and the owner may still drop it for newer ones), errc::mailbox_full when `to`'s
  /// bounded mailbox refused it, and errc::not_alive when `to` is not alive. With a `reject`
  /// mailbox a refused message is handed back: `try_send(p, std::move(m))` leaves `m` as it was
  /// (moved back into it). With the other policies it is dropped.
  template <message T>
  [[nodiscard]] std::error_code try_send(pid to, T&& msg) const {
    using D = std::decay_t<T>;
    detail::message_node* back = nullptr;
    const auto st =
        detail::send_node_checked(*rt_, to, detail::make_message(std::forward<T>(msg)), &back);
    if (back != nullptr) {
      if constexpr (!std::is_const_v<std::remove_reference_t<T>> && std::is_move_assignable_v<D>)
        msg = std::move(detail::payload<D>(back));
      detail::destroy_node(back);
    }
    return detail::status_error(st);
  }
  /// Sends `msg` through a priority alias (beamlet/core/priority.hpp): its owner receives it ahead
  /// of its ordinary messages. Dropped, like a send to a dead pid, when the alias is not active.
  template <message T>
  void send(const priority_alias& to, T&& msg) const {
    detail::send_priority_node(*rt_, to, detail::make_message(std::forward<T>(msg)));
  }
  /// Delivers `msg` to `to` after `delay` (erlang:send_after). The returned ref cancels it.
  /// As on BEAM, the timer is cancelled when `to` exits, and a timer aimed at a pid that is
  /// not alive (the null pid included) is cancelled at once. An infinite delay never fires.
  /// A negative or NaN delay throws timeout_value_error before anything is sent. The timer
  /// waits in the wheel of the scheduler running this process, which fires it (at most one
  /// 65.5 µs tick late, plus the run in progress there); any thread may cancel it.
  template <message T>
  ref send_after(pid to, T&& msg, timeout_value delay) const {
    return detail::send_node_after(*rt_, to, detail::make_message(std::forward<T>(msg)), delay);
  }
  /// Cancels a send_after timer; returns the time that was left (clock_time::duration::max() for
  /// an infinite one), or nullopt if the timer had already fired, was cancelled, or is unknown
  /// (the null ref included).
  std::optional<std::chrono::nanoseconds> cancel_timer(ref timer) const;

  // -- processes ---------------------------------------------------------------------------------

  /// Starts a new process running `body(process&)`. Throws system_limit_error if the runtime
  /// is full or shutting down.
  template <class F>
  pid spawn(F&& body) {
    return detail::spawn_body(*rt_, p_, std::forward<F>(body), {}, nullptr);
  }
  /// spawn + link, atomically: the child cannot die unlinked.
  template <class F>
  pid spawn_link(F&& body) {
    return detail::spawn_body(*rt_, p_, std::forward<F>(body), {.link = true}, nullptr);
  }
  /// spawn + monitor, atomically. With `marked`, the monitor ref carries a receive marker.
  template <class F>
  spawn_result spawn_monitor(F&& body) {
    spawn_result r;
    r.pid = detail::spawn_body(*rt_, p_, std::forward<F>(body), {.monitor = true}, &r.monitor);
    return r;
  }
  /// spawn + monitor, atomically, and the monitor ref carries a receive marker: a
  /// `receive(since(r.monitor), ...)` skips every message queued before the spawn.
  template <class F>
  spawn_result spawn_monitor(F&& body, marked_t) {
    spawn_result r;
    r.pid = detail::spawn_body(*rt_, p_, std::forward<F>(body), {.monitor = true, .marked = true},
                               &r.monitor);
    return r;
  }
  /// spawn with any combination of link and monitor (erlang:spawn_opt). `monitor` in the result
  /// is set only when opts.monitor is.
  template <class F>
  spawn_result spawn_opt(F&& body, spawn_options opts) {
    spawn_result r;
    r.pid = detail::spawn_body(*rt_, p_, std::forward<F>(body), opts, &r.monitor);
    return r;
  }

  // -- links and exit signals (spec §2) -----------------------------------------------------

  /// Links this process and `other`. Idempotent; linking to oneself does nothing. If `other` is
  /// not alive: a trapping process gets `exit_message{other, noproc}`, a non-trapping one gets
  /// exit_exception(noproc) thrown here (OTP 25, rule 2).
  void link(pid other);
  /// Removes the link, if any. Once it returns, the link can no longer affect this process.
  void unlink(pid other) noexcept;
  /// Sends an exit signal with `reason` to `target` (erlang:exit/2, rule 7). `kill` cannot be
  /// trapped. Sent to oneself, a signal that kills takes effect at once: this function throws
  /// exit_exception.
  void exit(pid target, const exit_reason& reason);
  /// A priority exit signal (EEP 76: exit(Alias, Reason, [priority])): acted on as exit(pid,
  /// reason) by the alias's owner, ahead of its ordinary messages when it traps exits. No
  /// effect if the alias is not active. Unlike exit(self(), R), one sent to an alias of the
  /// caller itself takes effect at the caller's next receive, not at once.
  void exit(const priority_alias& target, const exit_reason& reason);
  /// Turns exit signals into exit_message messages (process_flag(trap_exit, on)). Returns the
  /// previous value.
  bool trap_exit(bool on) noexcept;
  /// Whether this process traps exits (process_info(self(), trap_exit)); false at spawn.
  bool trap_exit() const noexcept;

  /// The ack wait used by proc_lib-style starts this process makes (a process flag, read and
  /// set like trap_exit). Returns the previous value.
  ack_wait_mode ack_wait(ack_wait_mode mode) noexcept;
  /// The ack wait this process's proc_lib-style starts use; ack_wait_mode::scan at spawn.
  ack_wait_mode ack_wait() const noexcept;
  /// The accessors' names before 0.2.
  [[deprecated("use ack_wait(mode)")]] ack_wait_mode set_ack_wait(ack_wait_mode mode) noexcept {
    return ack_wait(mode);
  }
  /// The name of ack_wait() before 0.2.
  [[deprecated("use ack_wait()")]] ack_wait_mode get_ack_wait() const noexcept {
    return ack_wait();
  }

  // -- monitors (spec §3) ------------------------------------------------------------------

  /// A new unique reference.
  [[nodiscard]] ref make_ref() const noexcept;
  /// A new unique reference bound to a receive marker at the current end of the mailbox: a
  /// `receive(since(r), ...)` skips everything queued before this call.
  [[nodiscard]] ref make_ref(marked_t) noexcept;
  /// Monitors `target`: exactly one `down` arrives when it ends, or at once with `noproc` if it
  /// is not alive. Every call makes a new, independent monitor.
  [[nodiscard]] ref monitor(pid target);
  /// As monitor(target), and the ref carries a receive marker (what gen:call does).
  [[nodiscard]] ref monitor(pid target, marked_t);
  /// Monitors the process registered as `name`; the `down` carries the name.
  [[nodiscard]] ref monitor(std::string_view name);
  /// Monitors `{name, node}`, a name on another node (beamlet/dist.hpp). The `down` carries the
  /// name, and a pid that stands for the node (dist::node_of gives its name); its reason is
  /// `noproc` if nobody holds the name and `noconnection` if the node cannot be reached.
  [[nodiscard]] ref monitor(std::string_view name, std::string_view node);
  /// Removes a monitor. Returns true if it was active (demonitor(Ref, [info])). After it
  /// returns no DOWN for `r` will be delivered; one already queued stays (rule 5).
  bool demonitor(ref r) noexcept;
  /// demonitor(Ref, [flush]): also removes a DOWN for `r` that is already queued.
  bool demonitor(ref r, flush_t) noexcept;

  // -- priority messages (EEP 76, beamlet/core/priority.hpp) ------------------------------------

  /// A new priority alias of this process. With `publish`, it also becomes the alias that
  /// published_priority_alias(pid) returns (replacing any earlier published one).
  [[nodiscard]] priority_alias make_priority_alias(bool publish = false);
  /// Deactivates an alias of this process: later priority messages through it are dropped.
  /// Returns false if it was not active, not this process's, or the published one (which stays
  /// active as long as the process: others may be sending through it).
  bool unalias(const priority_alias& a) noexcept;

  // -- names (spec §9) ----------------------------------------------------------------------

  /// Registers this process under `name`. Fails with errc::name_taken, errc::already_named or
  /// errc::invalid_name.
  [[nodiscard]] std::error_code register_name(std::string_view name);

  // -- labels ------------------------------------------------------------------------------------

  /// Sets one of this process's labels: what Erlang code keeps in its process dictionary for
  /// whoever looks at it later (a user id, a connection's peer, a job's name). process_info
  /// (`labels`) and the console show them; nothing else reads them. An empty value removes the
  /// label. Labels end with the process. Call it from the process itself.
  void set_label(std::string_view key, std::string value);

  // -- introspection -----------------------------------------------------------------------------

  /// erlang:is_process_alive/1.
  bool is_alive(pid p) const noexcept;
  /// The runtime's time (runtime_options::clock): what this process's timeouts are measured in.
  clock_time now() const noexcept { return detail::now_in(*rt_); }

  /// Messages queued in this process's mailbox (after taking in every message that arrived).
  std::size_t message_queue_len() noexcept;
  /// The processes this one monitors, one entry per active monitor (process_info(self(),
  /// monitors), spec §3 rule 7).
  std::vector<pid> monitors() const;
  /// How many messages receives of this process have examined so far: the cost model of
  /// spec §1.3 made visible. A receive that matched nothing examined every queued message.
  std::uint64_t messages_examined() const noexcept;

 protected:
  friend struct detail::proc;
  friend detail::runtime_core* detail::runtime_of(const basic_process& p) noexcept;
  friend void detail::set_waiting_for(basic_process&, const char*, pid) noexcept;
  friend void detail::clear_marker(basic_process&, ref) noexcept;
  /// Made by the runtime (for a process) or by scoped_process, never directly.
  basic_process(detail::proc* p, detail::runtime_core* rt, pid self) noexcept
      : p_(p), rt_(rt), self_(self) {}
  ~basic_process() = default;

  /// The runtime's record of this process.
  detail::proc* p_;
  /// The runtime this process lives in.
  detail::runtime_core* rt_;
  /// This process's pid, as self() returns it.
  pid self_;
};

namespace detail {

template <class Request>
class receive_awaiter final : public Request {
 public:
  template <class... Args>
  explicit receive_awaiter(proc* p, Args&&... args)
      : Request(std::type_identity<typename receive_types<Args...>::shape>{},
                std::forward<Args>(args)...),
        p_(p) {}

  bool await_ready() { return receive_begin(p_, *this); }
  void await_suspend(std::coroutine_handle<> h) noexcept { receive_suspend(p_, *this, h); }
  typename Request::result_type await_resume() {
    receive_end(p_, *this);
    return this->take_result();
  }

 private:
  proc* p_;
};

}  // namespace detail

/// A process's own handle, passed to its body.
class process final : public basic_process {
 public:
  using basic_process::exit;

  /// Selective receive (see beamlet/core/receive.hpp): `co_await self.receive(on<T>()...,
  /// after(t))`.
  template <class... Args>
  [[nodiscard]] auto receive(Args&&... args) {
    using request = typename detail::receive_types<Args...>::request;
    return detail::receive_awaiter<request>(p_, std::forward<Args>(args)...);
  }

  /// Suspends for `d` (a receive with only an `after` clause, spec §1.2 rule 12).
  template <class Rep, class Period>
  [[nodiscard]] auto sleep(std::chrono::duration<Rep, Period> d) {
    return receive(after(d));
  }

  /// Lets other processes run; this one is rescheduled behind them.
  [[nodiscard]] auto yield() noexcept {
    struct awaiter {
      detail::proc* p;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) const noexcept { detail::yield_suspend(p, h); }
      void await_resume() const noexcept {}
    };
    return awaiter{p_};
  }

  /// Ends this process with `reason`: `co_await self.exit(reason);` never resumes.
  [[nodiscard]] auto exit(exit_reason reason) noexcept {
    struct awaiter {
      detail::proc* p;
      exit_reason reason;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) const noexcept {
        detail::exit_suspend(p, h, reason);
      }
      void await_resume() const noexcept {}
    };
    return awaiter{p_, std::move(reason)};
  }

 private:
  friend struct detail::proc;
  process(detail::proc* p, detail::runtime_core* rt, pid self) noexcept
      : basic_process(p, rt, self) {}
};

namespace detail {

/// `co_await receive_on(self, clauses...)`: protocol code written once for processes and, through
/// run_to_completion, for scoped processes (see the overload in scoped_process.hpp).
template <class... Args>
auto receive_on(process& self, Args&&... args) {
  return self.receive(std::forward<Args>(args)...);
}
/// The clock receive_on's timeouts are measured in: the runtime's, for a process.
inline clock_time wait_now(const process& self) noexcept {
  return self.now();
}

/// What a process's body is: its destructor, and the type that names the process's initial call
/// in process_info and crash reports: Fn::initial_call when the callable names one (the
/// behaviours do: a gen_server's body names the server class), else the callable's own type.
struct body_descriptor {
  void (*destroy)(void*) noexcept;
  const std::type_info* initial_call;
};
template <class Fn>
struct initial_call_of {
  using type = Fn;
};
template <class Fn>
  requires requires {
    typename Fn::initial_call;
  }
struct initial_call_of<Fn> {
  using type = typename Fn::initial_call;
};
template <class Fn>
inline constexpr body_descriptor body_descriptor_of{
    [](void* b) noexcept { static_cast<Fn*>(b)->~Fn(); },
    &typeid(typename initial_call_of<Fn>::type)};

template <class F>
pid spawn_body(runtime_core& rt, proc* parent, F&& body, spawn_options flags, ref* monitor_ref) {
  using Fn = std::decay_t<F>;
  static_assert(std::is_invocable_r_v<task<>, Fn&, process&>,
                "a process body must be callable as task<>(beamlet::process&)");
  static_assert(alignof(Fn) <= max_body_alignment,
                "a process body may not be over-aligned (alignof > 16)");
  proc* p = allocate_proc(rt, sizeof(Fn), alignof(Fn), flags.mailbox, parent);
  task<> t;
  try {
    Fn* fn = ::new (body_storage(p)) Fn(std::forward<F>(body));
    set_body_type(p, &body_descriptor_of<Fn>);
    // The body's first frame is the child's, not the spawner's.
    const std::int32_t spawner_frames = exchange_frame_bytes(0);
    try {
      t = (*fn)(process_of(p));
    } catch (...) {
      (void)exchange_frame_bytes(spawner_frames);
      throw;
    }
    frame_counter(p)->store(exchange_frame_bytes(spawner_frames), std::memory_order_relaxed);
  } catch (...) {
    discard_proc(p);
    throw;
  }
  return start_proc(p, t.release(), flags, parent, monitor_ref);
}

}  // namespace detail

/// The priority alias `p` published (beamlet/core/priority.hpp), if it is alive and has one.
inline std::optional<priority_alias> published_priority_alias(basic_process& self, pid p) noexcept {
  return detail::published_priority_alias(*detail::runtime_of(self), p);
}

BEAMLET_END_NAMESPACE
