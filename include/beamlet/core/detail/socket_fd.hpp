// beamlet/core/detail/socket_fd.hpp: TCP descriptors that a child process never inherits.
//
// Every socket beamlet makes (listeners, accepted and connected sockets, in the net layer and
// in http_endpoint) is close-on-exec from the system call that creates it. Asio's own open()
// and accept() are not, and a descriptor a child inherits outlives its close here: a listener
// that beamlet closed keeps accepting connections into a backlog nobody reads, and a closed
// connection never reaches its peer as an end. Setting the flag afterwards (fcntl) would leave
// a window in which another thread's fork+exec inherits it anyway, so the flag goes in the call.
//
// Both functions are thread-safe and return -1 with errno set on failure, like the calls they
// wrap; the caller hands the descriptor to an Asio socket with assign().
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

/// A new TCP socket of `family` (AF_INET, AF_INET6), close-on-exec and non-blocking.
inline int open_tcp_socket(int family) noexcept {
  return ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
}

/// One pending connection of the listening socket `listener`, close-on-exec and non-blocking;
/// -1 with EAGAIN when none is pending. EINTR is retried here.
inline int accept_tcp_socket(int listener) noexcept {
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0 || errno != EINTR) return fd;
  }
}

}  // namespace detail
BEAMLET_END_NAMESPACE
