// Fuzz target: term::parse, which reads Erlang term syntax from configuration and from exit
// reasons written as text. A term that parses must print as text that parses back to it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/term.hpp>

using namespace beamlet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  auto t = dist::term::parse(in);
  if (!t) return 0;
  const std::string text = t->to_string();
  auto back = dist::term::parse(text);
  if (!back || !(*back == *t)) {
    std::fprintf(stderr, "printed as %s, which %s\n", text.c_str(),
                 back ? "parses to another term" : back.error().c_str());
    std::abort();
  }
  std::string etf;
  (void)dist::encode(*t, etf);
  return 0;
}
