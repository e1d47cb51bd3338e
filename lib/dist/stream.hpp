// Reading length-prefixed packets from a passive raw socket: the handshake's 2-byte packets and
// epmd's replies, with a deadline. The connected phase reads in active mode instead.
#pragma once

#include <beamlet/core/config.hpp>

#include <chrono>
#include <string>

#include <beamlet/core/expected.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/net/tcp.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist::detail {

class stream_reader {
 public:
  explicit stream_reader(std::chrono::steady_clock::time_point deadline) : deadline_(deadline) {}

  /// Exactly `n` bytes.
  task<expected<std::string, std::string>> exactly(process& self, net::tcp_socket& s,
                                                   std::size_t n);
  /// A packet with a 2-byte big-endian length in front.
  task<expected<std::string, std::string>> packet2(process& self, net::tcp_socket& s);
  /// What was read past the last packet (the connected phase's first bytes).
  std::string take_rest() { return std::move(buf_); }

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::string buf_;
};

}  // namespace dist::detail
BEAMLET_END_NAMESPACE
