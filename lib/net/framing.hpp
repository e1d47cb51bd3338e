// Cutting a received byte stream into packets (socket_options::packet). I/O thread only.
//
// The framer never allocates for a frame before it has checked the frame's announced length
// against max_packet, so a peer announcing 2 GiB costs nothing but the error.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <system_error>

#include <beamlet/net/tcp.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace net::detail {

class framer {
 public:
  framer(framing f, std::size_t max_packet) noexcept : kind_(f), max_(max_packet) {}

  /// Takes `n` received bytes; complete packets go to `out`. An error (a frame over
  /// max_packet, a line without its end within max_packet) is final: the stream cannot be
  /// resynchronised, and the caller closes the socket.
  std::error_code feed(const char* data, std::size_t n, std::deque<std::string>& out);

  /// Bytes of an unfinished packet held back.
  std::size_t pending() const noexcept { return partial_.size(); }

 private:
  std::size_t header_size() const noexcept;

  framing kind_;
  std::size_t max_;
  std::string partial_;   // the unfinished packet's bytes (header included for prefixes)
  std::size_t want_ = 0;  // prefix framings: the body's length once the header is complete
  bool have_header_ = false;
};

/// The header that `kind` puts before a packet of `size` bytes (empty for raw and line);
/// packet_too_large if the size does not fit the header or exceeds `max_packet`.
std::error_code frame_header(framing kind, std::size_t size, std::size_t max_packet,
                             std::string& header);

}  // namespace net::detail
BEAMLET_END_NAMESPACE
