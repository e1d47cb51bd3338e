#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/receive.hpp>

#include <ostream>
#include <string_view>

#include <boost/core/demangle.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string pid::to_string() const {
  if (is_remote()) {
    const std::uint64_t d = data();
    return "<" + std::to_string(node_slot()) + "." + std::to_string(d & 0xffffffffu) + "." +
           std::to_string(d >> 32) + ">";
  }
  return "<0." + std::to_string(serial_) + ".0>";
}

std::ostream& operator<<(std::ostream& os, pid p) {
  return os << p.to_string();
}

std::string ref::to_string() const {
  return "#Ref<0." + std::to_string(value_) + ">";
}

std::ostream& operator<<(std::ostream& os, ref r) {
  return os << r.to_string();
}

namespace detail {
std::string demangled_name(const std::type_info& t) {
  // The ABI namespace (beamlet/core/config.hpp) is noise in a report: beamlet::v0::x -> beamlet::x.
  std::string s = boost::core::demangle(t.name());
  static constexpr std::string_view abi = "beamlet::v0::";
  for (std::size_t at = s.find(abi); at != std::string::npos; at = s.find(abi, at))
    s.erase(at + 9, 4);
  return s;
}
}  // namespace detail

std::string any_message::type_name() const {
  if (node_ == nullptr) return {};
  return detail::demangled_name(*node_->type->type);
}

BEAMLET_END_PRIVATE_NAMESPACE
