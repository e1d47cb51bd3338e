// What the I/O thread answers the owner's requests with. They are control messages: a bounded
// mailbox never drops or counts them (the owner is waiting for them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include <beamlet/core/detail/message.hpp>
#include <beamlet/net/tcp.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

struct recv_reply {
  std::uint64_t tag;
  std::error_code error;
  std::string data;
};
struct room_reply {
  std::uint64_t tag;
  std::error_code error;
};
struct pause_reply {
  std::uint64_t tag;
  active_mode was;
};
/// connect and accept: the new socket's handle (closed with the message if the owner is gone).
struct socket_reply {
  std::uint64_t tag;
  std::error_code error;
  tcp_socket socket;
};

}  // namespace net::detail

namespace detail {
template <>
inline constexpr bool is_control_message<net::detail::recv_reply> = true;
template <>
inline constexpr bool is_control_message<net::detail::room_reply> = true;
template <>
inline constexpr bool is_control_message<net::detail::pause_reply> = true;
template <>
inline constexpr bool is_control_message<net::detail::socket_reply> = true;
}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
