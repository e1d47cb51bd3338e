// The reports the runtime and the behaviours make (beamlet/core/log_event.hpp): crash reports,
// gen_server terminate reports, supervisor and progress reports, each shaped like OTP's.
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/supervisor.hpp>

#include <atomic>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

using field = std::pair<std::string, std::string>;

bool has_crash_report_for(captured_log& log, pid p) {
  return log.count([p](const log_event& e) { return e.report == "crash_report" && e.pid == p; }) !=
         0;
}

// A body type with a readable name: the crash report's initial_call.
struct crashing_worker {
  task<> operator()(process& self) {
    self.link(partner);
    throw std::runtime_error("boom");
    co_return;
  }
  pid partner;
};

TEST(CrashReport, NamesTheBodyTheReasonTheAncestorsAndTheLinks) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  const pid partner = rt.spawn(park_forever);
  pid crashed;
  auto r = run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    (void)rt.register_name("spawner", self.self());
    crashed = self.spawn(crashing_worker{partner});
    co_await self.receive(on_any(), after(5s));
  });
  ASSERT_TRUE(r);
  auto e = log.wait_for_report("crash_report", "pid", crashed.to_string());
  ASSERT_TRUE(e) << "no crash report";
  EXPECT_EQ(e->level, log_level::error);
  EXPECT_EQ(e->pid, crashed);
  EXPECT_NE(captured_log::field(*e, "initial_call").find("crashing_worker"), std::string::npos);
  EXPECT_EQ(captured_log::field(*e, "error_info"), "{exception,std::runtime_error,\"boom\"}");
  EXPECT_EQ(captured_log::field(*e, "registered_name"), "[]");
  EXPECT_EQ(captured_log::field(*e, "links"), "[" + partner.to_string() + "]");
  EXPECT_EQ(captured_log::field(*e, "message_queue_len"), "0");
  EXPECT_EQ(captured_log::field(*e, "trap_exit"), "false");
  // Ancestors: the spawner first, then its own parent (the mailbox run_process used).
  const std::string anc = captured_log::field(*e, "ancestors");
  EXPECT_EQ(anc.rfind('[', 0), 0u);
  EXPECT_NE(anc.find(","), std::string::npos) << anc;
  // A registered ancestor appears by its name, as in proc_lib's reports.
  EXPECT_EQ(anc.rfind("[spawner,", 0), 0u) << anc;
  // The field order is OTP's.
  std::vector<std::string> keys;
  for (const auto& [k, v] : e->fields) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"initial_call", "pid", "registered_name", "error_info",
                                            "ancestors", "message_queue_len", "links", "trap_exit",
                                            "reductions"}));
  rt.exit(partner, exit_reason::kill());
}

TEST(CrashReport, CountsQueuedMessages) {
  runtime rt;
  captured_log log(rt);
  watched w(rt, [](process& self) -> task<> {
    for (int i = 0; i < 3; ++i) self.send(self.self(), i);
    co_await self.exit(exit_reason::error("bad_thing"));
  });
  ASSERT_EQ(w.reason(), exit_reason::error("bad_thing"));
  auto e = log.wait_for_report("crash_report", "pid", w.id().to_string());
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "error_info"), "bad_thing");
  EXPECT_EQ(captured_log::field(*e, "message_queue_len"), "3");
}

TEST(CrashReport, NoneForCleanExitsOrForProcessesKilledBySignals) {
  runtime rt;
  captured_log log(rt);
  watched normal(rt, [](process&) -> task<> { co_return; });
  watched shutdown(
      rt, [](process& self) -> task<> { co_await self.exit(exit_reason::shutdown("done")); });
  watched killed(rt, park_forever);
  rt.exit(killed, exit_reason::error("external"));
  (void)normal.reason();
  (void)shutdown.reason();
  EXPECT_EQ(killed.reason(), exit_reason::error("external"));
  // A marker event: everything made before it has been handled when it is seen.
  beamlet::log(rt, log_level::error, "marker");
  ASSERT_TRUE(log.wait_for([](const log_event& e) { return e.message == "marker"; }));
  EXPECT_FALSE(has_crash_report_for(log, normal));
  EXPECT_FALSE(has_crash_report_for(log, shutdown));
  EXPECT_FALSE(has_crash_report_for(log, killed));
}

