// chat: a line-based chat server. Each connection is a process in active-once mode, each room is
// a process that broadcasts to its members, and a load generator of client processes checks that
// every line reaches every other member of its room.
//
//   chat                                  4 rooms, 40 clients, 20 lines each, then a report
//   chat --rooms 10 --clients 200 --lines 50
//   chat --port 7001 --serve              serve until interrupted (nc 127.0.0.1 7001, then
//                                         "/join lobby alice")
//
// Protocol: the first line is "/join ROOM NICK"; the server answers "joined ROOM"; every later
// line is sent to the room's other members as "NICK: TEXT". Loopback only; the load is bounded
// (clients <= 500, lines <= 1000, 60 s at most). Exit status 0 if every line arrived.
#include <beamlet/beamlet.hpp>
#include <beamlet/net.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace beamlet;
using namespace std::chrono_literals;

// -- rooms ----------------------------------------------------------------------------------------

struct join {
  pid member;
};
struct said {
  pid from;
  std::string line;  // "NICK: TEXT\n"
};
struct heard {
  std::string line;
};

// A room: its members are the connection processes that joined; one that dies is dropped
// (monitored), so a crashed connection is never written to.
task<> room(process& self) {
  std::map<pid, ref> members;
  for (;;) {
    auto m = co_await self.receive(on<join>(), on<said>(), on<down>());
    if (auto* j = m.get_if<join>()) {
      members.emplace(j->member, self.monitor(j->member));
    } else if (auto* s = m.get_if<said>()) {
      for (const auto& [member, mon] : members)
        if (member != s->from) self.send(member, heard{s->line});
    } else if (auto* d = m.get_if<down>()) {
      members.erase(d->pid);
    }
  }
}

// Rooms by name: one process that starts a room on first use and answers with its pid.
struct find_room {
  std::string name;
  pid reply_to;
};
struct room_is {
  pid room;
};
task<> lobby(process& self) {
  std::map<std::string, pid> rooms;
  for (;;) {
    auto m = co_await self.receive(on<find_room>());
    auto& q = m.get<find_room>();
    auto it = rooms.find(q.name);
    if (it == rooms.end()) it = rooms.emplace(q.name, self.spawn_link(room)).first;
    self.send(q.reply_to, room_is{it->second});
  }
}

// -- a connection ---------------------------------------------------------------------------------

// Active once: the socket delivers one line as a message and waits to be asked again, so a
// connection flooding us is held back by TCP while this process also receives what the room
// broadcasts. Both arrive in the same mailbox.
task<> connection(process& self, net::tcp_socket s, pid lobby_pid) {
  if (!net::set_active(self, s, net::active_mode::once())) co_return;
  pid my_room;
  std::string nick;
  for (;;) {
    auto m = co_await self.receive(on<net::tcp_data>(), on<heard>(), on<net::tcp_closed>(),
                                   on<net::tcp_error>());
    if (auto* h = m.get_if<heard>()) {
      if (!co_await net::send(self, s, h->line)) co_return;
      continue;
    }
    auto* d = m.get_if<net::tcp_data>();
    if (d == nullptr) co_return;  // closed or failed: the room drops us through its monitor
    std::string line = d->data;
    if (!my_room) {
      // "/join ROOM NICK\n"
      const auto sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
      if (line.rfind("/join ", 0) != 0 || sp2 == std::string::npos) {
        (void)co_await net::send(self, s, "error: start with /join ROOM NICK\n");
        co_return;
      }
      const std::string name = line.substr(sp1 + 1, sp2 - sp1 - 1);
      nick = line.substr(sp2 + 1);
      if (!nick.empty() && nick.back() == '\n') nick.pop_back();
      self.send(lobby_pid, find_room{name, self.self()});
      auto r = co_await self.receive(on<room_is>());
      my_room = r.get<room_is>().room;
      self.send(my_room, join{self.self()});
      if (!co_await net::send(self, s, "joined " + name + "\n")) co_return;
    } else {
      self.send(my_room, said{self.self(), nick + ": " + line});
    }
    if (!net::set_active(self, s, net::active_mode::once())) co_return;
  }
}

// -- the load generator ---------------------------------------------------------------------------

struct tally {
  std::atomic<std::uint64_t> lines_heard{0};
  std::atomic<int> joined{0};
  std::atomic<int> failed{0};
  std::atomic<bool> go{false};
};

