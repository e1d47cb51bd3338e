// The application's own metrics (beamlet/observe/app_metrics.hpp): registration rules, exact
// counts under concurrent updates, the Prometheus text, and GET /metrics of the endpoint.
#include <beamlet/observe/app_metrics.hpp>
#include <beamlet/observe/http_endpoint.hpp>
#include <beamlet/observe/metrics.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

bool contains_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

/// GET `path` from 127.0.0.1:`port`; the whole response (the endpoint closes after it).
std::string http_get(std::uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

TEST(AppMetrics, CountersGaugesAndHistogramsInThePrometheusText) {
  runtime rt;
  auto& requests = metrics::add_counter(
      rt,
      {.name = "shop_requests_total", .help = "Requests served.", .labels = {"method", "code"}});
  requests.with("GET", "200").add();
  requests.with("GET", "200").add(2);
  requests.with("POST", "500").add();
  auto& in_flight =
      metrics::add_gauge(rt, {.name = "shop_in_flight", .help = "Requests being served."});
  in_flight.get().add(3);
  in_flight.get().sub(1.5);
  auto& latency = metrics::add_histogram(
      rt, {.name = "shop_request_seconds", .help = "Time to answer.", .labels = {"route"}},
      {0.01, 0.1, 1});
  metrics::histogram& cart = latency.with("/cart");
  for (double v : {0.005, 0.01, 0.05, 0.5, 7.0}) cart.observe(v);
  cart.observe(std::numeric_limits<double>::quiet_NaN());  // counted under +Inf, as clients do

  EXPECT_EQ(requests.with("GET", "200").value(), 3u);
  EXPECT_DOUBLE_EQ(in_flight.get().value(), 1.5);

  const std::string text = prometheus_metrics(rt);
  // After the runtime's own families, under the names given.
  ASSERT_NE(text.find("beamlet_processes"), std::string::npos);
  EXPECT_LT(text.find("beamlet_processes"), text.find("shop_requests_total"));
  for (const char* line : {
           "# HELP shop_requests_total Requests served.",
           "# TYPE shop_requests_total counter",
           "shop_requests_total{method=\"GET\",code=\"200\"} 3",
           "shop_requests_total{method=\"POST\",code=\"500\"} 1",
           "# TYPE shop_in_flight gauge",
           "shop_in_flight 1.5",
           "# TYPE shop_request_seconds histogram",
           "shop_request_seconds_bucket{route=\"/cart\",le=\"0.01\"} 2",
           "shop_request_seconds_bucket{route=\"/cart\",le=\"0.1\"} 3",
           "shop_request_seconds_bucket{route=\"/cart\",le=\"1\"} 4",
           "shop_request_seconds_bucket{route=\"/cart\",le=\"+Inf\"} 6",
           "shop_request_seconds_sum{route=\"/cart\"} NaN",
           "shop_request_seconds_count{route=\"/cart\"} 6",
       })
    EXPECT_TRUE(contains_line(text, line)) << "missing: " << line << "\n" << text;
}

TEST(AppMetrics, LabelValuesAreEscapedAndLargeCountsExact) {
  runtime rt;
  auto& c = metrics::add_counter(rt, {.name = "odd_total", .help = "h", .labels = {"v"}});
  c.with("a\"b\\c\nd").add(std::uint64_t{1} << 60);
  c.with("a\"b\\c\nd").add(1);
  EXPECT_TRUE(contains_line(prometheus_metrics(rt),
                            "odd_total{v=\"a\\\"b\\\\c\\nd\"} 1152921504606846977"));
}

TEST(AppMetrics, AddingTheSameFamilyAgainReturnsIt) {
  runtime rt;
  const metrics::spec spec{.name = "jobs_total", .help = "Jobs.", .labels = {"queue"}};
  auto& a = metrics::add_counter(rt, spec);
  auto& b = metrics::add_counter(rt, spec);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(&a.with("q1"), &b.with("q1"));
  // From a process too: one registry per runtime.
  metrics::counter_family* from_process = nullptr;
  ASSERT_TRUE(run_process(rt, [&](process& self) -> task<> {
    from_process = &metrics::add_counter(self, spec);
    co_return;
  }));
  EXPECT_EQ(from_process, &a);
  // Another runtime has its own.
  runtime other;
  EXPECT_NE(&metrics::add_counter(other, spec), &a);
  // The same name with another shape is a programming error.
  EXPECT_THROW(metrics::add_gauge(rt, spec), std::invalid_argument);
  EXPECT_THROW(metrics::add_counter(rt, {.name = "jobs_total", .help = "Jobs.", .labels = {"q"}}),
               std::invalid_argument);
  EXPECT_THROW(
      metrics::add_counter(rt, {.name = "jobs_total", .help = "Other.", .labels = {"queue"}}),
      std::invalid_argument);
  auto& h = metrics::add_histogram(rt, {.name = "lat", .help = "h"}, {1, 2});
  EXPECT_EQ(&metrics::add_histogram(rt, {.name = "lat", .help = "h"}, {1, 2}), &h);
  EXPECT_THROW(metrics::add_histogram(rt, {.name = "lat", .help = "h"}, {1, 3}),
               std::invalid_argument);
}

TEST(AppMetrics, InvalidSpecsAndLabelCountsAreRejected) {
  runtime rt;
  const auto bad = [&](const metrics::spec& s) {
    EXPECT_THROW(metrics::add_counter(rt, s), std::invalid_argument) << s.name;
  };
  bad({.name = "", .help = "h"});
  bad({.name = "9lives", .help = "h"});
  bad({.name = "has-dash", .help = "h"});
  bad({.name = "beamlet_mine", .help = "h"});  // the runtime's prefix
  bad({.name = "ok_name", .help = ""});
  bad({.name = "ok_name", .help = "two\nlines"});
  bad({.name = "ok_name", .help = "h", .labels = {"__reserved"}});
  bad({.name = "ok_name", .help = "h", .labels = {"a", "a"}});
  bad({.name = "ok_name", .help = "h", .labels = {"1x"}});
  EXPECT_THROW(metrics::add_histogram(rt, {.name = "h1", .help = "h", .labels = {"le"}}),
               std::invalid_argument);
  EXPECT_THROW(metrics::add_histogram(rt, {.name = "h2", .help = "h"}, {}), std::invalid_argument);
  EXPECT_THROW(metrics::add_histogram(rt, {.name = "h3", .help = "h"}, {1, 1}),
               std::invalid_argument);
  EXPECT_THROW(metrics::add_histogram(rt, {.name = "h4", .help = "h"}, {2, 1}),
               std::invalid_argument);
  EXPECT_THROW(metrics::add_histogram(rt, {.name = "h5", .help = "h"},
                                      {1, std::numeric_limits<double>::infinity()}),
               std::invalid_argument);
  // Nothing rejected was registered.
  EXPECT_EQ(prometheus_metrics(rt).find("ok_name"), std::string::npos);

  auto& c = metrics::add_counter(rt, {.name = "two_labels", .help = "h", .labels = {"a", "b"}});
  EXPECT_THROW(c.with("x"), std::invalid_argument);
  EXPECT_THROW(c.with("x", "y", "z"), std::invalid_argument);
  EXPECT_THROW(c.get(), std::invalid_argument);
  EXPECT_NO_THROW(c.with("x", "y"));
}

TEST(AppMetrics, ConcurrentUpdatesAreExact) {
  runtime rt;
  auto& c = metrics::add_counter(rt, {.name = "hits_total", .help = "h"}).get();
  auto& g = metrics::add_gauge(rt, {.name = "level", .help = "h"}).get();
  auto& h = metrics::add_histogram(rt, {.name = "sizes", .help = "h"}, {10, 100}).get();
  constexpr int threads = 8, per_thread = 100'000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        c.add();
        g.add(1);
        g.sub(1);
        h.observe((i + t) % 3 == 0 ? 5.0 : 50.0);
      }
    });
  // A scrape while they run must not disturb them.
  for (int i = 0; i < 20; ++i) (void)prometheus_metrics(rt);
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), std::uint64_t{threads} * per_thread);
  EXPECT_DOUBLE_EQ(g.value(), 0.0);
  const auto s = h.read();
  EXPECT_EQ(s.count, std::uint64_t{threads} * per_thread);
  EXPECT_EQ(s.counts.back(), s.count);
  EXPECT_EQ(s.counts[1], s.count);  // nothing above 100
  EXPECT_DOUBLE_EQ(s.sum, 5.0 * static_cast<double>(s.counts[0]) +
                              50.0 * static_cast<double>(s.count - s.counts[0]));
}

TEST(AppMetrics, ServedByTheHttpEndpoint) {
  runtime rt;
  auto& orders =
      metrics::add_counter(rt, {.name = "orders_total", .help = "Orders.", .labels = {"kind"}});
  orders.with("gift").add(7);
  auto started = http_endpoint::start(rt, http_endpoint_options{});
  ASSERT_TRUE(started) << started.error().message();
  http_endpoint& ep = *started;
  ASSERT_NE(ep.port(), 0);
  const std::string r = http_get(ep.port(), "/metrics");
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_TRUE(contains_line(r, "orders_total{kind=\"gift\"} 7")) << r;
  EXPECT_NE(r.find("beamlet_processes"), std::string::npos);
  ep.stop();
}

}  // namespace beamlet::test
