// The signals processes exchange besides messages. They travel through the same inbox as
// messages, which is what gives every signal kind the per-pair ordering of spec §1.1
// rule 1, and they are acted on when the receiver drains its inbox, never queued as messages.
#pragma once

#include <cstdint>
#include <typeinfo>

#include <beamlet/core/detail/message.hpp>
#include <beamlet/core/detail/reply.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/system_messages.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

enum class signal_kind : std::uint8_t {
  none = 0,
  link,
  unlink,
  exit,
  down,
  timeout,
  reply,
  priority,
  resume
};
static_assert(static_cast<std::uint8_t>(signal_kind::reply) == reply_signal);

struct link_signal {
  pid from;
};
struct unlink_signal {
  pid from;
};
struct exit_signal {
  pid from;
  exit_reason reason;
  bool via_link;  ///< sent because a linked process ended (ignored once unlinked)
};
struct timeout_signal {
  std::uint32_t seq;
};
/// A message or an exit signal sent through a priority alias: the receiver unwraps it into its
/// priority queue if the alias is still active, and drops it otherwise.
struct priority_signal {
  std::uint64_t alias;
  message_node* inner;

  priority_signal(std::uint64_t a, message_node* n) noexcept : alias(a), inner(n) {}
  priority_signal(priority_signal&& o) noexcept : alias(o.alias), inner(o.inner) {
    o.inner = nullptr;
  }
  priority_signal& operator=(priority_signal&&) = delete;
  ~priority_signal() {
    if (inner != nullptr) destroy_node(inner);
  }
};

/// Lifts one pause of a process that a busy connection held back (remote_pause_running).
struct resume_signal {};

template <class T, signal_kind K>
inline constexpr type_descriptor signal_type{&destroy_typed<T>, &typeid(T),
                                             node_kind::signal, static_cast<std::uint8_t>(K),
                                             nullptr,           sizeof(typed_node<T>)};

inline constexpr const type_descriptor* link_tag = &signal_type<link_signal, signal_kind::link>;
inline constexpr const type_descriptor* unlink_tag =
    &signal_type<unlink_signal, signal_kind::unlink>;
inline constexpr const type_descriptor* exit_tag = &signal_type<exit_signal, signal_kind::exit>;
inline constexpr const type_descriptor* priority_tag =
    &signal_type<priority_signal, signal_kind::priority>;
inline constexpr const type_descriptor* timeout_tag =
    &signal_type<timeout_signal, signal_kind::timeout>;
inline constexpr const type_descriptor* resume_tag =
    &signal_type<resume_signal, signal_kind::resume>;
/// A DOWN in transit: becomes a `down` message if the watcher still holds the monitor. Same
/// payload type as the message, so accepting it is a retag, not a copy.
inline constexpr const type_descriptor* down_tag = &signal_type<down, signal_kind::down>;

inline signal_kind kind_of(const message_node* n) noexcept {
  return static_cast<signal_kind>(n->type->signal);
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
