// The load client of bench/net: `connections` connections on one Asio thread, each sending
// `size` bytes and reading them back, again and again, for `seconds` after a warm-up. Prints one
// JSON line: round trips per second, throughput, and the round-trip latency percentiles.
// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "net_bench.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

struct shared_state {
  clock_type::time_point measure_from;
  clock_type::time_point measure_until;
  std::vector<float> latencies_us;
  std::uint64_t round_trips = 0;
  int connected = 0;
  int failed = 0;
  bool mismatch = false;
};

asio::awaitable<void> connection(tcp::endpoint ep, int size, int index, shared_state& st) {
  tcp::socket s(co_await asio::this_coro::executor);
  try {
    co_await s.async_connect(ep, asio::use_awaitable);
    s.set_option(tcp::no_delay(true));
    ++st.connected;
    std::string out(static_cast<std::size_t>(size), static_cast<char>('a' + index % 26));
    std::string in(static_cast<std::size_t>(size), '\0');
    for (;;) {
      const auto t0 = clock_type::now();
      if (t0 >= st.measure_until) break;
      co_await asio::async_write(s, asio::buffer(out), asio::use_awaitable);
      co_await asio::async_read(s, asio::buffer(in), asio::use_awaitable);
      const auto t1 = clock_type::now();
      if (in != out) st.mismatch = true;
      if (t0 >= st.measure_from && t1 <= st.measure_until) {
        ++st.round_trips;
        st.latencies_us.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
      }
    }
  } catch (const std::exception&) {
    ++st.failed;
  }
  boost::system::error_code ec;
  s.close(ec);
}

double percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int run_client(std::uint16_t port, int connections, int size, double seconds, double warmup) {
  // A thousand connections need a thousand descriptors here and in the server.
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  asio::io_context ioc(1);
  shared_state st;
  const auto start = clock_type::now();
  st.measure_from = start + std::chrono::duration_cast<clock_type::duration>(
                                std::chrono::duration<double>(warmup));
  st.measure_until = st.measure_from + std::chrono::duration_cast<clock_type::duration>(
                                           std::chrono::duration<double>(seconds));
  st.latencies_us.reserve(1 << 20);
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
  for (int i = 0; i < connections; ++i)
    asio::co_spawn(ioc, connection(ep, size, i, st), asio::detached);
  ioc.run();
  const double rate = static_cast<double>(st.round_trips) / seconds;
  const double p50 = percentile(st.latencies_us, 0.50);
  const double p99 = percentile(st.latencies_us, 0.99);
  std::printf(
      "{\"connections\": %d, \"size\": %d, \"seconds\": %.2f, \"round_trips\": %llu, "
      "\"round_trips_per_s\": %.1f, \"mib_per_s\": %.2f, \"p50_us\": %.1f, "
      "\"p99_us\": %.1f, \"connected\": %d, \"failed\": %d, \"mismatch\": %s}\n",
      connections, size, seconds, static_cast<unsigned long long>(st.round_trips), rate,
      rate * size * 2 / (1024.0 * 1024.0), p50, p99, st.connected, st.failed,
      st.mismatch ? "true" : "false");
  return st.mismatch || st.connected != connections ? 1 : 0;
}
