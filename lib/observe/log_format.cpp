// The text and JSON forms of a log event.
//
// Text follows OTP's report layout so that people who read Erlang logs recognise it: a header
// `=KIND REPORT==== 1-Dec-2026::09:00:00.123456 ===` (OTP prints local time; beamlet prints UTC
// so that logs from several machines line up), then the report's fields. A crash report nests
// its fields under `crasher:`; a gen_server terminate report uses the `** ` lines of
// gen_server:format_log. JSON is one object per line with the fields as an object, in order.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include <beamlet/observe/logger.hpp>

#include "json.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace {

struct utc_parts {
  std::tm tm{};
  long micros = 0;
};

utc_parts split(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
  long long secs = us / 1'000'000;
  long micros = static_cast<long>(us % 1'000'000);
  if (micros < 0) {
    micros += 1'000'000;
    --secs;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  utc_parts p;
  gmtime_r(&tt, &p.tm);
  p.micros = micros;
  return p;
}

// 1-Dec-2026::09:00:00.123456, as OTP's calendar-based header.
std::string otp_time(std::chrono::system_clock::time_point t) {
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const utc_parts p = split(t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d-%s-%d::%02d:%02d:%02d.%06ld", p.tm.tm_mday,
                months[p.tm.tm_mon % 12], p.tm.tm_year + 1900, p.tm.tm_hour, p.tm.tm_min,
                p.tm.tm_sec, p.micros);
  return buf;
}

// 2026-12-01T09:00:00.123456Z
std::string iso_time(std::chrono::system_clock::time_point t) {
  const utc_parts p = split(t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", p.tm.tm_year + 1900,
                p.tm.tm_mon + 1, p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.micros);
  return buf;
}

std::string header_kind(const log_event& e) {
  if (e.report == "crash_report") return "CRASH";
  if (e.report == "supervisor_report") return "SUPERVISOR";
  if (e.report == "progress_report") return "PROGRESS";
  std::string k(to_string(e.level));
  for (char& c : k) c = static_cast<char>(c - 'a' + 'A');
  return k;
}

const std::string* field(const log_event& e, std::string_view key) {
  for (const auto& [k, v] : e.fields)
    if (k == key) return &v;
  return nullptr;
}

// Continuation lines of a multi-line value keep the indentation of its first line.
void append_indented(std::string& out, const std::string& value, std::size_t indent) {
  for (char c : value) {
    out += c;
    if (c == '\n') out.append(indent, ' ');
  }
}

}  // namespace

std::string logger::format_text(const log_event& e) {
  // Appended piece by piece (GCC 12 warns, wrongly, about `"..." + std::string` at -O3).
  std::string out = "=";
  out.append(header_kind(e)).append(" REPORT==== ").append(otp_time(e.time)).append(" ===\n");
  if (e.report == "gen_server_terminate") {
    // gen_server:format_log/1.
    const auto get = [&](std::string_view k) {
      const std::string* v = field(e, k);
      return v != nullptr ? *v : std::string("undefined");
    };
    out += "** Generic server " + get("name") + " terminating \n";
    out += "** Last message in was " + get("last_message") + "\n";
    out += "** When Server state == " + get("state") + "\n";
    out += "** Reason for termination ==\n** " + get("reason") + "\n";
    if (const std::string* c = field(e, "client")) out += "** Client " + *c + " is waiting\n";
    return out;
  }
  if (e.report.empty() || e.fields.empty()) {
    append_indented(out, e.message, 0);
    out += '\n';
    return out;
  }
  std::size_t indent = 4;
  if (e.report == "crash_report") out += "  crasher:\n";
  for (const auto& [k, v] : e.fields) {
    out.append(indent, ' ');
    out += k;
    out += ": ";
    append_indented(out, v, indent + k.size() + 2);
    out += '\n';
  }
  return out;
}

std::string logger::format_json(const log_event& e) {
  std::string out = "{\"time\":";
  detail::append_json_string(out, iso_time(e.time));
  out += ",\"level\":";
  detail::append_json_string(out, to_string(e.level));
  out += ",\"pid\":";
  if (e.pid)
    detail::append_json_string(out, e.pid.to_string());
  else
    out += "null";
  out += ",\"registered_name\":";
  if (e.registered_name.empty())
    out += "null";
  else
    detail::append_json_string(out, e.registered_name);
  out += ",\"report\":";
  if (e.report.empty())
    out += "null";
  else
    detail::append_json_string(out, e.report);
  out += ",\"msg\":";
  detail::append_json_string(out, e.message);
  out += ",\"fields\":{";
  bool first = true;
  for (const auto& [k, v] : e.fields) {
    if (!first) out += ',';
    first = false;
    detail::append_json_string(out, k);
    out += ':';
    detail::append_json_string(out, v);
  }
  out += "}}";
  return out;
}

BEAMLET_END_PRIVATE_NAMESPACE
