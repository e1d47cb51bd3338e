/// @file
/// beamlet/observe/http_endpoint.hpp: the operator's HTTP endpoint (opt-in, loopback by default).
///
///   auto ep = beamlet::http_endpoint::start(rt, {.port = 9100});  // or the error: port taken...
///   // curl http://127.0.0.1:9100/metrics     Prometheus text (beamlet/observe/metrics.hpp)
///   // curl http://127.0.0.1:9100/processes   JSON: the top view (?n=20&by=message_queue_len)
///   // curl http://127.0.0.1:9100/tree        JSON: the supervision tree
///
/// Or as a child of a supervisor: child_spec("http", beamlet::http_endpoint_start({.port = 9100})).
///
/// The endpoint is a beamlet process that answers the requests, plus one I/O thread (Boost.Beast)
/// that owns the sockets: the thread parses a request and sends it to the process; the process
/// builds the answer from the runtime's introspection (which never waits for the processes it
/// looks at) and hands it back to the thread to write. Ending the process (exit signal, stop,
/// the runtime's shutdown) closes the listener and every connection.
///
/// Limits, so that no client can make it grow, and one client cannot deny it to others (every
/// default below is an option):
///  * connections: at most max_connections open (more are answered 503 and closed), and at most
///    max_connections_per_peer from one peer address (the rest get 503), so a client holding
///    every connection it can open still leaves room for a scraper elsewhere;
///  * time: a new connection must send its first request within header_timeout (2 s; a real
///    client sends it at once); later requests on a kept-alive connection get request_timeout;
///  * requests: at most max_request_bytes (413); one request at a time per connection; a
///    malformed request gets 400, a method other than GET or HEAD 405, an unknown path 404;
///  * answers: /processes lists at most max_page_entries entries per request (page on with
///    ?offset=), /tree at most max_page_entries nodes in all; answers not yet taken by their
///    clients are bounded by max_queued_bytes across every connection: beyond it the connections
///    whose answers have waited longest are closed (counted as slow_closed);
///  * scrapes first: a /metrics request is answered before every other page queued ahead of it,
///    so a scrape never waits behind large pages;
///  * descriptors: an accept that fails (EMFILE, ENFILE, ENOBUFS, ENOMEM) backs off, 10 ms
///    doubling to 1 s, instead of retrying at once.
///
/// The console (`console = true`): http://127.0.0.1:9100/console in a browser, a page built
/// into the library. Its charts are sampled by the endpoint's process every
/// console_sample_interval and streamed to open pages as server-sent events
/// (/console/api/events); its tables are paged and sorted on the server. Actions need
/// console_token (see the option).
///
/// Finding an endpoint that a supervisor started (port 0, say): give it a `name`; its process
/// registers under it, and find(rt, whereis) returns its port and statistics. /metrics includes
/// every endpoint's counters (beamlet_http_*).
///
/// An application can add its own pages (http_endpoint_options::pages): a live dashboard, a
/// JSON view of its state. Each is rendered in the endpoint's process, so a page must not block:
/// read a snapshot, do not call the processes it describes. A page answers with a body
/// (`render`) or with a whole response (`respond`: any status, 403 or 404 included); the
/// built-in pages can each be switched off (`builtin`).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/ids.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/otp/child_spec.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class basic_process;
class process;
namespace detail {
class runtime_core;
}  // namespace detail

/// A whole answer, for pages that choose their status.
struct http_response {
  unsigned status = 200;                                   ///< the HTTP status code
  std::string content_type = "text/plain; charset=utf-8";  ///< the Content-Type header
  std::string body;                                        ///< the body, sent as is
};

/// One page an application adds to the endpoint.
struct http_page {
  /// The exact path ("/replay/state"); the query string is handed to render.
  std::string path;
  /// The Content-Type of render's answers (respond sets its own).
  std::string content_type = "text/html; charset=utf-8";
  /// Called in the endpoint's process for every GET of `path`, with the query string (without
  /// its '?'); the answer is a 200 with this body. An exception becomes a 500 answer whose body
  /// is its message.
  std::function<std::string(std::string_view query)> render = nullptr;
  /// Instead of render: the whole response (status, content type, body), for a page that may
  /// answer 403, 404 or anything else. Exactly one of render and respond is set.
  std::function<http_response(std::string_view query)> respond = nullptr;
};

