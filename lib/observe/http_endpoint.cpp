// The operator's HTTP endpoint: its process, its public handle and the start functions. The
// I/O side (connections, accept loop, limits) is http_session.cpp; what they share and who owns
// what is explained in http_server.hpp.
#include <beamlet/observe/http_endpoint.hpp>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include <beamlet/core/detail/socket_fd.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/system_messages.hpp>
#include <beamlet/observe/metrics.hpp>
#include <beamlet/otp/proc_lib.hpp>

#include "console.hpp"
#include "http_server.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

using detail::http_answer;
using detail::http_request_message;

/// The running endpoints of a runtime, by process, for find() and for /metrics. The table is
/// shared with the metrics collector, which may outlive this extension by a moment.
struct endpoint_table {
  std::mutex mu;
  std::map<std::uint64_t, std::weak_ptr<http_endpoint::state>> by_pid;
  void collect(metrics_writer& w);
};

struct endpoint_registry final : runtime_extension {
  std::shared_ptr<endpoint_table> table = std::make_shared<endpoint_table>();

  void attached(detail::runtime_core& rt) override {
    detail::add_metrics_collector(rt, "http_endpoint",
                                  [t = table](metrics_writer& w) { t->collect(w); });
  }

  void add(pid p, const std::shared_ptr<http_endpoint::state>& st) {
    std::lock_guard lock(table->mu);
    table->by_pid[p.serial()] = st;
  }
  void remove(pid p) {
    std::lock_guard lock(table->mu);
    table->by_pid.erase(p.serial());
  }
  std::shared_ptr<http_endpoint::state> find(pid p) {
    std::lock_guard lock(table->mu);
    const auto it = table->by_pid.find(p.serial());
    return it == table->by_pid.end() ? nullptr : it->second.lock();
  }
};

void endpoint_table::collect(metrics_writer& w) {
  std::vector<std::pair<std::uint16_t, http_endpoint::statistics>> all;
  {
    std::lock_guard lock(mu);
    for (const auto& [p, weak] : by_pid)
      if (const auto st = weak.lock()) all.emplace_back(st->port, st->snapshot());
  }
  if (all.empty()) return;
  using stats = http_endpoint::statistics;
  const auto family = [&](const char* name, const char* type, const char* help, auto value) {
    w.family(name, type, help);
    for (const auto& [port, s] : all)
      w.sample(name, value(s), metrics_writer::label("port", std::to_string(port)));
  };
  family("http_connections_open", "gauge", "Connections open on the HTTP endpoint.",
         [](const stats& s) { return std::uint64_t{s.open_connections}; });
  family("http_connections_total", "counter", "Connections the HTTP endpoint accepted.",
         [](const stats& s) { return s.connections; });
  family("http_requests_total", "counter", "Requests the HTTP endpoint received.",
         [](const stats& s) { return s.requests; });
  family("http_rejected_total", "counter",
         "Connections refused with 503 (over max_connections or max_connections_per_peer).",
         [](const stats& s) { return s.rejected; });
  family("http_timeouts_total", "counter", "Connections cut for not sending a request in time.",
         [](const stats& s) { return s.timeouts; });
  family("http_bad_requests_total", "counter", "Malformed or oversized requests.",
         [](const stats& s) { return s.bad_requests; });
  family("http_accept_errors_total", "counter",
         "Failed accepts (out of descriptors or memory), each followed by a backoff.",
         [](const stats& s) { return s.accept_errors; });
  family("http_queued_bytes", "gauge", "Bytes of answers not yet written to their clients.",
         [](const stats& s) { return std::uint64_t{s.queued_bytes}; });
  family("http_slow_closed_total", "counter",
         "Connections closed because their unread answers were over max_queued_bytes.",
         [](const stats& s) { return s.slow_closed; });
}

bool is_application_page(const http_endpoint_options& opts, std::string_view path) {
  return std::any_of(opts.pages.begin(), opts.pages.end(),
                     [&](const http_page& p) { return p.path == path; });
}

/// Console requests answered by a process of their own (sources, actions) at once, per
/// endpoint: beyond it they are answered 503, so that GETs of a source that works hard (the
/// Nodes view walks every process of another node) cannot pile up.
constexpr int max_console_helpers = 8;

