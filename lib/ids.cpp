#include <beamlet/ids.hpp>
#include <beamlet/receive.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <ostream>

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

std::string any_message::type_name() const {
  if (node_ == nullptr) return {};
  const char* raw = node_->type->type->name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(raw, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(raw);
}

BEAMLET_END_NAMESPACE
