#include "errors.hpp"

#include <boost/asio/error.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net {

namespace {
class net_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "beamlet.net"; }
  std::string message(int v) const override {
    switch (static_cast<net_errc>(v)) {
      case net_errc::closed:
        return "socket closed";
      case net_errc::timed_out:
        return "timed out";
      case net_errc::packet_too_large:
        return "packet larger than max_packet";
      case net_errc::line_too_long:
        return "line longer than max_packet";
      case net_errc::send_queue_full:
        return "send queue full";
      case net_errc::not_owner:
        return "the calling process does not own the socket";
      case net_errc::active_socket:
        return "recv on a socket in active mode";
      case net_errc::bad_options:
        return "socket option out of range";
      case net_errc::bad_address:
        return "bad address or unknown host";
      case net_errc::no_handle:
        return "empty socket handle";
      case net_errc::truncated:
        return "connection ended in the middle of a frame";
      case net_errc::out_of_memory:
        return "out of memory for the socket's data";
    }
    return "unknown beamlet.net error";
  }
};
}  // namespace

const std::error_category& net_category() noexcept {
  static const net_category_impl c;
  return c;
}

namespace detail {

std::error_code to_error_code(const boost::system::error_code& ec) noexcept {
  namespace ae = boost::asio::error;
  if (!ec) return {};
  if (ec == ae::eof) return make_error_code(net_errc::closed);
  if (ec == ae::host_not_found || ec == ae::host_not_found_try_again || ec == ae::no_data ||
      ec == ae::no_recovery || ec == ae::service_not_found)
    return make_error_code(net_errc::bad_address);
  if (ec.category() == boost::system::system_category() ||
      ec.category() == boost::system::generic_category())
    return std::error_code(ec.value(), std::system_category());
  return std::make_error_code(std::errc::io_error);
}

}  // namespace detail
}  // namespace net
BEAMLET_END_PRIVATE_NAMESPACE
