// A server for the tests that play a hostile or careless client (tests/unit/net_hostile_test.cpp),
// in its own OS process so that a test can lower its descriptor or address-space limit without
// touching the test runner:
//
//   hostile_server frames [--max-packet N] [--idle-ms N]
//       an acceptor pool "frames" (prefix4 framing) whose connections recv until an error and
//       count how each one ended;
//   hostile_server http [--processes N] [--per-peer N] [--max-connections N]
//                       [--max-queued-mib N] [--sndbuf N]
//       an http_endpoint, with N idle processes (children of a DynamicSupervisor "idle") for
//       it to describe.
//
// It prints "port <P>" once listening, then answers one line per command read on stdin:
//   limit-as <MiB>      RLIMIT_AS = the address space in use now + MiB     -> "ok"
//   limit-nofile <N>    RLIMIT_NOFILE = N                                  -> "ok"
//   stats               "key=value ..." (see stats_line)                   -> one line
//   quit                exits
#include <beamlet/beamlet.hpp>
#include <beamlet/net.hpp>

#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

struct outcomes {
  std::mutex mu;
  std::map<std::string, int> by_reason;  // "ok" per complete frame, else the error's message
  void count(const std::string& what) {
    std::lock_guard lock(mu);
    ++by_reason[what];
  }
  std::string line() {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& [k, v] : by_reason) {
      std::string key = k;
      for (char& c : key)
        if (c == ' ') c = '_';
      out += " end." + key + "=" + std::to_string(v);
    }
    return out;
  }
};

outcomes ends;

/// A /proc/self/status field, in kB.
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::atol(line.c_str() + n + 1);
  return -1;
}

long cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000L +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000L;
}

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

class idle : public gen_server<idle> {};

task<> count_frames(process& self, net::tcp_socket s) {
  for (;;) {
    auto r = co_await net::recv(self, s);
    if (!r) {
      ends.count(r.error().message());
      co_return;
    }
    ends.count("ok");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hostile_server frames|http [options]\n");
    return 2;
  }
  const std::string mode = argv[1];
  runtime rt;
  scoped_process me(rt);
  std::optional<http_endpoint> ep;
  if (mode == "frames") {
    net::acceptor_pool_options o;
    o.name = "frames";
    o.listen.accepted.framing = net::framing::prefix4;
    o.listen.accepted.max_packet = std::stoull(arg(argc, argv, "--max-packet", "1048576"));
    if (const long idle = std::stol(arg(argc, argv, "--idle-ms", "0")); idle > 0)
      o.listen.accepted.idle_timeout = std::chrono::milliseconds(idle);
    o.max_connections = 100'000;
    o.handler = count_frames;
    const start_result r = supervisor::start_link(me, {}, [o] {
      return supervisor_init(
          supervisor_flags{},
          {child_spec("pool", net::acceptor_pool_start(o)).with_type(child_type::supervisor)});
    });
    if (!r.is_ok()) {
      std::fprintf(stderr, "hostile_server: %s\n", r.to_string().c_str());
      return 1;
    }
    std::cout << "port " << net::acceptor_pool::stats(rt, "frames")->port << std::endl;
  } else if (mode == "http") {
    const int n = std::stoi(arg(argc, argv, "--processes", "0"));
    // Idle processes for the pages to describe, children of one DynamicSupervisor so that
    // /tree has a large node as well.
    if (n > 0) {
      supervisor_options so;
      so.name = "idle";
      const start_result sup = dynamic_supervisor::start_link(me, so, dynamic_supervisor_flags{});
      if (!sup.is_ok()) return 1;
      for (int i = 0; i < n; ++i)
        if (!dynamic_supervisor::start_child(me, "idle", child_spec("", worker_start<idle>())))
          return 1;
    }
    http_endpoint_options o;
    o.max_connections = std::stoull(arg(argc, argv, "--max-connections", "1024"));
    if (const std::string pp = arg(argc, argv, "--per-peer", ""); !pp.empty())
      o.max_connections_per_peer = std::stoull(pp);
    if (const std::string q = arg(argc, argv, "--max-queued-mib", ""); !q.empty())
      o.max_queued_bytes = std::stoull(q) << 20;
    o.send_buffer = std::stoull(arg(argc, argv, "--sndbuf", "0"));
    auto started = http_endpoint::start(rt, o);
    if (!started) {
      std::fprintf(stderr, "hostile_server: %s\n", started.error().message().c_str());
      return 1;
    }
    ep.emplace(std::move(*started));
    std::cout << "port " << ep->port() << std::endl;
  } else {
    std::fprintf(stderr, "hostile_server: unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream cmd(line);
    std::string what;
    cmd >> what;
    if (what == "quit") break;
    if (what == "limit-as") {
      long mib = 0;
      cmd >> mib;
      rlimit l{};
      ::getrlimit(RLIMIT_AS, &l);
      l.rlim_cur = static_cast<rlim_t>(status_kb("VmSize") * 1024L + mib * 1024L * 1024L);
      std::cout << (::setrlimit(RLIMIT_AS, &l) == 0 ? "ok" : "error") << std::endl;
    } else if (what == "limit-nofile") {
      long n = 0;
      cmd >> n;
      rlimit l{};
      ::getrlimit(RLIMIT_NOFILE, &l);
      l.rlim_cur = static_cast<rlim_t>(n);
      std::cout << (::setrlimit(RLIMIT_NOFILE, &l) == 0 ? "ok" : "error") << std::endl;
    } else if (what == "stats") {
      std::ostringstream out;
      out << "open_sockets=" << net::open_sockets(rt) << " cpu_ms=" << cpu_ms()
          << " rss_kb=" << status_kb("VmRSS") << " vm_kb=" << status_kb("VmSize");
      if (const auto s = net::acceptor_pool::stats(rt, "frames"))
        out << " active=" << s->active << " accepted=" << s->accepted;
      if (ep) {
        const auto s = ep->stats();
        out << " http_open=" << s.open_connections << " http_connections=" << s.connections
            << " http_requests=" << s.requests << " http_answers=" << s.answers
            << " http_rejected=" << s.rejected << " http_timeouts=" << s.timeouts
            << " http_accept_errors=" << s.accept_errors << " http_queued_bytes=" << s.queued_bytes
            << " http_slow_closed=" << s.slow_closed;
      }
      out << ends.line();
      std::cout << out.str() << std::endl;
    } else {
      std::cout << "error unknown command" << std::endl;
    }
  }
  if (ep) ep->stop();
  return 0;
}
