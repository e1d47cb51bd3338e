/// @file
/// beamlet/observe/app_metrics.hpp: the application's own metrics (counters, gauges,
/// histograms, with labels), exported with the runtime's.
///
///   namespace metrics = beamlet::metrics;
///   auto& requests = metrics::add_counter(rt, {.name = "shop_requests_total",
///                                              .help = "Requests served.",
///                                              .labels = {"method", "code"}});
///   metrics::counter& get_ok = requests.with("GET", "200");   // look up once, keep it
///   get_ok.add();                                             // lock-free from any thread
///
///   auto& latency = metrics::add_histogram(rt, {.name = "shop_request_seconds",
///                                               .help = "Time to answer a request."},
///                                          {0.001, 0.01, 0.1, 1});
///   latency.get().observe(0.004);
///
/// The types live in beamlet::metrics so that `counter` stays free for an application's own
/// (a GenServer called counter, say, under `using namespace beamlet`).
///
/// prometheus_metrics(rt), and so GET /metrics of the HTTP endpoint, writes these families after
/// the runtime's own, in the Prometheus text format, under the names given (no beamlet_ prefix:
/// that prefix is reserved for the runtime's families and rejected here).
///
/// Guarantees:
///  * Registration is by name, once per runtime: adding a family whose name, kind, labels (and
///    buckets) match one already there returns that one (any thread may "add" it on first use);
///    the same name with a different shape throws std::invalid_argument, as does an invalid
///    metric or label name, an empty help text, or buckets that are not finite and strictly
///    increasing. These are programming errors (docs/errors.md), found at the first run.
///  * with(values...) finds or creates the series of one label set, under the family's lock;
///    the reference it returns stays valid for the runtime's lifetime, so a hot path looks it up
///    once. A wrong number of values throws std::invalid_argument.
///  * Updating a series takes no lock: counters are striped over cache lines (a thread adds to
///    its own stripe, collection sums them), gauges and histogram cells are atomics. A scrape
///    that runs during updates sees each value at some moment of the scrape, not one snapshot of
///    all of them (as with every Prometheus client).
///  * Families live as long as the runtime; there is no removal.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <beamlet/core/config.hpp>

BEAMLET_BEGIN_NAMESPACE

class runtime;
class basic_process;

namespace detail {
class app_metric_family;
/// Hands out counter stripes round-robin, one per thread on its first add.
std::size_t next_counter_stripe() noexcept;
/// Relaxed `a += d`. std::atomic<double>::fetch_add is C++20, but libc++ 16 does not have it;
/// this is the compare-exchange loop libstdc++ compiles it to.
inline void atomic_add(std::atomic<double>& a, double d) noexcept {
  double old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, old + d, std::memory_order_relaxed)) {
  }
}
}  // namespace detail

namespace metrics {

/// A count that only goes up (a Prometheus counter).
class counter {
 public:
  counter() = default;
  counter(const counter&) = delete;
  counter& operator=(const counter&) = delete;

  /// Adds `n`: a relaxed atomic add to this thread's stripe; lock-free, from any thread.
  void add(std::uint64_t n = 1) noexcept {
    stripes_[stripe_of_this_thread()].v.fetch_add(n, std::memory_order_relaxed);
  }
  /// The sum of every stripe.
  std::uint64_t value() const noexcept;

 private:
  static constexpr std::size_t stripe_count = 8;
  struct alignas(64) stripe {
    std::atomic<std::uint64_t> v{0};
  };
  static std::size_t stripe_of_this_thread() noexcept;
  std::array<stripe, stripe_count> stripes_{};
};

inline std::size_t counter::stripe_of_this_thread() noexcept {
  thread_local const std::size_t mine = detail::next_counter_stripe() % stripe_count;
  return mine;
}

/// A value that goes up and down (a Prometheus gauge).
class gauge {
 public:
  gauge() = default;
  gauge(const gauge&) = delete;
  gauge& operator=(const gauge&) = delete;

