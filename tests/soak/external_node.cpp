#include "external_node.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

extern char** environ;

namespace soak {

bool external_node::start() {
  std::lock_guard<std::mutex> g(mu_);
  if (child_ != 0) return true;
  std::vector<std::string> args = argv_;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Close-on-exec on both ends: the child gets the read end as its stdin (dup2 clears the flag
  // there), and no other child inherits the write end, which would keep the pipe open.
  int lifeline[2];
  if (::pipe2(lifeline, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, lifeline[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t child = 0;
  const int rc = posix_spawnp(&child, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(lifeline[0]);
  if (rc != 0) {
    ::close(lifeline[1]);
    return false;
  }
  child_ = child;
  lifeline_ = lifeline[1];
  stopped_ = false;
  return true;
}

void external_node::kill() {
  std::lock_guard<std::mutex> g(mu_);
  if (child_ == 0) return;
  ::kill(child_, SIGKILL);
  int status = 0;
  ::waitpid(child_, &status, 0);
  child_ = 0;
  stopped_ = false;
  close_lifeline();
}

void external_node::close_lifeline() {
  if (lifeline_ >= 0) ::close(lifeline_);
  lifeline_ = -1;
}

void external_node::stall() {
  std::lock_guard<std::mutex> g(mu_);
  if (child_ != 0 && !stopped_) {
    ::kill(child_, SIGSTOP);
    stopped_ = true;
  }
}

void external_node::resume() {
  std::lock_guard<std::mutex> g(mu_);
  if (child_ != 0 && stopped_) {
    ::kill(child_, SIGCONT);
    stopped_ = false;
  }
}

bool external_node::running() const {
  std::lock_guard<std::mutex> g(mu_);
  return child_ != 0;
}

bool external_node::restart_if_exited() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (child_ == 0) return false;
    int status = 0;
    if (::waitpid(child_, &status, WNOHANG) != child_) return false;
    child_ = 0;
    stopped_ = false;
    close_lifeline();
  }
  return start();
}

std::vector<std::string> external_node::erl_argv(const std::string& name,
                                                 const std::string& cookie) {
  return {
      "erl",
      "-name",
      name,
      "-setcookie",
      cookie,
      "-noshell",
      "-eval",
      "spawn(fun() -> _ = io:get_line(''), erlang:halt() end),"
      "register(soak_echo, self()),"
      "Loop = fun L() -> receive {From, X} when is_pid(From) -> From ! {echoed, X, self()}, L();"
      " _ -> L() end end,"
      "Loop()."};
}

bool external_node::erl_available() {
  return std::system("command -v erl >/dev/null 2>&1") == 0;
}

}  // namespace soak
