#include "service.hpp"

#include <beamlet/net.hpp>

#include <map>
#include <string>
#include <utility>

namespace soak {

using namespace beamlet;

std::string sink_name(int i) {
  return "soak_sink" + std::to_string(i);
}

namespace {

constexpr int high_intensity = 1'000'000;

// A sink checks every stream that reaches it: per sender, the first message is 0 and each next
// one is the previous plus one. A sink that is killed forgets; its senders start again at 0
// with its successor (they address it by pid, so nothing meant for the old one reaches it).
class sink : public gen_server<sink> {
 public:
  sink(world* w, int index) : w_(w), index_(index) {}
  void init() { self().link(w_->witness); }
  void handle_info(any_message m) {
    if (auto* s = m.get_if<stream_msg>()) {
      std::uint64_t& next = expected_[s->from];
      w_->local_streams.checked.fetch_add(1, std::memory_order_relaxed);
      if (s->seq != next) {
        w_->violate(w_->local_streams, "sink " + std::to_string(index_) + ": from " +
                                           s->from.to_string() + " got " + std::to_string(s->seq) +
                                           ", expected " + std::to_string(next));
        next = s->seq;
      }
      ++next;
      if (next % ack_every == 0) self().send(s->from, stream_ack{self().self(), next});
    } else if (auto* f = m.get_if<stream_fin>()) {
      const auto it = expected_.find(f->from);
      const std::uint64_t got = it == expected_.end() ? 0 : it->second;
      if (got != f->total)
        w_->violate(w_->local_streams,
                    "sink " + std::to_string(index_) + ": " + f->from.to_string() + " sent " +
                        std::to_string(f->total) + ", " + std::to_string(got) + " arrived");
      self().send(f->from, fin_ack{got == f->total, got});
      expected_.erase(f->from);
    }
  }

 private:
  world* w_;
  int index_;
  std::map<pid, std::uint64_t> expected_;
};

// A server-side connection: echoes what it reads. It is listed in the world while it lives,
// so that the chaos can reset connections from the server's side by killing their owners.
struct listed_handler {
  world* w;
  pid self;
  listed_handler(world* w_, pid p, std::uint16_t peer_port) : w(w_), self(p) {
    std::lock_guard<std::mutex> g(w->mu);
    w->socket_handlers.emplace(p, peer_port);
  }
  ~listed_handler() {
    std::lock_guard<std::mutex> g(w->mu);
    w->socket_handlers.erase(self);
  }
  listed_handler(const listed_handler&) = delete;
  listed_handler& operator=(const listed_handler&) = delete;
};

task<> echo_handler(world* w, process& self, net::tcp_socket socket) {
  const auto peer = socket.peer();
  const listed_handler listed(w, self.self(), peer ? peer->port : 0);
  for (;;) {
    auto bytes = co_await net::recv(self, socket);
    if (!bytes) co_return;
    if (!co_await net::send(self, socket, *bytes)) co_return;
  }
}

}  // namespace

child_spec session_spec(world& w) {
  return child_spec("session", worker_start<session>(&w));
}

start_result start_service(scoped_process& me, world& w) {
  partition_supervisor_options counters;
  counters.name = counters_name;
  counters.partitions = partitions;
  counters.child = child_spec("seq", worker_start<seq_server>(&w));
  counters.intensity = high_intensity;
  counters.period = 1;

  dynamic_supervisor_flags sessions;
  sessions.intensity = high_intensity;
  sessions.period = 1;

  std::vector<child_spec> sinks;
  for (int i = 0; i < w.opt.local_streams; ++i)
    sinks.push_back(
        child_spec("sink" + std::to_string(i), worker_start_named<sink>(sink_name(i), &w, i)));

  net::acceptor_pool_options pool;
  pool.name = pool_name;
  pool.acceptors = 2;
  pool.max_connections = 4 * w.opt.socket_clients + 16;
  pool.connection_shutdown = std::chrono::milliseconds(500);
  pool.handler = [wp = &w](process& self, net::tcp_socket s) {
    return echo_handler(wp, self, std::move(s));
  };

  std::vector<child_spec> children;
  children.push_back(child_spec("counters", partition_supervisor_start(counters))
                         .with_type(child_type::supervisor));
  children.push_back(
      child_spec("sessions", dynamic_supervisor_start(
                                 sessions, {.name = sessions_name, .wait = ack_wait_mode::marker}))
          .with_type(child_type::supervisor));
  children.push_back(
      child_spec("sinks", supervisor_start(
                              supervisor_flags{restart_strategy::one_for_one, high_intensity, 1},
                              sinks, {.name = sinks_name}))
          .with_type(child_type::supervisor));
  children.push_back(
      child_spec("echo", net::acceptor_pool_start(pool)).with_type(child_type::supervisor));

  return supervisor::start_link(me, {.name = top_name}, [children] {
    return supervisor_init(supervisor_flags{restart_strategy::one_for_one, high_intensity, 1},
                           children);
  });
}

}  // namespace soak