  /// Sets the value to `v` (relaxed atomic; any thread).
  void set(double v) noexcept { v_.store(v, std::memory_order_relaxed); }
  /// Adds `d` (relaxed atomic; any thread).
  void add(double d = 1) noexcept { detail::atomic_add(v_, d); }
  /// Subtracts `d` (relaxed atomic; any thread).
  void sub(double d = 1) noexcept { detail::atomic_add(v_, -d); }
  /// The current value.
  double value() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

/// Observations counted into buckets (a Prometheus histogram: cumulative buckets by upper
/// bound, plus +Inf, their sum and their count).
class histogram {
 public:
  /// `bounds`: finite, strictly increasing upper bounds (checked by add_histogram).
  explicit histogram(std::vector<double> bounds);
  histogram(const histogram&) = delete;
  histogram& operator=(const histogram&) = delete;

  /// Counts `v` in the first bucket whose bound is >= v (+Inf when none is, and for NaN).
  void observe(double v) noexcept;

  /// The histogram as read at one time, in the Prometheus shape.
  struct snapshot {
    std::vector<double> bounds;         ///< upper bounds, +Inf not included
    std::vector<std::uint64_t> counts;  ///< cumulative, one per bound, then +Inf (= count)
    double sum = 0;                     ///< the sum of every observed value
    std::uint64_t count = 0;            ///< how many values were observed
  };
  /// Reads every cell and the sum, one at a time without a lock: concurrent observations may be
  /// in some fields and not yet in others.
  snapshot read() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> cells_;  // per bucket, not cumulative; +Inf last
  std::atomic<double> sum_{0};
};

/// What every family is registered with.
struct spec {
  /// [a-zA-Z_:][a-zA-Z0-9_:]*, not starting with beamlet_ (the runtime's own families).
  std::string name;
  /// One line for the HELP comment; not empty.
  std::string help;
  /// Label names, [a-zA-Z_][a-zA-Z0-9_]*, not starting with __ (and not `le` for histograms).
  std::vector<std::string> labels{};
};

/// One metric and its series, one per label set.
template <class Metric>
class family {
 public:
  /// The series of one label set: as many values as the family has label names.
  template <class... Values>
  Metric& with(const Values&... values) {
    return *static_cast<Metric*>(find({std::string_view(values)...}));
  }
  /// The one series of a family without labels.
  Metric& get() { return with(); }

  /// The name, help and label names the family was registered with.
  const metrics::spec& spec() const noexcept;

 private:
  friend class detail::app_metric_family;
  explicit family(detail::app_metric_family& f) noexcept : f_(&f) {}
  void* find(std::vector<std::string_view> values);
  detail::app_metric_family* f_;
};

/// A counter family (add_counter).
using counter_family = family<counter>;
/// A gauge family (add_gauge).
using gauge_family = family<gauge>;
/// A histogram family (add_histogram).
using histogram_family = family<histogram>;

/// Prometheus clients' default buckets (seconds: 5 ms .. 10 s).
std::vector<double> default_buckets();

/// Registers the counter family `s` in `rt`, or returns the one of the same shape already
/// there. std::invalid_argument for a bad spec or a clash (see the file comment).
counter_family& add_counter(runtime& rt, const spec& s);
/// As add_counter, for a gauge family.
gauge_family& add_gauge(runtime& rt, const spec& s);
/// As add_counter, for a histogram family with upper bounds `buckets` (finite and strictly
/// increasing; +Inf is implicit).
histogram_family& add_histogram(runtime& rt, const spec& s,
                                std::vector<double> buckets = default_buckets());
/// add_counter in the runtime of process `self`.
counter_family& add_counter(basic_process& self, const spec& s);
/// add_gauge in the runtime of process `self`.
gauge_family& add_gauge(basic_process& self, const spec& s);
/// add_histogram in the runtime of process `self`.
histogram_family& add_histogram(basic_process& self, const spec& s,
                                std::vector<double> buckets = default_buckets());

}  // namespace metrics

BEAMLET_END_NAMESPACE
