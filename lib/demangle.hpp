// Readable C++ type names for exit reasons, call errors and any_message::type_name.
#pragma once

#include <beamlet/config.hpp>

#include <string>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

/// The demangled form of a typeid name; the raw name if it cannot be demangled.
std::string demangle(const char* mangled);

}  // namespace detail
BEAMLET_END_NAMESPACE
