// The logger (beamlet/observe/logger.hpp): levels, handlers, metadata, overload protection,
// flushing, and the golden text and JSON forms of each report kind.
#include <beamlet/observe/logger.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

// 2026-12-01 09:00:00.123456 UTC.
std::chrono::system_clock::time_point fixed_time() {
  return std::chrono::system_clock::time_point(std::chrono::microseconds(1'796'115'600'123'456));
}

log_event crash_event() {
  log_event e;
  e.level = log_level::error;
  e.time = fixed_time();
  e.pid = pid(12);
  e.report = "crash_report";
  e.message = "process <0.12.0> crashed: {exception,std::runtime_error,\"boom\"}";
  e.fields = {{"initial_call", "my::worker"},
              {"pid", "<0.12.0>"},
              {"registered_name", "[]"},
              {"error_info", "{exception,std::runtime_error,\"boom\"}"},
              {"ancestors", "[<0.11.0>,<0.10.0>]"},
              {"message_queue_len", "0"},
              {"links", "[<0.11.0>]"},
              {"trap_exit", "false"},
              {"reductions", "42"}};
  return e;
}

TEST(LoggerFormat, CrashReportGolden) {
  EXPECT_EQ(logger::format_text(crash_event()),
            "=CRASH REPORT==== 1-Dec-2026::09:00:00.123456 ===\n"
            "  crasher:\n"
            "    initial_call: my::worker\n"
            "    pid: <0.12.0>\n"
            "    registered_name: []\n"
            "    error_info: {exception,std::runtime_error,\"boom\"}\n"
            "    ancestors: [<0.11.0>,<0.10.0>]\n"
            "    message_queue_len: 0\n"
            "    links: [<0.11.0>]\n"
            "    trap_exit: false\n"
            "    reductions: 42\n");
}

TEST(LoggerFormat, SupervisorReportGolden) {
  log_event e;
  e.level = log_level::error;
  e.time = fixed_time();
  e.report = "supervisor_report";
  e.fields = {{"supervisor", "{local,app_sup}"},
              {"errorContext", "child_terminated"},
              {"reason", "{exception,std::runtime_error,\"boom\"}"},
              {"offender",
               "[{pid,<0.12.0>},{id,\"cache\"},{start,my::cache},{restart_type,permanent},"
               "{significant,false},{shutdown,5000},{child_type,worker}]"}};
  EXPECT_EQ(logger::format_text(e),
            "=SUPERVISOR REPORT==== 1-Dec-2026::09:00:00.123456 ===\n"
            "    supervisor: {local,app_sup}\n"
            "    errorContext: child_terminated\n"
            "    reason: {exception,std::runtime_error,\"boom\"}\n"
            "    offender: [{pid,<0.12.0>},{id,\"cache\"},{start,my::cache},"
            "{restart_type,permanent},{significant,false},{shutdown,5000},{child_type,worker}]\n");
}

TEST(LoggerFormat, ProgressReportGolden) {
  log_event e;
  e.level = log_level::info;
  e.time = fixed_time();
  e.report = "progress_report";
  e.fields = {{"supervisor", "{local,app_sup}"}, {"started", "[{pid,<0.12.0>},{id,\"cache\"}]"}};
  EXPECT_EQ(logger::format_text(e),
            "=PROGRESS REPORT==== 1-Dec-2026::09:00:00.123456 ===\n"
            "    supervisor: {local,app_sup}\n"
            "    started: [{pid,<0.12.0>},{id,\"cache\"}]\n");
}

TEST(LoggerFormat, GenServerTerminateGolden) {
  log_event e;
  e.level = log_level::error;
  e.time = fixed_time();
  e.report = "gen_server_terminate";
  e.fields = {{"name", "counter"},
              {"server", "my::counter"},
              {"last_message", "{'$gen_call',<0.20.0>,my::crash}"},
              {"state", "{count,3}"},
              {"reason", "{exception,std::logic_error,\"bad\"}"},
              {"client", "<0.20.0>"}};
  EXPECT_EQ(logger::format_text(e),
            "=ERROR REPORT==== 1-Dec-2026::09:00:00.123456 ===\n"
            "** Generic server counter terminating \n"
            "** Last message in was {'$gen_call',<0.20.0>,my::crash}\n"
            "** When Server state == {count,3}\n"
            "** Reason for termination ==\n"
            "** {exception,std::logic_error,\"bad\"}\n"
            "** Client <0.20.0> is waiting\n");
}

TEST(LoggerFormat, PlainMessageGolden) {
  log_event e;
  e.level = log_level::warning;
  e.time = fixed_time();
  e.message = "disk almost full\nsecond line";
  EXPECT_EQ(logger::format_text(e),
            "=WARNING REPORT==== 1-Dec-2026::09:00:00.123456 ===\n"
            "disk almost full\nsecond line\n");
}

TEST(LoggerFormat, JsonGolden) {
  log_event e;
  e.level = log_level::notice;
  e.time = fixed_time();
  e.pid = pid(7);
  e.registered_name = "db";
  e.message = "say \"hi\"\n\ttab";
  EXPECT_EQ(logger::format_json(e),
            "{\"time\":\"2026-12-01T09:00:00.123456Z\",\"level\":\"notice\",\"pid\":\"<0.7.0>\","
            "\"registered_name\":\"db\",\"report\":null,\"msg\":\"say \\\"hi\\\"\\n\\ttab\","
            "\"fields\":{}}");
  EXPECT_EQ(logger::format_json(crash_event()).substr(0, 123),
            "{\"time\":\"2026-12-01T09:00:00.123456Z\",\"level\":\"error\",\"pid\":\"<0.12.0>\","
            "\"registered_name\":null,\"report\":\"crash_report\",\"msg\"");
  // A control character is escaped, UTF-8 passes through.
  e.message = std::string(
      "a\x01"
      "b \xc3\xa9");
  EXPECT_NE(logger::format_json(e).find("\"msg\":\"a\\u0001b \xc3\xa9\""), std::string::npos);
}

// -- the logger at work ------------------------------------------------------------------------

TEST(Logger, LevelsFilterWhereEventsAreMade) {
  runtime rt;
  captured_log log(rt, log_level::warning);
  beamlet::log(rt, log_level::info, "not shown");
  beamlet::log(rt, log_level::warning, "shown");
  beamlet::log(rt, log_level::error, "shown too");
  const auto all = log.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].message, "shown");
  EXPECT_EQ(all[0].level, log_level::warning);
  EXPECT_EQ(all[1].message, "shown too");
  EXPECT_EQ(logger::of(rt).level(), log_level::warning);
}

