// sys-style debugging of gen_servers (beamlet/otp/sys.hpp): get_state, get_status, trace,
// statistics, suspend and resume.
#include <beamlet/otp/gen_server.hpp>
#include <beamlet/otp/sys.hpp>

#include <stdexcept>
#include <string>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

struct add_to {
  int n;
};

class counting_server : public gen_server<counting_server> {
 public:
  counting_server() = default;
  counting_server(const counting_server& o) : gen_server<counting_server>(), n(o.n) {}
  int handle_call(const get&, from<int>) { return n; }
  gen::action handle_cast(const add_to& a) {
    n += a.n;
    return gen::noreply();
  }
  std::string format_status() const { return "{counter," + std::to_string(n) + "}"; }
  int n = 0;
};

class other : public gen_server<other> {};

struct fixture {
  runtime rt;
  scoped_process me{rt};
  pid server;
  fixture() {
    auto s = counting_server::start_link(me, {"counter"});
    EXPECT_TRUE(s.is_ok());
    server = s.pid();
  }
};

TEST(Sys, GetStateCopiesOrProjects) {
  fixture f;
  cast(f.me, server_ref<counting_server>("counter"), add_to{5});
  const counting_server copy = sys::get_state<counting_server>(f.me, "counter");
  EXPECT_EQ(copy.n, 5);
  const int n = sys::get_state<counting_server>(f.me, server_ref<counting_server>(f.server),
                                                [](const counting_server& c) { return c.n * 10; });
  EXPECT_EQ(n, 50);
}

TEST(Sys, GetStateOfAnotherClassThrows) {
  fixture f;
  EXPECT_THROW(
      sys::get_state<other>(f.me, server_ref<other>(f.server), [](const other&) { return 1; }),
      std::invalid_argument);
}

TEST(Sys, GetStatusIsFormatted) {
  fixture f;
  cast(f.me, server_ref<counting_server>("counter"), add_to{2});
  const server_status s = sys::get_status(f.me, "counter");
  EXPECT_EQ(s.pid, f.server);
  EXPECT_EQ(s.registered_name, "counter");
  EXPECT_EQ(s.parent, f.me.self());
  EXPECT_FALSE(s.suspended);
  EXPECT_EQ(s.state, "{counter,2}");
  EXPECT_EQ(s.server_type, "beamlet::test::(anonymous namespace)::counting_server");
  const std::string text = to_string(s);
  EXPECT_EQ(text.rfind("Status for generic server counter (" + f.server.to_string() + ")\n", 0),
            0u);
  EXPECT_NE(text.find("  status: running\n"), std::string::npos);
  EXPECT_NE(text.find("  state: {counter,2}\n"), std::string::npos);
}

TEST(Sys, ErrorsAreCallErrors) {
  fixture f;
  EXPECT_THROW(sys::get_status(f.me, "nobody"), call_error);
  // A process that is not a gen_server never answers: a timeout, as in OTP.
  const pid plain = f.rt.spawn(park_forever);
  try {
    (void)sys::get_status(f.me, plain, 100ms);
    ADD_FAILURE() << "no timeout";
  } catch (const call_error& e) {
    EXPECT_EQ(e.which(), call_error::kind::timeout);
  }
  f.rt.exit(plain, exit_reason::kill());
}

TEST(Sys, SuspendHoldsMessagesUntilResume) {
  fixture f;
  sys::suspend(f.me, "counter");
  EXPECT_TRUE(sys::get_status(f.me, "counter").suspended);
  cast(f.me, server_ref<counting_server>("counter"), add_to{1});
  // A call waits: the server takes only system messages.
  EXPECT_THROW((void)call(f.me, server_ref<counting_server>("counter"), get{}, 100ms), call_error);
  // ...but still answers them.
  EXPECT_EQ(sys::get_state<counting_server>(f.me, "counter",
                                            [](const counting_server& c) { return c.n; }),
            0);
  sys::resume(f.me, "counter");
  EXPECT_EQ(call(f.me, server_ref<counting_server>("counter"), get{}), 1);
  EXPECT_FALSE(sys::get_status(f.me, "counter").suspended);
}

TEST(Sys, ASuspendedServerCanStillBeStopped) {
  fixture f;
  sys::suspend(f.me, "counter");
  stop(f.me, server_ref<counting_server>("counter"));
  EXPECT_FALSE(f.rt.is_alive(f.server));
}

TEST(Sys, TraceLogsMessagesAndReplies) {
  fixture f;
  captured_log log(f.rt);
  sys::trace(f.me, "counter", true);
  cast(f.me, server_ref<counting_server>("counter"), add_to{1});
  EXPECT_EQ(call(f.me, server_ref<counting_server>("counter"), get{}), 1);
  const std::string who = "*DBG* " + f.server.to_string() + " ";
  EXPECT_TRUE(log.wait_for([&](const log_event& e) {
    return e.message == who + "got cast beamlet::test::(anonymous namespace)::add_to";
  }));
  EXPECT_TRUE(log.wait_for([&](const log_event& e) {
    return e.message == who + "got call beamlet::test::get from " + f.me.self().to_string();
  }));
  EXPECT_TRUE(log.wait_for([&](const log_event& e) {
    return e.message == who + "sent reply to " + f.me.self().to_string();
  }));
  sys::trace(f.me, "counter", false);
  cast(f.me, server_ref<counting_server>("counter"), add_to{1});
  (void)call(f.me, server_ref<counting_server>("counter"), get{});
  const auto n = log.count([&](const log_event& e) { return e.message.rfind("*DBG*", 0) == 0; });
  EXPECT_EQ(n, 3u);
}

TEST(Sys, StatisticsCountInAndOut) {
  fixture f;
  EXPECT_FALSE(sys::get_statistics(f.me, "counter"));
  sys::statistics(f.me, "counter", true);
  for (int i = 0; i < 3; ++i) cast(f.me, server_ref<counting_server>("counter"), add_to{1});
  for (int i = 0; i < 2; ++i) (void)call(f.me, server_ref<counting_server>("counter"), get{});
  const auto s = sys::get_statistics(f.me, "counter");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->messages_in, 5u);
  EXPECT_EQ(s->messages_out, 2u);
  EXPECT_LE(s->start_time, s->current_time);
  sys::statistics(f.me, "counter", false);
  EXPECT_FALSE(sys::get_statistics(f.me, "counter"));
}

TEST(Sys, FromAProcess) {
  fixture f;
  auto r = run_process(f.rt, [](process& self) -> task<> {
    co_await sys::suspend(self, "counter");
    const server_status s = co_await sys::get_status(self, "counter");
    CO_ASSERT_TRUE(s.suspended);
    co_await sys::resume(self, "counter");
    const int n = co_await sys::get_state<counting_server>(
        self, "counter", [](const counting_server& c) { return c.n + 1; });
    CO_ASSERT_EQ(n, 1);
  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->is_normal()) << *r;
}

}  // namespace
}  // namespace beamlet::test
