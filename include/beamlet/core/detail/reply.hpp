// beamlet/core/detail/reply.hpp: replies that behave like OTP aliases.
//
// A gen_server reply travels as a signal, not a message. The receiver turns it into a message
// only while it still holds the monitor whose ref tags the reply (the call's monitor), exactly as
// OTP 24+ ties a call's alias to its monitor ({alias, demonitor}). A reply that arrives after the
// call gave up (timeout, demonitor) is dropped at the door and never shows up in the mailbox.
#pragma once

#include <cstdint>
#include <typeinfo>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/message.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

/// The signal number of replies (see lib/core/signals.hpp).
inline constexpr std::uint8_t reply_signal = 6;

struct reply_ext {
  const type_descriptor* message_form;  ///< the node's type once accepted
  std::uint64_t (*tag)(const message_node*) noexcept;
};

/// T has a member `std::uint64_t tag`.
template <class T>
std::uint64_t reply_tag_of(const message_node* n) noexcept {
  return static_cast<const typed_node<T>*>(n)->value.tag;
}

template <class T>
inline constexpr reply_ext reply_ext_for{&message_type<T>, &reply_tag_of<T>};

template <class T>
inline constexpr type_descriptor reply_signal_type{&destroy_typed<T>, &typeid(T),
                                                   node_kind::signal, reply_signal,
                                                   &reply_ext_for<T>, sizeof(typed_node<T>)};

}  // namespace detail
BEAMLET_END_NAMESPACE
