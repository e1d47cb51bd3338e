#include "framing.hpp"

#include <algorithm>
#include <cstring>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

std::size_t framer::header_size() const noexcept {
  switch (kind_) {
    case framing::prefix1:
      return 1;
    case framing::prefix2:
      return 2;
    case framing::prefix4:
      return 4;
    default:
      return 0;
  }
}

void framer::append(const char* data, std::size_t n, std::size_t limit) {
  const std::size_t need = partial_.size() + n;
  if (need > partial_.capacity()) {
    // Doubling keeps appends amortised; the cap keeps a frame's buffer within its length.
    constexpr std::size_t first_step = 4096;
    partial_.reserve(std::min(limit, std::max({need, partial_.capacity() * 2, first_step})));
  }
  partial_.append(data, n);
}

std::error_code framer::feed(const char* data, std::size_t n, std::deque<std::string>& out) {
  if (kind_ == framing::raw) {
    // A read is never longer than max_packet (the read buffer is sized so).
    if (n != 0) out.emplace_back(data, n);
    return {};
  }
  if (kind_ == framing::line) {
    while (n != 0) {
      const char* nl = static_cast<const char*>(std::memchr(data, '\n', n));
      const std::size_t take = nl != nullptr ? static_cast<std::size_t>(nl - data) + 1 : n;
      if (partial_.size() + take > max_) return net_errc::line_too_long;
      append(data, take, max_);
      data += take;
      n -= take;
      if (nl != nullptr) {
        out.push_back(std::move(partial_));
        partial_.clear();
      }
    }
    return {};
  }
  const std::size_t hs = header_size();
  while (n != 0) {
    if (!have_header_) {
      const std::size_t take = std::min(n, hs - head_size_);
      std::memcpy(head_ + head_size_, data, take);
      head_size_ += take;
      data += take;
      n -= take;
      if (head_size_ < hs) break;
      std::size_t len = 0;
      for (std::size_t i = 0; i < hs; ++i) len = (len << 8) | static_cast<unsigned char>(head_[i]);
      if (len > max_) return net_errc::packet_too_large;  // before any allocation for it
      head_size_ = 0;
      want_ = len;
      have_header_ = true;
    }
    // Also taken when n is 0: a zero-length frame completes with its header alone.
    const std::size_t take = std::min(n, want_ - partial_.size());
    append(data, take, want_);
    data += take;
    n -= take;
    if (partial_.size() == want_) {
      out.push_back(std::move(partial_));
      partial_.clear();
      have_header_ = false;
      want_ = 0;
    }
  }
  return {};
}

std::error_code frame_header(framing kind, std::size_t size, std::size_t max_packet,
                             std::string& header) {
  header.clear();
  if (size > max_packet) return net_errc::packet_too_large;
  std::size_t hs = 0;
  switch (kind) {
    case framing::prefix1:
      hs = 1;
      break;
    case framing::prefix2:
      hs = 2;
      break;
    case framing::prefix4:
      hs = 4;
      break;
    default:
      return {};
  }
  if (hs < sizeof(std::size_t) && size >> (8 * hs) != 0) return net_errc::packet_too_large;
  header.resize(hs);
  for (std::size_t i = 0; i < hs; ++i)
    header[hs - 1 - i] = static_cast<char>((size >> (8 * i)) & 0xFF);
  return {};
}

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
