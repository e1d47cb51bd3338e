// The application's metric families: one registry per runtime (an extension), families in
// registration order, each family's series in label order, rendered after the runtime's own.
#include <beamlet/observe/app_metrics.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <beamlet/core/extension.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/observe/metrics.hpp>

#include "app_metrics_render.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

using metrics::counter;
using metrics::gauge;
using metrics::histogram;
using metric_spec = metrics::spec;

namespace detail {

std::size_t next_counter_stripe() noexcept {
  static std::atomic<std::size_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

class app_metric_family {
 public:
  enum class kind { counter, gauge, histogram };

  app_metric_family(metric_spec spec, kind k, std::vector<double> buckets)
      : spec_(std::move(spec)), kind_(k), buckets_(std::move(buckets)) {}

  const metric_spec& spec() const noexcept { return spec_; }
  kind which() const noexcept { return kind_; }
  const std::vector<double>& buckets() const noexcept { return buckets_; }

  void* find(std::vector<std::string_view> values) {
    if (values.size() != spec_.labels.size())
      throw std::invalid_argument("beamlet: metric " + spec_.name + " has " +
                                  std::to_string(spec_.labels.size()) + " labels, given " +
                                  std::to_string(values.size()) + " values");
    std::vector<std::string> key(values.begin(), values.end());
    std::lock_guard lock(mu_);
    auto it = series_.find(key);
    if (it == series_.end()) {
      std::shared_ptr<void> s;
      switch (kind_) {
        case kind::counter:
          s = std::make_shared<counter>();
          break;
        case kind::gauge:
          s = std::make_shared<gauge>();
          break;
        case kind::histogram:
          s = std::make_shared<histogram>(buckets_);
          break;
      }
      it = series_.emplace(std::move(key), std::move(s)).first;
    }
    return it->second.get();
  }

  /// The series as they are now (pointers stay valid: series are never removed).
  std::vector<std::pair<std::vector<std::string>, void*>> series() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<std::vector<std::string>, void*>> out;
    out.reserve(series_.size());
    for (const auto& [k, s] : series_) out.emplace_back(k, s.get());
    return out;
  }

  metrics::counter_family as_counter{*this};
  metrics::gauge_family as_gauge{*this};
  metrics::histogram_family as_histogram{*this};

 private:
  const metric_spec spec_;
  const kind kind_;
  const std::vector<double> buckets_;
  std::mutex mu_;
  std::map<std::vector<std::string>, std::shared_ptr<void>> series_;
};

}  // namespace detail

namespace {

using detail::app_metric_family;

bool valid_metric_name(std::string_view n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_label_name(std::string_view n) {
  if (n.empty() || n.starts_with("__")) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

[[noreturn]] void reject(const metric_spec& spec, const std::string& why) {
  throw std::invalid_argument("beamlet: metric '" + spec.name + "': " + why);
}

void check(const metric_spec& spec, app_metric_family::kind k, const std::vector<double>& b) {
  if (!valid_metric_name(spec.name)) reject(spec, "not a valid metric name");
  if (spec.name.starts_with("beamlet_")) reject(spec, "the beamlet_ prefix is the runtime's");
  if (spec.help.empty()) reject(spec, "a help text is required");
  if (spec.help.find('\n') != std::string::npos) reject(spec, "the help text is one line");
  for (std::size_t i = 0; i < spec.labels.size(); ++i) {
    const auto& l = spec.labels[i];
    if (!valid_label_name(l)) reject(spec, "'" + l + "' is not a valid label name");
    if (k == app_metric_family::kind::histogram && l == "le")
      reject(spec, "a histogram cannot have a label named le");
    if (std::find(spec.labels.begin(), spec.labels.begin() + static_cast<std::ptrdiff_t>(i), l) !=
        spec.labels.begin() + static_cast<std::ptrdiff_t>(i))
      reject(spec, "label '" + l + "' given twice");
  }
  if (k == app_metric_family::kind::histogram) {
    if (b.empty()) reject(spec, "a histogram needs at least one bucket");
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (!std::isfinite(b[i])) reject(spec, "bucket bounds must be finite (+Inf is implied)");
      if (i > 0 && !(b[i - 1] < b[i])) reject(spec, "bucket bounds must strictly increase");
    }
  }
}

/// The families of one runtime.
struct app_metrics_registry final : runtime_extension {
  std::mutex mu;
  std::vector<std::unique_ptr<app_metric_family>> families;  // registration order

  app_metric_family& add(const metric_spec& spec, app_metric_family::kind k,
                         std::vector<double> buckets) {
    check(spec, k, buckets);
    std::lock_guard lock(mu);
    for (const auto& f : families) {
      if (f->spec().name != spec.name) continue;
      if (f->which() != k || f->spec().labels != spec.labels || f->buckets() != buckets ||
          f->spec().help != spec.help)
        reject(spec, "already registered with a different kind, help, labels or buckets");
      return *f;
    }
    families.push_back(std::make_unique<app_metric_family>(spec, k, std::move(buckets)));
    return *families.back();
  }

  std::vector<app_metric_family*> all() {
    std::lock_guard lock(mu);
    std::vector<app_metric_family*> out;
    out.reserve(families.size());
    for (const auto& f : families) out.push_back(f.get());
    return out;
  }
};

void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

/// `{a="x",b="y"` plus `extra` (already formatted), closed; nothing when both are empty.
void append_labels(std::string& out, const metric_spec& spec,
                   const std::vector<std::string>& values, std::string_view extra = {}) {
  if (values.empty() && extra.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += metrics_writer::label(spec.labels[i], values[i]);
  }
  if (!extra.empty()) {
    if (!values.empty()) out += ',';
    out += extra;
  }
  out += '}';
}

/// One sample line; counts are integers (a double would round counts past 2^53).
template <class Value>
void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   const metric_spec& spec, const std::vector<std::string>& values, Value v,
                   std::string_view extra = {}) {
  out += name;
  out += suffix;
  append_labels(out, spec, values, extra);
  out += ' ';
  if constexpr (std::is_same_v<Value, double>)
    append_number(out, v);
  else
    out += std::to_string(v);
  out += '\n';
}

app_metrics_registry& registry_of(runtime& rt) {
  return extension<app_metrics_registry>(rt);
}
app_metrics_registry& registry_of(basic_process& self) {
  return extension<app_metrics_registry>(self);
}

}  // namespace

