// Cutting a received byte stream into packets (socket_options::framing). I/O thread only.
//
// Memory follows the bytes that have arrived, never the bytes a header announces: a frame's
// buffer grows as its bytes come (each step asks for at most double what is held and never
// more than the announced length; the standard library may round a request up to twice the
// previous capacity), so a peer announcing 1 GiB and sending one byte costs one byte, and a
// length over max_packet is an error before anything is allocated. An allocation that fails
// throws std::bad_alloc out of feed() with the framer unchanged for the bytes not taken; the
// socket then fails (net_errc::out_of_memory) and nothing else does.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <system_error>

#include <beamlet/net/tcp.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

class framer {
 public:
  framer(framing f, std::size_t max_packet) noexcept : kind_(f), max_(max_packet) {}

  /// Takes `n` received bytes; complete packets go to `out`. An error (a frame over
  /// max_packet, a line without its end within max_packet) is final: the stream cannot be
  /// resynchronised, and the caller closes the socket.
  std::error_code feed(const char* data, std::size_t n, std::deque<std::string>& out);

  /// Bytes of an unfinished packet held back (its header included).
  std::size_t pending() const noexcept {
    return partial_.size() + head_size_ + (have_header_ ? header_size() : 0);
  }
  /// Bytes reserved for the unfinished packet (what it costs now).
  std::size_t reserved() const noexcept { return partial_.capacity(); }

 private:
  std::size_t header_size() const noexcept;
  /// Appends to partial_, growing it in steps bounded by what is held and by `limit`.
  void append(const char* data, std::size_t n, std::size_t limit);

  framing kind_;
  std::size_t max_;
  std::string partial_;   // the unfinished packet's bytes (its body, for prefixes)
  std::size_t want_ = 0;  // prefix framings: the body's length once the header is complete
  bool have_header_ = false;
  char head_[4] = {};  // prefix framings: the header's bytes while it is incomplete
  std::size_t head_size_ = 0;
};

/// The header that `kind` puts before a packet of `size` bytes (empty for raw and line);
/// packet_too_large if the size does not fit the header or exceeds `max_packet`.
std::error_code frame_header(framing kind, std::size_t size, std::size_t max_packet,
                             std::string& header);

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
