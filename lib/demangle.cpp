#include "demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

}  // namespace detail
BEAMLET_END_NAMESPACE
