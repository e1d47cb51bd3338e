// A small service as a supervision tree, meant to be read top to bottom.
//
//   service (static supervisor, one_for_one)
//   ├── registry      a gen_server mapping session ids to worker pids
//   ├── workers       a DynamicSupervisor: one worker per session, started on demand
//   └── caches        a PartitionSupervisor: 4 cache servers, a key always reaches the same one
//
// The program starts the tree, opens a few sessions, fills the caches, then crashes one worker
// on purpose and shows that its supervisor restarted it (a new pid, the same session) while
// everything else kept running. The crash is reported on stderr without the program asking:
// the runtime's logger prints the worker's gen_server terminate report and crash report, and
// the DynamicSupervisor's child_terminated report, as OTP's logger would. Run it:
// `build-dev/examples/supervision_tree/supervision_tree` (or build-release/..., by preset); it
// takes no options and runs for about a second.
#include <beamlet/beamlet.hpp>

#include <atomic>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

// -- the registry: session id -> worker pid ------------------------------------------------------
//
// Requests are plain structs; `reply_type` names what a call returns, so call() is typed.
struct register_session {
  std::string id;
  pid worker;
};
struct lookup_session {
  std::string id;
  using reply_type = pid;  // the null pid when unknown
};

class registry : public gen_server<registry> {
 public:
  // A cast: no reply. A restarted worker registers again, replacing its old pid.
  void handle_cast(const register_session& r) { sessions_[r.id] = r.worker; }
  pid handle_call(const lookup_session& l, from<pid>) {
    auto it = sessions_.find(l.id);
    return it == sessions_.end() ? pid() : it->second;
  }

 private:
  std::map<std::string, pid> sessions_;
};

// -- a session worker ----------------------------------------------------------------------------

struct crash {};  // sent by the demo to make a worker fail

class session_worker : public gen_server<session_worker> {
 public:
  explicit session_worker(std::string id) : id_(std::move(id)) {}

  // init runs in the new process before start_child returns (the proc_lib ack).
  void init() {
    std::printf("  worker %-8s started as %s\n", id_.c_str(), self().self().to_string().c_str());
    cast(self(), server_ref<registry>("registry"), register_session{id_, self().self()});
  }
  // Any other message arrives here; `crash` makes the worker throw, which ends its process
  // with an exception reason. Its supervisor sees the EXIT and restarts it (permanent child).
  gen::action handle_info(any_message m) {
    if (m.is<crash>()) throw std::runtime_error("a bug in session " + id_);
    return gen::noreply();
  }

 private:
  std::string id_;
};

// -- a cache partition ---------------------------------------------------------------------------

struct put {
  std::string key, value;
};
struct get {
  std::string key;
  using reply_type = std::string;
};

class cache : public gen_server<cache> {
 public:
  explicit cache(int partition) : partition_(partition) {}
  void handle_cast(const put& p) { data_[p.key] = p.value; }
  std::string handle_call(const get& g, from<std::string>) {
    auto it = data_.find(g.key);
    return it == data_.end() ? std::string()
                             : it->second + " (partition " + std::to_string(partition_) + ")";
  }

 private:
  int partition_;
  std::map<std::string, std::string> data_;
};

// -- the tree ------------------------------------------------------------------------------------

std::vector<child_spec> service_children() {
  // The cache partitions: the same child four times, each told its partition number.
  partition_supervisor_options caches;
  caches.name = "caches";
  caches.partitions = 4;
  caches.child = child_spec("cache", worker_start<cache>(0));
  caches.with_arguments = [](child_spec spec, int partition) {
    spec.start = worker_start<cache>(partition);
    return spec;
  };

  // Children start in this order and stop in the reverse order: the registry exists before
  // any worker registers with it.
  std::vector<child_spec> children;
  children.push_back(child_spec("registry", worker_start_named<registry>("registry")));
  // A DynamicSupervisor waiting on its children's acks with a receive marker: a burst of
  // start_child requests cannot slow each start down (see docs/supervision.md).
  children.push_back(
      child_spec("workers",
                 dynamic_supervisor_start({}, {.name = "workers", .wait = ack_wait_mode::marker}))
          .with_type(child_type::supervisor));
  children.push_back(
      child_spec("caches", partition_supervisor_start(caches)).with_type(child_type::supervisor));
  return children;
}