// -- gen_server terminate reports ----------------------------------------------------------------

struct crash_req {
  using reply_type = int;
};
struct crash_cast {};

class fragile : public gen_server<fragile> {
 public:
  int handle_call(const crash_req&, from<int>) { throw std::logic_error("bad call"); }
  gen::action handle_cast(const crash_cast&) { throw std::logic_error("bad cast"); }
  std::string format_status() const { return "{fragile,count=" + std::to_string(count_) + "}"; }

 private:
  int count_ = 7;
};

struct printable_state : gen_server<printable_state> {
  gen::action handle_cast(const crash_cast&) { return gen::stop(exit_reason::error("asked")); }
  int n = 5;
};
std::ostream& operator<<(std::ostream& os, const printable_state& s) {
  return os << "{printable," << s.n << "}";
}

struct opaque_state : gen_server<opaque_state> {
  gen::action handle_cast(const crash_cast&) { return gen::stop(exit_reason::error("asked")); }
};

TEST(GenServerReport, CallCrashNamesTheLastMessageTheStateAndTheClient) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  auto s = fragile::start_link(me, {"fragile"});
  ASSERT_TRUE(s.is_ok());
  EXPECT_THROW(call(me, server_ref<fragile>("fragile"), crash_req{}), call_error);
  auto e = log.wait_for([](const log_event& x) { return x.report == "gen_server_terminate"; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->level, log_level::error);
  EXPECT_EQ(e->registered_name, "fragile");
  EXPECT_EQ(captured_log::field(*e, "name"), "fragile");
  EXPECT_EQ(captured_log::field(*e, "last_message"),
            "{'$gen_call'," + me.self().to_string() +
                ",beamlet::test::(anonymous namespace)::crash_req}");
  EXPECT_EQ(captured_log::field(*e, "state"), "{fragile,count=7}");
  EXPECT_EQ(captured_log::field(*e, "reason"), "{exception,std::logic_error,\"bad call\"}");
  EXPECT_EQ(captured_log::field(*e, "client"), me.self().to_string());
  EXPECT_NE(captured_log::field(*e, "server").find("fragile"), std::string::npos);
  // The process's own crash report follows, as in OTP.
  EXPECT_TRUE(log.wait_for_report("crash_report", "pid", s.pid().to_string()));
}

TEST(GenServerReport, CastCrashHasNoClient) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  auto s = fragile::start_link(me, {});
  cast(me, server_ref<fragile>(s.pid()), crash_cast{});
  auto e = log.wait_for([](const log_event& x) { return x.report == "gen_server_terminate"; });
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "name"), s.pid().to_string());
  EXPECT_EQ(captured_log::field(*e, "last_message"),
            "{'$gen_cast',beamlet::test::(anonymous namespace)::crash_cast}");
  EXPECT_EQ(captured_log::field(*e, "client"), "<missing>");
}

TEST(GenServerReport, StateFormatsByOperatorOrTypeName) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  auto a = printable_state::start_link(me, {});
  auto b = opaque_state::start_link(me, {});
  cast(me, server_ref<printable_state>(a.pid()), crash_cast{});
  cast(me, server_ref<opaque_state>(b.pid()), crash_cast{});
  auto ea = log.wait_for(
      [&](const log_event& x) { return x.report == "gen_server_terminate" && x.pid == a.pid(); });
  auto eb = log.wait_for(
      [&](const log_event& x) { return x.report == "gen_server_terminate" && x.pid == b.pid(); });
  ASSERT_TRUE(ea && eb);
  EXPECT_EQ(captured_log::field(*ea, "state"), "{printable,5}");
  EXPECT_EQ(captured_log::field(*eb, "state"),
            "<beamlet::test::(anonymous namespace)::opaque_state>");
  EXPECT_EQ(captured_log::field(*ea, "reason"), "asked");
}

TEST(GenServerReport, NoneForANormalStop) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  auto s = fragile::start_link(me, {});
  stop(me, server_ref<fragile>(s.pid()));
  beamlet::log(rt, log_level::error, "marker");
  ASSERT_TRUE(log.wait_for([](const log_event& e) { return e.message == "marker"; }));
  EXPECT_EQ(log.count([](const log_event& e) { return e.report == "gen_server_terminate"; }), 0u);
}

