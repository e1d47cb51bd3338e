// spec §4: GenServer.
// Over 600 lines: one file per public header, and GenServer has many behaviours to pin down.
#include <beamlet/otp/gen_server.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {

namespace {

struct add {
  int n;
};
struct slow_get {
  std::chrono::milliseconds delay;
  using reply_type = int;
};
struct deferred {
  using reply_type = std::string;
};
struct release {};
struct stop_with_reply {
  using reply_type = std::string;
};
struct stop_no_reply {
  using reply_type = int;
};
struct crash_call {
  using reply_type = int;
};
struct ping_other {
  pid other;
  using reply_type = int;
};
struct set_timeout {
  std::chrono::milliseconds t;
};
struct void_request {};  // no reply_type: reply is `void`

// A journal shared by a test and its server, to observe callbacks.

class counter : public gen_server<counter> {
 public:
  explicit counter(int start, journal* j = nullptr, bool trap = false)
      : n_(start), j_(j), trap_(trap) {}

  void init() {
    if (trap_) self().trap_exit(true);
  }
  int handle_call(const get&, from<int>) { return n_; }
  gen::call_result<std::string> handle_call(const deferred&, from<std::string> f) {
    waiting_ = f;
    return gen::noreply();
  }
  task<int> handle_call(const slow_get& r, from<int>) {
    co_await self().sleep(r.delay);
    co_return n_;
  }
  gen::call_result<std::string> handle_call(const stop_with_reply&, from<std::string>) {
    return gen::stop(exit_reason::error("asked"), std::string("bye"));
  }
  gen::call_result<int> handle_call(const stop_no_reply&, from<int>) {
    return gen::stop(exit_reason::error("asked_silently"));
  }
  int handle_call(const crash_call&, from<int>) { throw std::runtime_error("crash_in_call"); }
  task<int> handle_call(const ping_other& p, from<int>) {
    // A coroutine handler that calls another server.
    co_return co_await call(self(), server_ref<counter>(p.other), get{}) + 1;
  }
  void handle_call(const void_request&, from<void>) { ++n_; }

  void handle_cast(const add& a) { n_ += a.n; }
  gen::action handle_cast(const release&) {
    reply(self(), waiting_, std::string("released"));
    return gen::noreply();
  }
  gen::action handle_cast(const set_timeout& t) { return gen::noreply().after(t.t); }

  gen::action handle_info(any_message m) {
    if (m.is<timeout_message>()) {
      if (j_ != nullptr) j_->add("timeout");
      return gen::noreply();
    }
    if (auto* e = m.get_if<exit_message>()) {
      if (j_ != nullptr) j_->add("info EXIT " + e->reason.to_string());
      return gen::noreply();
    }
    if (j_ != nullptr) j_->add("info " + m.type_name());
    return gen::noreply();
  }
  void terminate(const exit_reason& r) {
    if (j_ != nullptr) j_->add("terminate " + r.to_string());
  }

 private:
  int n_;
  journal* j_;
  bool trap_;
  from<std::string> waiting_;
};

// A server whose init result is chosen by the test.
enum class init_kind { ok_timeout, ok_continue, stop, ignore, raise };
struct continue_token {
  int v;
};

class configurable : public gen_server<configurable> {
 public:
  configurable(init_kind k, journal* j) : k_(k), j_(j) {}
  gen::init_result init() {
    switch (k_) {
      case init_kind::ok_timeout:
        return gen::ok().after(std::chrono::milliseconds(30));
      case init_kind::ok_continue:
        return gen::ok().then(continue_token{7});
      case init_kind::stop:
        return gen::stop(exit_reason::error("no_way"));
      case init_kind::ignore:
        return gen::ignore();
      case init_kind::raise:
        throw std::invalid_argument("bad init");
    }
    return gen::ok();
  }
  void handle_continue(any_message m) {
    j_->add("continue " + std::to_string(m.get_if<continue_token>()->v));
  }
  void handle_info(any_message m) { j_->add(m.is<timeout_message>() ? "timeout" : "info"); }
  int handle_call(const get&, from<int>) {
    j_->add("call");
    return 1;
  }

 private:
  init_kind k_;
  journal* j_;
};

}  // namespace

