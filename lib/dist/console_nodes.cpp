// The console's Nodes view (add_console_source, beamlet/observe/http_endpoint.hpp), added while
// the node runs: the connected nodes, and for one of them its process count and the processes
// with the longest queues, fetched over distribution. Nothing is loaded on the other node: the
// query is Erlang source that the node's own erl_scan, erl_parse and erl_eval read and run
// (three rpc calls of standard modules), so any Erlang or Elixir node answers as it is.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <beamlet/core/process.hpp>
#include <beamlet/core/runtime.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/dist/term.hpp>
#include <beamlet/observe/http_endpoint.hpp>

#include "console_nodes.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {
namespace {

constexpr auto rpc_timeout = std::chrono::seconds(10);
constexpr long max_rows = 1000;

void quoted(std::string& out, std::string_view s) {
  out += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

http_response text(unsigned status, std::string body) {
  return http_response{status, "text/plain; charset=utf-8", "beamlet: " + std::move(body) + "\n"};
}

// The expression the other node evaluates: {ProcessCount, Top}, Top being the n processes with
// the longest queues as {QueueLen, Pid, Info}, longest first.
std::string top_query(long n) {
  return "N = " + std::to_string(n) +
         ", Ps = erlang:processes(),"
         " Keys = [message_queue_len, registered_name, memory, reductions, current_function],"
         " Info = [{P, erlang:process_info(P, Keys)} || P <- Ps],"
         " Live = [{proplists:get_value(message_queue_len, I), P, I} || {P, I} <- Info,"
         " I =/= undefined],"
         " {length(Ps), lists:sublist(lists:reverse(lists:sort(Live)), N)}.";
}

std::string erlang_text(const term& t) {
  if (t.is_atom()) return t.atom_name();
  return t.to_string();
}

// One value of a process_info list ([{Key, Value}...]).
const term* info_value(const term& info, std::string_view key) {
  if (!info.is_list()) return nullptr;
  for (const term& kv : info.elements())
    if (kv.is_tuple() && kv.size() == 2 && kv[0].is_atom(key)) return &kv[1];
  return nullptr;
}

std::int64_t info_integer(const term& info, std::string_view key) {
  const term* v = info_value(info, key);
  return v != nullptr && v->is_integer() ? v->integer() : 0;
}

// An rpc's value, or the error as the answer to give (502: the other node said no).
task<expected<term, http_response>> call(process& self, const std::string& node, const char* module,
                                         const char* function, term_list args) {
  std::string m = module;
  std::string f = function;
  std::string to = node;
  auto r = co_await rpc_call(self, std::move(to), std::move(m), std::move(f), std::move(args),
                             rpc_timeout);
  if (!r) {
    http_response failed =
        text(502, node + ": " + module + ":" + function + " failed: " + r.error().to_string());
    co_return unexpected(std::move(failed));
  }
  co_return std::move(*r);
}

task<http_response> nodes_page(runtime& rt) {
  std::string out = "{\"node\":";
  const auto me = self(rt);
  quoted(out, me ? me->name : std::string());
  out += ",\"nodes\":[";
  const std::vector<std::string> visible = nodes(rt, node_kind::visible);
  bool first = true;
  for (const std::string& n : nodes(rt, node_kind::connected)) {
    if (!first) out += ',';
    first = false;
    out += "{\"name\":";
    quoted(out, n);
    out += std::find(visible.begin(), visible.end(), n) != visible.end() ? ",\"visible\":true"
                                                                         : ",\"visible\":false";
    out += ",\"outbox_bytes\":" + std::to_string(outbox_bytes(rt, n).value_or(0));
    out += '}';
  }
  co_return http_response{200, "application/json", out + "]}\n"};
}

task<http_response> node_page(process& self, runtime& rt, std::string query) {
  const auto params = parse_query(query);
  const auto name_it = params.find("name");
  if (name_it == params.end() || name_it->second.empty())
    co_return text(400, "bad parameter name (a connected node)");
  const std::string node = name_it->second;
  long n = 20;
  if (const auto it = params.find("n"); it != params.end()) {
    n = std::atol(it->second.c_str());
    if (n < 1 || n > max_rows) co_return text(400, "bad parameter n (1 to 1000)");
  }
  const std::vector<std::string> connected = nodes(rt, node_kind::connected);
  if (std::find(connected.begin(), connected.end(), node) == connected.end())
    co_return text(404, "not connected to " + node);

  const auto started = std::chrono::steady_clock::now();
  term_list scan_args{term::make_charlist(top_query(n))};
  auto scanned = co_await call(self, node, "erl_scan", "string", std::move(scan_args));
  if (!scanned) co_return scanned.error();
  if (!scanned->is_tuple() || scanned->size() != 3 || !(*scanned)[0].is_atom("ok"))
    co_return text(502, node + ": erl_scan answered " + scanned->to_string());
  term_list parse_args{(*scanned)[1]};
  auto parsed = co_await call(self, node, "erl_parse", "parse_exprs", std::move(parse_args));
  if (!parsed) co_return parsed.error();
  if (!parsed->is_tuple() || parsed->size() != 2 || !(*parsed)[0].is_atom("ok"))
    co_return text(502, node + ": erl_parse answered " + parsed->to_string());
  term_list eval_args{(*parsed)[1], term::make_list({})};
  auto value = co_await call(self, node, "erl_eval", "exprs", std::move(eval_args));
  if (!value) co_return value.error();
  // {value, {Count, Top}, Bindings}
  if (!value->is_tuple() || value->size() != 3 || !(*value)[1].is_tuple() ||
      (*value)[1].size() != 2 || !(*value)[1][0].is_integer() || !(*value)[1][1].is_list())
    co_return text(502, node + ": the query answered " + value->to_string());
  const term& result = (*value)[1];

  std::string out = "{\"name\":";
  quoted(out, node);
  out += ",\"processes\":" + std::to_string(result[0].integer());
  out += ",\"top\":[";
  bool first = true;
  for (const term& row : result[1].elements()) {
    if (!row.is_tuple() || row.size() != 3) continue;
    const term& info = row[2];
    if (!first) out += ',';
    first = false;
    out += "{\"pid\":";
    quoted(out, row[1].to_string());
    const term* reg = info_value(info, "registered_name");
    out += ",\"registered_name\":";
    quoted(out, reg != nullptr && reg->is_atom() ? reg->atom_name() : std::string());
    out += ",\"message_queue_len\":" + std::to_string(info_integer(info, "message_queue_len"));
    out += ",\"memory\":" + std::to_string(info_integer(info, "memory"));
    out += ",\"reductions\":" + std::to_string(info_integer(info, "reductions"));
    const term* fn = info_value(info, "current_function");
    std::string current;
    if (fn != nullptr && fn->is_tuple() && fn->size() == 3)
      current = erlang_text((*fn)[0]) + ":" + erlang_text((*fn)[1]) + "/" + erlang_text((*fn)[2]);
    out += ",\"current_function\":";
    quoted(out, current);
    out += '}';
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  out += "],\"took_ms\":" + std::to_string(took.count()) + "}\n";
  http_response done{200, "application/json", std::move(out)};  // named: docs/gcc12-coroutines.md
  co_return done;
}

}  // namespace

void add_console_nodes(runtime& rt) {
  runtime* r = &rt;
  add_console_gauge(rt, "nodes", [r] {
    return static_cast<std::int64_t>(nodes(*r, node_kind::connected).size());
  });
  add_console_source(rt, "nodes", [r](process&, std::string) { return nodes_page(*r); });
  add_console_source(rt, "node", [r](process& self, std::string query) {
    return node_page(self, *r, std::move(query));
  });
}

void remove_console_nodes(runtime& rt) {
  remove_console_source(rt, "nodes");
  remove_console_source(rt, "node");
  remove_console_gauge(rt, "nodes");
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
