// beamlet-top: the console's top view in a terminal (like observer_cli), for an operator on a
// machine without a browser, or a script. It reads the endpoint's console API
// (http_endpoint_options::console) once a second: the newest sample of the overview, and one
// page of the processes table sorted on the server.
//
//   beamlet-top --port 9100                 refreshed every second; keys below
//   beamlet-top --port 9100 --once          one table, as text
//   beamlet-top --port 9100 --once --json   one sample and one page, as JSON
//
// Keys: l queue length, m memory, r reductions, p pid (sorting), o the other order, q quit.
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "json_value.hpp"

namespace beamlet_top {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

const char* const usage =
    "usage: beamlet-top [--host ADDRESS] --port PORT [--n ROWS] [--sort KEY] [--once [--json]]\n"
    "  --host   the endpoint's address (default 127.0.0.1)\n"
    "  --port   the endpoint's port (its console must be on: http_endpoint_options::console)\n"
    "  --n      rows (default: what the terminal holds; 20 with --once)\n"
    "  --sort   message_queue_len (default), memory, reductions or pid\n"
    "  --once   print one view and exit; --json: as JSON, for scripts\n"
    "keys: l queue length, m memory, r reductions, p pid, o the other order, q quit\n";

struct options {
  std::string host = "127.0.0.1";
  std::string port;
  int rows = 0;
  std::string sort = "message_queue_len";
  std::string order;
  bool once = false;
  bool json = false;
};

/// GET `target`; the body of a 200, or an exception saying what went wrong.
std::string get(const options& o, const std::string& target) {
  boost::asio::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  stream.expires_after(std::chrono::seconds(5));
  stream.connect(resolver.resolve(o.host, o.port));
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, o.host);
  req.set(http::field::user_agent, "beamlet-top");
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  http::read(stream, buf, parser);
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  auto res = parser.release();
  if (res.result() == http::status::not_found)
    throw std::runtime_error(target + ": 404 (is the endpoint's console on?)");
  if (res.result() != http::status::ok)
    throw std::runtime_error(target + ": " + std::to_string(res.result_int()) + " " + res.body());
  return std::move(res.body());
}

struct view {
  json_value sample;  // the newest sample (null before the first)
  json_value page;    // /console/api/processes
  int schedulers = 0;
};

view fetch(const options& o, int rows) {
  view v;
  const json_value overview = parse_json(get(o, "/console/api/overview"));
  if (const json_value* h = overview.find("history"); h != nullptr && !h->items.empty())
    v.sample = h->items.back();
  v.schedulers = static_cast<int>(overview.num("schedulers"));
  std::string target = "/console/api/processes?n=" + std::to_string(rows) + "&sort=" + o.sort;
  if (!o.order.empty()) target += "&order=" + o.order;
  v.page = parse_json(get(o, target));
  return v;
}