TEST(GenServer, CallCastAndInfo) {
  journal j;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  run_process(rt, [&](process& self) -> task<> {
    const start_result r = co_await counter::start_link(self, {}, 10, &j);
    EXPECT_TRUE(r.is_ok());
    const server_ref<counter> c(r.pid());
    EXPECT_EQ(co_await call(self, c, get{}), 10);
    cast(self, c, add{5});
    EXPECT_EQ(co_await call(self, c, get{}), 15);
    co_await call(self, c, void_request{});
    EXPECT_EQ(co_await call(self, c, get{}), 16);
    self.send(r.pid(), junk{1});  // any other message: handle_info
    EXPECT_EQ(co_await call(self, c, get{}), 16);
    co_await stop(self, c);
  });
  EXPECT_EQ(j.snapshot(),
            (std::vector<std::string>{"info beamlet::test::junk", "terminate normal"}));
}

// §4.1 rule 3: init results.
TEST(GenServer, S4_1_3_InitTimeoutAndContinue) {
  journal j1, j2;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  run_process(rt, [&](process& self) -> task<> {
    const auto a = co_await configurable::start_link(self, {}, init_kind::ok_timeout, &j1);
    const auto b = co_await configurable::start_link(self, {}, init_kind::ok_continue, &j2);
    EXPECT_TRUE(a.is_ok());
    EXPECT_TRUE(b.is_ok());
    (void)co_await call(self, server_ref<configurable>(b.pid()), get{});
    CO_ASSERT_TRUE(co_await eventually_in(self, [&] { return !j1.snapshot().empty(); }));
    co_await stop(self, server_ref<configurable>(a.pid()));
    co_await stop(self, server_ref<configurable>(b.pid()));
  });
  EXPECT_EQ(j1.snapshot(), std::vector<std::string>{"timeout"});
  // The continuation runs before any message (the call).
  EXPECT_EQ(j2.snapshot(), (std::vector<std::string>{"continue 7", "call"}));
}

TEST(GenServer, S4_1_3_InitStopIgnoreRaise) {
  journal j;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  std::vector<std::string> results;
  std::vector<std::string> exits;
  run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    for (auto k : {init_kind::stop, init_kind::ignore, init_kind::raise}) {
      const start_result r = co_await configurable::start_link(self, {}, k, &j);
      results.push_back(r.to_string());
      // OTP 25: the linked (trapping) caller later gets the EXIT.
      auto e = co_await self.receive(on<exit_message>(), after(1s));
      exits.push_back(e ? e.get<exit_message>().reason.to_string() : "none");
    }
  });
  EXPECT_EQ(results,
            (std::vector<std::string>{"{error,no_way}", "ignore",
                                      "{error,{exception,std::invalid_argument,\"bad init\"}}"}));
  EXPECT_EQ(exits, (std::vector<std::string>{"no_way", "normal",
                                             "{exception,std::invalid_argument,\"bad init\"}"}));
}

// §4.1 rule 3: a non-trapping caller dies with R after start_link has returned {error, R}.
TEST(GenServer, S4_1_3_InitStopKillsNonTrappingCallerAfterReturn) {
  journal j;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  std::atomic<bool> returned{false};
  EXPECT_EQ(run_process(rt,
                        [&](process& self) -> task<> {
                          const auto r =
                              co_await configurable::start_link(self, {}, init_kind::stop, &j);
                          returned = r.is_error();
                          co_await park_forever(self);  // until the EXIT ends it
                        }),
            exit_reason::error("no_way"));
  EXPECT_TRUE(returned);
}

// §4.1 rule 2: a taken name gives {error, {already_started, Pid}}.
TEST(GenServer, S4_1_2_AlreadyStarted) {
  runtime rt;
  std::string second;
  pid first;
  run_process(rt, [&](process& self) -> task<> {
    const auto a = co_await counter::start_link(self, {.name = "the_counter"}, 0);
    first = a.pid();
    const auto b = co_await counter::start_link(self, {.name = "the_counter"}, 0);
    second = b.to_string();
    EXPECT_EQ(co_await call(self, server_ref<counter>("the_counter"), get{}), 0);
    co_await stop(self, server_ref<counter>("the_counter"));
  });
  EXPECT_EQ(second, "{error,{already_started," + first.to_string() + "}}");
}

