// The endpoint tests' HTTP client: Python's http.client and raw sockets (tests/http/
// http_check.py), run as a child process. Shared by the endpoint's and the console's tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#ifndef BEAMLET_HTTP_CHECK
#error "BEAMLET_HTTP_CHECK must name tests/http/http_check.py"
#endif

namespace beamlet::test {

struct client_result {
  int status = -1;
  std::string out;
};

/// Runs the Python client; its output, and its exit status (0: every check held).
inline client_result run_client(const std::string& args) {
  // Appended piece by piece: GCC 12 reports a chain of `+` on a temporary string as out of
  // bounds (-Warray-bounds) when it inlines more of it, as it does in a unity build.
  std::string cmd = "python3 ";
  cmd.append(BEAMLET_HTTP_CHECK).append(" ").append(args).append(" 2>&1");
  client_result r;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int st = ::pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace beamlet::test