// -- supervisor reports --------------------------------------------------------------------------

class child : public gen_server<child> {
 public:
  gen::action handle_cast(const die&) { return gen::stop(exit_reason::error("child_died")); }
};

start_result start_sup(scoped_process& me, std::string_view name, supervisor_flags flags,
                       std::vector<child_spec> children) {
  return supervisor::start_link(me, {name},
                                [flags, children] { return supervisor_init(flags, children); });
}

TEST(SupervisorReport, ChildTerminatedCarriesTheSpec) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  auto sup =
      start_sup(me, "app_sup", supervisor_flags{}, {child_spec("cache", worker_start<child>())});
  ASSERT_TRUE(sup.is_ok());
  auto kids = supervisor::which_children(me, "app_sup");
  ASSERT_EQ(kids.size(), 1u);
  const pid first = kids[0].pid;
  cast(me, server_ref<child>(first), die{});
  auto e = log.wait_for_report("supervisor_report", "errorContext", "child_terminated");
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "supervisor"), "{local,app_sup}");
  EXPECT_EQ(captured_log::field(*e, "reason"), "child_died");
  EXPECT_EQ(captured_log::field(*e, "offender"),
            "[{pid," + first.to_string() +
                "},{id,\"cache\"},{start,beamlet::test::(anonymous namespace)::child},"
                "{restart_type,permanent},{significant,false},{shutdown,5000},"
                "{child_type,worker}]");
}

TEST(SupervisorReport, ProgressReportsOnlyAtInfo) {
  runtime rt;
  captured_log log(rt, log_level::info);
  scoped_process me(rt);
  me.trap_exit(true);
  auto sup =
      start_sup(me, {}, supervisor_flags{},
                {child_spec("a", worker_start<child>()), child_spec("b", worker_start<child>())});
  ASSERT_TRUE(sup.is_ok());
  auto e = log.wait_for([](const log_event& x) {
    return x.report == "progress_report" &&
           captured_log::field(x, "started").find("{id,\"b\"}") != std::string::npos;
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->level, log_level::info);
  EXPECT_EQ(captured_log::field(*e, "supervisor"), "{" + sup.pid().to_string() + ",supervisor}");

  runtime quiet;
  captured_log notice(quiet);  // the default level: no progress reports
  scoped_process me2(quiet);
  me2.trap_exit(true);
  ASSERT_TRUE(
      start_sup(me2, {}, supervisor_flags{}, {child_spec("a", worker_start<child>())}).is_ok());
  beamlet::log(quiet, log_level::error, "marker");
  ASSERT_TRUE(notice.wait_for([](const log_event& x) { return x.message == "marker"; }));
  EXPECT_EQ(notice.count([](const log_event& x) { return x.report == "progress_report"; }), 0u);
}

TEST(SupervisorReport, StartErrorWhenInitCannotStartAChild) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  start_function failing = [](process&) -> task<start_result> {
    co_return start_result::error(exit_reason::error("no_db"));
  };
  auto sup = start_sup(me, {}, supervisor_flags{}, {child_spec("db", failing)});
  EXPECT_FALSE(sup.is_ok());
  auto e = log.wait_for_report("supervisor_report", "errorContext", "start_error");
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "reason"), "no_db");
  EXPECT_NE(captured_log::field(*e, "offender").find("{id,\"db\"}"), std::string::npos);
  EXPECT_NE(captured_log::field(*e, "offender").find("{pid,undefined}"), std::string::npos);
}

TEST(SupervisorReport, ReachedMaxRestartIntensity) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  supervisor_flags flags;
  flags.intensity = 0;  // the first restart is one too many
  auto sup = start_sup(me, "fragile_sup", flags, {child_spec("w", worker_start<child>())});
  ASSERT_TRUE(sup.is_ok());
  const pid w = supervisor::which_children(me, "fragile_sup")[0].pid;
  cast(me, server_ref<child>(w), die{});
  auto e = log.wait_for_report("supervisor_report", "errorContext", "shutdown");
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "reason"), "reached_max_restart_intensity");
  EXPECT_NE(captured_log::field(*e, "offender").find("{pid," + w.to_string() + "}"),
            std::string::npos);
}

