// A node in its own OS process that the soak talks to over distribution: the second beamlet
// node (tests/dist/dist_peer.cpp) or an `erl` node. The chaos stalls it (SIGSTOP, then SIGCONT),
// kills it (SIGKILL) and starts it again under the same name. Its output goes to /dev/null.
// Its standard input is a pipe that only the soak holds open: when the soak ends, however it
// ends (a signal included), the pipe reads end-of-file and the erl node halts on it, so no node
// outlives its soak (the beamlet peer ends on its own after its lifetime). The one exception: a
// soak killed while the node is stalled leaves it stopped (a stopped process reads nothing).
// Thread-safe: the chaos process and the main thread both drive it.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>
#include <vector>

namespace soak {

class external_node {
 public:
  external_node(std::string name, std::vector<std::string> argv)
      : name_(std::move(name)), argv_(std::move(argv)) {}
  ~external_node() { kill(); }
  external_node(const external_node&) = delete;
  external_node& operator=(const external_node&) = delete;

  const std::string& name() const noexcept { return name_; }
  /// Starts the program (again); false if it cannot be run.
  bool start();
  /// SIGKILL and reap; nothing if it is not running.
  void kill();
  /// SIGSTOP / SIGCONT: a node that is alive but answers nothing, for a while.
  void stall();
  void resume();
  bool running() const;
  /// Starts it again if it has exited on its own (an erl that found its name still taken in
  /// epmd, just after a kill); true if it was restarted.
  bool restart_if_exited();

  /// `erl` with an echo registered as soak_echo: {From, X} -> From ! {echoed, X, self()}; it
  /// halts when its standard input closes.
  static std::vector<std::string> erl_argv(const std::string& name, const std::string& cookie);
  static bool erl_available();

 private:
  void close_lifeline();  // with mu_ held

  std::string name_;
  std::vector<std::string> argv_;
  mutable std::mutex mu_;
  pid_t child_ = 0;
  int lifeline_ = -1;  // the write end of the child's stdin, held open while it runs
  bool stopped_ = false;
};

}  // namespace soak