// §4.2 rules 7-9: call errors.
TEST(GenServer, S4_2_CallErrors) {
  runtime rt;
  std::vector<call_error::kind> kinds;
  std::vector<std::string> reasons;
  run_process(rt, [&](process& self) -> task<> {
    const auto gone = self.spawn_monitor([](process&) -> task<> { co_return; });
    const pid dead = gone.pid;
    co_await self.receive(on<down>().when([&](const down& d) { return d.ref == gone.monitor; }));
    auto attempt = [&](auto make) -> task<> {
      try {
        (void)co_await make();
      } catch (const call_error& e) {
        kinds.push_back(e.which());
        reasons.push_back(e.reason().to_string());
      }
    };
    co_await attempt([&] { return call(self, server_ref<counter>(dead), get{}); });
    co_await attempt([&] { return call(self, server_ref<counter>("nobody"), get{}); });
    co_await attempt([&] { return call(self, server_ref<counter>(self.self()), get{}); });
  });
  EXPECT_EQ(kinds,
            (std::vector<call_error::kind>{call_error::kind::noproc, call_error::kind::noproc,
                                           call_error::kind::calling_self}));
  EXPECT_EQ(reasons[0].rfind("{noproc,{gen_server,call,[", 0), 0u) << reasons[0];
  EXPECT_EQ(reasons[2].rfind("{calling_self,", 0), 0u) << reasons[2];
}

// §4.2 rule 9: timeout; the server keeps working; the late reply never reaches the mailbox.
TEST(GenServer, S4_2_9_TimeoutAndLateReplyDropped) {
  runtime rt;
  std::atomic<bool> timed_out{false};
  std::size_t left = 99;
  int after_value = 0;
  run_process(rt, [&](process& self) -> task<> {
    const auto r = co_await counter::start_link(self, {}, 3);
    const server_ref<counter> c(r.pid());
    try {
      (void)co_await call(self, c, slow_get{100ms}, 20ms);
    } catch (const call_error& e) {
      timed_out = e.which() == call_error::kind::timeout;
    }
    co_await self.sleep(200ms);  // the reply was sent meanwhile
    left = self.message_queue_len();
    after_value = co_await call(self, c, get{});  // the server kept working
    co_await stop(self, c);
  });
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(left, 0u);
  EXPECT_EQ(after_value, 3);
}

// §4.2 rule 10: {noreply, S} and a deferred reply through reply(From, R).
TEST(GenServer, S4_2_10_DeferredReply) {
  runtime rt;
  std::string got;
  run_process(rt, [&](process& self) -> task<> {
    const auto r = co_await counter::start_link(self, {}, 0);
    const server_ref<counter> c(r.pid());
    self.send_after(self.self(), junk{0}, 10ms);  // unrelated traffic
    self.spawn([c](process& p) -> task<> {
      co_await p.sleep(30ms);
      cast(p, c, release{});
    });
    got = co_await call(self, c, deferred{});
    co_await stop(self, c);
  });
  EXPECT_EQ(got, "released");
}

// §4.2 rule 10: {stop, R, Reply, S}: terminate runs first, then the reply, then the exit.
TEST(GenServer, S4_2_10_StopWithReply) {
  journal j;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  std::string reply_value;
  std::string exit_reason_seen;
  run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    const auto r = co_await counter::start_link(self, {}, 0, &j);
    reply_value = co_await call(self, server_ref<counter>(r.pid()), stop_with_reply{});
    j.add("got reply");
    auto e = co_await self.receive(on<exit_message>(), after(1s));
    exit_reason_seen = e ? e.get<exit_message>().reason.to_string() : "none";
  });
  EXPECT_EQ(reply_value, "bye");
  EXPECT_EQ(j.snapshot(), (std::vector<std::string>{"terminate asked", "got reply"}));
  EXPECT_EQ(exit_reason_seen, "asked");
}

// §4.2 rule 10: {stop, R, S}: no reply; the caller exits via the DOWN.
TEST(GenServer, S4_2_10_StopWithoutReply) {
  runtime rt;
  std::string reason;
  run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    const auto r = co_await counter::start_link(self, {}, 0);
    try {
      (void)co_await call(self, server_ref<counter>(r.pid()), stop_no_reply{});
    } catch (const call_error& e) {
      reason = e.server_reason().to_string();
    }
  });
  EXPECT_EQ(reason, "asked_silently");
}