task<> demo(process& self) {
  std::puts("starting the service tree");
  const std::vector<child_spec> children = service_children();
  const supervisor_flags flags{};  // one_for_one, 3 restarts in 5 s (Elixir's defaults)
  const supervisor_options opts{.name = "service"};
  const start_result service = co_await supervisor::start_link(self, opts, flags, children);
  if (!service) {
    std::printf("the service did not start: %s\n", service.to_string().c_str());
    co_return;
  }

  std::puts("opening sessions (DynamicSupervisor.start_child)");
  const dynamic_supervisor_ref workers("workers");
  for (const char* id : {"alice", "bob", "carol"}) {
    child_spec spec = child_spec(id, worker_start<session_worker>(std::string(id)));
    auto r = co_await dynamic_supervisor::start_child(self, workers, std::move(spec));
    if (!r) std::printf("  %s: %s\n", id, r.error().to_string().c_str());
  }

  std::puts("filling the caches (a key always routes to the same partition)");
  for (const char* key : {"user:1", "user:2", "user:3", "user:42"}) {
    cast(self, server_ref<cache>(partition_supervisor::via("caches", key)),
         put{key, std::string("profile of ") + key});
  }
  const get q{"user:42"};
  std::printf(
      "  get user:42 -> %s\n",
      (co_await call(self, server_ref<cache>(partition_supervisor::via("caches", "user:42")), q))
          .c_str());

  std::puts("crashing bob's worker on purpose");
  const lookup_session who{"bob"};
  const pid before = co_await call(self, server_ref<registry>("registry"), who);
  self.send(before, crash{});
  // Nothing here monitors the worker: the reports on stderr tell what happened. The demo only
  // waits until the registry knows bob's restarted worker (a new worker registers in its init).
  pid after_restart = before;
  for (int i = 0; i < 200 && (!after_restart || after_restart == before); ++i) {
    co_await self.sleep(5ms);
    after_restart = co_await call(self, server_ref<registry>("registry"), who);
  }

  // The DynamicSupervisor restarted it: count_children answers after the restart is done.
  const child_counts counts = co_await dynamic_supervisor::count_children(self, workers);
  std::printf("  bob is served by %s now; workers: %zu active of %zu\n",
              after_restart.to_string().c_str(), counts.active, counts.specs);

  std::puts("stopping the service (children stop in reverse start order)");
  co_await supervisor::stop(self, supervisor_ref("service"));
  std::puts("done");
}

// -- restart intensity escalation (--escalate) ---------------------------------------------------
//
//   top (intensity 3 in 5 s)
//   └── mid (intensity 3 in 5 s)
//       └── flaky   crashes right after its init
//
// A child that keeps crashing is restarted until its supervisor's intensity is spent; then the
// supervisor gives up (shutdown, reason reached_max_restart_intensity in its report) and its own
// parent restarts it, spending the parent's intensity in turn, until the top ends too. The
// crash count is (3 + 1) x (3 + 1): restarts multiply up the tree.

std::atomic<int> flaky_crashes{0}, mid_starts{0};

struct flaky_body {
  task<> operator()(process& self, const starter& st) const {
    st.ack(self, start_result::ok(self.self()));
    flaky_crashes.fetch_add(1);
    throw std::runtime_error("flaky: lost its connection");
    co_return;
  }
};

start_function flaky_start() {
  return [](process& sup) -> task<start_result> {
    const flaky_body body;
    co_return co_await start_link(sup, body);
  };
}

start_function mid_start(std::vector<child_spec> kids) {
  return [kids](process& sup) -> task<start_result> {
    mid_starts.fetch_add(1);
    const supervisor_flags f{restart_strategy::one_for_one, 3, 5};
    supervisor_options o;
    co_return co_await supervisor::start_link(sup, o, f, kids);
  };
}

int escalate() {
  runtime rt;
  logger::of(rt).set_level(log_level::critical);  // 20 crash and supervisor reports: counted below
  scoped_process me(rt);
  me.trap_exit(true);
  const auto start = std::chrono::steady_clock::now();
  auto top = supervisor::start_link(me, {"top"}, [] {
    return supervisor_init(supervisor_flags{restart_strategy::one_for_one, 3, 5},
                           {child_spec("mid", mid_start({child_spec("flaky", flaky_start())}))
                                .with_type(child_type::supervisor)});
  });
  if (!top) {
    std::printf("top did not start: %s\n", top.to_string().c_str());
    return 1;
  }
  auto m = me.receive(on<exit_message>(), after(30s));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (!m) {
    std::printf("the tree did not give up within 30 s (%d crashes)\n", flaky_crashes.load());
    return 1;
  }
  std::printf("flaky crashed %d times; mid was started %d times; top ended with %s after %lld ms\n",
              flaky_crashes.load(), mid_starts.load(),
              m.get<exit_message>().reason.to_string().c_str(), static_cast<long long>(ms));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {  // --escalate, --help, or a mistake
    const std::string_view a = argv[1];
    if (a == "--escalate" && argc == 2) return escalate();
    const bool help = a == "--help";
    std::fputs(
        "usage: supervision_tree [--escalate]\n"
        "  (no option: runs the tour, about a second; --escalate: a child that keeps crashing\n"
        "  spends its supervisor's restart intensity, then its parent's)\n",
        help ? stdout : stderr);
    return help ? 0 : 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // interleaves in order with the reports on stderr
  runtime rt;
  const pid p = rt.spawn(demo);
  const auto reason = rt.wait(p, std::chrono::seconds(30));
  if (reason != exit_reason::normal())
    std::printf("demo ended: %s\n", reason ? reason->to_string().c_str() : "timeout");
  return reason == exit_reason::normal() ? 0 : 1;
}
