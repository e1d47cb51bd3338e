/// @file
/// beamlet/otp/gen_server.hpp: the GenServer behaviour (OTP gen_server, spec §4). This header is
/// the umbrella: results in beamlet/otp/gen_server/results.hpp, clients in
/// beamlet/otp/gen_server/client.hpp, the server loop in beamlet/otp/detail/gen_server_loop.hpp.
///
/// A server is a class deriving from gen_server<Self>; an instance lives inside its process and
/// is its state. Callbacks, all optional except the handle_call/handle_cast overloads a client
/// uses:
///
///   init()                                  -> void | gen::init_result (ok / ok.after(t) /
///                                              ok.then(c) / ignore / stop(R))
///   handle_call(const Req&, from<Reply>)     -> Reply | gen::call_result<Reply> (reply(v) /
///                                              noreply() / stop(R, v) / stop(R), each .after(t)
///                                              or .then(c))
///   handle_cast(const Req&)                  -> void | gen::action (noreply() / stop(R))
///   handle_info(any_message)                 -> void | gen::action
///   handle_continue(any_message)             -> void | gen::action
///   terminate(const exit_reason&)            -> void
///
/// Any callback may instead be a coroutine returning task<...> of the same, and co_await
/// (call other servers, receive, sleep). handle_call/handle_cast may take the request as `Req&`
/// instead and move from it: a delivered request belongs to the server. Requests are plain
/// types that name their reply:
///
///   struct get { using reply_type = int; };
///   struct counter : gen_server<counter> {
///     int n = 0;
///     int handle_call(const get&, from<int>) { return n; }
///   };
///   auto r = co_await counter::start_link(self, {});
///   int v = co_await call(self, server_ref<counter>(r.pid()), get{});
///
/// Clients address a server through a typed `server_ref<S>` (a pid, a registered name, or a
/// via_name resolved at each use, as Erlang's {via, Module, Name}), so a
/// request the server does not handle is a compile-time error, and replies are typed.
///
/// Semantics (spec §4): start goes through proc_lib (beamlet/otp/proc_lib.hpp) and returns
/// {ok, Pid}, ignore or {error, R} as §4.1 rule 3 (an exception in init gives its exit reason;
/// C++ has no "bad return value" or throw-as-return). call is gen:call: monitor with a receive
/// marker, send, wait on the reply or the DOWN; O(1) whatever the caller's mailbox holds. It
/// throws call_error (an exit_exception) for noproc, calling_self, timeout and the server's exit
/// reason, each wrapped as {Reason, {gen_server, call, ...}}. A reply arriving after a timeout is
/// dropped, never queued (replies are alias-like, see beamlet/core/detail/reply.hpp). cast always
/// succeeds. terminate runs on a stop result, on an exception in a callback, on the parent's EXIT
/// when the server traps exits, and on stop(); not when an exit signal kills a non-trapping
/// server. A {stop, R, Reply} result runs terminate before the reply is sent.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/otp/detail/gen_server_dispatch.hpp>
#include <beamlet/otp/detail/gen_server_loop.hpp>
#include <beamlet/otp/gen_server/client.hpp>
#include <beamlet/otp/gen_server/results.hpp>
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/start_result.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Options of gen_server start functions. Trivially destructible on purpose: callers write
/// `co_await S::start_link(self, {.name = "x"})`, and GCC 12 miscompiles aggregate temporaries
/// with destructors inside a co_await expression (see docs/gcc12-coroutines.md).
struct server_options {
  /// Registers the server under this name (copied; the view need only outlive the call). A
  /// taken name gives {error, {already_started, P}}.
  std::string_view name{};
  /// How long to wait for init; infinity is OTP's default.
  timeout_value timeout{};
  /// How to wait for the ack; nullopt follows the starting process's ack_wait flag.
  std::optional<ack_wait_mode> wait{};
  /// Bounds the server's mailbox (beamlet/core/mailbox_limit.hpp): requests over the capacity are
  /// refused, and their calls fail at once with call_error kind mailbox_full. drop_newest or
  /// reject; drop_oldest gives {error, {invalid_mailbox_limit, drop_oldest}} (it would drop
  /// calls whose callers already wait).
  mailbox_limit mailbox{};

  /// The proc_lib start_options these amount to (the name is handled by the start itself).
  start_options start() const { return {timeout, wait, mailbox}; }
};

/// Base class of gen_server implementations: `class my_server : public gen_server<my_server>`.
template <class S>
class gen_server {
 public:
  /// The server's own process (send, spawn, monitor, trap_exit... from callbacks).
  process& self() const noexcept { return *self_; }
  /// The process that started the server (proc_lib's parent).
  pid parent() const noexcept { return parent_; }

  /// gen_server:start_link: starts an S(args...) linked to `self` and waits for its init.
  /// The arguments are copied (or moved) before this returns.
  template <class... Args>
  static task<start_result> start_link(process& self, server_options opts, Args&&... args) {
    check_start_arguments<Args...>();
    return start_task<true>(self, opts, std::decay_t<Args>(std::forward<Args>(args))...);
  }
  /// gen_server:start: as start_link, without the link (monitored while starting).
  template <class... Args>
  static task<start_result> start(process& self, server_options opts, Args&&... args) {
    check_start_arguments<Args...>();
    return start_task<false>(self, opts, std::decay_t<Args>(std::forward<Args>(args))...);
  }
  /// start_link from an outside thread (blocks it); the server is linked to the scoped_process.
  template <class... Args>
  static start_result start_link(scoped_process& me, server_options opts, Args&&... args) {
    return detail::run_to_completion(
        start_task<true>(me, opts, std::decay_t<Args>(std::forward<Args>(args))...));
  }

 protected:
  gen_server() = default;
  ~gen_server() = default;

 private:
  template <class... Args>
  static constexpr void check_start_arguments() {
    static_assert((detail::coroutine_safe_argument<Args> && ...),
                  "start_link/start: with GCC 12, pass a constructor argument that is an aggregate "
                  "with a destructor (e.g. one holding a std::string) as a named variable, not a "
                  "temporary: GCC 12 miscompiles such temporaries in a co_await expression "
                  "(docs/gcc12-coroutines.md)");
  }
  /// gen:start: the name check, then proc_lib's start with the server's body (one
  /// implementation for start_link and start, from a process or a scoped_process).
  template <bool Link, class Self, class... Args>
  static task<start_result> start_task(Self& self, server_options opts, Args... args) {
    // drop_oldest would drop call requests after the send succeeded: their callers would wait
    // for a reply that cannot come. A server's bound must refuse at the door.
    if (opts.mailbox.capacity != 0 && opts.mailbox.policy == overflow_policy::drop_oldest)
      co_return start_result::error(
          exit_reason::error_tuple("invalid_mailbox_limit", reason_atom{"drop_oldest"}));
    if (!opts.name.empty()) {
      if (const pid holder = detail::whereis_in(*detail::runtime_of(self), opts.name))
        co_return start_result::error(exit_reason::error(detail::already_started(holder)));
    }
    // A named local, not a temporary in the co_await expression (GCC 12, see above).
    auto body = detail::server_body<S>(std::string(opts.name), args...);
    const start_options so = opts.start();
    if constexpr (Link) {
      co_return co_await detail::start_link_protocol(self, std::move(body), so);
    } else {
      co_return co_await beamlet::start(self, std::move(body), so);
    }
  }

  friend struct detail::server_access<S>;
  process* self_ = nullptr;
  pid parent_;
};

BEAMLET_END_NAMESPACE
