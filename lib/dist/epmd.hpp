// The epmd client: publishing this node's port (the connection must stay open: closing it
// unregisters the name) and looking up a peer's port.
#pragma once

#include <beamlet/core/config.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <system_error>

#include <beamlet/core/expected.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/task.hpp>
#include <beamlet/dist/error.hpp>
#include <beamlet/net/tcp.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

struct registration {
  net::tcp_socket socket;  ///< keep open for as long as the name is published
  std::uint32_t creation = 0;
};

/// The port epmd listens on: `configured`, else $ERL_EPMD_PORT, else 4369.
std::uint16_t epmd_port(std::uint16_t configured);

/// Publishes `alive` at `port` with the epmd on this host, starting `epmd -daemon` if none
/// answers. Errors are dist_errc (what dist::start returns).
/// `hidden`: published as a hidden node (epmd's node type 72) rather than a normal one (77).
task<expected<registration, std::error_code>> epmd_register(process& self, std::string alive,
                                                            std::uint16_t port, std::uint16_t epmd,
                                                            std::chrono::milliseconds timeout,
                                                            bool hidden);
/// The port `alive` listens on at `host`.
task<expected<std::uint16_t, std::string>> epmd_lookup(process& self, std::string host,
                                                       std::string alive, std::uint16_t epmd,
                                                       std::chrono::milliseconds timeout);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
