#include "cluster.hpp"

#include <beamlet/net.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace replay {

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

// -- messages -------------------------------------------------------------------------------------

using steady = std::chrono::steady_clock;

/// A call owner's RPC to a syncer: place participant `participant` of `call`. The owner stops
/// waiting at `deadline`.
struct place_call {
  pid reply_to;
  ref tag;
  std::uint64_t call;
  int participant;
  steady::time_point deadline;
};
struct placed {
  ref tag;
  bool ok;
};
/// To a connection process: send `line` to the media server, answer exchange_done.
struct exchange {
  pid reply_to;
  ref tag;
  std::string line;
};
struct exchange_done {
  ref tag;
  bool ok;
};

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

/// The time left until `deadline`, at least a millisecond (a timeout of zero would not wait).
std::chrono::milliseconds left(steady::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()),
                  std::chrono::milliseconds(1));
}

// -- the media-server stub ------------------------------------------------------------------------

/// One connection to a stub: one request line, one answer, then the stub closes (so the
/// TIME_WAIT state stays on the stub's side and the clients' ports are free at once).
task<> stub_connection(process& self, net::tcp_socket s) {
  auto line = co_await net::recv(self, s, 1s);
  if (!line) co_return;
  const auto sent = co_await net::send(self, s, "OK\n");
  (void)sent;  // a client that left before the answer is no concern of the stub's
}

net::socket_options line_options() {
  net::socket_options o;
  o.framing = net::framing::line;
  o.max_packet = 256;
  return o;
}

/// Sends `line` on `s` and waits (boundedly) for the stub's answer.
task<bool> talk(process& self, net::tcp_socket& s, const std::string& line) {
  if (!co_await net::send(self, s, line)) co_return false;
  auto answer = co_await net::recv(self, s, 1s);
  co_return answer && answer->rfind("OK", 0) == 0;
}

/// Waits for the stub to close first. A TCP connection's TIME_WAIT (a minute) stays with the side
/// that closes first; left on the client's side, thousands of connections a second would use up
/// the ephemeral ports, and later connects would fail for want of one.
task<> await_close(process& self, net::tcp_socket& s) {
  for (int i = 0; i < 4; ++i) {
    const auto more = co_await net::recv(self, s, 250ms);
    if (!more) co_return;
  }
}

/// Waits for one exchange request for at most `idle` and serves it over `s` (or through the
/// process that owns the socket). A connection nobody asks for ends (its requester gave up),
/// after saying so to the stub.
task<> serve_one_exchange(process& self, net::tcp_socket* s, pid socket_owner,
                          std::chrono::milliseconds idle) {
  auto m = co_await self.receive(on<exchange>(), after(idle));
  if (m.timed_out()) {
    if (s != nullptr) {
      const std::string quit = "QUIT\n";
      co_await talk(self, *s, quit);
      co_await await_close(self, *s);
    }
    co_return;
  }
  const exchange ex = std::move(m.get<exchange>());
  bool ok = false;
  if (s != nullptr) {
    ok = co_await talk(self, *s, ex.line);
  } else {
    const ref tag = self.make_ref();
    exchange relay{self.self(), tag, ex.line};
    self.send(socket_owner, std::move(relay));
    auto done = co_await self.receive(
        on<exchange_done>().when([tag](const exchange_done& d) { return d.tag == tag; }),
        after(idle));
    ok = !done.timed_out() && done.get<exchange_done>().ok;
  }
  const exchange_done answer{ex.tag, ok};
  self.send(ex.reply_to, answer);
  if (s != nullptr) co_await await_close(self, *s);
}

/// Answers the exchange request of a connection that could not connect, so that its requester
/// need not wait for its own deadline to learn it.
task<> refuse_one_exchange(process& self, std::chrono::milliseconds idle) {
  auto m = co_await self.receive(on<exchange>(), after(idle));
  if (m.timed_out()) co_return;
  const exchange& ex = m.get<exchange>();
  self.send(ex.reply_to, exchange_done{ex.tag, false});
}

// -- connections ----------------------------------------------------------------------------------

/// A child of http_I: connects in its init (so http_I's start waits for the TCP handshake) and
/// owns the socket.
struct socket_body {
  cluster_context* cx;
  std::uint16_t port;
  task<> operator()(process& self, const starter& st) const {
    const auto t = ms(cx->sc->rpc_timeout);
    auto s = co_await net::connect(self, "127.0.0.1", port, line_options(), t);
    if (!s) {
      st.ack(self, start_result::error(exit_reason::error("{connect_failed}")));
      co_return;
    }
    st.ack(self, start_result::ok(self.self()));
    co_await serve_one_exchange(self, &*s, pid(), t);
  }
};

