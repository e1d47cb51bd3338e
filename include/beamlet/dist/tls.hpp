/// @file
/// beamlet/dist/tls.hpp: distribution over TLS, interoperable with `erl -proto_dist inet_tls`.
///
/// With node_options::tls set, every distribution connection of the node, made or accepted, runs
/// over TLS (1.2 or later, OpenSSL): the TLS handshake first, then the distribution handshake
/// and traffic inside it. epmd is spoken in plain TCP, as by OTP. A node that uses TLS speaks
/// only TLS: a plain peer's handshake fails, and so does ours with a plain peer.
///
/// Authentication: with verify_peer (the default) both sides present a certificate and each
/// checks the other's against cacertfile; the initiator also checks that the acceptor's
/// certificate names the host of the node it meant to reach (check_host). The cookie is still
/// checked inside TLS. Failures (a bad certificate, a plain peer) are logged as connection
/// errors and end only that connection; files that cannot be loaded fail start() with
/// dist_errc::tls_setup (the log says which and why).
///
/// Built when the library is configured with BEAMLET_TLS (the default; it needs libssl-dev);
/// without it, start() with tls set fails with dist_errc::tls_unavailable.
#pragma once

#include <string>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// What OTP puts in an -ssl_dist_optfile, for both sides of a connection at once.
struct tls_options {
  std::string certfile;    ///< PEM: this node's certificate, then its chain
  std::string keyfile;     ///< PEM: its private key; empty: the key is in certfile
  std::string cacertfile;  ///< PEM: the CAs a peer's certificate must chain to
  /// Each side asks for the other's certificate and verifies it (an acceptor refuses an
  /// initiator without one). false: encrypted, but a peer is not authenticated by TLS (only by
  /// the cookie); cacertfile may then be empty.
  bool verify_peer = true;
  /// With verify_peer: the initiator checks the acceptor's certificate against the host part
  /// of its node name (a DNS name, or an IP address in a subjectAltName).
  bool check_host = true;
};

}  // namespace dist
BEAMLET_END_NAMESPACE