/// The built-in pages, each of which can be switched off (then its path is 404, unless an
/// application page takes it).
struct http_builtin_pages {
  bool metrics = true;    ///< /metrics
  bool processes = true;  ///< /processes
  bool tree = true;       ///< /tree
  bool index = true;      ///< /
};

/// How an endpoint listens, what it serves, and its limits (see the file comment).
struct http_endpoint_options {
  /// A numeric address to listen on; loopback unless you mean it.
  std::string address = "127.0.0.1";
  /// 0: any free port (read it back with port() or find()).
  std::uint16_t port = 0;
  /// Registered name of the endpoint's process ("" for none): how find() reaches an endpoint
  /// that a supervisor started.
  std::string name{};
  /// Connections open at once; more are answered 503 and closed.
  std::size_t max_connections = 1024;
  /// Connections open at once from one peer address.
  std::size_t max_connections_per_peer = 64;
  /// The largest request head, and the largest body, accepted; a bigger one gets 413.
  std::size_t max_request_bytes = std::size_t{16} * 1024;
  /// A new connection's first request must have arrived within this long.
  std::chrono::milliseconds header_timeout{2000};
  /// Later requests on a kept-alive connection, and writing an answer.
  std::chrono::milliseconds request_timeout{5000};
  /// /processes without ?n=.
  std::size_t top_n = 20;
  /// /tree lists at most this many children per supervisor (and says how many there are).
  std::size_t tree_max_children = 100;
  /// The most entries one /processes answer lists (?n= above it is 400), and the most nodes one
  /// /tree answer holds.
  std::size_t max_page_entries = 10'000;
  /// Bytes of answers handed to connections and not yet written, across all of them.
  std::size_t max_queued_bytes = 16u << 20;
  /// SO_SNDBUF of accepted connections (what the kernel holds for each one beyond
  /// max_queued_bytes); 0: the system's default, autotuned.
  std::size_t send_buffer = 0;
  /// Pages of the application's own, looked up before the built-in ones (so one may replace
  /// "/"). A page without a path starting with '/', or without exactly one of render and
  /// respond, is std::invalid_argument.
  std::vector<http_page> pages{};
  /// Which built-in pages are served (all by default).
  http_builtin_pages builtin{};

  // -- the console (docs/operations.md) -------------------------------------------------------
  /// Serves the operator's console: the page at /console and its JSON under /console/api/
  /// (overview with live charts, processes, process detail, supervision tree, alarms and
  /// reports). Off by default; off, those paths are 404 and nothing is sampled.
  bool console = false;
  /// The token the console's actions (kill, sys suspend/resume, a dynamic supervisor's
  /// shedding switch) need in the X-Beamlet-Token header. Empty: actions are refused (403).
  /// Every action is a POST, compared in constant time and logged; GETs never change state.
  std::string console_token{};
  /// How often the console samples the runtime for its charts (and streams the sample).
  std::chrono::milliseconds console_sample_interval{1000};
  /// Samples kept for the charts (300: five minutes at one a second).
  std::size_t console_history = 300;
  /// When no process subscribes to the system monitor, the console does, with
  /// long_message_queue alarms at this many queued messages (off at half of it), long_schedule
  /// at 100 ms and busy_dist_port; it gives the subscription up when it ends.
  std::size_t console_long_queue = 10'000;
};

/// The handle of an endpoint started with start(): it owns the endpoint, which stops when the
/// handle is destroyed. Move-only. An endpoint started by a supervisor (http_endpoint_start)
/// has no handle; find() reads it.
class http_endpoint {
 public:
  /// Starts an endpoint owned by nobody: it runs until stop(), the handle's destruction or the
  /// runtime's shutdown. When the address cannot be bound (the port is taken, say), returns the
  /// operating system's error (std::errc::address_in_use...); options that can never work (an
  /// address that is not numeric, zero limits) are a programming error: std::invalid_argument.
  static expected<http_endpoint, std::error_code> start(runtime& rt,
                                                        http_endpoint_options opts = {});

  /// Takes over the endpoint; the moved-from handle owns none.
  http_endpoint(http_endpoint&&) noexcept;
  /// Stops the endpoint this handle owns (see stop()), then takes over the other's.
  http_endpoint& operator=(http_endpoint&&) noexcept;
  /// Stops the endpoint (see stop()).
  ~http_endpoint();

