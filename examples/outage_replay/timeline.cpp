#include "timeline.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace replay {

namespace {

/// A row an operator would call healthy: every provisioned instance in the ring, no backlog.
constexpr std::size_t healthy_queue = 1'000;
/// A backlog: the supervisor is past the point where its queue costs more than its work.
constexpr std::size_t backlog_queue = 5'000;

bool healthy(const row& r) {
  return r.ring_size() == r.provisioned && r.max_queue() < healthy_queue;
}

std::string compact(std::size_t n) {
  char buf[32];
  if (n >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 10'000)
    std::snprintf(buf, sizeof buf, "%zuk", n / 1000);
  else
    std::snprintf(buf, sizeof buf, "%zu", n);
  return buf;
}

}  // namespace

std::size_t row::max_queue() const {
  return queues.empty() ? 0 : *std::max_element(queues.begin(), queues.end());
}
int row::ring_size() const {
  return std::popcount(members);
}
double row::rpc_success() const {
  const std::int64_t n = rpc_ok + rpc_failed;
  return n == 0 ? -1 : static_cast<double>(rpc_ok) / static_cast<double>(n);
}

const row& timeline::record(double t) {
  row r;
  r.t = t;
  r.provisioned = cx_.disc->provisioned();
  for (int i = 0; i < r.provisioned; ++i) r.queues.push_back(instance_queue(cx_, i));
  r.members = cx_.disc->members();
  const counters& c = *cx_.c;
  const auto delta = [](const std::atomic<std::int64_t>& a, std::int64_t& last) {
    const std::int64_t v = a.load(std::memory_order_relaxed);
    const std::int64_t d = v - last;
    last = v;
    return d;
  };
  r.rpc_ok = delta(c.rpc_ok, last_ok_);
  r.rpc_failed = delta(c.rpc_failed, last_failed_);
  r.conn_starts = delta(c.conn_starts, last_conn_);
  r.reconnects = delta(c.reconnects, last_reconnects_);
  r.downs = delta(c.downs, last_downs_);
  r.unplaced = c.unplaced.load(std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  r.event = std::move(pending_event_);
  pending_event_.clear();
  rows_.push_back(std::move(r));
  return rows_.back();
}

void timeline::mark(const std::string& what) {
  std::lock_guard lock(mu_);
  if (!pending_event_.empty()) pending_event_ += "; ";
  pending_event_ += what;
}

void timeline::restarted(double t, std::vector<int> instances) {
  std::lock_guard lock(mu_);
  restarts_.emplace_back(t, std::move(instances));
}

verdict timeline::judge() const {
  std::lock_guard lock(mu_);
  const scenario& sc = *cx_.sc;
  verdict v;
  v.placements = cx_.c->placed.load();
  v.lease_expiries = cx_.c->lease_expiries.load();
  v.gateway_ooms = cx_.c->gateway_ooms.load();
  v.sessions_killed = cx_.c->sessions_killed.load();
  v.downs = cx_.c->downs.load();
  v.reconnects = cx_.c->reconnects.load();
  v.shed = cx_.c->shed.load();
  v.rate_limited = cx_.c->rate_limited.load();
  v.expired = cx_.c->expired.load();
  v.ring_min = sc.instances;
  v.provisioned = sc.instances;
  bool dropped = false;
  for (const row& r : rows_) {
    if (r.max_queue() > v.peak_queue) {
      v.peak_queue = r.max_queue();
      v.peak_at = r.t;
    }
    // Counted once the ring has formed (every lease is taken in the first second).
    if (r.t >= 1.5) {
      v.ring_min = std::min(v.ring_min, r.ring_size());
      dropped = dropped || r.ring_size() < r.provisioned;
    }
    v.provisioned = std::max(v.provisioned, r.provisioned);
  }
  if (!rows_.empty()) v.unplaced_at_end = rows_.back().unplaced;
  // Recovered: from some second on, every row is healthy and (almost) every connected
  // participant's call is placed.
  const std::int64_t tolerated = std::max<std::int64_t>(1, sc.sessions / 100);
  const auto recovered = [&](const row& r) { return healthy(r) && r.unplaced <= tolerated; };
  if (!rows_.empty() && recovered(rows_.back())) {
    std::size_t i = rows_.size();
    while (i > 0 && recovered(rows_[i - 1]) && rows_[i - 1].t > sc.fault_at) --i;
    v.recovered_after = std::max(0.0, rows_[i].t - sc.fault_at);
  }
  // A relapse: after a restart (which empties the restarted mailboxes), the instance rejoined
  // the ring, then backed up again or dropped out again.
  for (const auto& [when, instances] : restarts_) {
    bool relapsed = false;
    for (const int inst : instances) {
      bool back = false;
      for (const row& r : rows_) {
        if (r.t <= when || inst >= static_cast<int>(r.queues.size())) continue;
        const bool in_ring = (r.members >> inst) & 1u;
        const std::size_t q = r.queues[static_cast<std::size_t>(inst)];
        if (in_ring) back = true;
        if (back && (!in_ring || q >= backlog_queue)) relapsed = true;
      }
    }
    if (relapsed) ++v.relapses;
  }
  v.cascade = v.peak_queue >= backlog_queue && v.lease_expiries > 0 && dropped;
  v.healthy = !dropped && v.peak_queue < backlog_queue && v.recovered_after >= 0;
  return v;
}

std::string timeline::format_header(int instances) {
  std::string h = "   t  ring";
  h.append(static_cast<std::size_t>(std::max(0, instances - 4)), ' ');
  h += "  max mailbox per instance";
  return h + "            rpc ok   conn/s  reconn/s  unplaced  event";
}

std::string timeline::format_row(const row& r) {
  char buf[96];
  std::string ring;
  for (int i = 0; i < r.provisioned; ++i) ring += ((r.members >> i) & 1u) ? '0' + i % 10 : '.';
  std::string queues;
  for (const std::size_t q : r.queues) {
    const std::string s = compact(q);
    queues += std::string(6 - std::min<std::size_t>(6, s.size()), ' ') + s;
  }
  std::snprintf(buf, sizeof buf, "%4.0f  %s  ", r.t, ring.c_str());
  std::string out = buf;
  out += queues;
  if (r.queues.size() < 6) out.append((6 - r.queues.size()) * 6, ' ');
  const double s = r.rpc_success();
  if (s < 0)
    std::snprintf(buf, sizeof buf, "     -");
  else
    std::snprintf(buf, sizeof buf, "  %5.1f%%", 100 * s);
  out += buf;
  std::snprintf(buf, sizeof buf, " %8lld %9lld %9lld  ", static_cast<long long>(r.conn_starts),
                static_cast<long long>(r.reconnects), static_cast<long long>(r.unplaced));
  out += buf;
  return out + r.event;
}

std::string timeline::csv() const {
  std::lock_guard lock(mu_);
  int most = 0;
  for (const row& r : rows_) most = std::max(most, r.provisioned);
  std::string out =
      "t,event,ring_members,provisioned,max_queue,rpc_ok,rpc_failed,rpc_success,conn_starts,"
      "reconnects,downs,unplaced";
  for (int i = 0; i < most; ++i) out += ",queue_" + std::to_string(i);
  out += "\n";
  char buf[256];
  for (const row& r : rows_) {
    // The event is never empty ("-"), and never holds the separator, so every row has every
    // column (gnuplot reads an empty last field as a missing one).
    std::string ev = r.event.empty() ? "-" : r.event;
    std::replace(ev.begin(), ev.end(), ',', ';');
    std::snprintf(buf, sizeof buf, "%.0f,%s,%d,%d,%zu,%lld,%lld,%.4f,%lld,%lld,%lld,%lld", r.t,
                  ev.c_str(), r.ring_size(), r.provisioned, r.max_queue(),
                  static_cast<long long>(r.rpc_ok), static_cast<long long>(r.rpc_failed),
                  r.rpc_success() < 0 ? 1.0 : r.rpc_success(),
                  static_cast<long long>(r.conn_starts), static_cast<long long>(r.reconnects),
                  static_cast<long long>(r.downs), static_cast<long long>(r.unplaced));
    out += buf;
    for (int i = 0; i < most; ++i)
      out += "," + (i < static_cast<int>(r.queues.size())
                        ? std::to_string(r.queues[static_cast<std::size_t>(i)])
                        : std::string("0"));
    out += "\n";
  }
  return out;
}

std::string timeline::json(bool done) const {
  std::lock_guard lock(mu_);
  const scenario& sc = *cx_.sc;
  std::string out = "{\"fix\":\"" + sc.fix_name + "\",\"recovery\":\"" + sc.recovery_name +
                    "\",\"instances\":" + std::to_string(sc.instances) +
                    ",\"fault_at\":" + std::to_string(sc.fault_at) +
                    ",\"seconds\":" + std::to_string(sc.seconds) +
                    ",\"done\":" + (done || done_ ? "true" : "false") + ",\"rows\":[";
  bool first = true;
  for (const row& r : rows_) {
    if (!first) out += ',';
    first = false;
    out += "{\"t\":" + std::to_string(static_cast<int>(r.t)) +
           ",\"ring\":" + std::to_string(r.ring_size()) +
           ",\"provisioned\":" + std::to_string(r.provisioned) +
           ",\"members\":" + std::to_string(r.members) + ",\"queues\":[";
    for (std::size_t i = 0; i < r.queues.size(); ++i)
      out += (i ? "," : "") + std::to_string(r.queues[i]);
    out += "],\"rpc_ok\":" + std::to_string(r.rpc_ok) +
           ",\"rpc_failed\":" + std::to_string(r.rpc_failed) +
           ",\"conn\":" + std::to_string(r.conn_starts) +
           ",\"reconnects\":" + std::to_string(r.reconnects) +
           ",\"unplaced\":" + std::to_string(r.unplaced) + ",\"event\":\"";
    for (const char ch : r.event)
      if (ch != '"' && ch != '\\' && static_cast<unsigned char>(ch) >= 0x20) out += ch;
    out += "\"}";
  }
  return out + "]}\n";
}

std::string format_verdict(const verdict& v, const scenario& sc) {
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf,
                "participants placed after the fault  %lld (unplaced at the end: %lld of %d)\n",
                static_cast<long long>(v.placements), static_cast<long long>(v.unplaced_at_end),
                sc.sessions);
  out += buf;
  std::snprintf(buf, sizeof buf, "peak mailbox                         %zu (at %.0f s)\n",
                v.peak_queue, v.peak_at);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "ring                                 smallest %d of %d; %lld lease expiries\n",
                v.ring_min, v.provisioned, static_cast<long long>(v.lease_expiries));
  out += buf;
  std::snprintf(buf, sizeof buf,
                "sessions ended / DOWNs / reconnects  %lld killed by the fault, %lld DOWN "
                "messages, %lld sessions restarted\n",
                static_cast<long long>(v.sessions_killed), static_cast<long long>(v.downs),
                static_cast<long long>(v.reconnects));
  out += buf;
  std::snprintf(buf, sizeof buf, "gateway hosts out of memory          %lld\n",
                static_cast<long long>(v.gateway_ooms));
  out += buf;
  if (v.recovered_after >= 0)
    std::snprintf(buf, sizeof buf, "time to recover                      %.0f s after the fault\n",
                  v.recovered_after);
  else
    std::snprintf(buf, sizeof buf, "time to recover                      not within the run\n");
  out += buf;
  std::snprintf(buf, sizeof buf,
                "pool starts refused                  %lld shed, %lld rate-limited\n",
                static_cast<long long>(v.shed), static_cast<long long>(v.rate_limited));
  out += buf;
  std::snprintf(buf, sizeof buf, "dropped past the caller's deadline   %lld\n",
                static_cast<long long>(v.expired));
  out += buf;
  std::snprintf(buf, sizeof buf, "recoveries that relapsed             %d\n", v.relapses);
  out += buf;
  std::snprintf(buf, sizeof buf, "verdict: cascade=%s relapse=%s healthy=%s\n",
                v.cascade ? "yes" : "no", v.relapses > 0 ? "yes" : "no", v.healthy ? "yes" : "no");
  out += buf;
  return out;
}

}  // namespace replay
