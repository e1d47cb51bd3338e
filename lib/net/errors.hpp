// Boost's error codes as the std::error_code values the network layer reports.
#pragma once

#include <system_error>

#include <boost/system/error_code.hpp>

#include <beamlet/net/error.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

/// System errors keep their value (ECONNRESET stays ECONNRESET, in std::system_category);
/// the end of the stream is net_errc::closed, a failed name lookup net_errc::bad_address.
std::error_code to_error_code(const boost::system::error_code& ec) noexcept;

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