namespace metrics {

std::uint64_t counter::value() const noexcept {
  std::uint64_t sum = 0;
  for (const auto& s : stripes_) sum += s.v.load(std::memory_order_relaxed);
  return sum;
}

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      cells_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void histogram::observe(double v) noexcept {
  // NaN compares false with every bound, so lower_bound would file it under the first one.
  const std::size_t i =
      std::isnan(v) ? bounds_.size()
                    : static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                               bounds_.begin());
  cells_[i].fetch_add(1, std::memory_order_relaxed);
  detail::atomic_add(sum_, v);
}

histogram::snapshot histogram::read() const {
  snapshot s;
  s.bounds = bounds_;
  s.counts.resize(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += cells_[i].load(std::memory_order_relaxed);
    s.counts[i] = running;
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

template <class Metric>
void* family<Metric>::find(std::vector<std::string_view> values) {
  return f_->find(std::move(values));
}

template <class Metric>
const metrics::spec& family<Metric>::spec() const noexcept {
  return f_->spec();
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;

std::vector<double> default_buckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

counter_family& add_counter(runtime& rt, const metrics::spec& spec) {
  return registry_of(rt).add(spec, app_metric_family::kind::counter, {}).as_counter;
}
gauge_family& add_gauge(runtime& rt, const metrics::spec& spec) {
  return registry_of(rt).add(spec, app_metric_family::kind::gauge, {}).as_gauge;
}
histogram_family& add_histogram(runtime& rt, const metrics::spec& spec,
                                std::vector<double> buckets) {
  return registry_of(rt)
      .add(spec, app_metric_family::kind::histogram, std::move(buckets))
      .as_histogram;
}
counter_family& add_counter(basic_process& self, const metrics::spec& spec) {
  return registry_of(self).add(spec, app_metric_family::kind::counter, {}).as_counter;
}
gauge_family& add_gauge(basic_process& self, const metrics::spec& spec) {
  return registry_of(self).add(spec, app_metric_family::kind::gauge, {}).as_gauge;
}
histogram_family& add_histogram(basic_process& self, const metrics::spec& spec,
                                std::vector<double> buckets) {
  return registry_of(self)
      .add(spec, app_metric_family::kind::histogram, std::move(buckets))
      .as_histogram;
}

}  // namespace metrics

namespace detail {

void render_app_metrics(runtime_core& core, std::string& out) {
  for (app_metric_family* f : extension<app_metrics_registry>(core).all()) {
    const metric_spec& spec = f->spec();
    const auto kind = f->which();
    out += "# HELP ";
    out += spec.name;
    out += ' ';
    out += spec.help;
    out += "\n# TYPE ";
    out += spec.name;
    out += kind == app_metric_family::kind::counter ? " counter\n"
           : kind == app_metric_family::kind::gauge ? " gauge\n"
                                                    : " histogram\n";
    for (const auto& [values, series] : f->series()) {
      switch (kind) {
        case app_metric_family::kind::counter:
          append_sample(out, spec.name, "", spec, values,
                        static_cast<const counter*>(series)->value());
          break;
        case app_metric_family::kind::gauge:
          append_sample(out, spec.name, "", spec, values,
                        static_cast<const gauge*>(series)->value());
          break;
        case app_metric_family::kind::histogram: {
          const auto h = static_cast<const histogram*>(series)->read();
          for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
            std::string le = "le=\"";
            if (i < h.bounds.size())
              append_number(le, h.bounds[i]);
            else
              le += "+Inf";
            le += '"';
            append_sample(out, spec.name, "_bucket", spec, values, h.counts[i], le);
          }
          append_sample(out, spec.name, "_sum", spec, values, h.sum);
          append_sample(out, spec.name, "_count", spec, values, h.count);
          break;
        }
      }
    }
  }
}

}  // namespace detail

BEAMLET_END_PRIVATE_NAMESPACE
