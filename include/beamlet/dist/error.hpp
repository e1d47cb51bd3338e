/// @file
/// beamlet/dist/error.hpp: why distribution could not start.
///
/// dist::start reports failure as a std::error_code, as the network layer does: one of these
/// (category "beamlet.dist"), or the operating system's code for a listen socket that could not
/// be bound (std::errc::address_in_use...). message() says what happened in words. A node that
/// has started reports what goes wrong later (a peer that fails the handshake, a connection that
/// drops) as OTP does: nodedown messages, noconnection exit reasons, log events.
#pragma once

#include <system_error>
#include <type_traits>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// Why dist::start failed (or a `global` registration, for not_visible).
enum class dist_errc {
  already_started = 1,  ///< this runtime's distribution is running
  bad_name,             ///< not a node name, or a short name where long names are on (or back)
  no_cookie,            ///< none given, and ~/.erlang.cookie can be neither read nor created
  bad_options,          ///< no epmd and no fixed port; a tick time or handshake timeout <= 0;
                        ///< a fragment size from 1 to 1023
  epmd_unreachable,     ///< no epmd answered, and `epmd -daemon` could not start one
  epmd_refused,         ///< epmd refused the name (another node holds it)
  epmd_protocol,        ///< epmd closed the connection or answered something else
  timed_out,            ///< registering with epmd took longer than connect_timeout
  tls_setup,            ///< node_options::tls: a certificate, key or CA file could not be used
  tls_unavailable,      ///< node_options::tls, in a library built without BEAMLET_TLS
  not_visible,          ///< `global` needs a started, visible node (node_options::hidden = false)
};

/// The category of dist_errc codes, named "beamlet.dist".
const std::error_category& dist_category() noexcept;

/// Makes a dist_errc a std::error_code (so that `ec == dist_errc::bad_name` works).
inline std::error_code make_error_code(dist_errc e) noexcept {
  return {static_cast<int>(e), dist_category()};
}

}  // namespace dist
BEAMLET_END_NAMESPACE

template <>
struct std::is_error_code_enum<beamlet::dist::dist_errc> : std::true_type {};
