// beamlet/otp/detail/gen_server_loop.hpp: the body of a gen_server process (gen:init_it and
// gen_server:loop): init and its ack, the receive loop, terminate. Not stable API.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include <beamlet/core/config.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/otp/detail/gen_server_dispatch.hpp>
#include <beamlet/otp/gen_server/results.hpp>
#include <beamlet/otp/gen_server/status.hpp>
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/start_result.hpp>

BEAMLET_BEGIN_NAMESPACE

template <class S>
class gen_server;

namespace detail {
template <class S>
concept has_init = requires(S& s) {
  s.init();
};
template <class S>
concept has_info = requires(S& s, any_message m) {
  s.handle_info(std::move(m));
};
template <class S>
concept has_continue = requires(S& s, any_message m) {
  s.handle_continue(std::move(m));
};
template <class S>
concept has_terminate = requires(S& s, const exit_reason& r) {
  s.terminate(r);
};

/// Runs init and reduces its result to ok (+ options) / ignore / stop.
template <class S>
task<gen::init_result> run_init(S& server) {
  if constexpr (!has_init<S>) {
    co_return gen::ok();
  } else {
    using ret = decltype(server.init());
    if constexpr (is_task<ret>) {
      if constexpr (std::is_void_v<task_value_t<ret>>) {
        co_await server.init();
        co_return gen::ok();
      } else {
        co_return gen::init_result(co_await server.init());
      }
    } else if constexpr (std::is_void_v<ret>) {
      server.init();
      co_return gen::ok();
    } else {
      co_return gen::init_result(server.init());
    }
  }
}

template <class S>
task<> call_terminate(S& server, const exit_reason& reason) {
  if constexpr (has_terminate<S>) {
    if constexpr (is_task<decltype(server.terminate(reason))>) {
      co_await server.terminate(reason);
    } else {
      server.terminate(reason);
    }
  }
  co_return;
}

// The message moves into the callback: a coroutine callback runs after this returns.
template <class S>
dispatched dispatch_plain(S& server, any_message m, bool continuation) {
  auto convert = [](auto&&... v) { return plain_outcome(std::forward<decltype(v)>(v)...); };
  if (continuation) {
    if constexpr (has_continue<S>) {
      return run_callback(
          [&server, m = std::move(m)]() mutable -> decltype(auto) {
            return server.handle_continue(std::move(m));
          },
          convert);
    } else {
      outcome o;
      o.stop = true;
      o.reason = exit_reason::error_tuple("undef", reason_atom{"handle_continue"});
      return {std::move(o), std::nullopt, {}};
    }
  }
  if constexpr (has_info<S>) {
    return run_callback(
        [&server, m = std::move(m)]() mutable -> decltype(auto) {
          return server.handle_info(std::move(m));
        },
        convert);
  } else {
    // OTP 25 logs and drops an info message a server does not handle (§4.3 rule 12).
    return {outcome{}, std::nullopt, {}};
  }
}

/// Dispatches one message taken by the server loop. Sets `terminate` (and returns nothing)
/// for a stop request or the trapped exit of the parent. Not a coroutine: the loop receives
/// itself, so an idle server keeps no frame for this and a message costs no frame allocation.
template <class S>
std::optional<dispatched> dispatch_message(process& self, S& server, pid parent, any_message m,
                                           exit_reason& terminate) {
  const type_descriptor* t = m.descriptor();
  if (const auto* ext = static_cast<const envelope_ext*>(t->ext);
      ext != nullptr && ext->server_type == &server_type_id<S>) {
    dispatched d = ext->dispatch(&server, m.native_handle());
    if (d.pending) d.message = std::move(m);
    return d;
  }
  if (auto* sr = m.template get_if<stop_request>()) {
    terminate = sr->reason;
    return std::nullopt;
  }
  if (auto* e = m.template get_if<exit_message>();
      e != nullptr && e->from == parent && self.trap_exit()) {
    terminate = e->reason;  // the parent's exit, trapped (§4.4 rule 14)
    return std::nullopt;
  }
  return dispatch_plain(server, std::move(m), false);
}

// -- sys-style debugging and reports (the non-template parts are in lib/otp/gen_server.cpp) --

/// What the loop keeps for sys (beamlet/otp/sys.hpp): suspended, tracing, statistics.
struct sys_state {
  bool suspended = false;
  bool trace = false;
  bool statistics = false;
  std::chrono::system_clock::time_point since{};
  std::uint64_t reductions_at_start = 0;
  std::uint64_t in = 0;
  std::uint64_t out = 0;
};

/// The message being handled, as cheaply as it can be kept (one pointer and a pid): terminate
/// reports and traces describe it from this.
struct last_message {
  enum class kind : std::uint8_t { none, call, cast, info, timeout, continuation };
  kind what = kind::none;
  const type_descriptor* type = nullptr;
  pid caller;
};

inline last_message classify(const any_message& m, bool continuation) {
  last_message l;
  l.type = m.descriptor();
  if (continuation) {
    l.what = last_message::kind::continuation;
  } else if (const auto* ext = static_cast<const envelope_ext*>(l.type->ext); ext != nullptr) {
    l.what = ext->caller != nullptr ? last_message::kind::call : last_message::kind::cast;
    if (ext->caller != nullptr) l.caller = ext->caller(m.native_handle());
  } else if (l.type == tag_of<timeout_message>()) {
    l.what = last_message::kind::timeout;
  } else {
    l.what = last_message::kind::info;
  }
  return l;
}

template <class S>
concept has_format_status = requires(const S& s) {
  { s.format_status() } -> std::convertible_to<std::string>;
};
template <class S>
concept ostream_printable = requires(std::ostream& os, const S& s) {
  os << s;
};

/// The server state as terminate reports and sys:get_status show it: the server's
/// `std::string format_status() const` if it has one (OTP's format_status/2 callback), else
/// its operator<<, else its type name.
template <class S>
std::string format_state(const void* server) {
  const S& s = *static_cast<const S*>(server);
  if constexpr (has_format_status<S>) {
    return std::string(s.format_status());
  } else if constexpr (ostream_printable<S>) {
    std::ostringstream os;
    os << s;
    return os.str();
  } else {
    return "<" + demangled_name(typeid(S)) + ">";
  }
}

/// What the loop knows about its server, for the non-template helpers.
struct server_identity {
  const void* server;
  const void* type_id;         ///< &server_type_id<S>
  const std::type_info* type;  ///< the server's initial call
  std::string (*format)(const void*);
  pid parent;
};

/// Answers a system message (sends the reply).
void handle_sys(process& self, sys_state& sys, sys_request& r, const server_identity& who);
/// Traces and counts a message taken (only called while tracing or counting).
void note_message(process& self, sys_state& sys, const last_message& m);
/// Traces and counts a reply sent.
void note_reply(process& self, sys_state& sys, pid to);
/// gen_server's terminate report ("** Generic server ... terminating"), if reports are on.
void report_terminate(process& self, const server_identity& who, const last_message& m,
                      const exit_reason& reason) noexcept;

template <class S>
struct server_access {
  static void bind(gen_server<S>& g, process& self, pid parent) {
    g.self_ = &self;
    g.parent_ = parent;
  }
};

/// The body of a gen_server process (gen:init_it + gen_server:loop).
template <class S, class... Args>
task<> server_main(process& self, const starter& st, std::string name, Args... args) {
  if (!name.empty() && self.register_name(name)) {
    // Taken since the starter's check: ack {error, {already_started, P}} and exit normal.
    st.ack(self, start_result::error(
                     exit_reason::error(already_started(whereis_in(*runtime_of(self), name)))));
    co_return;
  }
  std::optional<S> server;
  gen::init_result init;
  std::optional<exit_reason> failed;
  try {
    server.emplace(args...);
    server_access<S>::bind(*server, self, st.parent());
    init = co_await run_init(*server);
  } catch (...) {
    failed = exit_reason::from_exception(std::current_exception());
  }
  if (failed) {
    // An exception in init: {error, Reason} and exit with it (§4.1 rule 3).
    if (!name.empty()) (void)unregister_in(*runtime_of(self), name);
    st.ack(self, start_result::error(*failed));
    co_await self.exit(*failed);
  }
  if (auto* s = std::get_if<gen::stop_t>(&init.get())) {
    if (!name.empty()) (void)unregister_in(*runtime_of(self), name);
    st.ack(self, start_result::error(s->reason));
    co_await self.exit(s->reason);
  }
  if (std::holds_alternative<gen::ignore_t>(init.get())) {
    if (!name.empty()) (void)unregister_in(*runtime_of(self), name);
    st.ack(self, start_result::ignore());
    co_return;
  }
  gen::result_options opts = std::move(std::get<gen::init_ok_t>(init.get()).options);
  st.ack(self, start_result::ok(self.self()));

  exit_reason reason;
  outcome last;  // holds a {stop, R, Reply} reply until terminate has run
  sys_state sys;
  last_message current;
  const server_identity who{&*server, &server_type_id<S>,
                            &typeid(typename initial_call_of<S>::type), &format_state<S>,
                            st.parent()};
  for (;;) {
    std::optional<dispatched> d;
    bool crashed = false;
    try {
      if (opts.continuation != nullptr) {
        any_message c(opts.continuation.release());
        current = classify(c, true);
        d = dispatch_plain(*server, std::move(c), true);
      } else {
        any_message m;
        if (sys.suspended) {
          // Suspended: system messages, a stop and the parent's exit only (sys:suspend/1).
          auto r = co_await self.receive(
              on<sys_request>(), on<stop_request>(),
              on<exit_message>().when(
                  [p = st.parent()](const exit_message& e) { return e.from == p; }));
          m = r.take();
        } else if (opts.timeout.finite()) {
          auto r = co_await self.receive(on_any(), after(opts.timeout));
          if (r.timed_out())
            m = any_message(make_message(timeout_message{}));
          else
            m = r.take();
        } else {
          auto r = co_await self.receive(on_any());
          m = r.take();
        }
        if (auto* sr = m.template get_if<sys_request>()) {
          handle_sys(self, sys, *sr, who);
          continue;  // the same options again: a gen_server timeout restarts, as in OTP
        }
        current = classify(m, false);
        if (sys.trace || sys.statistics) note_message(self, sys, current);
        d = dispatch_message(self, *server, st.parent(), std::move(m), reason);
      }
      if (d && d->pending) d->done = co_await std::move(*d->pending);
    } catch (...) {
      reason = exit_reason::from_exception(std::current_exception());
      crashed = true;
    }
    if (crashed || !d) break;
    if (d->done.stop) {
      reason = d->done.reason;
      last = std::move(d->done);
      break;
    }
    if (d->done.reply != nullptr) {
      if (sys.trace || sys.statistics) note_reply(self, sys, d->done.reply_to);
      send_node(*runtime_of(self), d->done.reply_to, d->done.reply.release());
    }
    opts = std::move(d->done.options);
  }
  std::optional<exit_reason> terminate_failed;
  try {
    co_await call_terminate(*server, reason);
  } catch (...) {
    terminate_failed = exit_reason::from_exception(std::current_exception());
  }
  if (terminate_failed) reason = *terminate_failed;
  if (!reason.is_clean()) report_terminate(self, who, current, reason);
  // {stop, R, Reply}: the reply goes out after terminate (§4.2 rule 10).
  if (last.reply != nullptr) send_node(*runtime_of(self), last.reply_to, last.reply.release());
  co_await self.exit(reason);
}

template <class S, class... Args>
class server_body_fn {
 public:
  using initial_call = typename initial_call_of<S>::type;
  server_body_fn(std::string name, Args... args)
      : name_(std::move(name)), args_(std::move(args)...) {}
  // The body object lives in the process until it ends, so the coroutine may use `this`.
  task<> operator()(process& c, const starter& st) {
    co_await std::apply([&](Args&... a) { return server_main<S>(c, st, name_, a...); }, args_);
  }

 private:
  std::string name_;
  std::tuple<Args...> args_;
};

template <class S, class... Args>
auto server_body(std::string name, Args... args) {
  return server_body_fn<S, Args...>(std::move(name), std::move(args)...);
}

}  // namespace detail

BEAMLET_END_NAMESPACE
