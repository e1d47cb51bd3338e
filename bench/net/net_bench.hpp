// bench/net: the echo servers and the load client (see main.cpp).
#pragma once

#include <cstdint>

int run_beamlet_server(std::uint16_t port, bool active, unsigned schedulers);
/// Plain Asio: `threads` threads (0: one per core), each running an io_context of its own.
int run_asio_server(std::uint16_t port, unsigned threads);
int run_client(std::uint16_t port, int connections, int size, double seconds, double warmup);