TEST(Logger, DefaultLevelIsNoticeWithStderrHandler) {
  runtime rt;
  EXPECT_EQ(logger::of(rt).level(), log_level::notice);
  EXPECT_TRUE(logger::of(rt).reports());
}

TEST(Logger, EventsCarryPidNameAndTime) {
  runtime rt;
  captured_log log(rt);
  const auto before = std::chrono::system_clock::now();
  auto r = run_process(rt, [](process& self) -> task<> {
    (void)self.register_name("reporter");
    beamlet::log(self, log_level::notice, "hello from a process");
    co_return;
  });
  ASSERT_TRUE(r);
  auto e = log.wait_for([](const log_event& x) { return x.message == "hello from a process"; });
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->pid);
  EXPECT_EQ(e->registered_name, "reporter");
  EXPECT_GE(e->time, before);
  EXPECT_LE(e->time, std::chrono::system_clock::now());
}

TEST(Logger, JsonLinesHandlerWritesOneObjectPerLine) {
  runtime rt;
  captured_log quiet(rt);
  std::ostringstream out;
  logger::of(rt).add_handler(logger::json_lines(out));
  beamlet::log(rt, log_level::error, "one");
  beamlet::log(rt, log_level::error, "two");
  logger::of(rt).flush();
  std::istringstream lines(out.str());
  std::string l;
  int n = 0;
  while (std::getline(lines, l)) {
    ++n;
    EXPECT_EQ(l.front(), '{');
    EXPECT_EQ(l.back(), '}');
  }
  EXPECT_EQ(n, 2);
  EXPECT_NE(out.str().find("\"msg\":\"two\""), std::string::npos);
}