/// Runs `work` in a process of its own, which answers `reply` (a source or an action may wait:
/// an rpc to another node, a gen_server's answer to sys:suspend) without holding up the
/// endpoint's process. nullopt when it is started; a 503 answer when too many already run.
template <class Work>
std::optional<http_answer> spawn_helper(process& self,
                                        const std::shared_ptr<http_endpoint::state>& st,
                                        const std::shared_ptr<detail::http_responder>& reply,
                                        Work work) {
  if (st->console_helpers->fetch_add(1) >= max_console_helpers) {
    st->console_helpers->fetch_sub(1);
    return http_answer{503, "text/plain; charset=utf-8",
                       "beamlet: too many console requests in progress; try again\n"};
  }
  self.spawn([work = std::move(work), reply, count = st->console_helpers](process& p) -> task<> {
    http_answer out;
    try {
      out = co_await work(p);
    } catch (const std::exception& e) {
      out =
          http_answer{500, "text/plain; charset=utf-8", std::string("beamlet: ") + e.what() + "\n"};
    }
    count->fetch_sub(1);
    reply->respond(std::move(out));
  });
  return std::nullopt;
}

/// The answer to one request, or nullopt when another process answers it (a console source,
/// a console action).
std::optional<http_answer> answer(process& self, const std::shared_ptr<http_endpoint::state>& st,
                                  detail::console* con, const http_request_message& r) {
  const detail::http_query q = detail::parse_http_target(r.target);
  const bool for_console =
      con != nullptr && q.path.rfind("/console", 0) == 0 && !is_application_page(st->opts, q.path);
  if (!for_console) return detail::route_http(self, st->opts, r.target);
  const detail::console_request cr{q, r.post, r.token, r.body, r.peer};
  if (!detail::console::is_action(q)) {
    constexpr std::string_view api = "/console/api/";
    if (q.path.rfind(api, 0) == 0)
      if (auto src =
              detail::find_console_source(*st->core, std::string_view(q.path).substr(api.size()))) {
        const auto qm = r.target.find('?');
        std::string query = qm == std::string::npos ? "" : r.target.substr(qm + 1);
        return spawn_helper(
            self, st, r.reply,
            [src = std::move(src), query = std::move(query)](process& p) -> task<http_answer> {
              http_response got = co_await (*src)(p, query);
              http_answer out{got.status, std::move(got.content_type), std::move(got.body)};
              co_return out;
            });
      }
    return con->get(cr);
  }
  if (auto refused = con->refuse(cr)) return std::move(*refused);
  detail::http_query form;
  detail::parse_form(r.body, form.params);
  return spawn_helper(self, st, r.reply,
                      [form = std::move(form), peer = r.peer,
                       endpoint = self.self()](process& p) -> task<http_answer> {
                        return detail::run_console_action(p, form, peer, endpoint);
                      });
}

/// Hands a console sample to the I/O thread for the open event streams.
void broadcast(const std::shared_ptr<http_endpoint::state>& st, std::string json) {
  try {
    net::post(st->ioc, [s = st.get(), j = std::move(json)] { s->broadcast(j); });
  } catch (...) {
    // Out of memory: this sample is not streamed (the page fetches the history again).
  }
}

/// The endpoint's process: answers requests until it is told to end. A scrape (/metrics) is
/// taken ahead of the pages queued before it, so it never waits behind large ones. With the
/// console on, it also samples the runtime on schedule and takes the system monitor's alarms.
task<> serve(process& self, std::shared_ptr<http_endpoint::state> st) {
  std::optional<detail::console> con;
  if (st->opts.console) con.emplace(self, st->opts);
  const auto is_scrape = [](const http_request_message& r) { return r.scrape; };
  for (;;) {
    http_request_message r;
    // Named before it is tested: no co_await in a condition (docs/gcc12-coroutines.md).
    auto first = co_await self.receive(on<http_request_message>().when(is_scrape),
                                       after(std::chrono::milliseconds(0)));
    if (first) {
      r = std::move(first.get<http_request_message>());
    } else if (con) {
      const auto due = con->next_sample() - std::chrono::steady_clock::now();
      if (due <= std::chrono::steady_clock::duration::zero()) {
        broadcast(st, con->sample());
        continue;
      }
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(due);
      auto next =
          co_await self.receive(on<http_request_message>(), on<monitor_alarm>(), after(wait));
      if (!next) continue;  // the sample is due
      if (next.is<monitor_alarm>()) {
        con->on_alarm(next.get<monitor_alarm>());
        continue;
      }
      r = std::move(next.get<http_request_message>());
    } else {
      auto next = co_await self.receive(on<http_request_message>());
      r = std::move(next.get<http_request_message>());
    }
    std::optional<http_answer> a;
    try {
      a = answer(self, st, con ? &*con : nullptr, r);
    } catch (const std::exception& e) {
      a = http_answer{500, "text/plain; charset=utf-8", std::string("beamlet: ") + e.what() + "\n"};
    }
    if (a) r.reply->respond(std::move(*a));
  }
}

