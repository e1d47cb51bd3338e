#include "epmd.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>

#include "stream.hpp"
#include "wire.hpp"

extern char** environ;

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace {

constexpr std::uint8_t alive2_x_resp = 118;
constexpr std::uint8_t alive2_resp = 121;
constexpr std::uint8_t alive2_req = 120;
constexpr std::uint8_t port2_resp = 119;
constexpr std::uint8_t port_please2_req = 122;
constexpr std::uint8_t hidden_node = 72;
constexpr std::uint8_t normal_node = 77;

// `epmd -daemon`, as erl starts it when none runs. The daemon detaches, so this returns soon.
bool start_epmd_daemon(std::uint16_t port) {
  const std::string port_text = std::to_string(port);
  char arg0[] = "epmd";
  char arg1[] = "-daemon";
  char arg2[] = "-port";
  std::string p = port_text;
  char* argv[] = {arg0, arg1, arg2, p.data(), nullptr};
  pid_t child = 0;
  if (posix_spawnp(&child, "epmd", nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

net::socket_options plain() {
  net::socket_options o;
  o.framing = net::framing::raw;
  return o;
}

}  // namespace

std::uint16_t epmd_port(std::uint16_t configured) {
  if (configured != 0) return configured;
  if (const char* e = std::getenv("ERL_EPMD_PORT")) {
    const long v = std::strtol(e, nullptr, 10);
    if (v > 0 && v < 65536) return static_cast<std::uint16_t>(v);
  }
  return 4369;
}

task<expected<registration, std::error_code>> epmd_register(process& self, std::string alive,
                                                            std::uint16_t port, std::uint16_t epmd,
                                                            std::chrono::milliseconds timeout,
                                                            bool hidden) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  net::tcp_socket s;
  bool started = false;
  const net::socket_options opts = plain();
  for (;;) {
    std::string local = "127.0.0.1";
    auto c = co_await net::connect(self, std::move(local), epmd, opts, timeout);
    if (c) {
      s = std::move(*c);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      co_return unexpected(std::error_code(dist_errc::epmd_unreachable));
    if (!started) {
      started = true;
      if (!start_epmd_daemon(epmd))
        co_return unexpected(std::error_code(dist_errc::epmd_unreachable));
    }
    co_await self.sleep(std::chrono::milliseconds(50));
  }
  std::string req;
  req.push_back(static_cast<char>(alive2_req));
  put16(req, port);
  req.push_back(static_cast<char>(hidden ? hidden_node : normal_node));
  req.push_back('\0');  // TCP/IPv4
  put16(req, 6);        // highest version
  put16(req, 5);        // lowest version
  put16(req, static_cast<std::uint16_t>(alive.size()));
  req += alive;
  put16(req, 0);  // no extra
  const std::string packet = frame2(req);
  // A read that fails past the deadline timed out; one before it found the connection closed.
  const auto failed = [&] {
    return std::error_code(std::chrono::steady_clock::now() >= deadline ? dist_errc::timed_out
                                                                        : dist_errc::epmd_protocol);
  };
  auto sent = co_await net::send(self, s, packet);
  if (!sent) co_return unexpected(std::error_code(dist_errc::epmd_protocol));
  stream_reader in(deadline);
  auto head = co_await in.exactly(self, s, 2);
  if (!head) co_return unexpected(failed());
  const auto tag = static_cast<std::uint8_t>((*head)[0]);
  const auto result = static_cast<std::uint8_t>((*head)[1]);
  if ((tag != alive2_x_resp && tag != alive2_resp))
    co_return unexpected(std::error_code(dist_errc::epmd_protocol));
  if (result != 0) co_return unexpected(std::error_code(dist_errc::epmd_refused));
  registration r;
  if (tag == alive2_x_resp) {
    auto c = co_await in.exactly(self, s, 4);
    if (!c) co_return unexpected(failed());
    r.creation = get32(c->data());
  } else {
    auto c = co_await in.exactly(self, s, 2);
    if (!c) co_return unexpected(failed());
    r.creation = get16(c->data());
  }
  r.socket = std::move(s);
  co_return r;
}

task<expected<std::uint16_t, std::string>> epmd_lookup(process& self, std::string host,
                                                       std::string alive, std::uint16_t epmd,
                                                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const net::socket_options opts = plain();
  std::string where = host;
  auto c = co_await net::connect(self, std::move(where), epmd, opts, timeout);
  if (!c) co_return unexpected("epmd at " + host + ": " + c.error().message());
  net::tcp_socket s = std::move(*c);
  std::string req;
  req.push_back(static_cast<char>(port_please2_req));
  req += alive;
  const std::string packet = frame2(req);
  auto sent = co_await net::send(self, s, packet);
  if (!sent) co_return unexpected("epmd: " + sent.error().message());
  stream_reader in(deadline);
  auto head = co_await in.exactly(self, s, 2);
  if (!head) co_return unexpected("epmd at " + host + ": " + head.error());
  if (static_cast<std::uint8_t>((*head)[0]) != port2_resp)
    co_return unexpected("epmd: unexpected answer");
  if ((*head)[1] != 0) co_return unexpected("no node '" + alive + "' registered at " + host);
  auto port = co_await in.exactly(self, s, 2);
  if (!port) co_return unexpected("epmd: " + port.error());
  co_return get16(port->data());
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
