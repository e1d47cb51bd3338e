// The pages of the HTTP endpoint (beamlet/observe/http_endpoint.hpp), built in its process from the
// runtime's introspection: /metrics, /processes, /tree and the index. Kept apart from the
// socket handling so that each can be read on its own.
#pragma once

#include <string>
#include <string_view>

#include <beamlet/core/config.hpp>
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

/// The answer to a GET of `target` (path and query string).
http_answer route_http(basic_process& self, const http_endpoint_options& opts,
                       std::string_view target);

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
