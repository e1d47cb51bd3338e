#include "stream.hpp"

#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

task<expected<std::string, std::string>> stream_reader::exactly(process& self, net::tcp_socket& s,
                                                                std::size_t n) {
  while (buf_.size() < n) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline_) co_return unexpected(std::string("timed out"));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now);
    auto chunk = co_await net::recv(self, s, left + std::chrono::milliseconds(1));
    if (!chunk) co_return unexpected(chunk.error().message());
    std::string error;
    if (tls_ == nullptr)
      buf_ += *chunk;
    else if (!tls_->open(*chunk, buf_, error))
      co_return unexpected(error);
  }
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  co_return out;
}

task<expected<std::string, std::string>> stream_reader::packet(process& self, net::tcp_socket& s,
                                                               std::size_t width) {
  auto len = co_await exactly(self, s, width);
  if (!len) co_return unexpected(len.error());
  const std::size_t n = width == 2 ? get16(len->data()) : get32(len->data());
  // No handshake packet comes near this; a larger length is a peer that is not one of us.
  if (n > (1u << 16))
    co_return unexpected(std::string("a handshake packet of ") + std::to_string(n) + " bytes");
  co_return co_await exactly(self, s, n);
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
