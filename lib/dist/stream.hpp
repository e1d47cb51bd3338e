// Reading length-prefixed packets from a passive raw socket: the handshake's packets (2-byte
// lengths, 4-byte over TLS) and
// epmd's replies, with a deadline. The connected phase reads in active mode instead.
#pragma once

#include <beamlet/core/config.hpp>

#include <chrono>
#include <string>

#include <beamlet/core/expected.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/net/tcp.hpp>

#include "tls.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

class stream_reader {
 public:
  /// `tls`: the connection's TLS session, through which every byte read goes; `start`: what
  /// was read already (plaintext).
  explicit stream_reader(std::chrono::steady_clock::time_point deadline, tls_session* tls = nullptr,
                         std::string start = {})
      : deadline_(deadline), tls_(tls), buf_(std::move(start)) {}

  /// Exactly `n` bytes.
  task<expected<std::string, std::string>> exactly(process& self, net::tcp_socket& s,
                                                   std::size_t n);
  /// A packet with a big-endian length of `width` bytes (2 or 4) in front.
  task<expected<std::string, std::string>> packet(process& self, net::tcp_socket& s,
                                                  std::size_t width);
  /// What was read past the last packet (the connected phase's first bytes).
  std::string take_rest() { return std::move(buf_); }

 private:
  std::chrono::steady_clock::time_point deadline_;
  tls_session* tls_;
  std::string buf_;
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
