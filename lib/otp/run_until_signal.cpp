// run_until_signal: the signals are caught by a handler that posts a semaphore (sem_post is
// async-signal-safe; a send is not), a thread waiting on it turns the wake-up into a message,
// and the calling thread's mailbox waits for that message or for the top supervisor's DOWN.
#include <beamlet/otp/run_until_signal.hpp>

#include <semaphore.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

#include <beamlet/core/process_info.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/otp/supervisor.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {

// The one waiter's state, reached by the handler: signal dispositions are per program.
std::atomic<bool> someone_waits{false};
std::atomic<int> caught_number{0};

sem_t& wake_up() {
  static sem_t sem;
  static const bool ready = [] {
    if (::sem_init(&sem, 0, 0) != 0) throw std::system_error(errno, std::generic_category());
    return true;
  }();
  (void)ready;
  return sem;
}

// A signal handler has C linkage; static, so that it stays internal as the rest of this
// namespace does.
extern "C" {
static void on_stop_signal(int sig) {
  int none = 0;
  caught_number.compare_exchange_strong(none, sig);  // the first signal names the stop
  ::sem_post(&wake_up());
}
}

struct caught_signal {
  int number;
};

// Installs the handler for each signal and puts the previous dispositions back when destroyed
// (or at restore(), whichever comes first).
class caught_signals {
 public:
  explicit caught_signals(const std::vector<int>& signals) : signals_(signals) {
    previous_.resize(signals.size());
    struct sigaction sa {};
    sa.sa_handler = &on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < signals.size(); ++i) {
      if (::sigaction(signals[i], &sa, &previous_[i]) != 0) {
        restore();
        throw std::invalid_argument("beamlet::run_until_signal: signal " +
                                    std::to_string(signals[i]) + " cannot be caught");
      }
      installed_ = i + 1;
    }
  }
  ~caught_signals() { restore(); }
  caught_signals(const caught_signals&) = delete;
  caught_signals& operator=(const caught_signals&) = delete;

  void restore() noexcept {
    for (std::size_t i = installed_; i > 0; --i)
      ::sigaction(signals_[i - 1], &previous_[i - 1], nullptr);
    installed_ = 0;
  }

 private:
  const std::vector<int>& signals_;
  std::vector<struct sigaction> previous_;
  std::size_t installed_ = 0;
};

// The thread that waits on the semaphore and tells the mailbox. Its destructor wakes it (if no
// signal did) and joins it.
class signal_waiter {
 public:
  signal_waiter(runtime& rt, pid to)
      : thread_([&rt, to] {
          while (::sem_wait(&wake_up()) != 0 && errno == EINTR) {
          }
          rt.send(to, caught_signal{caught_number.load()});
        }) {}
  ~signal_waiter() {
    if (!woken_) ::sem_post(&wake_up());
    thread_.join();
  }
  signal_waiter(const signal_waiter&) = delete;
  signal_waiter& operator=(const signal_waiter&) = delete;
  void woken() noexcept { woken_ = true; }

 private:
  std::thread thread_;
  bool woken_ = false;
};

// Kills `top` and every process it or its descendants spawned. Killing the supervisor alone is
// not enough: its children get `killed` as an exit signal, which one that traps exits (the very
// one that would not stop) takes as a message and survives.
void kill_tree(runtime& rt, pid top) {
  std::vector<pid> tree;
  for (pid p : processes(rt)) {
    const auto d = process_info(rt, p);
    if (d && std::find(d->ancestors.begin(), d->ancestors.end(), top) != d->ancestors.end())
      tree.push_back(p);
  }
  rt.exit(top, exit_reason::kill());
  for (pid p : tree) rt.exit(p, exit_reason::kill());
}

}  // namespace

run_outcome run_until_signal(runtime& rt, pid top, const run_options& opts) {
  bool idle = false;
  if (!someone_waits.compare_exchange_strong(idle, true))
    throw std::logic_error("beamlet::run_until_signal: another call is already waiting");
  struct release_t {
    ~release_t() { someone_waits.store(false); }
  } release;
  sem_t& sem = wake_up();
  while (::sem_trywait(&sem) == 0) {
  }  // a post left over from an earlier call
  caught_number.store(0);

  scoped_process me(rt);
  const ref watch = me.monitor(top);
  const auto is_top = [watch](const down& d) { return d.ref == watch; };
  run_outcome out;
  {
    caught_signals handlers(opts.signals);
    signal_waiter waiter(rt, me.self());
    auto first = me.receive(on<down>().when(is_top), on<caught_signal>());
    handlers.restore();  // from here a second signal acts as it did before the call
    if (first.is<down>()) {
      out.reason = first.get<down>().reason;  // ended by itself: nothing to stop
      return out;
    }
    waiter.woken();
    out.signal = first.get<caught_signal>().number;
  }
  bool overran = false;
  try {
    supervisor::stop(me, supervisor_ref(top), exit_reason::normal(), opts.shutdown);
  } catch (const call_error& e) {
    // timeout: the tree did not stop in time. Otherwise the supervisor ended some other way
    // meanwhile (noproc, or another reason): the DOWN below says how.
    overran = e.which() == call_error::kind::timeout;
  }
  if (overran) kill_tree(rt, top);
  auto down_msg = me.receive(on<down>().when(is_top));
  out.reason = down_msg.get<down>().reason;
  return out;
}

BEAMLET_END_PRIVATE_NAMESPACE
