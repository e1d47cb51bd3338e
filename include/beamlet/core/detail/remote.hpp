// beamlet/core/detail/remote.hpp: how the core hands operations on remote pids to the distribution
// layer, and how that layer hands signals from other nodes to local processes.
//
// The core knows remote pids only as pids with the remote bit (ids.hpp). Everything a process
// does to one (a message, a link or unlink, an exit signal, a monitor, a DOWN owed to a remote
// watcher) goes through the runtime's remote_hooks, which the distribution layer installs in
// the runtime's hook table (detail/layer_hooks.hpp) when a node starts; without them a remote
// pid behaves as a dead one. The hooks are called on the acting process's thread, possibly many
// at once: they must be thread-safe and must not block.
// Signals from one local process to one remote process reach the hooks in the order it made
// them (and the layer keeps that order on the wire).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/layer_hooks.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

struct message_node;
class runtime_core;
enum class send_status : std::uint8_t;

class remote_hooks {
 public:
  /// A message for remote process `to`; takes `n`. `queued` once it is on its way;
  /// `no_process` when the layer cannot take it (no node running: the core then treats `to` as
  /// dead); `refused` when the message cannot be encoded (it is dropped, and logged).
  virtual send_status send(pid to, message_node* n) noexcept = 0;
  /// Local `from` links to remote `to`. False: as for send.
  virtual bool link(pid from, pid to) noexcept = 0;
  virtual void unlink(pid from, pid to) noexcept = 0;
  /// An exit signal from local `from`: its death reaching a linked remote process (`via_link`),
  /// or exit/2.
  virtual bool exit(pid from, pid to, const exit_reason& reason, bool via_link) noexcept = 0;
  /// Local `target` ended: the DOWN for remote `watcher`'s monitor `ref`.
  virtual void down(pid watcher, pid target, std::uint64_t ref,
                    const exit_reason& reason) noexcept = 0;
  /// `{name, node} ! message`; takes `n`.
  virtual void send_named(pid from, std::string_view name, std::string_view node,
                          message_node* n) noexcept = 0;
  /// `watcher` (local) monitors remote `target` with `ref`. The DOWN comes back through
  /// remote_down_in. False: no node running.
  virtual bool monitor(pid watcher, pid target, std::uint64_t ref) noexcept = 0;
  /// Monitor of `{name, node}`. Returns the pid that stands for the node in the DOWN (a remote
  /// pid whose data is 0), or the null pid when no node is running.
  virtual pid monitor_named(pid watcher, std::string_view name, std::string_view node,
                            std::uint64_t ref) noexcept = 0;
  /// `watcher` dropped its monitor `ref` of `target` (demonitor, or the watcher ended).
  virtual void demonitor(pid watcher, pid target, std::uint64_t ref) noexcept = 0;

 protected:
  ~remote_hooks() = default;
};

// Installed with install_hook (detail/layer_hooks.hpp), which says how long they must live.

// -- signals from other nodes (called by the distribution layer) --------------------------------

/// A LINK from remote `from` to local `to`. False if `to` is not alive.
bool remote_link_in(runtime_core& rt, pid from, pid to) noexcept;
/// An UNLINK from remote `from`.
void remote_unlink_in(runtime_core& rt, pid from, pid to) noexcept;
/// An exit signal from remote `from`: because of a link (EXIT, ignored once unlinked) or sent
/// with exit/2 (EXIT2). False if `to` is not alive.
bool remote_exit_in(runtime_core& rt, pid from, pid to, exit_reason reason, bool via_link) noexcept;
/// A MONITOR from remote `watcher` on local `target` with the layer's local `ref`; `*slot`
/// receives what remote_demonitor_in needs. False if `target` is not alive (the caller answers
/// noproc).
bool remote_monitor_in(runtime_core& rt, pid watcher, pid target, std::uint64_t ref,
                       std::uint32_t* slot) noexcept;
/// The remote watcher dropped monitor `ref` (at `slot`) on local `target`.
void remote_demonitor_in(runtime_core& rt, pid target, std::uint64_t ref,
                         std::uint32_t slot) noexcept;
/// The DOWN for local `watcher`'s monitor `ref` of remote `target` (or of a name on a node,
/// `name` set). Dropped if the watcher no longer holds the monitor.
void remote_down_in(runtime_core& rt, pid watcher, std::uint64_t ref, pid target,
                    exit_reason reason, std::string name) noexcept;

// -- backpressure (OTP's busy_dist_port) --------------------------------------------------------

/// A pause of one process, taken by the layer when that process sent to a connection over its
/// limit, and handed back with remote_resume when the connection has drained (or closed).
/// Holds the resume signal, made up front, so that lifting the pause cannot fail.
struct pause_ticket {
  pid who;                         ///< null: no pause was taken
  message_node* resume = nullptr;  ///< owned until remote_resume
};
/// The process of `rt` running on the calling thread: the null pid on an outside thread, a
/// scoped_process's, or a thread running a process of another runtime.
pid running_process(const runtime_core& rt) noexcept;
/// The process of `rt` on whose behalf the calling thread acts, a scoped_process's included:
/// what sends from this thread are ordered by. The null pid on an outside thread.
pid acting_process(const runtime_core& rt) noexcept;
/// Pauses the process of `rt` running on the calling thread: it finishes its current run, but its
/// body is not resumed until every pause taken has been lifted; its signals are still acted on, so
/// it can be killed meanwhile. Returns an empty ticket when the caller is not a process running
/// on a scheduler (an outside thread, or a scoped_process: the layer decides what they do), or
/// when memory for the resume signal cannot be had (no pause then).
pause_ticket remote_pause_running(const runtime_core& rt) noexcept;
/// Lifts the pause `t` took (nothing for an empty ticket; a process that has ended meanwhile
/// drops it).
void remote_resume(runtime_core& rt, pause_ticket t) noexcept;
/// The busy_dist_port alarm of the system monitor (system_monitor.hpp), if it is on: `suspended`
/// was paused for the connection that process `port` serves.
void remote_busy_alarm(runtime_core& rt, pid suspended, pid port) noexcept;

}  // namespace detail
BEAMLET_END_NAMESPACE
