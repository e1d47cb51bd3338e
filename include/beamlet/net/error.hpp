/// @file
/// beamlet/net/error.hpp: the network layer's own errors.
///
/// Every socket operation reports failure as a std::error_code, never by throwing: either one of
/// these (category "beamlet.net") or an operating-system error as the socket saw it
/// (std::system_category: ECONNREFUSED, ECONNRESET, EMFILE...). message() says what happened in
/// words; the tcp_error message and every `expected` carry the same code.
#pragma once

#include <system_error>
#include <type_traits>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace net {

/// The network layer's own failures, in the category "beamlet.net".
enum class net_errc {
  closed = 1,        ///< the socket is closed (by its owner, by the peer, or after an error)
  timed_out,         ///< connect, accept, recv or a stalled send took longer than allowed
  packet_too_large,  ///< a frame header announced more than max_packet (nothing allocated)
  line_too_long,     ///< no end of line within max_packet bytes
  send_queue_full,   ///< send_full::error and the send queue is at its limit
  not_owner,         ///< the calling process is not the socket's controlling process
  active_socket,     ///< recv on a socket in active mode (gen_tcp's einval)
  bad_options,       ///< an option out of range (see socket_options)
  bad_address,       ///< not an address, or a name that does not resolve
  no_handle,         ///< an empty (moved-from or default) handle
  truncated,         ///< the peer closed or reset the connection in the middle of a frame
  out_of_memory,     ///< memory for this socket's data could not be had (only it fails)
};

/// The category of net_errc codes, named "beamlet.net".
const std::error_category& net_category() noexcept;

/// Makes a net_errc a std::error_code (so that `ec == net_errc::closed` works).
inline std::error_code make_error_code(net_errc e) noexcept {
  return {static_cast<int>(e), net_category()};
}

}  // namespace net
BEAMLET_END_NAMESPACE

template <>
struct std::is_error_code_enum<beamlet::net::net_errc> : std::true_type {};
