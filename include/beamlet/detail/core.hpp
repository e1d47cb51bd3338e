// beamlet/detail/core.hpp: the runtime entry points that public templates call.
//
// Templates in the public headers (send<T>, spawn<F>, receive<...>) do the typed work (build a
// node, construct a body, compile a scan loop) and hand the result to these non-template
// functions, which own all synchronisation. Nothing here is stable API.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>

#include <beamlet/config.hpp>
#include <beamlet/detail/message.hpp>
#include <beamlet/detail/receive_op.hpp>
#include <beamlet/exit_reason.hpp>
#include <beamlet/ids.hpp>
#include <beamlet/task.hpp>
#include <beamlet/timeout.hpp>

BEAMLET_BEGIN_NAMESPACE

class process;
class basic_process;
struct spawn_options;

namespace detail {

struct proc;         // a process (lib/core/process_state.hpp)
class runtime_core;  // a runtime (lib/core/runtime_core.hpp)

// -- messaging (any thread) ----------------------------------------------------------------------

/// Delivers `n` to `to`, or destroys it if `to` is not alive. Never throws.
void send_node(runtime_core& rt, pid to, message_node* n) noexcept;
/// Delivers `n` to the process registered as `name`; destroys it and returns
/// errc::not_registered when nobody holds the name.
std::error_code send_node_named(runtime_core& rt, std::string_view name, message_node* n) noexcept;
/// Starts a timer that delivers `n` to `to` after `delay`; returns its reference.
ref send_node_after(runtime_core& rt, pid to, message_node* n, timeout_value delay);

/// The pid registered under `name`, or the null pid.
pid whereis_in(runtime_core& rt, std::string_view name);
/// erlang:is_process_alive/1 (false for the null pid). The one implementation behind
/// runtime::is_alive and basic_process::is_alive.
bool is_alive_in(runtime_core& rt, pid p) noexcept;
/// A C++ type's readable (demangled) name.
std::string demangled_name(const std::type_info& t);
/// The runtime's time (runtime_options::clock).
clock::time_point now_in(const runtime_core& rt) noexcept;
/// The runtime's scheduler thread count.
unsigned scheduler_count(const runtime_core& rt) noexcept;
std::error_code unregister_in(runtime_core& rt, std::string_view name);

// -- spawning ------------------------------------------------------------------------------------

/// The strictest alignment a process body (the callable spawn copies) may have.
inline constexpr std::size_t max_body_alignment = 16;
/// Reserves a process with room for a body of the given size. Throws system_limit_error when the
/// runtime is full or shutting down, std::bad_alloc when out of memory.
proc* allocate_proc(runtime_core& rt, std::size_t body_size, std::size_t body_align);
void* body_storage(proc* p) noexcept;
void set_body_destructor(proc* p, void (*destroy)(void*) noexcept) noexcept;
process& process_of(proc* p) noexcept;
/// Releases a process that was allocated but never started (its body threw).
void discard_proc(proc* p) noexcept;
/// Publishes the process and makes it runnable. `parent` is null for a spawn from outside.
pid start_proc(proc* p, std::coroutine_handle<task_promise<void>> body, const spawn_options& flags,
               proc* parent, ref* monitor_ref) noexcept;

// -- receive (owner only) ------------------------------------------------------------------------

/// Starts a receive in a coroutine process. True when it completed at once (match, or an
/// `after(0)` timeout); false when the process must suspend.
bool receive_begin(proc* p, receive_op& op);
void receive_suspend(proc* p, receive_op& op, std::coroutine_handle<> h) noexcept;
void receive_end(proc* p, receive_op& op) noexcept;
/// A mailbox's process: created by open_external, ended by close_external.
struct external_handle {
  proc* p;
  runtime_core* rt;
  pid self;
};
external_handle open_external(runtime_core& rt);
void close_external(proc* p) noexcept;

/// Runs a whole receive for an outside-thread mailbox, blocking the calling thread.
void receive_blocking(proc* p, receive_op& op);

void yield_suspend(proc* p, std::coroutine_handle<> h) noexcept;
/// The runtime a process (or mailbox) belongs to.
runtime_core* runtime_of(const basic_process& p) noexcept;
void exit_suspend(proc* p, std::coroutine_handle<> h, const exit_reason& reason) noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
