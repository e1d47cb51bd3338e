// The supervised acceptor pool (beamlet/net/acceptor_pool.hpp).
#include <beamlet/net/acceptor_pool.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include <beamlet/core/extension.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/observe/metrics.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/partition_supervisor.hpp>
#include <beamlet/otp/proc_lib.hpp>
#include <beamlet/otp/supervisor.hpp>

#include "io_engine.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net {

namespace {

using namespace std::chrono_literals;

/// What a process waiting in drain() receives when the pool's last connection has ended.
struct pool_drained {
  ref tag;
};

/// What the pool's processes share: made once per acceptor_pool_start.
struct pool_shared {
  explicit pool_shared(acceptor_pool_options o) : opts(std::move(o)) {}
  const acceptor_pool_options opts;

  std::mutex mu;
  tcp_listener listener;  // the listener child's, replaced when it restarts

  std::atomic<std::uint64_t> conns{0};  // the connections supervisor (pid serial)
  std::atomic<bool> draining{false};
  std::atomic<std::uint64_t> accepted{0}, refused{0}, accept_errors{0};
  std::atomic<std::int64_t> active{0};

  /// Processes waiting in drain() for the last connection to end, and the ref each waits on
  /// (under mu). The connection that brings `active` to 0 tells them.
  struct drain_waiter {
    ::beamlet::detail::runtime_core* rt;
    pid who;
    ref tag;
  };
  std::vector<drain_waiter> drain_waiters;

  /// A connection ended. Sends under the lock, so that a drain() that finds itself no longer
  /// in the list knows its message is already queued.
  void connection_ended() noexcept {
    if (active.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::lock_guard lock(mu);
    for (const drain_waiter& w : drain_waiters) {
      try {
        ::beamlet::detail::send_node(*w.rt, w.who,
                                     ::beamlet::detail::make_message(pool_drained{w.tag}));
      } catch (...) {
        // Out of memory: that drain() waits until its timeout, as if connections remained.
      }
    }
    drain_waiters.clear();
  }

  tcp_listener current_listener() {
    std::lock_guard lock(mu);
    return listener;
  }
  std::string partition_name() const { return opts.name + ".connections"; }
};

/// The running pools of a runtime, by name.
struct pool_registry final : runtime_extension {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<pool_shared>, std::less<>> pools;

  bool add(const std::shared_ptr<pool_shared>& p) {
    std::lock_guard lock(mu);
    return pools.emplace(p->opts.name, p).second;
  }
  void remove(const pool_shared* p) {
    std::lock_guard lock(mu);
    const auto it = pools.find(p->opts.name);
    if (it != pools.end() && it->second.get() == p) pools.erase(it);
  }
  std::shared_ptr<pool_shared> find(std::string_view name) {
    std::lock_guard lock(mu);
    const auto it = pools.find(name);
    return it != pools.end() ? it->second : nullptr;
  }
};

/// Parks until an exit signal ends the process.
task<> park(process& self) {
  struct never {};
  for (;;) co_await self.receive(on<never>());
}

// -- the listener child ---------------------------------------------------------------------------

class listener_body {
 public:
  explicit listener_body(std::shared_ptr<pool_shared> s) : shared_(std::move(s)) {}
  listener_body(listener_body&&) noexcept = default;
  listener_body& operator=(listener_body&&) = delete;
  ~listener_body() {
    if (!registered_) return;
    tcp_listener l;
    {
      std::lock_guard lock(shared_->mu);
      l = std::move(shared_->listener);
      shared_->listener = tcp_listener();
    }
    l.close();
    extension<pool_registry>(*rt_).remove(shared_.get());
  }

  task<> operator()(process& self, const starter& st) {
    rt_ = ::beamlet::detail::runtime_of(self);
    auto l = listen(self, shared_->opts.listen);
    if (!l) {
      st.ack(self,
             start_result::error(exit_reason::error_tuple("listen_error", l.error().message())));
      co_return;
    }
    if (!extension<pool_registry>(self).add(shared_)) {
      l->close();
      st.ack(self,
             start_result::error(exit_reason::error_tuple("already_started", shared_->opts.name)));
      co_return;
    }
    {
      std::lock_guard lock(shared_->mu);
      shared_->listener = std::move(*l);
    }
    registered_ = true;
    shared_->draining.store(false, std::memory_order_release);
    st.ack(self, start_result::ok(self.self()));
    co_await park(self);
  }

 private:
  std::shared_ptr<pool_shared> shared_;
  ::beamlet::detail::runtime_core* rt_ = nullptr;
  bool registered_ = false;
};

// -- connection processes -------------------------------------------------------------------------

class connection_body {
 public:
  explicit connection_body(std::shared_ptr<pool_shared> s) : shared_(std::move(s)) {}
  connection_body(connection_body&& o) noexcept
      : shared_(std::move(o.shared_)), counted_(std::exchange(o.counted_, false)) {}
  connection_body& operator=(connection_body&&) = delete;
  ~connection_body() {
    if (counted_) shared_->connection_ended();
  }