// A child that ignores shutdown and has to be killed after its shutdown time: a plain
// proc_lib process that traps exits and takes its parent's EXIT as any other message (a
// gen_server would end on it, as in OTP).
start_function stubborn_start() {
  return [](process& sup) -> task<start_result> {
    co_return co_await beamlet::start_link(sup, [](process& c, const starter& st) -> task<> {
      c.trap_exit(true);
      st.ack(c, start_result::ok(c.self()));
      for (;;) (void)co_await c.receive(on_any());
    });
  };
}

TEST(SupervisorReport, ShutdownErrorWhenAChildMustBeKilled) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  auto sup = start_sup(me, {}, supervisor_flags{},
                       {child_spec("slow", stubborn_start())
                            .with_shutdown(shutdown_spec::timeout(std::chrono::milliseconds(50)))});
  ASSERT_TRUE(sup.is_ok());
  ASSERT_TRUE(supervisor::terminate_child(me, sup.pid(), "slow").has_value());
  auto e = log.wait_for_report("supervisor_report", "errorContext", "shutdown_error");
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "reason"), "killed");
  EXPECT_NE(captured_log::field(*e, "offender").find("{shutdown,50}"), std::string::npos);
}

TEST(SupervisorReport, TransientNormalExitIsNotReported) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  struct quit {};
  struct quitter : gen_server<quitter> {
    gen::action handle_cast(const quit&) { return gen::stop(exit_reason::normal()); }
  };
  auto sup =
      start_sup(me, {}, supervisor_flags{},
                {child_spec("q", worker_start<quitter>()).with_restart(restart_type::transient)});
  const pid q = supervisor::which_children(me, sup.pid())[0].pid;
  cast(me, server_ref<quitter>(q), quit{});
  ASSERT_TRUE(eventually([&] { return !rt.is_alive(q); }));
  beamlet::log(rt, log_level::error, "marker");
  ASSERT_TRUE(log.wait_for([](const log_event& x) { return x.message == "marker"; }));
  EXPECT_EQ(log.count([](const log_event& x) { return x.report == "supervisor_report"; }), 0u);
}

TEST(SupervisorReport, DynamicSupervisorChildTerminated) {
  runtime rt;
  captured_log log(rt);
  scoped_process me(rt);
  me.trap_exit(true);
  auto sup = dynamic_supervisor::start_link(me, {"conns"}, dynamic_supervisor_flags{});
  ASSERT_TRUE(sup.is_ok());
  auto c = dynamic_supervisor::start_child(me, "conns", child_spec("", worker_start<child>()));
  ASSERT_TRUE(c.has_value());
  cast(me, server_ref<child>(c->pid()), die{});
  auto e = log.wait_for_report("supervisor_report", "errorContext", "child_terminated");
  ASSERT_TRUE(e);
  EXPECT_EQ(captured_log::field(*e, "supervisor"), "{local,conns}");
  EXPECT_EQ(captured_log::field(*e, "reason"), "child_died");
}

// A deliberate difference from OTP's supervisor, following Elixir's DynamicSupervisor: children
// started on demand make no progress reports (docs/operations.md), even at level info.
TEST(SupervisorReport, DynamicSupervisorMakesNoProgressReports) {
  runtime rt;
  captured_log log(rt, log_level::info);
  scoped_process me(rt);
  me.trap_exit(true);
  auto sup = dynamic_supervisor::start_link(me, {"conns"}, dynamic_supervisor_flags{});
  ASSERT_TRUE(sup.is_ok());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(dynamic_supervisor::start_child(me, "conns", child_spec("", worker_start<child>()))
                    .has_value());
  beamlet::log(rt, log_level::error, "marker");
  ASSERT_TRUE(log.wait_for([](const log_event& x) { return x.message == "marker"; }));
  EXPECT_EQ(log.count([](const log_event& x) { return x.report == "progress_report"; }), 0u);
}

}  // namespace
}  // namespace beamlet::test
