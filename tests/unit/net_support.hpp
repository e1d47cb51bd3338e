// A plain blocking POSIX client for the network layer's tests: it does exactly what a test
// asks (send half a frame, reset, never read), which a well-behaved client library would not.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <beamlet/net/tcp.hpp>

#include "test_support.hpp"

namespace beamlet::test {

class raw_client {
 public:
  raw_client() = default;
  explicit raw_client(std::uint16_t port) { connect(port); }
  raw_client(raw_client&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  raw_client& operator=(raw_client&&) = delete;
  ~raw_client() { close(); }

  /// False if the connection was refused.
  bool connect(std::uint16_t port) {
    open();
    return connect_open(port);
  }
  /// The two halves of connect: make the socket, connect it later (with no descriptor needed
  /// then, which the EMFILE test relies on).
  void open() {
    close();
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket failed");
  }
  /// connect() from another loopback address (127.0.0.2...), as a second client host would.
  bool connect_from(const char* local_address, std::uint16_t port) {
    open();
    sockaddr_in l{};
    l.sin_family = AF_INET;
    l.sin_port = 0;
    if (::inet_pton(AF_INET, local_address, &l.sin_addr) != 1 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&l), sizeof l) != 0) {
      close();
      return false;
    }
    return connect_open(port);
  }
  bool connect_open(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close();
      return false;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return true;
  }
  int fd() const noexcept { return fd_; }

  void send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      done += static_cast<std::size_t>(n);
    }
  }

  /// Reads until `n` bytes came, the peer closed, or `limit` passed.
  std::string recv_exact(std::size_t n, std::chrono::milliseconds limit = 10s) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (out.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      const ssize_t got = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }

  /// True if the peer closed (EOF or reset) within `limit`; data before the end is skipped.
  bool closed_by_peer(std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[4096];
      const ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
      if (got <= 0) return true;
    }
  }

  /// True if the peer has closed by now (nothing waited for; data before the end is skipped).
  bool closed_now() {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return false;
      char buf[4096];
      const ssize_t got = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (got <= 0) return got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }

  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  /// Closes with a reset (SO_LINGER 0): the peer sees ECONNRESET.
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

/// A 4-byte big-endian length prefix, as framing::prefix4 expects.
inline std::string prefix4(const std::string& body) {
  const auto n = static_cast<std::uint32_t>(body.size());
  std::string h(4, '\0');
  h[0] = static_cast<char>(n >> 24);
  h[1] = static_cast<char>(n >> 16);
  h[2] = static_cast<char>(n >> 8);
  h[3] = static_cast<char>(n);
  return h + body;
}

}  // namespace beamlet::test