  task<> operator()(process& self, const starter& st) {
    shared_->active.fetch_add(1, std::memory_order_acq_rel);
    counted_ = true;
    st.ack(self, start_result::ok(self.self()));
    // The acceptor hands the socket over right after the start; if it died in between,
    // there is nothing to serve.
    auto m = co_await self.receive(on<tcp_socket>(), after(10s));
    if (m.timed_out()) co_return;
    tcp_socket s = std::move(m.get<tcp_socket>());
    co_await shared_->opts.handler(self, std::move(s));
  }

 private:
  std::shared_ptr<pool_shared> shared_;
  bool counted_ = false;
};

child_spec connection_spec(const std::shared_ptr<pool_shared>& shared) {
  shutdown_spec down = shutdown_spec::infinity();
  if (shared->opts.connection_shutdown.finite())
    down = shutdown_spec::timeout(std::chrono::duration_cast<std::chrono::milliseconds>(
        shared->opts.connection_shutdown.duration()));
  return child_spec("connection", start_function([shared](process& sup) -> task<start_result> {
                      connection_body body(shared);
                      co_return co_await start_link(sup, std::move(body));
                    }))
      .with_restart(restart_type::temporary)
      .with_shutdown(down);
}

// -- acceptors ------------------------------------------------------------------------------------

task<> accept_loop(process& self, std::shared_ptr<pool_shared> shared, int index) {
  tcp_listener l = shared->current_listener();
  auto backoff = 0ms;
  for (;;) {
    auto s = co_await accept(self, l);
    if (!s) {
      if (s.error() == net_errc::closed || s.error() == net_errc::no_handle) co_await park(self);
      shared->accept_errors.fetch_add(1, std::memory_order_relaxed);
      backoff =
          std::clamp(backoff * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
      co_await self.receive(after(backoff));
      continue;
    }
    backoff = 0ms;
    if (shared->draining.load(std::memory_order_acquire)) {
      shared->refused.fetch_add(1, std::memory_order_relaxed);  // counted before the peer knows
      s->close();
      continue;
    }
    child_spec spec = connection_spec(shared);
    pid conn;
    if (shared->opts.partitions > 0) {
      auto r = co_await partition_supervisor::start_child(self, shared->partition_name(), index,
                                                          std::move(spec));
      if (r) conn = r->pid();
    } else {
      const pid sup(shared->conns.load(std::memory_order_acquire));
      auto r = co_await dynamic_supervisor::start_child(self, sup, std::move(spec));
      if (r) conn = r->pid();
    }
    if (!conn) {
      shared->refused.fetch_add(1, std::memory_order_relaxed);
      s->close();
      continue;
    }
    shared->accepted.fetch_add(1, std::memory_order_relaxed);
    (void)co_await controlling_process(self, *s, conn);
  }
}

class acceptor_body {
 public:
  acceptor_body(std::shared_ptr<pool_shared> s, int i) : shared_(std::move(s)), index_(i) {}
  task<> operator()(process& self, const starter& st) {
    st.ack(self, start_result::ok(self.self()));
    co_await accept_loop(self, shared_, index_);
  }

 private:
  std::shared_ptr<pool_shared> shared_;
  int index_;
};

void check(const acceptor_pool_options& o) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("beamlet::net::acceptor_pool_start: " + what);
  };
  if (o.name.empty()) bad("name is required");
  if (!o.handler) bad("handler is required");
  if (o.acceptors < 1 || o.acceptors > 1024) bad("acceptors must be 1..1024");
  if (o.max_connections < 1) bad("max_connections must be at least 1");
  if (o.partitions < 0 || o.partitions > 1024) bad("partitions must be 0..1024");
  if (o.listen.backlog < 1) bad("listen.backlog must be positive");
}

}  // namespace

start_function acceptor_pool_start(acceptor_pool_options opts) {
  check(opts);
  auto shared = std::make_shared<pool_shared>(std::move(opts));
  const acceptor_pool_options& o = shared->opts;

  std::vector<child_spec> children;
  start_function conns;
  if (o.partitions > 0) {
    partition_supervisor_options p;
    p.name = shared->partition_name();
    p.partitions = o.partitions;
    dynamic_supervisor_flags f;
    f.max_children = (o.max_connections + o.partitions - 1) / o.partitions;
    p.child =
        child_spec("partition", dynamic_supervisor_start(f)).with_type(child_type::supervisor);
    conns = partition_supervisor_start(std::move(p));
  } else {
    dynamic_supervisor_flags f;
    f.max_children = o.max_connections;
    conns = dynamic_supervisor_start(f);
  }
  children.push_back(
      child_spec(
          "connections",
          start_function(
              [shared, conns](process& sup, const extra_arguments& extra) -> task<start_result> {
                start_result r = co_await conns(sup, extra);
                if (r.is_ok()) shared->conns.store(r.pid().serial(), std::memory_order_release);
                co_return r;
              }))
          .with_type(child_type::supervisor)
          .with_shutdown(shutdown_spec::infinity()));
  children.push_back(
      child_spec("listener", start_function([shared](process& sup) -> task<start_result> {
                   listener_body body(shared);
                   co_return co_await start_link(sup, std::move(body));
                 })));

  std::vector<child_spec> acceptors;
  acceptors.reserve(static_cast<std::size_t>(o.acceptors));
  for (int i = 0; i < o.acceptors; ++i) {
    acceptors.push_back(child_spec("acceptor_" + std::to_string(i),
                                   start_function([shared, i](process& sup) -> task<start_result> {
                                     acceptor_body body(shared, i);
                                     co_return co_await start_link(sup, std::move(body));
                                   }))
                            .with_shutdown(shutdown_spec::brutal_kill()));
  }
  supervisor_flags af;
  af.intensity = 2 * o.acceptors;
  children.push_back(child_spec("acceptors", supervisor_start(af, std::move(acceptors)))
                         .with_type(child_type::supervisor));

  supervisor_flags top;
  top.strategy = restart_strategy::rest_for_one;
  return supervisor_start(top, std::move(children)).naming<acceptor_pool>();
}

