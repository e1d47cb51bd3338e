// A helper program run as a child process with its stdin and stdout on pipes, for tests that
// need a server in a process of its own (lowered descriptor or address-space limits, its CPU
// and memory measured apart from the test runner's). Line-oriented: the test writes commands
// and reads answers with a deadline, so a child that hangs fails the test instead of hanging it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace beamlet::test {

class child_process {
 public:
  explicit child_process(std::vector<std::string> args) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = 0;
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process() {
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }

  bool started() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }

  bool send_line(const std::string& line) {
    const std::string l = line + "\n";
    return ::write(to_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
  }

  /// The next line the child writes, without its newline; nullopt if none came within `limit`
  /// (or the child closed its output).
  std::optional<std::string> read_line(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char chunk[4096];
      const ssize_t n = ::read(from_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  /// Sends `command` and returns the one-line answer.
  std::optional<std::string> ask(const std::string& command,
                                 std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    if (!send_line(command)) return std::nullopt;
    return read_line(limit);
  }

 private:
  pid_t pid_ = 0;
  int to_ = -1;
  int from_ = -1;
  std::string buf_;
};

/// The value of `key=` in a line of `key=value` words; -1 when absent.
inline long long field(const std::string& line, const std::string& key) {
  const std::string k = " " + key + "=";
  const std::string padded = " " + line;
  const auto at = padded.find(k);
  if (at == std::string::npos) return -1;
  return std::atoll(padded.c_str() + at + k.size());
}

}  // namespace beamlet::test
