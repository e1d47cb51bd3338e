// The console's sources (add_console_source): parts of the console that other layers supply,
// kept per runtime and looked up by the endpoints' processes at each request.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <beamlet/core/extension.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/observe/http_endpoint.hpp>

#include "console.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace {

struct console_sources final : runtime_extension {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const console_source>, std::less<>> by_name;
  std::map<std::string, std::function<std::int64_t()>, std::less<>> gauges;
};

bool name_chars(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void add_gauge(console_sources& s, std::string name, std::function<std::int64_t()> read) {
  if (!read || !name_chars(name))
    throw std::invalid_argument("beamlet::add_console_gauge: \"" + name +
                                "\" is not a name of letters, digits and '_', or read is null");
  std::lock_guard lock(s.mu);
  s.gauges.insert_or_assign(std::move(name), std::move(read));
}

bool valid_name(std::string_view name) {
  constexpr std::string_view builtin[] = {"overview", "events", "processes", "process",
                                          "tree",     "alarms", "action"};
  return name_chars(name) &&
         std::find(std::begin(builtin), std::end(builtin), name) == std::end(builtin);
}

}  // namespace

void add_console_source(runtime& rt, std::string name, console_source source) {
  if (!valid_name(name) || !source)
    throw std::invalid_argument("beamlet::add_console_source: \"" + name +
                                "\" is not a free name of letters, digits and '_', or the "
                                "source is empty");
  auto& s = extension<console_sources>(rt);
  auto shared = std::make_shared<const console_source>(std::move(source));
  std::lock_guard lock(s.mu);
  s.by_name.insert_or_assign(std::move(name), std::move(shared));
}

void remove_console_source(runtime& rt, std::string_view name) {
  auto& s = extension<console_sources>(rt);
  std::lock_guard lock(s.mu);
  if (const auto it = s.by_name.find(name); it != s.by_name.end()) s.by_name.erase(it);
}

void add_console_gauge(runtime& rt, std::string name, std::function<std::int64_t()> read) {
  add_gauge(extension<console_sources>(rt), std::move(name), std::move(read));
}

void add_console_gauge(detail::runtime_core& rt, std::string name,
                       std::function<std::int64_t()> read) {
  add_gauge(extension<console_sources>(rt), std::move(name), std::move(read));
}

void remove_console_gauge(runtime& rt, std::string_view name) {
  auto& s = extension<console_sources>(rt);
  std::lock_guard lock(s.mu);
  if (const auto it = s.gauges.find(name); it != s.gauges.end()) s.gauges.erase(it);
}

namespace detail {

std::vector<std::pair<std::string, std::int64_t>> read_console_gauges(runtime_core& rt) {
  auto& s = extension<console_sources>(rt);
  // Copied, then read without the lock: a gauge may look up an extension (the node's `nodes`
  // does), whose creation may be adding a gauge, with the extensions' lock held, right now.
  std::vector<std::pair<std::string, std::function<std::int64_t()>>> gauges;
  {
    std::lock_guard lock(s.mu);
    gauges.assign(s.gauges.begin(), s.gauges.end());
  }
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (auto& [name, read] : gauges) {
    try {
      out.emplace_back(std::move(name), read());
    } catch (...) {
      // A gauge that fails this time is left out of this sample.
    }
  }
  return out;
}

std::shared_ptr<const console_source> find_console_source(runtime_core& rt, std::string_view name) {
  auto& s = extension<console_sources>(rt);
  std::lock_guard lock(s.mu);
  const auto it = s.by_name.find(name);
  return it == s.by_name.end() ? nullptr : it->second;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
