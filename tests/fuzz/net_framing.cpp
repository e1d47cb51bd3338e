// Fuzz target: cutting a received byte stream into packets (raw, 1/2/4-byte length prefixes,
// lines) for any max_packet, fed in chunks of any size. The first bytes choose the framing,
// the limit and how the rest is split; whatever the split, the same stream must give the same
// packets and the same error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <string>
#include <system_error>
#include <vector>

#include "framing.hpp"

using namespace beamlet;
using beamlet::net::detail::framer;

namespace {

struct outcome {
  std::deque<std::string> packets;
  std::error_code error;
  std::size_t pending = 0;
};

outcome run(net::framing kind, std::size_t max, const std::uint8_t* data, std::size_t size,
            const std::vector<std::size_t>& cuts) {
  framer f(kind, max);
  outcome o;
  std::size_t at = 0;
  std::size_t i = 0;
  while (at < size && !o.error) {
    std::size_t n = cuts.empty() ? size - at : cuts[i++ % cuts.size()];
    if (n > size - at) n = size - at;
    o.error = f.feed(reinterpret_cast<const char*>(data) + at, n, o.packets);
    at += n;
    // Memory follows max_packet (libstdc++ may round a reservation up to twice the old one).
    if (f.reserved() > 2 * max + 32) std::abort();
  }
  o.pending = f.pending();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  static constexpr net::framing kinds[] = {net::framing::raw, net::framing::prefix1,
                                           net::framing::prefix2, net::framing::prefix4,
                                           net::framing::line};
  const net::framing kind = kinds[data[0] % 5];
  // Limits from 1 byte to 64 KiB, and "no limit" (what the options' 0 means is up to the
  // socket; the framer gets the effective value).
  const std::size_t max = data[1] == 255 ? std::size_t{1} << 26 : std::size_t{1} + data[1] * 257u;
  std::vector<std::size_t> cuts;
  for (unsigned c = data[2] & 7u; c > 0; --c) cuts.push_back(1u + (data[2] >> 3) * c);
  data += 3;
  size -= 3;
  const outcome whole = run(kind, max, data, size, {});
  const outcome pieces = run(kind, max, data, size, cuts);
  if (whole.error != pieces.error) std::abort();
  if (kind == net::framing::raw) {
    // Each read is a packet: the split changes the packets, never the bytes.
    std::string a, b;
    for (const auto& p : whole.packets) a += p;
    for (const auto& p : pieces.packets) b += p;
    if (a != b) std::abort();
    return 0;
  }
  if (!whole.error && (whole.packets != pieces.packets || whole.pending != pieces.pending))
    std::abort();
  for (const auto& p : whole.packets)
    if (p.size() > max) std::abort();
  return 0;
}