child_spec socket_spec(cluster_context& cx, std::uint16_t port) {
  return child_spec("socket", proc_start(socket_body{&cx, port}))
      .with_restart(restart_type::temporary)
      .with_shutdown(shutdown_spec::brutal_kill());
}

/// Asks http_I for a socket-owning child; the null pid if it could not.
task<pid> http_socket(process& self, cluster_context& cx, int inst, std::uint16_t port,
                      std::chrono::milliseconds t) {
  const dynamic_supervisor_ref http(cx.http_name(inst));
  const child_spec spec = socket_spec(cx, port);
  try {
    const sup_result<start_result> r =
        co_await dynamic_supervisor::start_child(self, http, spec, t);
    if (r.has_value() && r->is_ok()) co_return r->pid();
  } catch (const call_error&) {  // http_I is down or did not answer in time
  }
  co_return pid();
}

/// A child of pool_I: one pooled connection. With two supervisors its init goes through http_I
/// (and pool_I waits for http_I's start, which waits for the TCP handshake); with the
/// single-supervisor fix it acks first and then connects itself, so pool_I never waits on the
/// network.
///
/// Without the deadline fix a connection is made whenever the pool gets to its start request,
/// even when the requester gave up long before (as in the outage: each such start costs a TCP
/// handshake, a QUIT and a close, and the pool's backlog drains at the speed of wasted work).
/// With it, the request carries the requester's deadline: a start that comes too late ends at
/// once, unmade, and the connection's own waits end at the deadline.
struct connection_body {
  cluster_context* cx;
  int inst;
  std::uint16_t port;
  steady::time_point deadline;
  task<> operator()(process& self, const starter& st) const {
    const bool by_deadline = cx->sc->fix.deadline;
    if (by_deadline && steady::now() >= deadline) {
      cx->c->expired.fetch_add(1, std::memory_order_relaxed);
      st.ack(self, start_result::error(exit_reason::error("{deadline_passed}")));
      co_return;
    }
    const auto t = by_deadline ? left(deadline) : ms(cx->sc->rpc_timeout);
    if (cx->sc->fix.single_supervisor) {
      // The ack comes before the connect (Elixir's handle_continue): a supervisor starts its
      // children one at a time, so a child that waits on the network in its init makes its
      // supervisor wait too, and a slow peer (a full listen backlog) then caps every start.
      st.ack(self, start_result::ok(self.self()));
      auto s = co_await net::connect(self, "127.0.0.1", port, line_options(), t);
      if (!s) {
        co_await refuse_one_exchange(self, t);
        co_return;
      }
      cx->c->conn_starts.fetch_add(1, std::memory_order_relaxed);
      co_await serve_one_exchange(self, &*s, pid(), by_deadline ? left(deadline) : t);
      co_return;
    }
    const pid owner = co_await http_socket(self, *cx, inst, port, t);
    if (!owner) {
      st.ack(self, start_result::error(exit_reason::error("{http_client_unavailable}")));
      co_return;
    }
    cx->c->conn_starts.fetch_add(1, std::memory_order_relaxed);
    st.ack(self, start_result::ok(self.self()));
    co_await serve_one_exchange(self, nullptr, owner, t);
  }
};

child_spec connection_spec(cluster_context& cx, int inst, std::uint16_t port,
                           steady::time_point deadline) {
  return child_spec("connection", proc_start(connection_body{&cx, inst, port, deadline}))
      .with_restart(restart_type::temporary)
      .with_shutdown(shutdown_spec::brutal_kill());
}

void count_refusal(cluster_context& cx, const sup_error& e) {
  if (e.code == sup_errc::overloaded) cx.c->shed.fetch_add(1, std::memory_order_relaxed);
  if (e.code == sup_errc::rate_limited) cx.c->rate_limited.fetch_add(1, std::memory_order_relaxed);
}

/// Opens a connection to `port` through pool_I and exchanges `line` over it, all by `deadline`.
task<bool> pool_exchange(process& self, cluster_context& cx, int inst, std::uint16_t port,
                         std::uint64_t key, const std::string& line, steady::time_point deadline) {
  const auto t = left(deadline);
  const child_spec spec = connection_spec(cx, inst, port, deadline);
  pid conn;
  try {
    if (cx.sc->fix.partition) {
      const std::string name = cx.pool_name(inst);
      const partition_key k(key);
      const sup_result<start_result> r =
          co_await partition_supervisor::start_child(self, name, k, spec, t);
      if (r.has_value() && r->is_ok()) conn = r->pid();
      if (!r.has_value()) count_refusal(cx, r.error());
    } else {
      const dynamic_supervisor_ref pool(cx.pool_name(inst));
      const sup_result<start_result> r =
          co_await dynamic_supervisor::start_child(self, pool, spec, t);
      if (r.has_value() && r->is_ok()) conn = r->pid();
      if (!r.has_value()) count_refusal(cx, r.error());
    }
  } catch (const call_error&) {      // the pool did not answer in time, or is down
  } catch (const exit_exception&) {  // a partition supervisor being restarted
  }
  if (!conn) co_return false;
  const ref tag = self.make_ref();
  exchange ex{self.self(), tag, line};
  self.send(conn, std::move(ex));
  auto m = co_await self.receive(
      on<exchange_done>().when([tag](const exchange_done& d) { return d.tag == tag; }),
      after(left(deadline)));
  co_return !m.timed_out() && m.get<exchange_done>().ok;
}