TEST(Logger, JsonLinesToAFileAndABadPath) {
  const std::string path = ::testing::TempDir() + "beamlet_logger_test.jsonl";
  std::remove(path.c_str());
  {
    runtime rt;
    captured_log quiet(rt);
    logger::of(rt).add_handler(logger::json_lines(path));
    beamlet::log(rt, log_level::error, "to the file");
  }  // the runtime's shutdown writes what was queued
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("to the file"), std::string::npos);
  EXPECT_THROW(logger::json_lines("/nonexistent-dir/x/y.jsonl"), std::system_error);
}

TEST(Logger, TextHandlerAndRemoval) {
  runtime rt;
  captured_log quiet(rt);
  std::ostringstream out;
  const auto id = logger::of(rt).add_handler(logger::text(out));
  beamlet::log(rt, log_level::error, "before removal");
  logger::of(rt).remove_handler(id);  // after what was queued has been handled
  beamlet::log(rt, log_level::error, "after removal");
  logger::of(rt).flush();
  EXPECT_NE(out.str().find("=ERROR REPORT==== "), std::string::npos);
  EXPECT_NE(out.str().find("before removal"), std::string::npos);
  EXPECT_EQ(out.str().find("after removal"), std::string::npos);
  logger::of(rt).remove_handler(9999);  // unknown: ignored
  EXPECT_THROW(logger::of(rt).add_handler(nullptr), std::invalid_argument);
  EXPECT_THROW(logger::callback({}), std::invalid_argument);
}

TEST(Logger, HandlerExceptionsAreCountedNotFatal) {
  runtime rt;
  captured_log log(rt);
  logger::of(rt).add_handler(
      logger::callback([](const log_event&) { throw std::runtime_error("handler bug"); }));
  beamlet::log(rt, log_level::error, "x");
  beamlet::log(rt, log_level::error, "y");
  logger::of(rt).flush();
  EXPECT_EQ(logger::of(rt).stats().handler_errors, 2u);
  EXPECT_EQ(log.count([](const log_event& e) { return e.message == "y"; }), 1u);
}

TEST(Logger, OverloadDropsAndReportsTheCount) {
  runtime rt;
  captured_log log(rt);
  logger& l = logger::of(rt);
  l.set_drop_threshold(100);
  // A slow handler keeps the queue full while a burst arrives.
  std::atomic<bool> release{false};
  l.add_handler(logger::callback([&](const log_event&) {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  }));
  for (int i = 0; i < 5000; ++i) beamlet::log(rt, log_level::error, "burst " + std::to_string(i));
  const auto mid = l.stats();
  EXPECT_GT(mid.dropped, 0u);
  EXPECT_LE(mid.queued, 100u);
  release = true;
  l.flush();
  auto dropped = log.wait_for([](const log_event& e) { return e.report == "logger_dropped"; });
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->level, log_level::warning);
  // Every event is either handled or counted as dropped.
  const auto end = l.stats();
  EXPECT_EQ(end.handled + end.dropped, 5000u);
  EXPECT_EQ(std::stoull(captured_log::field(*dropped, "dropped")) > 0, true);
}

TEST(Logger, EverythingQueuedIsWrittenOnShutdown) {
  auto seen = std::make_shared<std::atomic<int>>(0);
  {
    runtime rt;
    logger& l = logger::of(rt);
    l.clear_handlers();
    l.add_handler(logger::callback([seen](const log_event&) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // slower than the producer
      ++*seen;
    }));
    for (int i = 0; i < 500; ++i) beamlet::log(rt, log_level::error, "queued");
    // No flush: the runtime's shutdown must write them.
  }
  EXPECT_EQ(seen->load(), 500);
}

TEST(Logger, ReportsCanBeSilencedInOneLine) {
  runtime rt;
  captured_log log(rt);
  logger::of(rt).set_reports(false);
  auto r = run_process(rt, [](process&) -> task<> {
    throw std::runtime_error("silenced");
    co_return;
  });
  ASSERT_TRUE(r);
  beamlet::log(rt, log_level::error, "plain messages still flow");
  const auto all = log.all();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].message, "plain messages still flow");
}

TEST(Logger, FlushFromAHandlerDoesNotDeadlock) {
  runtime rt;
  captured_log log(rt);
  logger& l = logger::of(rt);
  l.add_handler(logger::callback([&l](const log_event&) { l.flush(); }));
  beamlet::log(rt, log_level::error, "x");
  l.flush();
  EXPECT_EQ(log.all().size(), 1u);
}

}  // namespace
}  // namespace beamlet::test