// §4.3 rule 11: cast always succeeds, even to nobody.
TEST(GenServer, S4_3_11_CastAlwaysOk) {
  runtime rt;
  run_process(rt, [&](process& self) -> task<> {
    cast(self, server_ref<counter>(pid(123456)), add{1});
    cast(self, server_ref<counter>("nobody"), add{1});
    co_return;
  });
  cast(rt, server_ref<counter>("nobody"), add{1});
}

// §4.3 rule 13: a timeout in a result runs handle_info(timeout) unless a message comes first.
TEST(GenServer, S4_3_13_ResultTimeout) {
  journal j;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  run_process(rt, [&](process& self) -> task<> {
    const auto r = co_await counter::start_link(self, {}, 0, &j);
    const server_ref<counter> c(r.pid());
    cast(self, c, set_timeout{30ms});
    CO_ASSERT_TRUE(co_await eventually_in(self, [&] { return !j.snapshot().empty(); }));
    cast(self, c, set_timeout{200ms});
    (void)co_await call(self, c, get{});  // arrives first: cancels the timeout
    co_await self.sleep(50ms);
    co_await stop(self, c);
  });
  EXPECT_EQ(j.snapshot(), (std::vector<std::string>{"timeout", "terminate normal"}));
}

// §4.4 rule 14: terminate runs on an exception in a callback, and on the parent's EXIT when
// trapping; rule 15: not for a non-parent EXIT (that is handle_info), nor when killed.
TEST(GenServer, S4_4_WhenTerminateRuns) {
  journal crash, parent_exit, other_exit, killed;
  runtime rt;  // after the journals: servers may still write to them at shutdown
  run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    // Exception in handle_call: the caller sees the server exit; terminate ran.
    const auto a = co_await counter::start_link(self, {}, 0, &crash);
    try {
      (void)co_await call(self, server_ref<counter>(a.pid()), crash_call{});
    } catch (const call_error&) {
    }
    // Parent EXIT while trapping: a parent process that dies with `shutdown`.
    const pid parent = self.spawn([&](process& p) -> task<> {
      (void)co_await counter::start_link(p, {}, 0, &parent_exit, true);
      co_await p.exit(exit_reason::shutdown());
    });
    (void)parent;
    // A non-parent EXIT while trapping goes to handle_info.
    const auto c = co_await counter::start_link(self, {}, 0, &other_exit, true);
    self.spawn([srv = c.pid()](process& p) -> task<> {
      p.link(srv);
      co_await p.exit(exit_reason::error("neighbour"));
    });
    // Killed: no terminate.
    const auto d = co_await counter::start_link(self, {}, 0, &killed, true);
    self.exit(d.pid(), exit_reason::kill());
    CO_ASSERT_TRUE(co_await eventually_in(
        self, [&] { return !parent_exit.snapshot().empty() && !other_exit.snapshot().empty(); }));
    co_await self.sleep(100ms);  // and `killed` stays empty
    co_await stop(self, server_ref<counter>(c.pid()));
  });
  ASSERT_FALSE(crash.snapshot().empty());
  EXPECT_EQ(crash.snapshot()[0], "terminate {exception,std::runtime_error,\"crash_in_call\"}");
  EXPECT_EQ(parent_exit.snapshot(), std::vector<std::string>{"terminate shutdown"});
  EXPECT_EQ(other_exit.snapshot(),
            (std::vector<std::string>{"info EXIT neighbour", "terminate normal"}));
  EXPECT_TRUE(killed.snapshot().empty());
}

// §4.4 rule 17: stop is synchronous; noproc; a different exit reason; timeout.
TEST(GenServer, S4_4_17_Stop) {
  runtime rt;
  std::vector<std::string> outcomes;
  run_process(rt, [&](process& self) -> task<> {
    // Linked: a `shutdown` exit of the server would end a non-trapping caller too, as in OTP.
    self.trap_exit(true);
    const auto a = co_await counter::start_link(self, {}, 0);
    co_await stop(self, server_ref<counter>(a.pid()), exit_reason::shutdown());
    outcomes.push_back(rt.is_alive(a.pid()) ? "alive" : "stopped");
    try {
      co_await stop(self, server_ref<counter>(a.pid()));
    } catch (const call_error& e) {
      outcomes.push_back(e.server_reason().to_string());
    }
  });
  EXPECT_EQ(outcomes, (std::vector<std::string>{"stopped", "noproc"}));
}

