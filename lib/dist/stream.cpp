#include "stream.hpp"

#include "wire.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace dist::detail {

task<expected<std::string, std::string>> stream_reader::exactly(process& self, net::tcp_socket& s,
                                                                std::size_t n) {
  while (buf_.size() < n) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline_) co_return unexpected(std::string("timed out"));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now);
    auto chunk = co_await net::recv(self, s, left + std::chrono::milliseconds(1));
    if (!chunk) co_return unexpected(chunk.error().message());
    buf_ += *chunk;
  }
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  co_return out;
}

task<expected<std::string, std::string>> stream_reader::packet2(process& self, net::tcp_socket& s) {
  auto len = co_await exactly(self, s, 2);
  if (!len) co_return unexpected(len.error());
  const std::size_t n = get16(len->data());
  co_return co_await exactly(self, s, n);
}

}  // namespace dist::detail
BEAMLET_END_NAMESPACE