/// Owns the endpoint's sockets on behalf of its process: the process's body holds one, and the
/// runtime destroys the body when the process ends, whether or not it ever ran (a process
/// killed before its first run has no coroutine frame to clean up after it). Move-only, so
/// exactly one owner shuts the endpoint down.
class endpoint_owner {
 public:
  explicit endpoint_owner(std::shared_ptr<http_endpoint::state> st) : st_(std::move(st)) {}
  endpoint_owner(endpoint_owner&&) noexcept = default;
  endpoint_owner& operator=(endpoint_owner&&) = delete;
  ~endpoint_owner() {
    if (st_ == nullptr) return;
    if (const pid p(st_->handler.load(std::memory_order_acquire)); p && st_->core != nullptr)
      extension<endpoint_registry>(*st_->core).remove(p);
    st_->shut_down();
  }
  const std::shared_ptr<http_endpoint::state>& state() const noexcept { return st_; }

 private:
  std::shared_ptr<http_endpoint::state> st_;
};

/// The body when started with http_endpoint::start.
class endpoint_body {
 public:
  using initial_call = http_endpoint;
  explicit endpoint_body(std::shared_ptr<http_endpoint::state> st) : owner_(std::move(st)) {}
  task<> operator()(process& self) {
    if (!owner_.state()->opts.name.empty()) (void)self.register_name(owner_.state()->opts.name);
    co_await serve(self, owner_.state());
  }

 private:
  endpoint_owner owner_;
};

/// The body when started by a supervisor (proc_lib start_link).
class endpoint_child {
 public:
  using initial_call = http_endpoint;
  explicit endpoint_child(std::shared_ptr<http_endpoint::state> st) : owner_(std::move(st)) {}
  task<> operator()(process& self, const starter& st) {
    const auto& s = owner_.state();
    s->handler.store(self.self().serial(), std::memory_order_release);
    if (!s->opts.name.empty()) {
      if (const std::error_code ec = self.register_name(s->opts.name)) {
        st.ack(self,
               start_result::error(exit_reason::error_tuple("already_registered", s->opts.name)));
        co_return;
      }
    }
    extension<endpoint_registry>(self).add(self.self(), s);
    s->start_thread(s);
    st.ack(self, start_result::ok(self.self()));
    co_await serve(self, s);
  }

 private:
  endpoint_owner owner_;
};

void check(const http_endpoint_options& o) {
  if (o.max_connections == 0 || o.max_connections_per_peer == 0 || o.max_request_bytes == 0 ||
      o.request_timeout.count() <= 0 || o.header_timeout.count() <= 0 || o.max_page_entries == 0 ||
      o.max_queued_bytes == 0)
    throw std::invalid_argument(
        "beamlet::http_endpoint: max_connections, max_connections_per_peer, max_request_bytes, "
        "header_timeout, request_timeout, max_page_entries and max_queued_bytes must be "
        "positive");
  boost::system::error_code ec;
  (void)net::ip::make_address(o.address, ec);
  if (ec)
    throw std::invalid_argument("beamlet::http_endpoint: not a numeric address: " + o.address);
  if (o.console && (o.console_sample_interval.count() <= 0 || o.console_history == 0 ||
                    o.console_long_queue < 2))
    throw std::invalid_argument(
        "beamlet::http_endpoint: console_sample_interval and console_history must be positive "
        "and console_long_queue at least 2");
  for (const http_page& p : o.pages)
    if (p.path.empty() || p.path.front() != '/' || !p.render == !p.respond)
      throw std::invalid_argument(
          "beamlet::http_endpoint: a page needs a path starting with '/' "
          "and exactly one of render and respond (path: \"" +
          p.path + "\")");
}

}  // namespace

// -- state
// ------------------------------------------------------------------------------------------

std::error_code http_endpoint::state::listen() {
  // Boost's codes here are the operating system's (errno values): hand them on as such.
  const auto os = [](const boost::system::error_code& ec) {
    return std::error_code(ec.value(), std::system_category());
  };
  boost::system::error_code ec;
  const auto address = net::ip::make_address(opts.address, ec);
  if (ec) return os(ec);
  const tcp::endpoint ep(address, opts.port);
  // Close-on-exec from the start (beamlet/core/detail/socket_fd.hpp).
  const int fd = ::beamlet::detail::open_tcp_socket(ep.protocol().family());
  if (fd < 0) return std::error_code(errno, std::system_category());
  if (acceptor.assign(ep.protocol(), fd, ec); ec) {
    ::close(fd);
    return os(ec);
  }
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec) return os(ec);
  if (acceptor.bind(ep, ec); ec) return os(ec);
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) return os(ec);
  const auto local = acceptor.local_endpoint(ec);
  if (ec) return os(ec);
  port = local.port();
  return {};
}