// -- the syncer and the registrar -----------------------------------------------------------------

/// Without the deadline fix the syncer's own clock starts when it takes the request (as an RPC
/// server that does not know its caller's timeout); with it, the caller's deadline holds.
task<> handle_place(process& self, cluster_context* cx, int inst, place_call pc) {
  const std::string line =
      "PLACE " + std::to_string(pc.call) + " " + std::to_string(pc.participant) + "\n";
  const auto deadline =
      cx->sc->fix.deadline ? pc.deadline : steady::now() + ms(cx->sc->rpc_timeout);
  bool ok = false;
  if (steady::now() < deadline)
    ok = co_await pool_exchange(self, *cx, inst, cx->media_port, pc.call, line, deadline);
  else
    cx->c->expired.fetch_add(1, std::memory_order_relaxed);
  const placed answer{pc.tag, ok};
  self.send(pc.reply_to, answer);
}

/// Registers `name` and acks: the first lines of every named worker below.
bool register_and_ack(process& self, cluster_context* cx, const std::string& name,
                      const starter& st) {
  if (cx->rt->register_name(name, self.self())) {
    st.ack(self, start_result::error(exit_reason::error("{already_registered}")));
    return false;
  }
  st.ack(self, start_result::ok(self.self()));
  return true;
}

struct syncer_body {
  cluster_context* cx;
  int inst;
  task<> operator()(process& self, const starter& st) const {
    if (!register_and_ack(self, cx, cx->syncer_name(inst), st)) co_return;
    for (;;) {
      auto m = co_await self.receive(on<place_call>());
      const place_call pc = m.get<place_call>();
      self.spawn([c = cx, i = inst, pc](process& h) { return handle_place(h, c, i, pc); });
    }
  }
};

/// Renews the instance's lease every ttl/4 through the pool, retrying every 100 ms after a
/// failure; the lease lapses only if nothing gets through for a whole ttl.
struct registrar_body {
  cluster_context* cx;
  int inst;
  task<> operator()(process& self, const starter& st) const {
    if (!register_and_ack(self, cx, cx->registrar_name(inst), st)) co_return;
    const std::string line = "LEASE " + std::to_string(inst) + "\n";
    const double ttl = cx->sc->lease_ttl;
    for (;;) {
      const bool ok =
          co_await pool_exchange(self, *cx, inst, cx->discovery_port, mix(1'000'000u + inst), line,
                                 steady::now() + ms(ttl / 3));
      if (ok) {
        cx->disc->renew(inst, std::chrono::steady_clock::now() + ms(ttl));
        co_await self.receive(after(ms(ttl / 4)));
      } else {
        co_await self.receive(after(100ms));
      }
    }
  }
};

/// Service discovery's side: every 100 ms, instances whose lease lapsed leave the ring and
/// renewed ones join it.
struct ring_keeper_body {
  cluster_context* cx;
  task<> operator()(process& self, const starter& st) const {
    if (!register_and_ack(self, cx, "ring_keeper", st)) co_return;
    for (;;) {
      cx->disc->tick(std::chrono::steady_clock::now(), *cx->c);
      co_await self.receive(after(100ms));
    }
  }
};

dynamic_supervisor_flags pool_flags(const scenario& sc, int share) {
  dynamic_supervisor_flags f;
  f.intensity = 1000;
  if (sc.fix.rate_limit) {
    const double r = sc.pool_start_rate / share;
    f.start_rate = rate_limit{r, std::max(1.0, r / 10)};
  }
  if (sc.fix.shed) f.shed_above = std::max<std::size_t>(1, sc.shed_above / share);
  return f;
}

}  // namespace

const std::string& cluster_context::name(const std::string& n) {
  std::lock_guard lock(names_mu_);
  for (const std::string& s : names_)
    if (s == n) return s;
  return names_.emplace_back(n);
}

