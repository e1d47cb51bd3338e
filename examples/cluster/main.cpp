// A C++ node in an Elixir cluster (see docs/distribution.md, which walks through it).
//
// The C++ half starts a beamlet node, a GenServer-style `prices` server that Elixir calls, and
// a supervisor of workers that report ticks to an Elixir process; then it starts the Elixir half
// (cluster.exs) as a child process. With --kill elixir (the default) it kills the Elixir node
// after a few ticks and shows the workers' monitors ending with `noconnection`; with --kill cpp
// it stops its own node and the Elixir side prints the DOWN it gets. Loopback only.
//
//   cluster [--kill elixir|cpp] [--workers N] [--cookie C]
#include <beamlet/beamlet.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace beamlet;
using namespace std::chrono_literals;
using dist::term;

namespace {

// The server Elixir calls: {quote, Symbol} -> {ok, Price}.
task<> prices(process& self) {
  (void)self.register_name("prices");
  for (;;) {
    auto m = co_await self.receive(on<term>());
    auto call = dist::as_gen_call(m.get<term>());
    if (!call) continue;
    const auto symbol =
        dist::from_term<std::string>(call->request.size() == 2 ? call->request[1] : term());
    const std::int64_t price = symbol ? 100 + static_cast<std::int64_t>(symbol->size()) * 7 : 0;
    dist::reply(self, *call, term::tuple(dist::atom{"ok"}, price));
  }
}

// A worker reports ticks to {reporter, ElixirNode} and watches it: when the Elixir node goes,
// the monitor's DOWN says noconnection, and the worker tells main before it ends.
auto worker(int id, std::string elixir, pid main_box) {
  return [id, elixir, main_box](process& self) -> task<> {
    const ref watch = self.monitor("reporter", elixir);
    for (std::int64_t n = 1;; ++n) {
      self.send("reporter", elixir, term::tuple(dist::atom{"tick"}, id, n));
      auto m = co_await self.receive(on<down>(), after(100ms));
      if (m && m.get<down>().ref == watch) {
        self.send(main_box, std::string("worker " + std::to_string(id) +
                                        ": reporter DOWN: " + m.get<down>().reason.to_string()));
        co_return;
      }
    }
  };
}

int usage(const char* why) {
  std::fprintf(stderr,
               "cluster: %s\nusage: cluster [--kill elixir|cpp] [--workers N] [--cookie C]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // interleave sensibly with the Elixir child's output
  std::string kill_side = "elixir", cookie = "beamlet_cluster_demo";
  int workers = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") {
      std::printf("usage: cluster [--kill elixir|cpp] [--workers N] [--cookie C]\n");
      return 0;
    }
    if (i + 1 >= argc) return usage(("missing value for " + a).c_str());
    if (a == "--kill") {
      kill_side = argv[++i];
      if (kill_side != "elixir" && kill_side != "cpp") return usage("--kill is elixir or cpp");
    } else if (a == "--workers") {
      workers = std::atoi(argv[++i]);
      if (workers < 1 || workers > 100) return usage("--workers is 1..100");
    } else if (a == "--cookie") {
      cookie = argv[++i];
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  const std::string suffix = std::to_string(::getpid());
  const std::string cpp_node = "cpp" + suffix + "@127.0.0.1";
  const std::string elixir_node = "ex" + suffix + "@127.0.0.1";

  runtime rt;
  dist::node_options opts;
  opts.name = cpp_node;
  opts.long_names = true;
  opts.cookie = cookie;
  opts.listen_address = "127.0.0.1";
  auto node = dist::start(rt, opts);
  if (!node) {
    std::fprintf(stderr, "cluster: cannot start the node: %s\n", node.error().message().c_str());
    return 1;
  }
  std::printf("c++: node %s up (creation %u)\n", node->name.c_str(), node->creation);
  scoped_process me(rt);
  (void)me.register_name("cpp_main");
  rt.spawn(prices);

  // The Elixir half.
  std::vector<std::string> args = {
      "elixir", "--name", elixir_node, "--cookie", cookie, BEAMLET_CLUSTER_EXS, cpp_node};
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  pid_t ex = 0;
  if (posix_spawnp(&ex, "elixir", nullptr, nullptr, cargs.data(), environ) != 0) {
    std::fprintf(stderr, "cluster: cannot run elixir (scripts/bootstrap installs it)\n");
    return 1;
  }
  auto ready = me.receive(on<term>().when([](const term& t) {
    return t.is_tuple() && t.size() == 2 && t[0].is_atom("elixir_ready");
  }),
                          after(60s));
  if (!ready) {
    std::fprintf(stderr, "cluster: the Elixir node did not come up\n");
    ::kill(ex, SIGKILL);
    ::waitpid(ex, nullptr, 0);
    return 1;
  }
  std::printf("c++: the Elixir side called prices and monitors it; starting %d workers\n", workers);

  // The workers, under a one_for_one supervisor; they are temporary: a lost reporter ends them.
  std::vector<child_spec> children;
  for (int i = 1; i <= workers; ++i) {
    start_function start = [i, elixir_node, box = me.self()](process& sup) -> task<start_result> {
      co_return start_result::ok(sup.spawn_link(worker(i, elixir_node, box)));
    };
    children.push_back(
        child_spec("worker" + std::to_string(i), start).with_restart(restart_type::temporary));
  }
  const start_result sup = supervisor::start_link(me, {}, [children] {
    return supervisor_init(supervisor_flags{restart_strategy::one_for_one, 3, 5}, children);
  });
  if (!sup.is_ok()) {
    std::fprintf(stderr, "cluster: the supervisor did not start\n");
    return 1;
  }
  std::this_thread::sleep_for(1500ms);  // let the reporter print a few ticks

  if (kill_side == "elixir") {
    std::printf("c++: killing the Elixir node (SIGKILL)\n");
    std::fflush(stdout);
    ::kill(ex, SIGKILL);
    ::waitpid(ex, nullptr, 0);
  } else {
    std::printf("c++: stopping this node's distribution\n");
    std::fflush(stdout);
    dist::stop(rt);
    ::waitpid(ex, nullptr, 0);  // the Elixir side prints the DOWN it got, and ends
  }
  int lost = 0;
  for (int i = 0; i < workers; ++i) {
    auto m = me.receive(on<std::string>(), after(10s));
    if (!m) break;
    std::printf("c++: %s\n", m.get<std::string>().c_str());
    ++lost;
  }
  supervisor::stop(me, sup.pid());
  std::printf("c++: %d of %d workers saw noconnection; done\n", lost, workers);
  return lost == workers ? 0 : 1;
}
