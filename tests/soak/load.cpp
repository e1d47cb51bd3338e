#include "load.hpp"

#include "service.hpp"

#include <beamlet/dist.hpp>
#include <beamlet/net.hpp>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace soak {

using namespace beamlet;
using namespace std::chrono_literals;
using dist::term;

namespace {

void count_call_error(world& w, const call_error& e) {
  switch (e.which()) {
    case call_error::kind::noproc:
      w.call_errors_noproc.fetch_add(1, std::memory_order_relaxed);
      break;
    case call_error::kind::server_exited:
      w.call_errors_exited.fetch_add(1, std::memory_order_relaxed);
      break;
    case call_error::kind::timeout:
      w.call_errors_timeout.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      w.call_errors_other.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

task<> witness(process& self, world& w) {
  self.trap_exit(true);
  for (;;) {
    auto m = co_await self.receive(on<exit_message>());
    const exit_message& e = m.get<exit_message>();
    if (e.reason == exit_reason::killed()) {
      std::lock_guard<std::mutex> g(w.mu);
      w.witness_saw_killed.insert(e.from);
    }
  }
}

task<> caller(process& self, world& w, int index, std::uint64_t seed) {
  heartbeat& hb = w.add_beat("caller " + std::to_string(index));
  std::mt19937_64 rng(seed);
  for (std::uint64_t n = 0; !w.stopping.load(); ++n) {
    const std::uint64_t key = rng();
    const bump req{n};
    const server_ref<seq_server> to(partition_supervisor::via(counters_name, key));
    try {
      const std::uint64_t r = co_await call(self, to, req, 2s);
      w.calls.checked.fetch_add(1, std::memory_order_relaxed);
      if (r != n + 1)
        w.violate(w.calls, "caller " + std::to_string(index) + ": bump " + std::to_string(n) +
                               " answered " + std::to_string(r));
    } catch (const call_error& e) {
      w.calls.checked.fetch_add(1, std::memory_order_relaxed);
      count_call_error(w, e);
    } catch (const exit_exception& e) {
      // Routing while the PartitionSupervisor itself is down (the chaos killed it) exits the
      // caller with {noproc, {partition_supervisor, partitions, [Name]}}, as Elixir's does.
      w.calls.checked.fetch_add(1, std::memory_order_relaxed);
      if (e.reason().to_string().rfind("{noproc,{partition_supervisor,partitions,", 0) == 0)
        w.call_errors_noproc.fetch_add(1, std::memory_order_relaxed);
      else
        w.violate(w.calls, "caller: an undocumented exit: " + e.reason().to_string());
    } catch (const std::exception& e) {
      w.violate(w.calls, std::string("caller: an undocumented error: ") + e.what());
    }
    hb.beat();
    if (n % 8 == 7) co_await self.sleep(1ms);
  }
}

task<> session_churn(process& self, world& w, std::uint64_t seed) {
  heartbeat& hb = w.add_beat("session churn");
  std::mt19937_64 rng(seed);
  const dynamic_supervisor_ref sup(sessions_name);
  std::vector<pid> live;
  auto refresh_at = clock::now();
  std::uint64_t n = 0;
  while (!w.stopping.load()) {
    bool failed = false;
    try {
      if (clock::now() >= refresh_at) {
        // The chaos kills sessions, and their restarts have new pids: take the list again.
        const std::vector<child_info> kids =
            co_await dynamic_supervisor::which_children(self, sup, 5s);
        live.clear();
        for (const child_info& k : kids)
          if (k.pid) live.push_back(k.pid);
        refresh_at = clock::now() + 1s;
      }
      if (static_cast<int>(live.size()) < w.opt.sessions) {
        child_spec spec = session_spec(w);
        const sup_result<start_result> r =
            co_await dynamic_supervisor::start_child(self, sup, std::move(spec), 5s);
        if (r && r->is_ok()) {
          live.push_back(r->pid());
          w.sessions_started.fetch_add(1, std::memory_order_relaxed);
        } else {
          w.start_child_errors.fetch_add(1, std::memory_order_relaxed);
          failed = true;
        }
      } else {
        const std::size_t i = rng() % live.size();
        const pid p = live[i];
        if (rng() % 16 == 0 && churn_may_terminate(p)) {
          const sup_result<void> r = co_await dynamic_supervisor::terminate_child(self, sup, p, 5s);
          if (r) w.sessions_stopped.fetch_add(1, std::memory_order_relaxed);
          live[i] = live.back();
          live.pop_back();
        } else {
          const ping req{n++};
          try {
            const std::uint64_t v = co_await call(self, server_ref<session>(p), req, 2s);
            w.calls.checked.fetch_add(1, std::memory_order_relaxed);
            if (v != req.n)
              w.violate(w.calls, "session " + p.to_string() + ": ping " + std::to_string(req.n) +
                                     " answered " + std::to_string(v));
          } catch (const call_error& e) {
            w.calls.checked.fetch_add(1, std::memory_order_relaxed);
            count_call_error(w, e);
            live[i] = live.back();
            live.pop_back();
          }
        }
      }
    } catch (const call_error& e) {
      // The supervisor itself was killed (or is being restarted): documented, try again.
      count_call_error(w, e);
      live.clear();
      failed = true;
    }
    hb.beat();
    if (failed) co_await self.sleep(10ms);
  }
}

task<> local_streamer(process& self, world& w, int index) {
  heartbeat& hb = w.add_beat("local streamer " + std::to_string(index));
  const std::string name = sink_name(index % w.opt.local_streams);
  while (!w.stopping.load()) {
    const std::optional<pid> found = w.rt->whereis(name);
    if (!found) {
      co_await self.sleep(5ms);
      hb.beat();
      continue;
    }
    const pid sink = *found;
    const ref mon = self.monitor(sink);
    auto is_mine = [mon](const down& d) { return d.ref == mon; };
    auto from_sink = [sink](const stream_ack& a) { return a.sink == sink; };
    std::uint64_t seq = 0, acked = 0;
    bool gone = false;
    while (!w.stopping.load() && !gone) {
      while (seq - acked < 4 * ack_every) self.send(sink, stream_msg{self.self(), seq++});
      auto m = co_await self.receive(on<stream_ack>().when(from_sink), on<down>().when(is_mine),
                                     after(20s));
      if (!m) {
        w.violate(w.local_streams, "streamer " + std::to_string(index) + ": no ack for 20 s from " +
                                       sink.to_string() + ", which is alive");
        self.demonitor(mon, flush);
        gone = true;
      } else if (m.is<stream_ack>()) {
        acked = std::max(acked, m.get<stream_ack>().upto);
        hb.beat();
        co_await self.sleep(1ms);  // steady, not flat out: the other load needs the cores too
      } else {
        gone = true;
        w.stream_resets.fetch_add(1, std::memory_order_relaxed);
      }
    }
    // Acks of the old sink that are still queued.
    while (co_await self.receive(on<stream_ack>(), after(0ms))) {
    }
    if (!gone) {
      // The end: everything sent to this sink must have arrived.
      self.send(sink, stream_fin{self.self(), seq});
      auto m = co_await self.receive(on<fin_ack>(), on<down>().when(is_mine), after(20s));
      if (!m)
        w.violate(w.local_streams,
                  "streamer " + std::to_string(index) + ": no answer to the end of its stream");
      self.demonitor(mon, flush);
    }
  }
}

task<> remote_streamer(process& self, world& w, std::string node, std::string echo_name, check& c,
                       bool rpc) {
  heartbeat& hb = w.add_beat("remote streamer to " + node);
  std::int64_t epoch = 0;
  auto is_node_down = [node](const dist::nodedown& d) { return d.node == node; };
  // {echoed, {Epoch, N}, EchoPid} of the current epoch.
  auto echo_of = [&epoch](const term& t) {
    return t.is_tuple() && t.size() == 3 && t[0].is_atom("echoed") && t[1].is_tuple() &&
           t[1].size() == 2 && dist::from_term<std::int64_t>(t[1][0]) == epoch;
  };
  while (!w.stopping.load()) {
    hb.beat();
    if (!co_await dist::connect_node(self, node)) {
      co_await self.sleep(200ms);
      continue;
    }
    dist::monitor_node(self, node, true);
    ++epoch;
    // Until the echo answers (a node just restarted may not have registered it yet).
    bool up = true, ready = false;
    for (int tries = 0; tries < 150 && up && !ready && !w.stopping.load(); ++tries) {
      self.send(echo_name, node,
                term::tuple(term(self.self()), term::tuple(epoch, std::int64_t{-1})));
      auto m = co_await self.receive(on<term>().when(echo_of),
                                     on<dist::nodedown>().when(is_node_down), after(200ms));
      if (m && m.is<term>()) ready = true;
      if (m && m.is<dist::nodedown>()) up = false;
      hb.beat();
    }
    std::int64_t next = 0, want = 0;
    std::uint64_t since_rpc = 0;
    while (up && ready && !w.stopping.load()) {
      while (next - want < 32)
        self.send(echo_name, node, term::tuple(term(self.self()), term::tuple(epoch, next++)));
      auto m = co_await self.receive(on<term>().when(echo_of),
                                     on<dist::nodedown>().when(is_node_down), after(15s));
      if (!m) {
        if (!w.peer_stalled.load())
          w.violate(c, "stream to " + node + ": no echo for 15 s on a live connection");
        continue;
      }
      if (m.is<dist::nodedown>()) {
        up = false;
        w.remote_disconnects.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      const std::int64_t got = *dist::from_term<std::int64_t>(m.get<term>()[1][1]);
      if (got < 0) continue;  // a late answer to the probe
      c.checked.fetch_add(1, std::memory_order_relaxed);
      if (got != want)
        w.violate(c, "stream to " + node + ": echo " + std::to_string(got) + ", expected " +
                         std::to_string(want));
      want = got + 1;
      hb.beat();
      if (rpc && ++since_rpc == 256) {
        since_rpc = 0;
        const auto r = co_await dist::rpc_call(self, node, "erlang", "node", {}, 5s);
        w.rpc.checked.fetch_add(1, std::memory_order_relaxed);
        if (r && !r->is_atom(node))
          w.violate(w.rpc, "rpc erlang:node() on " + node + " answered " + r->to_string());
      }
    }
    if (up) dist::monitor_node(self, node, false);
    // Drop what is left of this epoch; the next one starts from 0.
    while (co_await self.receive(on<term>().when(echo_of), on<dist::nodedown>().when(is_node_down),
                                 after(0ms))) {
    }
  }
}

// What a violation report needs to tell where an echo was lost: whether the server side of
// the connection has a live handler, and what the pool says about itself.
std::string describe_stuck(process& self, world& w, const net::tcp_socket& s, std::size_t got,
                           std::size_t sent) {
  std::string out = std::to_string(got) + " of " + std::to_string(sent) + " bytes back";
  const auto local = s.local();
  const auto peer = s.peer();
  if (local && peer)
    out += "; port " + std::to_string(local->port) + " -> " + std::to_string(peer->port);
  pid handler;
  {
    std::lock_guard<std::mutex> g(w.mu);
    for (const auto& [p, port] : w.socket_handlers)
      if (local && port == local->port) handler = p;
  }
  out += handler ? "; server handler " + handler.to_string() + " alive" : "; no server handler";
  if (const auto st = net::acceptor_pool::stats(self, pool_name))
    out += "; pool on port " + std::to_string(st->port) + ", accepted " +
           std::to_string(st->accepted) + ", refused " + std::to_string(st->refused) + ", active " +
           std::to_string(st->active);
  else
    out += "; no pool";
  return out;
}

task<> socket_client(process& self, world& w, int index, std::uint64_t seed) {
  heartbeat& hb = w.add_beat("socket client " + std::to_string(index));
  std::mt19937_64 rng(seed);
  while (!w.stopping.load()) {
    hb.beat();
    const auto st = net::acceptor_pool::stats(self, pool_name);
    if (!st || !st->accepting || st->port == 0) {
      co_await self.sleep(20ms);
      continue;
    }
    auto s = co_await net::connect(self, "127.0.0.1", st->port, {}, 2s);
    if (!s) {
      w.connect_failures.fetch_add(1, std::memory_order_relaxed);
      co_await self.sleep(20ms);
      continue;
    }
    const int rounds = 1 + static_cast<int>(rng() % 50);
    for (int r = 0; r < rounds && !w.stopping.load(); ++r) {
      std::string payload(1 + rng() % 2048, '\0');
      for (char& ch : payload) ch = static_cast<char>(rng());
      if (!co_await net::send(self, *s, payload)) {
        w.socket_resets.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      std::string back;
      bool broken = false;
      while (back.size() < payload.size()) {
        auto part = co_await net::recv(self, *s, 10s);
        if (!part) {
          if (part.error() == net::net_errc::timed_out)
            w.violate(w.sockets, "socket client " + std::to_string(index) +
                                     ": no echo for 10 s on an open connection (" +
                                     describe_stuck(self, w, *s, back.size(), payload.size()) +
                                     ")");
          broken = true;
          break;
        }
        back += *part;
      }
      w.sockets.checked.fetch_add(1, std::memory_order_relaxed);
      if (back.size() > payload.size() || back != std::string_view(payload).substr(0, back.size()))
        w.violate(w.sockets, "socket client " + std::to_string(index) +
                                 ": the echo differs from what was sent");
      if (broken) {
        w.socket_resets.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      hb.beat();
    }
  }
}

}  // namespace soak