std::string grouped(double v) {
  const long long n = static_cast<long long>(v);
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    // A comma before each group of three counted from the right.
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytes(double n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (n >= 1024 && i < 4) {
    n /= 1024;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.1f %s", n, units[i]);
  return buf;
}

std::string fit(std::string s, std::size_t width) {
  if (s.size() > width) s = s.substr(0, width - 1) + "~";
  return s;
}

/// The view as text lines, `width` columns wide.
std::string render(const options& o, const view& v, std::size_t width, bool keys) {
  std::string out;
  char line[512];
  const json_value& s = v.sample;
  double busy = 0;
  std::size_t runq = 0;
  if (const json_value* u = s.find("utilisation"); u != nullptr && !u->items.empty()) {
    for (const auto& x : u->items) busy += x.number;
    busy /= static_cast<double>(u->items.size());
  }
  if (const json_value* q = s.find("run_queues"))
    for (const auto& x : q->items) runq += static_cast<std::size_t>(x.number);
  std::snprintf(line, sizeof line,
                "beamlet-top %s:%s  processes %s  schedulers %d (%.0f%% busy)  run queue %s  "
                "messages/s %s  memory %s  queue alarms %s",
                o.host.c_str(), o.port.c_str(), grouped(s.num("processes")).c_str(), v.schedulers,
                busy * 100, grouped(static_cast<double>(runq) + s.num("global_queue")).c_str(),
                grouped(s.num("messages_per_s")).c_str(), bytes(s.num("rss_bytes")).c_str(),
                grouped(s.num("alarms_active")).c_str());
  std::string head = line;
  if (const json_value* g = s.find("gauges"))  // the layers' counts: ports, nodes...
    for (const auto& [name, count] : g->members) head += "  " + name + " " + grouped(count.number);
  out += fit(head, width) + "\n";
  std::snprintf(line, sizeof line, "sorted by %s (%s)%s", v.page.str("sort").c_str(),
                v.page.str("order").c_str(),
                keys ? "   l queue  m memory  r reductions  p pid  o order  q quit" : "");
  out += fit(line, width) + "\n\n";
  const std::size_t call_width = width > 100 ? width - 76 : 24;
  std::snprintf(line, sizeof line, "%-14s %-20s %-*s %12s %11s %12s", "pid", "name",
                static_cast<int>(call_width), "initial call", "queue", "memory", "reductions");
  out += fit(line, width) + "\n";
  if (const json_value* ps = v.page.find("processes")) {
    for (const auto& p : ps->items) {
      std::snprintf(line, sizeof line, "%-14s %-20s %-*s %12s %11s %12s",
                    fit(p.str("pid"), 14).c_str(), fit(p.str("registered_name"), 20).c_str(),
                    static_cast<int>(call_width), fit(p.str("initial_call"), call_width).c_str(),
                    grouped(p.num("message_queue_len")).c_str(), bytes(p.num("memory")).c_str(),
                    grouped(p.num("reductions")).c_str());
      out += fit(line, width) + "\n";
    }
  }
  return out;
}

// -- the terminal ---------------------------------------------------------------------------------

termios saved_mode;
bool raw_mode = false;
volatile std::sig_atomic_t stop_requested = 0;

void restore_terminal() {
  if (!raw_mode) return;
  raw_mode = false;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_mode);
  std::fputs("\x1b[?25h\x1b[?1049l", stdout);  // cursor back, main screen back
  std::fflush(stdout);
}

void enter_raw_terminal() {
  if (::tcgetattr(STDIN_FILENO, &saved_mode) != 0)
    throw std::runtime_error("standard input is not a terminal (use --once)");
  termios raw = saved_mode;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  raw_mode = true;
  std::atexit(restore_terminal);
  std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // the alternate screen, no cursor
}

void on_signal(int) {
  stop_requested = 1;
}

int interactive(options o) {
  enter_raw_terminal();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::string error;
  while (stop_requested == 0) {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
      ws.ws_col = 120;
      ws.ws_row = 40;
    }
    const int rows = o.rows > 0 ? o.rows : std::max(1, ws.ws_row - 5);
    std::string screen;
    try {
      screen = render(o, fetch(o, rows), ws.ws_col, true);
      error.clear();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) screen = "beamlet-top " + o.host + ":" + o.port + "\n\n" + error + "\n";
    std::fputs("\x1b[H\x1b[2J", stdout);
    std::fputs(screen.c_str(), stdout);
    std::fflush(stdout);
    // A second between refreshes, unless a key comes first.
    pollfd in{STDIN_FILENO, POLLIN, 0};
    if (::poll(&in, 1, 1000) <= 0) continue;
    char key = 0;
    if (::read(STDIN_FILENO, &key, 1) != 1) continue;
    switch (key) {
      case 'q':
        stop_requested = 1;
        break;
      case 'l':
        o.sort = "message_queue_len";
        o.order.clear();
        break;
      case 'm':
        o.sort = "memory";
        o.order.clear();
        break;
      case 'r':
        o.sort = "reductions";
        o.order.clear();
        break;
      case 'p':
        o.sort = "pid";
        o.order.clear();
        break;
      case 'o': {
        const bool desc = o.order.empty() ? o.sort != "pid" : o.order == "desc";
        o.order = desc ? "asc" : "desc";
        break;
      }
      default:
        break;
    }
  }
  restore_terminal();
  return 0;
}

int once(const options& o) {
  const view v = fetch(o, o.rows > 0 ? o.rows : 20);
  if (!o.json) {
    std::fputs(render(o, v, 160, false).c_str(), stdout);
    return 0;
  }
  json_value out;
  out.type = json_value::kind::object;
  out.members.emplace_back("endpoint", json_value{});
  out.members.back().value.type = json_value::kind::string;
  out.members.back().value.text = o.host + ":" + o.port;
  out.members.emplace_back("sample", v.sample);
  for (const char* key : {"sort", "order", "offset", "total", "processes"})
    if (const json_value* x = v.page.find(key)) out.members.emplace_back(key, *x);
  std::string text;
  write_json(text, out);
  std::puts(text.c_str());
  return 0;
}

}  // namespace
}  // namespace beamlet_top

int main(int argc, char** argv) {
  using namespace beamlet_top;
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (a == "--host" && has_value) {
      o.host = argv[++i];
    } else if (a == "--port" && has_value) {
      o.port = argv[++i];
    } else if (a == "--n" && has_value) {
      o.rows = std::atoi(argv[++i]);
      if (o.rows <= 0 || o.rows > 10000) {
        std::fputs("beamlet-top: --n takes 1 to 10000\n", stderr);
        return 2;
      }
    } else if (a == "--sort" && has_value) {
      o.sort = argv[++i];
      if (o.sort != "message_queue_len" && o.sort != "memory" && o.sort != "reductions" &&
          o.sort != "pid") {
        std::fputs("beamlet-top: --sort takes message_queue_len, memory, reductions or pid\n",
                   stderr);
        return 2;
      }
    } else if (a == "--once") {
      o.once = true;
    } else if (a == "--json") {
      o.json = true;
    } else {
      std::fprintf(stderr, "beamlet-top: unknown argument %s\n%s", a.c_str(), usage);
      return 2;
    }
  }
  if (o.port.empty() || (o.json && !o.once)) {
    std::fputs(usage, stderr);
    return 2;
  }
  try {
    return o.once ? once(o) : interactive(o);
  } catch (const std::exception& e) {
    restore_terminal();
    std::fprintf(stderr, "beamlet-top: %s\n", e.what());
    return 1;
  }
}
