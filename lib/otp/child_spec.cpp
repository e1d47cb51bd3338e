// Child spec validation (spec §6.1 rule 2): OTP's do_check_childspec/2 checks and errors.
#include <beamlet/otp/child_spec.hpp>

#include <iterator>

#include "term.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string spec_error::to_string() const {
  static const char* const names[] = {
      "missing_id",          "missing_start",   "invalid_restart_type", "invalid_shutdown",
      "invalid_child_type",  "invalid_modules", "bad_combination",      "duplicate_child_name",
      "invalid_significant", "invalid_backoff"};
  const auto i = static_cast<unsigned>(code);
  const char* name = i < std::size(names) ? names[i] : "invalid_child_spec";
  if (detail.empty()) return name;
  return detail::concat({"{", name, ",", detail, "}"});
}

std::optional<spec_error> validate(const child_spec& s, bool require_id) {
  if (require_id && s.id.empty()) return spec_error{spec_errc::missing_id, {}};
  if (!s.start) return spec_error{spec_errc::missing_start, {}};
  if (static_cast<unsigned>(s.restart) > static_cast<unsigned>(restart_type::temporary))
    return spec_error{spec_errc::invalid_restart_type,
                      std::to_string(static_cast<unsigned>(s.restart))};
  if (static_cast<unsigned>(s.type) > static_cast<unsigned>(child_type::supervisor))
    return spec_error{spec_errc::invalid_child_type, std::to_string(static_cast<unsigned>(s.type))};
  if (s.shutdown) {
    const auto k = static_cast<unsigned>(s.shutdown->which());
    if (k > static_cast<unsigned>(shutdown_spec::kind::infinite))
      return spec_error{spec_errc::invalid_shutdown, std::to_string(k)};
    if (s.shutdown->which() == shutdown_spec::kind::timeout && s.shutdown->time().count() < 0)
      return spec_error{spec_errc::invalid_shutdown, std::to_string(s.shutdown->time().count())};
  }
  for (const std::string& m : s.modules)
    if (m.empty()) return spec_error{spec_errc::invalid_modules, "[<<>>]"};
  if (s.backoff) {
    const restart_backoff& b = *s.backoff;
    constexpr std::chrono::milliseconds day = std::chrono::hours(24);
    if (b.min.count() < 0 || b.max < b.min || b.max > day || b.reset_after.count() < 0 ||
        b.reset_after > day || !(b.jitter >= 0) || b.jitter > 1)
      return spec_error{spec_errc::invalid_backoff, "{" + std::to_string(b.min.count()) + "," +
                                                        std::to_string(b.max.count()) + "," +
                                                        std::to_string(b.reset_after.count()) +
                                                        "," + std::to_string(b.jitter) + "}"};
  }
  if (s.significant && s.restart == restart_type::permanent)
    return spec_error{spec_errc::bad_combination, "[{restart,permanent},{significant,true}]"};
  return std::nullopt;
}

std::optional<spec_error> check_childspecs(const std::vector<child_spec>& specs) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (auto e = validate(specs[i])) return e;
    for (std::size_t j = 0; j < i; ++j)
      if (specs[j].id == specs[i].id)
        return spec_error{spec_errc::duplicate_child_name, specs[i].id};
  }
  return std::nullopt;
}

BEAMLET_END_PRIVATE_NAMESPACE
