// Fuzz target: the external term format decoder, which reads whatever a peer node sends.
// Besides not crashing, a term that decodes must survive the operations made on received terms
// (copy, comparison, printing) and, when it re-encodes, decode again to an equal term. Decoding
// the same bytes as a binary (binaries in place) must give the same answer as the copying
// decoder, with the input freed first: a binary that still pointed into it would be caught by
// the sanitizers when the result is compared.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/term.hpp>

using namespace beamlet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // Limits low enough that one input cannot take the fuzzer's memory.
  dist::decode_limits limits;
  limits.max_terms = std::size_t{1} << 20;
  std::size_t pos = 0;
  auto t = dist::decode(in, pos, nullptr, true, limits);
  {
    auto input = std::make_unique<dist::binary>(in);
    std::size_t at = 0;
    auto shared = dist::decode(*input, at, nullptr, true, limits);
    input.reset();  // the binaries in place keep their bytes alive on their own
    if (shared.has_value() != t.has_value()) std::abort();
    if (t && (at != pos || !(*shared == *t))) std::abort();
  }
  if (!t) return 0;
  if (pos > in.size()) std::abort();
  const dist::term copy = *t;
  if (!(copy == *t)) std::abort();
  (void)t->to_string();
  std::string again;
  if (dist::encode(*t, again).has_value()) {
    std::size_t p2 = 0;
    auto back = dist::decode(again, p2, nullptr, true, limits);
    if (!back || !(*back == *t) || p2 != again.size()) std::abort();
  }
  return 0;
}
