/// @file
/// beamlet/dist/gen_call.hpp: gen_server calls and casts across nodes, in the wire form every
/// Erlang and Elixir GenServer speaks ({'$gen_call', {From, Tag}, Request} answered by
/// {Tag, Reply}; {'$gen_cast', Request}).
///
/// Client side: call() monitors the server, sends the request and waits for the reply or the
/// DOWN, as gen:call does: a server that dies mid-call ends the call at once with its exit
/// reason; a dead server gives `noproc`, a lost connection `noconnection`, and no answer within
/// the timeout gives `timeout` (a late reply is then dropped: its tag no longer matches any
/// receive, and it is flushed from the mailbox).
///
/// Server side: a beamlet process (a gen_server's handle_info, or any receive loop) that gets a
/// term from another node asks as_gen_call() whether it is a call, and answers with reply().
#pragma once

#include <optional>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/core/timeout.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// gen_server:call(Server, Request, Timeout) to a remote pid (or a local one).
task<expected<term, exit_reason>> call(process& self, pid server, term request,
                                       timeout_value timeout = std::chrono::seconds(5));
/// gen_server:call({Name, Node}, Request, Timeout).
task<expected<term, exit_reason>> call(process& self, std::string name, std::string node,
                                       term request,
                                       timeout_value timeout = std::chrono::seconds(5));
/// gen_server:cast(Server, Request).
void cast(basic_process& self, pid server, term request);
/// gen_server:cast({Name, Node}, Request).
void cast(basic_process& self, std::string_view name, std::string_view node, term request);

/// A call received from another node.
struct gen_call {
  term from;  ///< the caller's pid
  term tag;   ///< echoed in the reply
  /// What the caller asks, the Request of `{'$gen_call', From, Request}`.
  term request;
};
/// The call `msg` carries, if it is one.
std::optional<gen_call> as_gen_call(const term& msg);
/// The request of a `{'$gen_cast', Request}`, if `msg` is one.
std::optional<term> as_gen_cast(const term& msg);
/// Answers a call (gen_server:reply/2).
void reply(basic_process& self, const gen_call& c, term value);

}  // namespace dist
BEAMLET_END_NAMESPACE
