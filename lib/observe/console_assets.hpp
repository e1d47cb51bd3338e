// The console's page, built into the library from lib/observe/console/ by
// cmake/BeamletEmbedConsole.cmake: one HTML document with its style and script inline (no CDN,
// nothing fetched but the console's own JSON).
#pragma once

#include <string_view>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

std::string_view console_page() noexcept;

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