namespace {
// terminate exits with its own reason (OTP: exit(R) inside terminate/2), or takes its time.
class stubborn : public gen_server<stubborn> {
 public:
  explicit stubborn(bool slow) : slow_(slow) {}
  task<> terminate(const exit_reason&) {
    if (slow_) co_await self().sleep(2s);
    throw exit_exception(exit_reason::error("terminate_exit"));
  }

 private:
  bool slow_;
};
}  // namespace

// gen_server:stop reports OTP's bare reasons (noproc, timeout, R), not a call's wrapped ones.
TEST(GenServer, StopErrorsAreBareReasons) {
  runtime rt;
  std::vector<std::string> outcomes;
  auto stop_reason = [&](auto&& stopping) -> task<> {
    try {
      co_await stopping();
      outcomes.push_back("ok");
    } catch (const call_error& e) {
      outcomes.push_back(e.reason().to_string() + " " + e.server_reason().to_string());
    }
  };
  run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    const auto a = co_await stubborn::start_link(self, {}, false);
    const server_ref<stubborn> fast(a.pid());
    co_await stop_reason([&] { return stop(self, fast); });
    co_await stop_reason([&] { return stop(self, fast); });  // dead now
    const auto b = co_await stubborn::start_link(self, {}, true);
    const server_ref<stubborn> slow(b.pid());
    co_await stop_reason([&] { return stop(self, slow, exit_reason::normal(), 50ms); });
    self.exit(b.pid(), exit_reason::kill());
  });
  EXPECT_EQ(outcomes, (std::vector<std::string>{"terminate_exit terminate_exit", "noproc noproc",
                                                "timeout timeout"}));
  // The blocking form agrees.
  scoped_process me(rt);
  me.trap_exit(true);
  const auto c = stubborn::start_link(me, {}, false);
  try {
    stop(me, server_ref<stubborn>(c.pid()));
    ADD_FAILURE() << "stop returned";
  } catch (const call_error& e) {
    EXPECT_EQ(e.reason().to_string(), "terminate_exit");
  }
  try {
    stop(me, server_ref<stubborn>(c.pid()));
    ADD_FAILURE() << "stop returned";
  } catch (const call_error& e) {
    EXPECT_EQ(e.reason().to_string(), "noproc");
  }
}

// Coroutine handlers may call other servers.
TEST(GenServer, CoroutineHandlerCallsAnotherServer) {
  runtime rt;
  int v = 0;
  run_process(rt, [&](process& self) -> task<> {
    const auto a = co_await counter::start_link(self, {}, 41);
    const auto b = co_await counter::start_link(self, {}, 0);
    v = co_await call(self, server_ref<counter>(b.pid()), ping_other{a.pid()});
    co_await stop(self, server_ref<counter>(a.pid()));
    co_await stop(self, server_ref<counter>(b.pid()));
  });
  EXPECT_EQ(v, 42);
}

namespace {
// Coroutine handle_info / handle_continue that read their message after a suspension point.
struct tagged {
  std::string text;
};
class async_info : public gen_server<async_info> {
 public:
  explicit async_info(journal* j) : j_(j) {}
  gen::init_result init() { return gen::ok().then(tagged{"from init"}); }
  task<> handle_continue(any_message m) {
    co_await self().yield();
    j_->add("continue " + m.get_if<tagged>()->text);
  }
  task<gen::action> handle_info(any_message m) {
    co_await self().yield();  // the message must outlive the dispatch that started this
    if (auto* t = m.get_if<tagged>()) {
      j_->add("info " + t->text);
      if (t->text == "last") co_return gen::stop(exit_reason::normal());
    }
    co_return gen::noreply();
  }

 private:
  journal* j_;
};
}  // namespace