// -- the pool's handle ----------------------------------------------------------------------------

namespace {
std::optional<acceptor_pool::statistics> stats_of(pool_registry& reg, std::string_view name) {
  const auto p = reg.find(name);
  if (p == nullptr) return std::nullopt;
  acceptor_pool::statistics s;
  const tcp_listener l = p->current_listener();
  s.port = l.port();
  s.accepting = l && !l.closed() && !p->draining.load(std::memory_order_acquire);
  s.accepted = p->accepted.load(std::memory_order_relaxed);
  s.refused = p->refused.load(std::memory_order_relaxed);
  s.accept_errors = p->accept_errors.load(std::memory_order_relaxed);
  s.active = p->active.load(std::memory_order_acquire);
  return s;
}
}  // namespace

namespace detail {
void write_pool_metrics(::beamlet::detail::runtime_core& rt, metrics_writer& w) {
  auto& reg = extension<pool_registry>(rt);
  std::vector<std::pair<std::string, acceptor_pool::statistics>> all;
  {
    std::lock_guard lock(reg.mu);
    for (const auto& [name, p] : reg.pools) all.emplace_back(name, acceptor_pool::statistics{});
  }
  for (auto& [name, s] : all)
    if (auto got = stats_of(reg, name)) s = *got;
  if (all.empty()) return;
  const auto family = [&](const char* name, const char* type, const char* help, auto value) {
    w.family(name, type, help);
    for (const auto& [pool, s] : all) w.sample(name, value(s), metrics_writer::label("pool", pool));
  };
  using stats = acceptor_pool::statistics;
  family("net_pool_accepted_total", "counter", "Connections an acceptor pool handed to a process.",
         [](const stats& s) { return s.accepted; });
  family("net_pool_refused_total", "counter",
         "Connections an acceptor pool closed at once (over max_connections, or draining).",
         [](const stats& s) { return s.refused; });
  family("net_pool_accept_errors_total", "counter",
         "Failed accepts (out of descriptors or memory), each followed by a backoff.",
         [](const stats& s) { return s.accept_errors; });
  family("net_pool_active", "gauge", "Connection processes alive, per acceptor pool.",
         [](const stats& s) {
           return static_cast<std::uint64_t>(std::max<std::int64_t>(s.active, 0));
         });
}
}  // namespace detail

std::optional<acceptor_pool::statistics> acceptor_pool::stats(runtime& rt, std::string_view name) {
  return stats_of(extension<pool_registry>(rt), name);
}

std::optional<acceptor_pool::statistics> acceptor_pool::stats(basic_process& self,
                                                              std::string_view name) {
  return stats_of(extension<pool_registry>(self), name);
}

task<bool> acceptor_pool::drain(process& self, std::string_view name, timeout_value timeout) {
  const auto p = extension<pool_registry>(self).find(name);
  if (p == nullptr) co_return false;
  p->draining.store(true, std::memory_order_release);
  p->current_listener().close();
  // Told by the connection that ends last (pool_shared::connection_ended), not by polling; the
  // timeout is a receive's, so it follows the runtime's clock (a manual_clock in tests).
  const ref tag = self.make_ref();
  {
    std::lock_guard lock(p->mu);
    if (p->active.load(std::memory_order_acquire) <= 0) co_return true;
    p->drain_waiters.push_back({::beamlet::detail::runtime_of(self), self.self(), tag});
  }
  const auto ours = [tag](const pool_drained& d) { return d.tag == tag; };
  auto m = co_await self.receive(on<pool_drained>().when(ours), after(timeout));
  if (!m.timed_out()) co_return true;
  bool told = false;
  {
    std::lock_guard lock(p->mu);
    auto& ws = p->drain_waiters;
    const auto it = std::find_if(ws.begin(), ws.end(), [&](const auto& w) { return w.tag == tag; });
    if (it != ws.end()) {
      ws.erase(it);
    } else {
      told = true;  // the last connection ended just now: its message is queued
    }
  }
  if (told) {
    (void)co_await self.receive(on<pool_drained>().when(ours), after(0ms));
    co_return true;
  }
  co_return false;
}

}  // namespace net
BEAMLET_END_PRIVATE_NAMESPACE
