/// @file
/// beamlet/core/mailbox_limit.hpp: bounded mailboxes (opt-in per process, set at spawn).
///
/// A process spawned with a mailbox_limit holds at most `capacity` ordinary messages; what
/// happens to the next one is its overflow_policy. Only ordinary messages count and only they
/// are ever dropped: exit signals, DOWNs, trapped exits, call replies, system requests
/// (sys, gen_server stop) and priority messages always get through, so a bounded process stays
/// manageable however full it is.
///
/// Guarantees:
///  * drop_newest and reject decide at the send: the message that finds the mailbox full is not
///    queued. Sends from one sender keep their order; what is kept is exactly the first
///    `capacity` messages not yet received.
///  * drop_oldest decides when the owner takes its arrivals in (at its next receive): the oldest
///    ordinary messages go until `capacity` are left, so the owner always sees the newest ones.
///    Until then the arrivals are held in the inbox (a process that never receives is not
///    bounded by drop_oldest: use drop_newest or reject for it).
///  * Every message that did not enter or stay is counted: process_details::messages_dropped,
///    and the runtime's beamlet_messages_dropped_total in the metrics.
///  * A send never blocks and never fails loudly; `try_send` tells the sender what happened, and
///    a call whose request is refused fails at once (call_error kind mailbox_full) instead of
///    waiting for a reply that cannot come. Servers (gen_server, supervisors) take drop_newest
///    or reject only: drop_oldest decides after the send, too late for a caller.
#pragma once

#include <cstddef>
#include <cstdint>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

/// What a bounded mailbox does with a message that arrives when `capacity` ordinary messages
/// are already there (see the header comment for when each decides).
enum class overflow_policy : std::uint8_t {
  drop_newest,  ///< the message that finds the mailbox full is dropped
  drop_oldest,  ///< the oldest queued message makes room for it
  reject,       ///< refused: try_send hands it back to the sender with errc::mailbox_full
};

/// spawn_options::mailbox. A capacity of 0 means unbounded (the default).
struct mailbox_limit {
  std::size_t capacity = 0;  ///< most ordinary messages held; 0: unbounded
  overflow_policy policy = overflow_policy::drop_newest;  ///< what happens to one more
};

BEAMLET_END_NAMESPACE
