#include <beamlet/core/error.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "beamlet"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::not_registered:
        return "no process is registered under that name";
      case errc::name_taken:
        return "the name is already registered";
      case errc::not_alive:
        return "the process is not alive";
      case errc::already_named:
        return "the process already has a registered name";
      case errc::invalid_name:
        return "invalid name (empty, or the reserved 'undefined')";
      case errc::mailbox_full:
        return "the process's bounded mailbox is full";
      case errc::not_encodable:
        return "the message cannot be encoded for the target's node";
    }
    return "unknown beamlet error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const category c;
  return c;
}

BEAMLET_END_PRIVATE_NAMESPACE