task<> chatter(process& self, std::uint16_t port, int room_no, int index, int lines,
               std::uint64_t expect, tally& t) {
  net::socket_options o;
  o.framing = net::framing::line;
  o.max_packet = 4096;
  auto s = co_await net::connect(self, "127.0.0.1", port, o, 5s);
  if (!s) {
    t.failed.fetch_add(1);
    co_return;
  }
  const std::string hello =
      "/join room" + std::to_string(room_no) + " user" + std::to_string(index) + "\n";
  if (!co_await net::send(self, *s, hello)) co_return;
  auto ok = co_await net::recv(self, *s, 5s);
  if (!ok || ok->rfind("joined", 0) != 0) {
    t.failed.fetch_add(1);
    co_return;
  }
  t.joined.fetch_add(1);
  while (!t.go.load()) co_await self.receive(after(1ms));  // every member is in before we talk
  for (int i = 0; i < lines; ++i)
    if (!co_await net::send(self, *s, "line " + std::to_string(i) + "\n")) co_return;
  for (std::uint64_t got = 0; got < expect; ++got) {
    auto l = co_await net::recv(self, *s, 10s);
    if (!l) {
      t.failed.fetch_add(1);
      co_return;
    }
    t.lines_heard.fetch_add(1, std::memory_order_relaxed);
  }
  // Stay until the others have heard us too: the main thread ends the run.
  co_await self.receive(after(60s));
}

// -- main -----------------------------------------------------------------------------------------

namespace {
int usage(bool ok) {
  std::fputs(
      "usage: chat [--port N] [--serve] [--rooms N] [--clients N] [--lines N]\n"
      "  --rooms N    1..100 (default 4)\n"
      "  --clients N  1..500, spread over the rooms (default 40)\n"
      "  --lines N    lines each client sends, 1..1000 (default 20)\n",
      ok ? stdout : stderr);
  return ok ? 0 : 2;
}
}  // namespace

int main(int argc, char** argv) {
  long port = 0, rooms = 4, clients = 40, lines = 20;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto number = [&](long lo, long hi, long& v) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      v = std::strtol(argv[++i], &end, 10);
      return *end == '\0' && v >= lo && v <= hi;
    };
    if (a == "--help") return usage(true);
    if (a == "--serve")
      serve = true;
    else if (a == "--port" && number(0, 65535, port)) {
    } else if (a == "--rooms" && number(1, 100, rooms)) {
    } else if (a == "--clients" && number(1, 500, clients)) {
    } else if (a == "--lines" && number(1, 1000, lines)) {
    } else
      return usage(false);
  }

  runtime rt;
  scoped_process me(rt);
  const pid lobby_pid = rt.spawn(lobby);
  net::acceptor_pool_options pool;
  pool.name = "chat";
  pool.listen.port = static_cast<std::uint16_t>(port);
  pool.listen.accepted.framing = net::framing::line;
  pool.listen.accepted.max_packet = 4096;
  pool.handler = [lobby_pid](process& self, net::tcp_socket s) -> task<> {
    co_await connection(self, std::move(s), lobby_pid);
  };
  const start_result top = supervisor::start_link(me, {}, [pool] {
    return supervisor_init(supervisor_flags{},
                           {child_spec("chat", net::acceptor_pool_start(pool))});
  });
  if (!top.is_ok()) {
    std::fprintf(stderr, "chat: could not start: %s\n", top.to_string().c_str());
    return 1;
  }
  const std::uint16_t bound = net::acceptor_pool::stats(rt, "chat")->port;
  std::printf("chat server on 127.0.0.1:%u\n", bound);
  std::fflush(stdout);

  int status = 0;
  if (serve) {
    // Until Ctrl-C (or SIGTERM): then the tree stops in order, the pool's connections first.
    const run_outcome out = run_until_signal(rt, top.pid());
    rt.exit(lobby_pid, exit_reason::kill());
    return out.exit_code();
  } else {
    tally t;
    std::vector<int> members(static_cast<std::size_t>(rooms), 0);
    for (long c = 0; c < clients; ++c) ++members[static_cast<std::size_t>(c % rooms)];
    std::uint64_t expected_total = 0;
    std::vector<pid> chatters;
    for (long c = 0; c < clients; ++c) {
      const int r = static_cast<int>(c % rooms);
      const std::uint64_t expect =
          static_cast<std::uint64_t>(members[static_cast<std::size_t>(r)] - 1) *
          static_cast<std::uint64_t>(lines);
      expected_total += expect;
      chatters.push_back(rt.spawn([&, r, c, expect](process& self) -> task<> {
        co_await chatter(self, bound, r, static_cast<int>(c), static_cast<int>(lines), expect, t);
      }));
    }
    const auto start = std::chrono::steady_clock::now();
    auto deadline = start + 60s;
    while (t.joined.load() + t.failed.load() < clients &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    const auto talk = std::chrono::steady_clock::now();
    t.go = true;
    while (t.lines_heard.load() < expected_total && t.failed.load() == 0 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - talk).count();
    std::printf(
        "%ld clients in %ld rooms sent %ld lines each: %llu of %llu deliveries in %.3f s "
        "(%.0f lines/s), %d failed\n",
        clients, rooms, lines, static_cast<unsigned long long>(t.lines_heard.load()),
        static_cast<unsigned long long>(expected_total), secs,
        static_cast<double>(t.lines_heard.load()) / secs, t.failed.load());
    status = t.lines_heard.load() == expected_total && t.failed.load() == 0 ? 0 : 1;
    for (pid p : chatters) rt.exit(p, exit_reason::kill());
  }
  supervisor::stop(me, top.pid());
  rt.exit(lobby_pid, exit_reason::kill());
  return status;
}
