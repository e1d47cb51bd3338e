/// @file
/// beamlet/core/priority.hpp: priority messages (EEP 76, OTP 28).
///
/// A process makes a priority alias (process::priority_alias) and hands it out; messages sent
/// through it, and exit signals sent to it, are received ahead of every ordinary message, whatever
/// the ordinary queue holds. That is what lets an operator reach a process that is drowning: a
/// supervisor with a million start requests queued still answers a priority which_children at
/// once.
///
/// Semantics, as EEP 76:
///  * A receive looks at the priority messages first (in their arrival order), then at the
///    ordinary queue as usual. Priority messages from one sender keep their order; relative to
///    that sender's ordinary messages they may overtake (that is the point).
///  * Only an active alias delivers: after unalias, or once the owner has exited, messages sent
///    through it are dropped, as a send to a dead pid is.
///  * A priority exit signal acts as any exit signal; when the owner traps exits, its exit_message
///    is a priority message.
///  * A priority alias is not a pid: only the holders of it can send with priority. A process
///    may publish one alias (published_priority_alias finds it by pid) so that library code,
///    like a supervisor's management functions, can reach it without a handshake; the published
///    alias stays active as long as the process. Publishing is a choice of trust: anyone can
///    then send with priority, and priority messages are never bounded (a bounded mailbox does
///    not count them), so keep them for management and out of the hot path.
/// Processes that never make an alias pay nothing for the feature (one test per receive).
#pragma once

#include <compare>
#include <string>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Tag for the priority forms of calls (gen_server call, the supervisors' management
/// functions): the request goes through the server's published alias when it has one.
struct priority_t {
  explicit constexpr priority_t() = default;
};
/// Pass as the tag argument: `call(self, server, req, priority, 5s)`.
inline constexpr priority_t priority{};

/// A priority alias: the owner's pid and the alias's own unique reference.
struct priority_alias {
  beamlet::pid owner;  ///< the process that receives what is sent through the alias
  beamlet::ref id;     ///< tells this alias apart from the owner's others; null: no alias

  /// True for an alias a process made; false for the default (null) value. Says nothing of
  /// whether the alias is still active.
  constexpr explicit operator bool() const noexcept { return static_cast<bool>(id); }
  /// Orders by owner, then id.
  friend constexpr auto operator<=>(const priority_alias&, const priority_alias&) = default;
  /// `#Alias<<0.N.0>,#Ref<0.M>>`, for logs.
  std::string to_string() const {
    return "#Alias<" + owner.to_string() + "," + id.to_string() + ">";
  }
};

BEAMLET_END_NAMESPACE
