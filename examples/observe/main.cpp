// What an operator sees when a mailbox grows: the system monitor's alarm, the top view, a
// crash report and a supervisor report, as the outage's on-call engineers would have wanted.
//
//   app_sup (static supervisor)
//   ├── ingest   a gen_server that spends about 50 µs of CPU on each event
//   └── parser   a gen_server that crashes on bad input
//
// A producer sends events to `ingest` faster than it can take them. The system monitor (enable
// mark 5,000, disable mark 500) raises a long_message_queue alarm; the program prints the top
// processes by queue length (beamlet::top), sends `parser` a bad input (the logger prints its
// crash report and app_sup's child_terminated report on stderr, without the program asking for
// them), and waits for the backlog to drain, which lowers the alarm.
//
// Run it: `build-dev/examples/observe/observe` (about two seconds). `--serve N` also starts the
// HTTP endpoint for N seconds, so you can curl /metrics, /processes and /tree meanwhile.
#include <beamlet/beamlet.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

struct event {
  int n;
};
struct bad_input {};

class ingest : public gen_server<ingest> {
 public:
  // A slow consumer: each event costs about 50 µs of work.
  gen::action handle_cast(const event&) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < until) {
    }
    ++handled_;
    return gen::noreply();
  }
  std::string format_status() const { return "{ingest,handled=" + std::to_string(handled_) + "}"; }

 private:
  long handled_ = 0;
};

class parser : public gen_server<parser> {
 public:
  gen::action handle_cast(const bad_input&) {
    throw std::invalid_argument("unexpected token at offset 17");
  }
};

// Tells the tour that an alarm was printed, so the tour's own output keeps its order on a busy
// machine (the printer is a process like any other, and may wait for a scheduler).
struct alarm_printed {
  bool on;
};

// Prints the alarms the system monitor sends it.
task<> alarm_printer(process& self, pid tour) {
  for (;;) {
    auto m = co_await self.receive(on<monitor_alarm>());
    const monitor_alarm& a = m.get<monitor_alarm>();
    const auto name = process_info(self, a.pid);
    std::printf("[alarm] long_message_queue %s for %s%s%s (%zu queued)\n", a.on ? "ON" : "off",
                a.pid.to_string().c_str(), name && !name->registered_name.empty() ? " " : "",
                name ? name->registered_name.c_str() : "", a.queue_len);
    std::fflush(stdout);
    self.send(tour, alarm_printed{a.on});
  }
}

// Waits (boundedly) for the printer to have printed an alarm `on` or off.
void wait_for_alarm(scoped_process& me, bool raised) {
  const auto which = [raised](const alarm_printed& a) { return a.on == raised; };
  if (!me.receive(on<alarm_printed>().when(which), after(30s)))
    std::printf("(no long_message_queue %s alarm within 30 s)\n", raised ? "ON" : "off");
}

int usage(bool ok) {
  std::fputs(
      "usage: observe [--serve SECONDS]\n"
      "  runs the tour (about two seconds); --serve also keeps the HTTP endpoint up for\n"
      "  SECONDS on 127.0.0.1 (its port is printed) so you can curl it\n",
      ok ? stdout : stderr);
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  int serve = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help") return usage(true);
    if (a == "--serve" && i + 1 < argc) {
      const std::string_view v = argv[++i];
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), serve);
      if (ec != std::errc() || end != v.data() + v.size() || serve < 0) return usage(false);
      continue;
    }
    return usage(false);
  }

  // Line by line even into a pipe, so this output and the logger's (stderr) interleave in the
  // order things happened.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  runtime rt;
  scoped_process me(rt);
  me.trap_exit(true);

  const pid printer =
      rt.spawn([tour = me.self()](process& self) { return alarm_printer(self, tour); });
  system_monitor_settings alarms;
  alarms.subscriber = printer;
  alarms.long_queue_enable = 5000;
  alarms.long_queue_disable = 500;
  set_system_monitor(rt, alarms);

  auto sup = supervisor::start_link(me, {"app_sup"}, [] {
    return supervisor_init(supervisor_flags{},
                           {child_spec("ingest", worker_start_named<ingest>("ingest")),
                            child_spec("parser", worker_start_named<parser>("parser"))});
  });
  if (!sup) {
    std::printf("app_sup did not start: %s\n", sup.to_string().c_str());
    return 1;
  }
  std::optional<http_endpoint> endpoint;
  if (serve > 0) {
    auto started = http_endpoint::start(rt);
    if (!started) {
      std::fprintf(stderr, "observe: no HTTP endpoint: %s\n", started.error().message().c_str());
      return 1;
    }
    endpoint.emplace(std::move(*started));
    std::printf("HTTP endpoint on http://127.0.0.1:%u/ (/metrics /processes /tree)\n",
                endpoint->port());
  }

  std::puts("a producer floods `ingest` with 20,000 events");
  for (int i = 0; i < 20'000; ++i) cast(me, server_ref<ingest>("ingest"), event{i});
  wait_for_alarm(me, true);

  std::puts("\nthe top processes by message queue length (beamlet::top):");
  std::fputs(format_top(top(rt, 5, top_by::message_queue_len), top_by::message_queue_len).c_str(),
             stdout);
  const auto info = process_info(rt, *rt.whereis("ingest"));
  if (info)
    std::printf("ingest: %zu queued, %llu received, %zu bytes, waiting for %s\n",
                info->message_queue_len, static_cast<unsigned long long>(info->messages_received),
                info->memory, info->waiting_for.empty() ? "-" : info->waiting_for.c_str());

  std::puts("\nsending `parser` a bad input: its crash report and app_sup's report follow");
  std::fflush(stdout);
  cast(me, server_ref<parser>("parser"), bad_input{});
  logger::of(rt).flush();
  std::this_thread::sleep_for(100ms);
  logger::of(rt).flush();

  std::puts("\nwaiting for the backlog to drain (the alarm goes off under 500)");
  wait_for_alarm(me, false);
  std::printf("ingest's state: %s\n", sys::get_status(me, "ingest").state.c_str());

  if (serve > 0) {
    std::printf("serving for %d s\n", serve);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(serve));
  }
  supervisor::stop(me, "app_sup");
  std::puts("done");
  return 0;
}
