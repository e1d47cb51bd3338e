// A service for the console's browser test (console_test.py): a runtime holding many idle
// processes, a supervision tree (app_sup: a gen_server, a dynamic supervisor with a few
// children, and `hoarder`, a process that never takes its messages) and the endpoint with its
// console on. The endpoint starts before the backlog is sent, so the console (the
// system monitor's subscriber) sees the hoarder's long_message_queue alarm.
//
//   console_server [--processes N] [--backlog M] [--token T] [--node NAME --cookie C]
//
// With --node, the runtime is also a distributed node, NAME@127.0.0.1 (for the Nodes view).
//
// It prints the console's address, the hoarder's pid and its node's name, then takes commands on
// its standard input (see main).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <beamlet/beamlet.hpp>
#include <beamlet/dist/node.hpp>

using namespace beamlet;

namespace {

struct never {};
struct stop_idle {};

class counter : public gen_server<counter> {};

// Parks in a receive that nothing matches: every message sent to it stays queued.
struct hoarder {
  using initial_call = hoarder;
  task<> operator()(process& self, const starter& st) {
    (void)self.register_name("hoarder");
    self.set_label("role", "takes nothing it is sent");
    st.ack(self, start_result::ok(self.self()));
    co_await self.receive(on<never>());
  }
};

start_function hoarder_start() {
  return start_function([](process& sup) -> task<start_result> {
    hoarder body;  // a named local: docs/gcc12-coroutines.md
    co_return co_await start_link(sup, std::move(body));
  });
}

// A port nothing listens on now (the kernel's choice for port 0).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("console_server: free_port");
    std::exit(1);
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

long option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atol(argv[i + 1]);
  return fallback;
}

const char* text_option(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const long processes = option(argc, argv, "--processes", 1000);
  const long backlog = option(argc, argv, "--backlog", 1000);
  const std::string token = text_option(argc, argv, "--token", "");

  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);
  auto sup = supervisor::start_link(me, {"app_sup"}, [] {
    return supervisor_init(supervisor_flags{.intensity = 100, .period = 1},
                           {child_spec("counter", worker_start<counter>()),
                            child_spec("sessions", dynamic_supervisor_start({}, {"sessions"}))
                                .with_type(child_type::supervisor),
                            child_spec("hoarder", hoarder_start())});
  });
  if (!sup.is_ok()) {
    std::cerr << "console_server: app_sup did not start\n";
    return 1;
  }
  for (int i = 0; i < 5; ++i)
    (void)dynamic_supervisor::start_child(me, "sessions", child_spec("", worker_start<counter>()));

  std::vector<pid> idle;
  idle.reserve(static_cast<std::size_t>(processes));
  for (long i = 0; i < processes; ++i)
    idle.push_back(
        rt.spawn([](process& self) -> task<> { co_await self.receive(on<stop_idle>()); }));
  // The endpoint under a supervisor of its own, on a fixed port, so that the test can kill it
  // (the page's event stream drops) and have it back at the same address.
  http_endpoint_options o;
  o.console = true;
  o.console_token = token;
  o.name = "console_endpoint";
  o.port = free_port();
  auto esup = supervisor::start_link(me, {"console_sup"}, [o] {
    return supervisor_init(supervisor_flags{.intensity = 100, .period = 1},
                           {child_spec("endpoint", http_endpoint_start(o))});
  });
  if (!esup.is_ok()) {
    std::cerr << "console_server: the endpoint did not start\n";
    return 1;
  }
  const pid hoarder_pid = rt.whereis("hoarder").value_or(pid());
  for (long i = 0; i < backlog; ++i) me.send(hoarder_pid, static_cast<int>(i));

  std::string node_name;
  if (const std::string node = text_option(argc, argv, "--node", ""); !node.empty()) {
    dist::node_options no;
    no.name = node + "@127.0.0.1";
    no.long_names = true;
    no.cookie = text_option(argc, argv, "--cookie", "");
    no.listen_address = "127.0.0.1";
    auto started = dist::start(rt, no);
    if (!started) {
      std::cerr << "console_server: dist::start: " << started.error().message() << "\n";
      return 1;
    }
    node_name = started->name;
  }

  std::cout << "console: http://127.0.0.1:" << o.port << "/console\n"
            << "hoarder: " << hoarder_pid.to_string() << "\n"
            << "node: " << node_name << std::endl;

  // Commands on standard input, one per line, until it closes:
  //   drop   kill the endpoint's process (its supervisor starts it again on the same port)
  //   spawn  a thousand idle processes more
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "drop") {
      rt.exit(rt.whereis("console_endpoint").value_or(pid()), exit_reason::kill());
      std::cout << "dropped" << std::endl;
    } else if (line == "spawn") {
      for (int i = 0; i < 1000; ++i)
        idle.push_back(
            rt.spawn([](process& self) -> task<> { co_await self.receive(on<stop_idle>()); }));
      std::cout << "spawned" << std::endl;
    }
  }
  // An orderly end: the trees first (their children stop as OTP stops them), then the rest.
  for (const char* name : {"console_sup", "app_sup"}) {
    const pid p = rt.whereis(name).value_or(pid());
    rt.exit(p, exit_reason::shutdown());
    (void)rt.wait(p, std::chrono::seconds(10));
  }
  for (const pid p : idle) rt.send(p, stop_idle{});
  if (!node_name.empty()) (void)dist::stop(rt);
  return 0;
}
