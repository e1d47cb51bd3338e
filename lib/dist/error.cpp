#include <beamlet/dist/error.hpp>

#include <string>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {
class dist_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "beamlet.dist"; }
  std::string message(int v) const override {
    switch (static_cast<dist_errc>(v)) {
      case dist_errc::already_started:
        return "distribution is already started";
      case dist_errc::bad_name:
        return "not a valid node name (or a short name with long names, or back)";
      case dist_errc::no_cookie:
        return "no cookie given, and ~/.erlang.cookie can be neither read nor created";
      case dist_errc::bad_options:
        return "node options out of range (no epmd needs a fixed port; tick and handshake "
               "times must be positive; a fragment size is 0 or at least 1024)";
      case dist_errc::epmd_unreachable:
        return "no epmd answered, and `epmd -daemon` could not start one";
      case dist_errc::epmd_refused:
        return "epmd refused the node name (another node holds it)";
      case dist_errc::epmd_protocol:
        return "epmd closed the connection or answered something unexpected";
      case dist_errc::timed_out:
        return "registering with epmd timed out";
      case dist_errc::tls_setup:
        return "the TLS certificate, key or CA file could not be used (the log says which)";
      case dist_errc::tls_unavailable:
        return "TLS distribution is not built into this library (BEAMLET_TLS is off)";
      case dist_errc::not_visible:
        return "global names need a started, visible node (node_options::hidden = false)";
    }
    return "unknown beamlet.dist error";
  }
};
}  // namespace

const std::error_category& dist_category() noexcept {
  static const dist_category_impl c;
  return c;
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
