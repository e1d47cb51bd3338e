// beamlet/http_endpoint.hpp: the operator's HTTP endpoint (opt-in, loopback by default).
//
//   auto ep = beamlet::http_endpoint::start(rt, {.port = 9100});
//   // curl http://127.0.0.1:9100/metrics     Prometheus text (beamlet/metrics.hpp)
//   // curl http://127.0.0.1:9100/processes   JSON: the top view (?n=20&by=message_queue_len)
//   // curl http://127.0.0.1:9100/tree        JSON: the supervision tree
//
// Or as a child of a supervisor: child_spec("http", beamlet::http_endpoint_start({.port = 9100})).
//
// The endpoint is a beamlet process that answers the requests, plus one I/O thread (Boost.Beast)
// that owns the sockets: the thread parses a request and sends it to the process; the process
// builds the answer from the runtime's introspection (which never waits for the processes it
// looks at) and hands it back to the thread to write. Ending the process (exit signal, stop,
// the runtime's shutdown) closes the listener and every connection.
//
// Limits, so that no client can make it grow: at most max_connections open connections (more
// are answered 503 and closed), at most max_request_bytes per request (413), request_timeout to
// receive a whole request (a client that never finishes is disconnected), one request at a time
// per connection (keep-alive is honoured). A malformed request gets 400; a method other than GET
// or HEAD gets 405; an unknown path 404.
//
// An application can add its own pages (http_endpoint_options::pages): a live dashboard, a
// JSON view of its state. Each is rendered in the endpoint's process, so a page must not block:
// read a snapshot, do not call the processes it describes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <beamlet/child_spec.hpp>
#include <beamlet/config.hpp>
#include <beamlet/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;

/// One page an application adds to the endpoint.
struct http_page {
  /// The exact path ("/replay/state"); the query string is handed to render.
  std::string path;
  std::string content_type = "text/html; charset=utf-8";
  /// Called in the endpoint's process for every GET of `path`, with the query string (without
  /// its '?'). An exception becomes a 500 answer whose body is its message.
  std::function<std::string(std::string_view query)> render;
};

struct http_endpoint_options {
  /// A numeric address to listen on; loopback unless you mean it.
  std::string address = "127.0.0.1";
  /// 0: any free port (read it back with port()).
  std::uint16_t port = 0;
  std::size_t max_connections = 1024;
  std::size_t max_request_bytes = 16 * 1024;
  std::chrono::milliseconds request_timeout{5000};
  /// /processes without ?n=.
  std::size_t top_n = 20;
  /// /tree lists at most this many children per supervisor (and says how many there are).
  std::size_t tree_max_children = 100;
  /// Pages of the application's own, looked up before the built-in ones (so one may replace
  /// "/"). A page without a path starting with '/' or without render is std::invalid_argument.
  std::vector<http_page> pages;
};

class http_endpoint {
 public:
  /// Starts an endpoint owned by nobody: it runs until stop(), the handle's destruction or the
  /// runtime's shutdown. Throws std::system_error when the address cannot be bound, and
  /// std::invalid_argument for an address that is not numeric or zero limits.
  static http_endpoint start(runtime& rt, http_endpoint_options opts = {});

  http_endpoint(http_endpoint&&) noexcept;
  http_endpoint& operator=(http_endpoint&&) noexcept;
  /// Stops the endpoint (see stop()).
  ~http_endpoint();

  std::uint16_t port() const noexcept;
  /// The process that answers requests.
  pid process() const noexcept;
  /// Ends the process (reason shutdown) and waits until the sockets are closed and the process
  /// has ended. Idempotent. Blocks: call it from an outside thread, not from a process.
  void stop();

  struct statistics {
    std::size_t open_connections = 0;
    std::uint64_t connections = 0;   ///< accepted, ever
    std::uint64_t requests = 0;      ///< complete requests received
    std::uint64_t rejected = 0;      ///< connections refused with 503 (over max_connections)
    std::uint64_t timeouts = 0;      ///< connections cut for not sending a request in time
    std::uint64_t bad_requests = 0;  ///< malformed or oversized requests
  };
  statistics stats() const;

  struct state;

 private:
  explicit http_endpoint(std::shared_ptr<state> s) noexcept : state_(std::move(s)) {}
  std::shared_ptr<state> state_;
};

/// A start function for a supervisor: the child is the endpoint's process. The start fails
/// with {listen_error, Message} when the address cannot be bound.
start_function http_endpoint_start(http_endpoint_options opts = {});

BEAMLET_END_NAMESPACE