  /// The port it listens on (the one chosen, for port 0); 0 once stopped or moved from.
  std::uint16_t port() const noexcept;
  /// The process that answers requests.
  pid process() const noexcept;
  /// Ends the process (reason shutdown) and waits until the sockets are closed and the process
  /// has ended. Idempotent. Blocks: call it from an outside thread, not from a process.
  void stop();

  /// The endpoint's counters (also in /metrics as beamlet_http_*); totals since the start
  /// unless marked "now".
  struct statistics {
    /// Connections open now.
    std::size_t open_connections = 0;
    std::uint64_t connections = 0;  ///< accepted, ever
    std::uint64_t requests = 0;     ///< complete requests received
    std::uint64_t answers = 0;      ///< answers handed to their connections (written or not)
    /// Connections refused with 503: over max_connections or max_connections_per_peer.
    std::uint64_t rejected = 0;
    std::uint64_t rejected_per_peer = 0;  ///< of which over max_connections_per_peer
    std::uint64_t timeouts = 0;           ///< connections cut for not sending a request in time
    std::uint64_t bad_requests = 0;       ///< malformed or oversized requests
    std::uint64_t accept_errors = 0;  ///< failed accepts (EMFILE...), each followed by a backoff
    std::size_t queued_bytes = 0;     ///< answers' bytes not yet written, now
    std::uint64_t slow_closed = 0;    ///< connections closed to keep within max_queued_bytes
  };
  /// The counters now; all zero once stopped or moved from.
  statistics stats() const;

  /// What find() reports of a running endpoint.
  struct info {
    std::uint16_t port = 0;  ///< the port it listens on
    statistics stats;        ///< its counters when find() ran
  };
  /// The endpoint whose process is `endpoint` (started either way: by start() or by a
  /// supervisor), while it runs; nullopt otherwise. Thread-safe.
  static std::optional<info> find(runtime& rt, pid endpoint);
  /// As find(runtime&, pid), in the runtime of process `self`.
  static std::optional<info> find(basic_process& self, pid endpoint);

  struct state;

 private:
  explicit http_endpoint(std::shared_ptr<state> s) noexcept : state_(std::move(s)) {}
  std::shared_ptr<state> state_;
};

/// A start function for a supervisor: the child is the endpoint's process. The start fails
/// with {listen_error, Message} when the address cannot be bound.
start_function http_endpoint_start(http_endpoint_options opts = {});

/// A part of the console that another layer or the application supplies: it answers the GETs
/// of `/console/api/NAME`, each in a process of its own (spawned by the endpoint's process), so
/// it may wait, on a call or an rpc to another node, without holding up the endpoint. It gets
/// the query string (without its '?'); an exception becomes a 500 answer with its message.
/// beamlet/dist adds the console's Nodes view this way while a node runs.
using console_source = std::function<task<http_response>(process& self, std::string query)>;
/// Adds the source `name` (letters, digits and '_') to every console of `rt`, those running and
/// those started later, replacing one of the same name. A built-in name (overview, events,
/// processes, process, tree, alarms, action), another name or a null source is
/// std::invalid_argument. Thread-safe.
void add_console_source(runtime& rt, std::string name, console_source source);
/// Removes the source `name` (its path is 404 again); unknown names are ignored.
void remove_console_source(runtime& rt, std::string_view name);

/// A count the console's overview shows beside its own (processes, timers...), read by each
/// console at each sample, so `read` must be cheap and must not block: beamlet/net adds `ports`
/// (its sockets and listeners open), beamlet/dist `nodes` (connected nodes, while a node
/// runs). Adding a name again replaces it; a name other than letters, digits and '_', or a
/// null `read`, is std::invalid_argument.
/// Thread-safe.
void add_console_gauge(runtime& rt, std::string name, std::function<std::int64_t()> read);
/// The same, from the runtime's internal core (the layers' own use).
void add_console_gauge(detail::runtime_core& rt, std::string name,
                       std::function<std::int64_t()> read);
/// Removes the gauge `name`; unknown names are ignored.
void remove_console_gauge(runtime& rt, std::string_view name);

/// The parameters of a query string or a form body (`a=1&b=%3C0.7.0%3E`), percent-decoded
/// ('+' is a space): what a page's render or a console source is given, read. A malformed
/// escape is kept as written; of a repeated key, the first value counts.
std::map<std::string, std::string, std::less<>> parse_query(std::string_view query);

BEAMLET_END_NAMESPACE
