#include <beamlet/ids.hpp>
#include <beamlet/receive.hpp>

#include <ostream>

#include <boost/core/demangle.hpp>

BEAMLET_BEGIN_NAMESPACE

std::string pid::to_string() const {
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
  return boost::core::demangle(t.name());
}
}  // namespace detail

std::string any_message::type_name() const {
  if (node_ == nullptr) return {};
  return boost::core::demangle(node_->type->type->name());
}

BEAMLET_END_NAMESPACE
