// The pages of the HTTP endpoint (beamlet/observe/http_endpoint.hpp), built in its process from the
// runtime's introspection: /metrics, /processes, /tree and the index. Kept apart from the
// socket handling so that each can be read on its own.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/observe/http_endpoint.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
class basic_process;
namespace detail {

/// One answer, handed from the process back to the I/O thread.
struct http_answer {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// A request target split: the path, and the query's parameters percent-decoded.
struct http_query {
  std::string path;
  std::map<std::string, std::string, std::less<>> params;
  /// The parameter `key` as a number; `fallback` when absent, nullopt when not a number.
  std::optional<std::size_t> number(std::string_view key, std::size_t fallback) const;
  /// The parameter `key`, or "" when absent.
  std::string_view text(std::string_view key) const;
};
http_query parse_http_target(std::string_view target);
/// Decodes an application/x-www-form-urlencoded string (a query or a form body) into `params`.
void parse_form(std::string_view form, std::map<std::string, std::string, std::less<>>& params);

/// `<0.42.0>` (or 0.42.0) as a local pid; nullopt for anything else.
std::optional<pid> parse_local_pid(std::string_view s);

/// 400 with what was wrong.
http_answer bad_parameter(const std::string& what);

/// The supervision tree as JSON (the /tree page): every root supervisor, or the subtree of
/// `root` with its children listed from `offset` (nullopt when `root` is not a supervisor).
std::optional<std::string> render_tree(basic_process& self, std::size_t max_children,
                                       std::size_t budget, std::size_t offset,
                                       std::optional<pid> root);

/// JSON members: `,"key":"value"` (without the comma when `first`) and `,"key":number`.
void json_field(std::string& out, std::string_view key, std::string_view value, bool first = false);
void json_number(std::string& out, std::string_view key, std::uint64_t value);

/// The answer to a GET of `target` (path and query string).
http_answer route_http(basic_process& self, const http_endpoint_options& opts,
                       std::string_view target);

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