start_function stub_start(std::string name, std::int64_t max_connections) {
  net::acceptor_pool_options o;
  o.name = std::move(name);
  // A listen backlog is a queue too, and the kernel's is invisible to every mailbox metric:
  // 4,096 held over a second of accepts, so connections made in time were answered after their
  // callers' deadlines. 512 is about a sixth of a second; past it the kernel drops the SYN, and
  // the connect fails at its caller's deadline without costing the stub anything.
  o.listen.backlog = 512;
  o.listen.accepted = line_options();
  o.acceptors = 4;
  o.partitions = 2;
  o.max_connections = max_connections;
  o.connection_shutdown = 100ms;
  o.handler = [](process& self, net::tcp_socket s) { return stub_connection(self, std::move(s)); };
  return net::acceptor_pool_start(std::move(o));
}

start_function instance_start(cluster_context& cx, int i) {
  cluster_context* cxp = &cx;
  const scenario& sc = *cx.sc;
  supervisor_options sub;
  sub.wait = sc.fix.marker ? ack_wait_mode::marker : ack_wait_mode::scan;
  std::vector<child_spec> kids;
  // A drowning supervisor would take its shutdown request only after its backlog (it traps
  // exits, and the request queues like any message): the two supervisors are killed, as an
  // operator restarting them would.
  if (!sc.fix.single_supervisor) {
    supervisor_options o = sub;
    o.name = cx.name(cx.http_name(i));
    dynamic_supervisor_flags f;
    f.intensity = 1000;
    kids.push_back(child_spec("http", dynamic_supervisor_start(f, o))
                       .with_shutdown(shutdown_spec::brutal_kill()));
  }
  if (sc.fix.partition) {
    partition_supervisor_options p;
    p.name = cx.name(cx.pool_name(i));
    p.partitions = sc.partitions;
    p.wait = sub.wait;
    p.child = child_spec("partition", dynamic_supervisor_start(pool_flags(sc, sc.partitions), sub));
    p.with_arguments = [cxp, i, sub](child_spec s, int part) {
      supervisor_options o = sub;
      o.name = cxp->name(cxp->partition_name(i, part));
      s.start = dynamic_supervisor_start(pool_flags(*cxp->sc, cxp->sc->partitions), o);
      return s;
    };
    kids.push_back(child_spec("pool", partition_supervisor_start(p))
                       .with_shutdown(shutdown_spec::brutal_kill()));
  } else {
    supervisor_options o = sub;
    o.name = cx.name(cx.pool_name(i));
    kids.push_back(child_spec("pool", dynamic_supervisor_start(pool_flags(sc, 1), o))
                       .with_shutdown(shutdown_spec::brutal_kill()));
  }
  kids.push_back(child_spec("syncer", proc_start(syncer_body{cxp, i})));
  kids.push_back(child_spec("registrar", proc_start(registrar_body{cxp, i})));
  supervisor_flags f;
  f.strategy = restart_strategy::rest_for_one;
  f.intensity = 100;
  supervisor_options top;
  top.name = cx.name(cx.instance_name(i));
  return supervisor_start(f, std::move(kids), top);
}

start_function ring_keeper_start(cluster_context& cx) {
  return proc_start(ring_keeper_body{&cx});
}

task<bool> place_attempt(process& self, cluster_context& cx, std::uint64_t call, int participant) {
  const int inst = cx.disc->serving(call);
  std::optional<pid> syncer;
  if (inst >= 0) syncer = cx.rt->whereis(cx.syncer_name(inst));
  if (!syncer) {
    // Nobody in the ring can take it (or the instance is restarting): a failed RPC, after the
    // time a client would spend finding that out.
    co_await self.receive(after(ms(cx.sc->rpc_timeout / 5)));
    cx.c->rpc_failed.fetch_add(1, std::memory_order_relaxed);
    co_return false;
  }
  const ref tag = self.make_ref();
  const auto t = ms(cx.sc->rpc_timeout);
  const place_call pc{self.self(), tag, call, participant, steady::now() + t};
  self.send(*syncer, pc);
  auto m = co_await self.receive(on<placed>().when([tag](const placed& p) { return p.tag == tag; }),
                                 after(t));
  const bool ok = !m.timed_out() && m.get<placed>().ok;
  (ok ? cx.c->rpc_ok : cx.c->rpc_failed).fetch_add(1, std::memory_order_relaxed);
  co_return ok;
}

std::size_t instance_queue(cluster_context& cx, int i) {
  std::vector<std::string> names{cx.http_name(i), cx.syncer_name(i), cx.registrar_name(i)};
  if (cx.sc->fix.partition) {
    for (int p = 0; p < cx.sc->partitions; ++p) names.push_back(cx.partition_name(i, p));
  } else {
    names.push_back(cx.pool_name(i));
  }
  std::size_t most = 0;
  for (const std::string& n : names) {
    const auto p = cx.rt->whereis(n);
    if (!p) continue;
    if (const auto info = process_info(*cx.rt, *p)) most = std::max(most, info->message_queue_len);
  }
  return most;
}

}  // namespace replay