void http_endpoint::state::start_thread(const std::shared_ptr<state>& self) {
  std::lock_guard lock(mu);
  if (stopping) return;
  accept(self);
  thread = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "beamlet-http");
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (...) {
        // A handler threw (out of memory): keep serving.
      }
    }
  });
}

void http_endpoint::state::shut_down() noexcept {
  std::thread t;
  {
    std::lock_guard lock(mu);
    stopping = true;
    t = std::move(thread);
  }
  if (!t.joinable()) {
    // Never served (ended before its first run): no other thread touches the acceptor.
    boost::system::error_code ec;
    acceptor.close(ec);
  } else {
    try {
      net::post(ioc, [this] {
        boost::system::error_code ec;
        acceptor.close(ec);
        accept_backoff.cancel();
        std::vector<std::shared_ptr<detail::http_session>> all;
        for (auto& [p, s] : sessions) all.push_back(s);
        for (auto& s : all) s->close();
      });
    } catch (...) {
      ioc.stop();
    }
    t.join();
  }
  std::lock_guard lock(mu);
  ended = true;
  ended_cv.notify_all();
}

// -- the handle -----------------------------------------------------------------------------------

expected<http_endpoint, std::error_code> http_endpoint::start(runtime& rt,
                                                              http_endpoint_options opts) {
  check(opts);
  auto st = std::make_shared<state>(std::move(opts));
  st->rt = &rt;
  st->core = &rt.core();
  if (const std::error_code ec = st->listen()) return unexpected(ec);
  const pid p = rt.spawn(endpoint_body(st));
  st->handler.store(p.serial(), std::memory_order_release);
  extension<endpoint_registry>(rt).add(p, st);
  st->start_thread(st);
  return http_endpoint(std::move(st));
}

http_endpoint::http_endpoint(http_endpoint&&) noexcept = default;

http_endpoint& http_endpoint::operator=(http_endpoint&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
  }
  return *this;
}

http_endpoint::~http_endpoint() {
  stop();
}

std::uint16_t http_endpoint::port() const noexcept {
  return state_ != nullptr ? state_->port : 0;
}

pid http_endpoint::process() const noexcept {
  return state_ != nullptr ? pid(state_->handler.load(std::memory_order_acquire)) : pid();
}

void http_endpoint::stop() {
  if (state_ == nullptr) return;
  {
    std::unique_lock lock(state_->mu);
    if (!state_->ended) {
      lock.unlock();
      state_->rt->exit(process(), exit_reason::shutdown());
      lock.lock();
      state_->ended_cv.wait(lock, [&] { return state_->ended; });
    }
  }
  // The sockets are closed; the process is a moment away from leaving the table.
  (void)state_->rt->wait(process(), infinity);
  state_.reset();
}

http_endpoint::statistics http_endpoint::stats() const {
  return state_ != nullptr ? state_->snapshot() : statistics{};
}

namespace {
std::optional<http_endpoint::info> find_in(endpoint_registry& reg, pid p) {
  const auto st = reg.find(p);
  if (st == nullptr) return std::nullopt;
  return http_endpoint::info{st->port, st->snapshot()};
}
}  // namespace

std::optional<http_endpoint::info> http_endpoint::find(runtime& rt, pid endpoint) {
  return find_in(extension<endpoint_registry>(rt), endpoint);
}

std::optional<http_endpoint::info> http_endpoint::find(basic_process& self, pid endpoint) {
  return find_in(extension<endpoint_registry>(self), endpoint);
}

start_function http_endpoint_start(http_endpoint_options opts) {
  check(opts);
  return start_function([opts](process& sup) -> task<start_result> {
           auto st = std::make_shared<http_endpoint::state>(opts);
           st->core = detail::runtime_of(sup);
           if (const std::error_code ec = st->listen())
             co_return start_result::error(exit_reason::error_tuple("listen_error", ec.message()));
           endpoint_child body(std::move(st));  // a named local: see docs/gcc12-coroutines.md
           co_return co_await start_link(sup, std::move(body));
         })
      .naming<http_endpoint>();
}

BEAMLET_END_PRIVATE_NAMESPACE
