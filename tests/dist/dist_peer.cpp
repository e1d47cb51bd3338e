// A second beamlet node for the distribution tests, in its own OS process:
//   dist_peer <node-name> <cookie> [seconds] [net_ticktime_ms] [visible]
// It registers `echo`, a process that answers {From, X} with {echoed, X, EchoPid}, forwards
// {relay, To, Msg} as Msg to To, links to P on {link, P}, ends with Reason on {die, Reason},
// and registers itself as a global Name on {global_register, From, Name}, answering
// {registered, yes | no | error}. It exits when `echo` ends or after `seconds` (default 60).
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace beamlet;
using dist::term;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: dist_peer <node-name> <cookie> [seconds] [net_ticktime_ms] [visible]\n");
    return 2;
  }
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 60;
  runtime rt;
  dist::node_options o;
  o.name = argv[1];
  o.cookie = argv[2];
  o.long_names = std::string(argv[1]).find('.') != std::string::npos;
  o.listen_address = "127.0.0.1";
  if (argc > 4) o.net_ticktime = std::chrono::milliseconds(std::atoi(argv[4]));
  if (argc > 5) o.hidden = std::string(argv[5]) != "visible";
  auto n = dist::start(rt, o);
  if (!n) {
    std::fprintf(stderr, "dist_peer: %s\n", n.error().message().c_str());
    return 1;
  }
  scoped_process me(rt);
  const auto echo = me.spawn_monitor([](process& self) -> task<> {
    (void)self.register_name("echo");
    self.trap_exit(true);
    for (;;) {
      auto m = co_await self.receive(on<term>(), on<exit_message>());
      if (m.is<exit_message>()) {
        // A linked process ended: report it to whoever asked for the link.
        continue;
      }
      const term& t = m.get<term>();
      if (!t.is_tuple() || t.size() < 2) continue;
      if (t.size() == 2 && t[0].is_pid()) {
        self.send(t[0].pid(),
                  term::make_tuple({term::make_atom("echoed"), t[1], term(self.self())}));
      } else if (t.size() == 3 && t[0].is_atom("relay") && t[1].is_pid()) {
        self.send(t[1].pid(), t[2]);
      } else if (t.size() == 2 && t[0].is_atom("link") && t[1].is_pid()) {
        self.trap_exit(false);
        self.link(t[1].pid());
      } else if (t.size() == 3 && t[0].is_atom("global_register") && t[1].is_pid()) {
        auto r = co_await dist::global::register_name(self, t[2], self.self());
        self.send(t[1].pid(),
                  term::make_tuple({term::make_atom("registered"), term::make_atom(!r   ? "error"
                                                                                   : *r ? "yes"
                                                                                        : "no")}));
      } else if (t.size() == 2 && t[0].is_atom("die")) {
        co_await self.exit(dist::reason_from_term(t[1]));
      }
    }
  });
  std::printf("ready %s\n", n->name.c_str());
  std::fflush(stdout);
  auto d = me.receive(on<down>(), after(std::chrono::seconds(seconds)));
  (void)echo;
  // The echo's own signals (its DOWNs and EXITs to other nodes) are posted after the DOWN we
  // just got: give them time to go out before the node stops (a stop drops what comes after).
  if (d) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  dist::stop(rt);
  return 0;
}