TEST(GenServer, CoroutineInfoAndContinueOwnTheirMessage) {
  journal j;
  runtime rt;
  run_process(rt, [&](process& self) -> task<> {
    const start_result r = co_await async_info::start_link(self, {}, &j);
    const ref mon = self.monitor(r.pid());
    self.send(r.pid(), tagged{std::string(100, 'x')});  // heap-allocated text
    self.send(r.pid(), tagged{"last"});
    auto d = co_await self.receive(on<down>(), after(10s));
    EXPECT_TRUE(d && d.get<down>().ref == mon && d.get<down>().reason.is_normal());
  });
  EXPECT_EQ(j.snapshot(), (std::vector<std::string>{"continue from init",
                                                    "info " + std::string(100, 'x'), "info last"}));
}

// gen_server:send_request/receive_response: several requests in flight, replies matched to
// their ids whatever the order; a dead server fails with noproc; a timed-out request is dropped.
TEST(GenServer, SendRequestAndReceiveResponse) {
  runtime rt;
  std::vector<int> got;
  std::vector<std::string> errors;
  run_process(rt, [&](process& self) -> task<> {
    const start_result r = co_await counter::start_link(self, {}, 5);
    const server_ref<counter> c(r.pid());
    auto first = send_request(self, c, get{});
    cast(self, c, add{10});
    auto second = send_request(self, c, get{});
    got.push_back(co_await receive_response(self, second));  // out of order on purpose
    got.push_back(co_await receive_response(self, first));
    const slow_get slow{200ms};
    auto late = send_request(self, c, slow);
    try {
      (void)co_await receive_response(self, late, 10ms);
    } catch (const call_error& e) {
      errors.push_back(e.server_reason().to_string());
    }
    co_await self.sleep(300ms);
    EXPECT_EQ(self.message_queue_len(), 0u);  // the late reply was dropped
    co_await stop(self, c);
    auto dead = send_request(self, c, get{});
    try {
      (void)co_await receive_response(self, dead, 1s);
    } catch (const call_error& e) {
      errors.push_back(e.server_reason().to_string());
    }
    auto nobody = send_request(self, server_ref<counter>("nobody"), get{});
    try {
      (void)co_await receive_response(self, nobody);
    } catch (const call_error& e) {
      errors.push_back(e.server_reason().to_string());
    }
  });
  EXPECT_EQ(got, (std::vector<int>{15, 5}));
  EXPECT_EQ(errors, (std::vector<std::string>{"timeout", "noproc", "noproc"}));
}

// Outside threads: start, call, cast, stop through a mailbox.
TEST(GenServer, FromOutsideThread) {
  runtime rt;
  scoped_process me(rt);
  const start_result r = counter::start_link(me, {.name = "outside"}, 7);
  ASSERT_TRUE(r.is_ok());
  const server_ref<counter> c("outside");
  EXPECT_EQ(call(me, c, get{}), 7);
  cast(rt, c, add{1});
  EXPECT_EQ(call(me, c, get{}), 8);
  stop(me, c);
  EXPECT_FALSE(rt.is_alive(r.pid()));
}

// §11 case 56 (gen_server_SUITE / receive_SUITE call_with_huge_message_queue): with 500k junk
// messages in the caller's queue, a call costs about the same as with an empty queue. Checked
// by counting examined messages (time-free, so it holds on a loaded machine).
TEST(GenServerSuite, CallWithHugeMessageQueue) {
  runtime rt;
  const int junk_count = 500000 / stress_divisor;
  std::uint64_t empty_examined = 0;
  std::uint64_t huge_examined = 0;
  run_process(rt, [&](process& self) -> task<> {
    const auto r = co_await counter::start_link(self, {}, 0);
    const server_ref<counter> c(r.pid());
    std::uint64_t before = self.messages_examined();
    for (int i = 0; i < 100; ++i) (void)co_await call(self, c, get{});
    empty_examined = self.messages_examined() - before;
    for (int i = 0; i < junk_count; ++i) self.send(self.self(), junk{i});
    before = self.messages_examined();
    for (int i = 0; i < 100; ++i) (void)co_await call(self, c, get{});
    huge_examined = self.messages_examined() - before;
    co_await stop(self, c);
  });
  EXPECT_LE(huge_examined, 10 * empty_examined + 10);
}

}  // namespace beamlet::test
