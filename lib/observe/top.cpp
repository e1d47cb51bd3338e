// recon-style views: rank every process by one counter (a pass over the process table that
// reads a few atomics each), then look closely only at the n that made the list.
#include <beamlet/observe/top.hpp>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <unordered_map>

#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/receive.hpp>
#include <beamlet/core/runtime.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

std::string_view to_string(top_by b) noexcept {
  switch (b) {
    case top_by::message_queue_len:
      return "message_queue_len";
    case top_by::memory:
      return "memory";
    case top_by::reductions:
      return "reductions";
  }
  return "undefined";
}

namespace {

std::int64_t value_of(const detail::process_sample& s, top_by by) {
  switch (by) {
    case top_by::message_queue_len:
      return static_cast<std::int64_t>(s.message_queue_len);
    case top_by::memory:
      return static_cast<std::int64_t>(s.memory);
    case top_by::reductions:
      return static_cast<std::int64_t>(s.reductions);
  }
  return 0;
}

using ranked = std::vector<std::pair<std::int64_t, pid>>;

std::vector<top_entry> finish(detail::runtime_core& rt, ranked r, std::size_t n) {
  n = std::min(n, r.size());
  std::partial_sort(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n), r.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  std::vector<top_entry> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto d = detail::inspect(rt, r[i].second);
    if (!d) continue;  // gone since the pass
    top_entry e;
    e.pid = r[i].second;
    e.value = r[i].first;
    e.registered_name = d->registered_name;
    e.initial_call = d->initial_call;
    e.status = d->status;
    e.message_queue_len = d->message_queue_len;
    e.waiting_for = d->waiting_for;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<top_entry> top_in(detail::runtime_core& rt, std::size_t n, top_by by) {
  ranked r;
  const auto samples = detail::sample_processes(rt);
  r.reserve(samples.size());
  for (const auto& s : samples) r.emplace_back(value_of(s, by), s.id);
  return finish(rt, std::move(r), n);
}

std::unordered_map<pid, std::int64_t> snapshot(detail::runtime_core& rt, top_by by) {
  std::unordered_map<pid, std::int64_t> m;
  const auto samples = detail::sample_processes(rt);
  m.reserve(samples.size());
  for (const auto& s : samples) m.emplace(s.id, value_of(s, by));
  return m;
}

std::vector<top_entry> window_in(detail::runtime_core& rt, std::size_t n, top_by by,
                                 const std::unordered_map<pid, std::int64_t>& before) {
  ranked r;
  const auto samples = detail::sample_processes(rt);
  r.reserve(samples.size());
  for (const auto& s : samples) {
    const auto it = before.find(s.id);
    r.emplace_back(value_of(s, by) - (it != before.end() ? it->second : 0), s.id);
  }
  return finish(rt, std::move(r), n);
}

}  // namespace

std::vector<top_entry> top(runtime& rt, std::size_t n, top_by by) {
  return top_in(rt.core(), n, by);
}

std::vector<top_entry> top(basic_process& self, std::size_t n, top_by by) {
  return top_in(*detail::runtime_of(self), n, by);
}

std::vector<top_entry> top_window(runtime& rt, std::size_t n, top_by by,
                                  std::chrono::milliseconds interval) {
  const auto before = snapshot(rt.core(), by);
  std::this_thread::sleep_for(interval);
  return window_in(rt.core(), n, by, before);
}

task<std::vector<top_entry>> top_window(process& self, std::size_t n, top_by by,
                                        std::chrono::milliseconds interval) {
  detail::runtime_core& rt = *detail::runtime_of(self);
  const auto before = snapshot(rt, by);
  // A receive that matches nothing: the process sleeps, and still dies if it is killed.
  struct never {};
  co_await self.receive(on<never>(), after(interval));
  co_return window_in(rt, n, by, before);
}

std::string format_top(const std::vector<top_entry>& entries, top_by by) {
  const std::string head(to_string(by));
  std::size_t w_pid = 3, w_val = head.size(), w_name = 4, w_call = 12;
  for (const auto& e : entries) {
    w_pid = std::max(w_pid, e.pid.to_string().size());
    w_val = std::max(w_val, std::to_string(e.value).size());
    w_name = std::max(w_name, e.registered_name.size());
    w_call = std::max(w_call, std::min<std::size_t>(e.initial_call.size(), 40));
  }
  auto pad = [](std::string s, std::size_t w, bool right) {
    if (s.size() > w) s = s.substr(0, w - 3) + "...";
    const std::string fill(w - s.size(), ' ');
    return right ? fill + s : s + fill;
  };
  std::string out = pad("pid", w_pid, false) + "  " + pad(head, w_val, true) + "  " +
                    pad("name", w_name, false) + "  " + pad("initial call", w_call, false) +
                    "  status    waiting for\n";
  for (const auto& e : entries) {
    out += pad(e.pid.to_string(), w_pid, false) + "  " + pad(std::to_string(e.value), w_val, true) +
           "  " + pad(e.registered_name, w_name, false) + "  " +
           pad(e.initial_call, w_call, false) + "  " +
           pad(std::string(to_string(e.status)), 8, false) + "  " + e.waiting_for + "\n";
  }
  return out;
}

BEAMLET_END_PRIVATE_NAMESPACE
