// The endpoint's pages (see http_pages.hpp). Every page reads the runtime without asking the
// processes it describes anything, so it answers while the system is overloaded.
#include "http_pages.hpp"

#include <charconv>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <beamlet/core/process.hpp>
#include <beamlet/core/process_info.hpp>
#include <beamlet/observe/metrics.hpp>
#include <beamlet/observe/top.hpp>
#include <beamlet/otp/supervisor_stats.hpp>

#include "json.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {
namespace {

using answer = http_answer;
using query = http_query;

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX and '+' decoded; a malformed escape is kept as written.
std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 &&
               hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

void parse_form(std::string_view rest, std::map<std::string, std::string, std::less<>>& params) {
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view kv = rest.substr(0, amp);
    const auto eq = kv.find('=');
    if (!kv.empty())
      params.emplace(percent_decoded(kv.substr(0, eq)), eq == std::string_view::npos
                                                            ? std::string()
                                                            : percent_decoded(kv.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
}

http_query parse_http_target(std::string_view target) {
  query q;
  const auto qm = target.find('?');
  q.path = std::string(target.substr(0, qm));
  if (qm != std::string_view::npos) parse_form(target.substr(qm + 1), q.params);
  return q;
}

std::optional<std::size_t> http_query::number(std::string_view key, std::size_t fallback) const {
  const auto it = params.find(key);
  if (it == params.end()) return fallback;
  std::size_t v = 0;
  const char* b = it->second.data();
  const char* e = b + it->second.size();
  const auto [end, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || end != e) return std::nullopt;
  return v;
}

std::string_view http_query::text(std::string_view key) const {
  const auto it = params.find(key);
  return it == params.end() ? std::string_view() : std::string_view(it->second);
}

answer bad_parameter(const std::string& what) {
  return answer{400, "text/plain; charset=utf-8",
                "beamlet: bad parameter " + std::string(what) + "\n"};
}

void json_field(std::string& out, std::string_view key, std::string_view value, bool first) {
  if (!first) out += ',';
  detail::append_json_string(out, key);
  out += ':';
  detail::append_json_string(out, value);
}
void json_number(std::string& out, std::string_view key, std::uint64_t value) {
  out += ',';
  detail::append_json_string(out, key);
  out += ':';
  out += std::to_string(value);
}

namespace {

answer processes_page(basic_process& self, const query& q, const http_endpoint_options& opts) {
  const auto n = q.number("n", opts.top_n);
  if (!n || *n > opts.max_page_entries)
    return bad_parameter("n (at most " + std::to_string(opts.max_page_entries) +
                         " per page: page on with offset=)");
  const auto offset = q.number("offset", 0);
  if (!offset || *offset > std::size_t{1} << 40) return bad_parameter("offset");
  top_by by = top_by::message_queue_len;
  if (const auto it = q.params.find("by"); it != q.params.end()) {
    if (it->second == "message_queue_len")
      by = top_by::message_queue_len;
    else if (it->second == "memory")
      by = top_by::memory;
    else if (it->second == "reductions")
      by = top_by::reductions;
    else
      return bad_parameter("by");
  }
  const std::vector<top_entry> ranked = top(self, *offset + *n, by);
  const std::size_t total = detail::stats_of(*detail::runtime_of(self)).processes;
  std::string out = "{";
  json_field(out, "by", to_string(by), true);
  json_number(out, "offset", *offset);
  json_number(out, "total", total);
  if (*offset + *n < total) json_number(out, "next_offset", *offset + *n);
  out += ",\"processes\":[";
  bool first = true;
  for (std::size_t i = *offset; i < ranked.size(); ++i) {
    const top_entry& e = ranked[i];
    if (!first) out += ',';
    first = false;
    out += '{';
    json_field(out, "pid", e.pid.to_string(), true);
    out += ",\"value\":" + std::to_string(e.value);
    json_field(out, "registered_name", e.registered_name);
    json_field(out, "initial_call", e.initial_call);
    json_field(out, "status", to_string(e.status));
    json_number(out, "message_queue_len", e.message_queue_len);
    json_field(out, "waiting_for", e.waiting_for);
    out += '}';
  }
  out += "]}\n";
  return answer{200, "application/json", std::move(out)};
}

// The supervision tree, from the parent links of the processes (immutable, readable without
// asking anyone): a supervisor's children are the live processes it spawned. Supervisors are
// the roots unless their own parent is a supervisor.
class tree_builder {
 public:
  tree_builder(basic_process& self, std::size_t max_children, std::size_t budget,
               std::size_t offset)
      : self_(self), max_children_(max_children), budget_(budget), offset_(offset) {
    for (const auto& s : supervisor_stats(*detail::runtime_of(self)))
      sups_.emplace(s.supervisor, s);
    for (const auto& p : detail::sample_processes(*detail::runtime_of(self)))
      if (sups_.count(p.parent) != 0) children_[p.parent].push_back(p);
  }

  /// Every root supervisor and what is below it.
  std::string render() {
    std::string out = "{\"supervisors\":[";
    bool first = true;
    for (const auto& [pid_, s] : sups_) {
      const auto d = process_info(self_, pid_);
      if (d && sups_.count(d->parent) != 0) continue;  // not a root
      if (!first) out += ',';
      first = false;
      node(out, pid_, 0, 0);
    }
    return finish(out);
  }

  /// One supervisor's subtree, its children listed from `offset` on (paging); nullopt when
  /// `root` is not a supervisor.
  std::optional<std::string> render(pid root) {
    if (sups_.count(root) == 0) return std::nullopt;
    std::string out = "{\"supervisors\":[";
    node(out, root, 0, offset_);
    return finish(out);
  }

 private:
  std::string finish(std::string& out) {
    out += "]";
    if (truncated_) out += ",\"truncated\":true";
    return out + "}\n";
  }

  void node(std::string& out, pid p, int depth, std::size_t from) {
    if (budget_ != 0) --budget_;
    const auto d = process_info(self_, p);
    out += '{';
    json_field(out, "pid", p.to_string(), true);
    json_field(out, "registered_name", d ? d->registered_name : std::string());
    json_field(out, "initial_call", d ? d->initial_call : std::string());
    json_field(out, "status", d ? to_string(d->status) : std::string_view("exited"));
    json_number(out, "message_queue_len", d ? d->message_queue_len : 0);
    const auto sup = sups_.find(p);
    if (sup == sups_.end()) {
      out += '}';
      return;
    }
    json_field(out, "kind", sup->second.kind);
    json_number(out, "restarts", sup->second.restarts);
    const auto& kids = children_[p];
    json_number(out, "children_total", kids.size());
    if (from != 0) json_number(out, "children_offset", from);
    out += ",\"children\":[";
    const std::size_t end = std::min(kids.size(), from + max_children_);
    for (std::size_t i = from; i < end; ++i) {
      if (budget_ == 0) {  // the answer's size is bounded, whatever the tree's
        truncated_ = true;
        break;
      }
      if (i > from) out += ',';
      if (depth < 32)
        node(out, kids[i].id, depth + 1, 0);
      else
        out += "{}";  // a cycle cannot happen (pids are never reused); depth is bounded anyway
    }
    out += "]}";
  }

  basic_process& self_;
  std::size_t max_children_;
  std::size_t budget_;
  std::size_t offset_;
  bool truncated_ = false;
  std::map<pid, supervisor_statistics> sups_;
  std::unordered_map<pid, std::vector<detail::process_sample>> children_;
};

answer tree_page(basic_process& self, const query& q, const http_endpoint_options& opts) {
  const auto n = q.number("max_children", opts.tree_max_children);
  if (!n || *n > opts.max_page_entries)
    return bad_parameter("max_children (at most " + std::to_string(opts.max_page_entries) + ")");
  const auto offset = q.number("offset", 0);
  if (!offset) return bad_parameter("offset");
  tree_builder b(self, *n, opts.max_page_entries, *offset);
  const auto it = q.params.find("supervisor");
  if (it == q.params.end()) return answer{200, "application/json", b.render()};
  const auto root = parse_local_pid(it->second);
  if (!root) return bad_parameter("supervisor");
  auto page = b.render(*root);
  if (!page) return answer{404, "text/plain; charset=utf-8", "beamlet: no such supervisor\n"};
  return answer{200, "application/json", std::move(*page)};
}

}  // namespace

std::optional<pid> parse_local_pid(std::string_view s) {
  if (!s.empty() && s.front() == '<') s.remove_prefix(1);
  if (!s.empty() && s.back() == '>') s.remove_suffix(1);
  if (s.substr(0, 2) != "0." || s.size() < 5 || s.substr(s.size() - 2) != ".0") return std::nullopt;
  const std::string_view digits = s.substr(2, s.size() - 4);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v == 0) return std::nullopt;
  return pid(v);
}

std::optional<std::string> render_tree(basic_process& self, std::size_t max_children,
                                       std::size_t budget, std::size_t offset,
                                       std::optional<pid> root) {
  tree_builder b(self, max_children, budget, offset);
  if (!root) return b.render();
  return b.render(*root);
}

http_answer route_http(basic_process& self, const http_endpoint_options& opts,
                       std::string_view target) {
  const query q = parse_http_target(target);
  for (const http_page& page : opts.pages) {
    if (page.path != q.path) continue;
    const auto qm = target.find('?');
    const std::string_view query_string =
        qm == std::string_view::npos ? std::string_view() : target.substr(qm + 1);
    try {
      if (page.respond) {
        http_response r = page.respond(query_string);
        return answer{r.status, std::move(r.content_type), std::move(r.body)};
      }
      return answer{200, page.content_type, page.render(query_string)};
    } catch (const std::exception& e) {
      return answer{500, "text/plain; charset=utf-8", std::string(e.what()) + "\n"};
    }
  }
  const http_builtin_pages& on = opts.builtin;
  if (on.metrics && q.path == "/metrics")
    return answer{200, "text/plain; version=0.0.4; charset=utf-8", prometheus_metrics(self)};
  if (on.processes && q.path == "/processes") return processes_page(self, q, opts);
  if (on.tree && q.path == "/tree") return tree_page(self, q, opts);
  if (on.index && q.path == "/")
    return answer{200, "text/plain; charset=utf-8",
                  std::string(opts.console ? "beamlet endpoint: /console " : "beamlet endpoint: ") +
                      "/metrics /processes?n=20&offset=0&by=message_queue_len|memory|"
                      "reductions /tree?max_children=100[&supervisor=<0.N.0>&offset=0]\n"};
  return answer{404, "text/plain; charset=utf-8", "beamlet: no such page\n"};
}

}  // namespace detail

std::map<std::string, std::string, std::less<>> parse_query(std::string_view query) {
  std::map<std::string, std::string, std::less<>> params;
  detail::parse_form(query, params);
  return params;
}

BEAMLET_END_PRIVATE_NAMESPACE
