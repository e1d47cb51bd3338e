// Fuzz target: the HTTP endpoint's request path. Bytes go through the same Boost.Beast parser,
// with the same limits, as a connection's; every request it yields is routed as the endpoint
// routes it (/metrics, /processes and /tree with their query parameters, the index, 404s),
// against a small live runtime. Pipelined requests are read one after the other.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/observe/http_endpoint.hpp>
#include <beamlet/otp/supervisor.hpp>

#include "http_pages.hpp"

namespace http = boost::beast::http;
using namespace beamlet;

namespace {

struct world {
  runtime rt;
  scoped_process me{rt};
  http_endpoint_options opts;
  world() {
    // Something for the pages to show: a few processes.
    for (int i = 0; i < 8; ++i)
      rt.spawn([](process& self) -> task<> { co_await self.receive(on<int>()); });
    opts.max_page_entries = 64;
  }
};

world& the_world() {
  static world w;
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  world& w = the_world();
  boost::asio::const_buffer in(data, size);
  while (in.size() != 0) {
    http::request_parser<http::string_body> p;
    p.header_limit(static_cast<std::uint32_t>(w.opts.max_request_bytes));
    p.body_limit(w.opts.max_request_bytes);
    boost::beast::error_code ec;
    while (in.size() != 0 && !p.is_done()) {
      const std::size_t used = p.put(in, ec);
      in += used;
      if (ec == http::error::need_more) return 0;  // the connection would wait for more
      if (ec) return 0;                            // the connection answers 400 and closes
      if (used == 0) return 0;
    }
    if (!p.is_done()) return 0;
    http::request<http::string_body> req = p.release();
    if (req.method() != http::verb::get && req.method() != http::verb::head) continue;
    const auto target = req.target();
    const detail::http_answer a =
        detail::route_http(w.me, w.opts, std::string_view(target.data(), target.size()));
    if (a.status < 100 || a.status > 599) std::abort();
    if (a.status == 200 && a.body.empty()) std::abort();
  }
  return 0;
}
