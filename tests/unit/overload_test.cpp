// Overload control (docs/operations.md): bounded mailboxes, priority messages, start-rate limits,
// load shedding and restart backoff. One file over 600 lines on purpose, for now: the five
// controls are tested through one set of gates (a start function that blocks a supervisor until
// an exit signal opens it, fillers that queue real start requests, bounded readers released by
// an exit signal), and several tests combine controls. Splitting it by control, with those
// helpers in a shared header, is the next step.
#include <beamlet/observe/metrics.hpp>
#include <beamlet/otp/dynamic_supervisor.hpp>
#include <beamlet/otp/partition_supervisor.hpp>
#include <beamlet/otp/rate_limit.hpp>
#include <beamlet/otp/supervisor_stats.hpp>

#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace beamlet::test {
namespace {

/// What a gated receiver saw, sent to the test when it is done.
struct seen {
  std::vector<int> values;
  std::size_t other = 0;  ///< non-int messages taken
};

/// A process that traps exits, waits for an exit signal (never dropped, so it is the gate a
/// full bounded mailbox still lets through), then takes every queued int and reports them.
auto gated_reader(pid report_to) {
  return [report_to](process& self) -> task<> {
    self.trap_exit(true);
    co_await self.receive(on<exit_message>());
    seen s;
    for (;;) {
      auto m = co_await self.receive(on<int>(), after(0ms));
      if (!m) break;
      s.values.push_back(m.get<int>());
    }
    self.send(report_to, std::move(s));
  };
}

// Waits until `p` traps exits: from then on an exit signal is its gate, not its end.
void wait_trapping(runtime& rt, pid p) {
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, p);
    return d && d->trap_exit;
  }));
}

pid spawn_bounded(runtime& rt, scoped_process& me, mailbox_limit limit) {
  const auto r = me.spawn_opt(gated_reader(me.self()), spawn_options{.mailbox = limit});
  wait_trapping(rt, r.pid);
  return r.pid;
}

// Waits until `p` has taken its arrivals in (and, for drop_oldest, trimmed them).
void wait_queue(runtime& rt, pid p, std::size_t n) {
  ASSERT_TRUE(eventually([&] {
    const auto d = process_info(rt, p);
    return d && d->message_queue_len == n;
  }));
}

TEST(BoundedMailbox, DropNewestKeepsTheFirstMessages) {
  runtime rt;
  scoped_process me(rt);
  const pid p = spawn_bounded(rt, me, {3, overflow_policy::drop_newest});
  for (int i = 1; i <= 5; ++i) me.send(p, i);
  wait_queue(rt, p, 3);
  EXPECT_EQ(process_info(rt, p)->messages_dropped, 2u);
  EXPECT_EQ(process_info(rt, p)->mailbox_capacity, 3u);
  me.exit(p, exit_reason::error("go"));
  const seen s = assert_receive<seen>(me);
  EXPECT_EQ(s.values, (std::vector<int>{1, 2, 3}));
}

TEST(BoundedMailbox, DropOldestKeepsTheNewestMessages) {
  runtime rt;
  scoped_process me(rt);
  const pid p = spawn_bounded(rt, me, {3, overflow_policy::drop_oldest});
  for (int i = 1; i <= 5; ++i) me.send(p, i);
  wait_queue(rt, p, 3);
  EXPECT_EQ(process_info(rt, p)->messages_dropped, 2u);
  me.exit(p, exit_reason::error("go"));
  const seen s = assert_receive<seen>(me);
  EXPECT_EQ(s.values, (std::vector<int>{3, 4, 5}));
}

TEST(BoundedMailbox, RejectHandsTheMessageBackToTrySend) {
  runtime rt;
  scoped_process me(rt);
  const pid p = spawn_bounded(rt, me, {2, overflow_policy::reject});
  std::string kept = "first";
  EXPECT_FALSE(me.try_send(p, 1));
  EXPECT_FALSE(me.try_send(p, 2));
  std::vector<int> big(1000, 7);
  EXPECT_EQ(me.try_send(p, std::move(big)), make_error_code(errc::mailbox_full));
  EXPECT_EQ(big.size(), 1000u);  // handed back (moved back into it), not lost
  me.send(p, 3);                 // a plain send to a full reject mailbox is dropped
  wait_queue(rt, p, 2);
  EXPECT_EQ(process_info(rt, p)->messages_dropped, 2u);
  me.exit(p, exit_reason::error("go"));
  const seen s = assert_receive<seen>(me);
  EXPECT_EQ(s.values, (std::vector<int>{1, 2}));
  // The report is sent just before the body returns: the process may still be alive.
  ASSERT_TRUE(eventually([&] { return !process_info(rt, p); }));
  EXPECT_EQ(me.try_send(p, 4), make_error_code(errc::not_alive));
  (void)kept;
}

TEST(BoundedMailbox, TimerMessagesCountToo) {
  runtime rt;
  scoped_process me(rt);
  const pid p = spawn_bounded(rt, me, {1, overflow_policy::drop_newest});
  (void)me.send_after(p, 1, 1ms);
  (void)me.send_after(p, 2, 1ms);
  wait_queue(rt, p, 1);
  ASSERT_TRUE(eventually([&] { return process_info(rt, p)->messages_dropped == 1; }));
  me.exit(p, exit_reason::error("go"));
  EXPECT_EQ(assert_receive<seen>(me).values.size(), 1u);
}

TEST(BoundedMailbox, PriorityMessagesDoNotCount) {
  runtime rt;
  scoped_process me(rt);
  const pid p = me.spawn_opt(
                      [report = me.self()](process& self) -> task<> {
                        self.trap_exit(true);
                        self.send(report, self.make_priority_alias());
                        co_await self.receive(on<exit_message>());
                        seen s;
                        for (;;) {
                          auto m = co_await self.receive(on<int>(), after(0ms));
                          if (!m) break;
                          s.values.push_back(m.get<int>());
                        }
                        self.send(report, std::move(s));
                        co_await self.receive(on<exit_message>());  // stays, for the last check
                      },
                      spawn_options{.mailbox = {2, overflow_policy::reject}})
                    .pid;
  const auto alias = assert_receive<priority_alias>(me);
  for (int i = 10; i < 15; ++i) me.send(alias, i);  // five priority messages: none refused
  EXPECT_FALSE(me.try_send(p, 1));
  EXPECT_FALSE(me.try_send(p, 2));
  EXPECT_TRUE(me.try_send(p, 3));
  me.exit(p, exit_reason::error("go"));
  EXPECT_EQ(assert_receive<seen>(me).values, (std::vector<int>{10, 11, 12, 13, 14, 1, 2}));
  // Taking the priority messages freed no room they had not taken: exactly two places again.
  EXPECT_FALSE(me.try_send(p, 4));
  EXPECT_FALSE(me.try_send(p, 5));
  EXPECT_TRUE(me.try_send(p, 6));
  me.exit(p, exit_reason::error("done"));
}

TEST(BoundedMailbox, DropOldestKeepsAParkedReceiveValid) {
  // The owner is parked in a selective receive that skips ints: each trim removes the message
  // its save position is on. (Run under ASan, a stale position would be a use after free.)
  runtime rt;
  scoped_process me(rt);
  const pid p = me.spawn_opt(
                      [report = me.self()](process& self) -> task<> {
                        const ref r = self.make_ref(marked);
                        co_await self.receive(on<std::string>());
                        seen s;
                        for (;;) {
                          auto m = co_await self.receive(on<int>(), after(0ms));
                          if (!m) break;
                          s.values.push_back(m.get<int>());
                        }
                        self.send(report, std::move(s));
                        (void)r;
                      },
                      spawn_options{.mailbox = {3, overflow_policy::drop_oldest}})
                    .pid;
  for (int i = 1; i <= 50; ++i) me.send(p, i);
  wait_queue(rt, p, 3);
  me.send(p, std::string("stop"));  // counts too: the three newest are 49, 50 and "stop"
  EXPECT_EQ(assert_receive<seen>(me).values, (std::vector<int>{49, 50}));
}

/// A message whose move fails on demand: a receive that cannot move it out puts it back.
struct fragile {
  static inline std::atomic<bool> fail{false};
  int value = 0;
  explicit fragile(int v) : value(v) {}
  fragile(const fragile&) = default;
  fragile(fragile&& o) : value(o.value) {
    if (fail.load()) throw std::runtime_error("move failed");
  }
  fragile& operator=(const fragile&) = default;
  fragile& operator=(fragile&&) = default;
};

TEST(BoundedMailbox, AMessagePutBackAfterAFailedMoveStillCounts) {
  runtime rt;
  scoped_process me(rt);
  const pid p =
      me.spawn_opt(
            [report = me.self()](process& self) -> task<> {
              self.trap_exit(true);
              co_await self.receive(on<exit_message>());
              fragile::fail = true;
              bool threw = false;
              try {
                (void)co_await self.receive(on<fragile>([](fragile f) { return f.value; }));
              } catch (const std::runtime_error&) {
                threw = true;
              }
              fragile::fail = false;
              const int v = co_await self.receive(on<fragile>([](fragile f) { return f.value; }));
              self.send(report, threw && v == 1 ? std::string("ok") : std::string("no"));
              co_await self.receive(on<exit_message>());
            },
            spawn_options{.mailbox = {2, overflow_policy::reject}})
          .pid;
  wait_trapping(rt, p);
  EXPECT_FALSE(me.try_send(p, fragile(1)));
  me.exit(p, exit_reason::error("go"));
  EXPECT_EQ(assert_receive<std::string>(me), "ok");
  // The message left once, so exactly two places are free again.
  EXPECT_FALSE(me.try_send(p, fragile(2)));
  EXPECT_FALSE(me.try_send(p, fragile(3)));
  EXPECT_EQ(me.try_send(p, fragile(4)), make_error_code(errc::mailbox_full));
  me.exit(p, exit_reason::error("done"));
}

TEST(BoundedMailbox, AServerRefusesDropOldest) {
  runtime rt;
  scoped_process me(rt);
  supervisor_options o;
  o.mailbox = {10, overflow_policy::drop_oldest};
  const start_result r = dynamic_supervisor::start_link(me, o, dynamic_supervisor_flags{});
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.reason().to_string(), "{invalid_mailbox_limit,drop_oldest}");
}

TEST(BoundedMailbox, AFullSupervisorStillRestartsItsChildren) {
  // The supervisor's notes to itself (a failed restart's retry, a backoff timer) are never
  // refused, however full its mailbox is.
  runtime rt;
  scoped_process me(rt);
  supervisor_options o;
  o.mailbox = {1, overflow_policy::reject};
  dynamic_supervisor_flags f;
  f.intensity = 100;
  const pid sup = dynamic_supervisor::start_link(me, o, f).pid();
  auto runs = std::make_shared<std::atomic<int>>(0);
  // Starts, then fails its first two restarts, then starts again. Before failing it fills the
  // supervisor's one place (an int it ignores), so the retry it causes meets a full mailbox.
  start_function flaky = [runs](process& s) -> task<start_result> {
    const int n = runs->fetch_add(1);
    if (n == 1 || n == 2) {
      s.send(s.self(), 42);
      co_return start_result::error(exit_reason::error("not yet"));
    }
    co_return start_result::ok(s.spawn_link(park_forever));
  };
  restart_backoff b;
  b.min = 1ms;
  b.jitter = 0;
  const auto started =
      dynamic_supervisor::start_child(me, sup, child_spec("c", flaky).with_backoff(b));
  ASSERT_TRUE(started && started->is_ok());
  me.exit(started->pid(), exit_reason::kill());
  ASSERT_TRUE(eventually([&] { return runs->load() == 4; }));
  ASSERT_TRUE(eventually([&] { return dynamic_supervisor::count_children(me, sup).active == 1; }));
}

TEST(BoundedMailbox, ReceivingMakesRoomAgain) {
  runtime rt;
  scoped_process me(rt);
  // Takes one int per exit signal (the tick), forever.
  const pid q = me.spawn_opt(
                      [](process& self) -> task<> {
                        self.trap_exit(true);
                        for (;;) {
                          co_await self.receive(on<exit_message>());
                          (void)co_await self.receive(on<int>());
                        }
                      },
                      spawn_options{.mailbox = {2, overflow_policy::reject}})
                    .pid;
  wait_trapping(rt, q);
  EXPECT_FALSE(me.try_send(q, 1));
  EXPECT_FALSE(me.try_send(q, 2));
  EXPECT_TRUE(me.try_send(q, 3));
  me.exit(q, exit_reason::error("tick"));
  wait_queue(rt, q, 1);
  EXPECT_FALSE(me.try_send(q, 4));
  EXPECT_TRUE(me.try_send(q, 5));
}

TEST(BoundedMailbox, SignalsDownsAndRepliesAreNeverDroppedOrCounted) {
  runtime rt;
  scoped_process me(rt);
  // A dynamic supervisor to call into, and a process that ends, to monitor.
  const pid sup = dynamic_supervisor::start_link(me, {}, dynamic_supervisor_flags{}).pid();
  const pid p =
      me.spawn_opt(
            [sup, report = me.self()](process& self) -> task<> {
              self.trap_exit(true);
              co_await self.receive(on<exit_message>());  // the gate
              // The mailbox is full of ints: a DOWN, a trapped EXIT and a call reply
              // still get in.
              const auto m = self.spawn_monitor([](process&) -> task<> { co_return; });
              auto d = co_await self.receive(on<down>(), after(5s));
              const pid linked = self.spawn_link(
                  [](process& s) -> task<> { co_await s.exit(exit_reason::error("boom")); });
              auto e =
                  co_await self.receive(on<exit_message>().when([linked](const exit_message& x) {
                    return x.from == linked;
                  }),
                                        after(5s));
              const child_counts n = co_await dynamic_supervisor::count_children(self, sup, 5000ms);
              self.send(report, std::string(d && e && n.specs == 0 ? "ok" : "lost"));
              (void)m;
            },
            spawn_options{.mailbox = {1, overflow_policy::drop_newest}})
          .pid;
  wait_trapping(rt, p);
  me.send(p, 1);
  me.send(p, 2);  // dropped: the mailbox holds one
  wait_queue(rt, p, 1);
  me.exit(p, exit_reason::error("go"));
  EXPECT_EQ(assert_receive<std::string>(me, 10s), "ok");
}

TEST(BoundedMailbox, DroppedMessagesShowInTheMetrics) {
  runtime rt;
  scoped_process me(rt);
  const pid p = spawn_bounded(rt, me, {1, overflow_policy::drop_newest});
  for (int i = 0; i < 4; ++i) me.send(p, i);
  wait_queue(rt, p, 1);
  const std::string text = prometheus_metrics(rt);
  EXPECT_NE(text.find("beamlet_messages_dropped_total 3"), std::string::npos) << text;
}

TEST(BoundedMailbox, AnUnknownPolicyIsRejectedAtSpawn) {
  runtime rt;
  scoped_process me(rt);
  const auto before = rt.process_count();
  EXPECT_THROW((void)me.spawn_opt(park_forever,
                                  spawn_options{.mailbox = {1, static_cast<overflow_policy>(9)}}),
               std::invalid_argument);
  EXPECT_EQ(rt.process_count(), before);
}

// -- supervisors with bounded mailboxes ----------------------------------------------------------

/// A start function that blocks the supervisor until `gate` sends it an exit signal (which a
/// full bounded mailbox still lets through), then starts a parked child.
struct gate_entered {};
start_function gated_start(pid gate) {
  return [gate](process& sup) -> task<start_result> {
    sup.send(gate, gate_entered{});
    co_await sup.receive(
        on<exit_message>().when([gate](const exit_message& e) { return e.from == gate; }));
    co_return start_result::ok(sup.spawn_link(park_forever));
  };
}
start_function parked_start() {
  return [](process& sup) -> task<start_result> {
    co_return start_result::ok(sup.spawn_link(park_forever));
  };
}

TEST(BoundedMailbox, ASupervisorRefusesStartsOverItsCapacityAtOnce) {
  runtime rt;
  scoped_process me(rt);
  supervisor_options o;
  o.mailbox = {1, overflow_policy::reject};
  const pid sup = dynamic_supervisor::start_link(me, o, dynamic_supervisor_flags{}).pid();
  // A: blocks the supervisor inside its start function.
  me.spawn([sup, g = me.self()](process& self) -> task<> {
    auto r = co_await dynamic_supervisor::start_child(self, sup, child_spec("a", gated_start(g)));
    self.send(g, std::string(r && r->is_ok() ? "a ok" : "a failed"));
  });
  (void)assert_receive<gate_entered>(me, 10s);
  // B: queued (the one place there is).
  me.spawn([sup, g = me.self()](process& self) -> task<> {
    auto r = co_await dynamic_supervisor::start_child(self, sup, child_spec("b", parked_start()));
    self.send(g, std::string(r && r->is_ok() ? "b ok" : "b failed"));
  });
  wait_queue(rt, sup, 1);
  // C: refused at once, without waiting for the supervisor.
  const auto c = dynamic_supervisor::start_child(me, sup, child_spec("c", parked_start()), 5s);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, sup_errc::mailbox_full);
  EXPECT_EQ(c.error().to_string(), "mailbox_full");
  try {
    (void)dynamic_supervisor::which_children(me, sup, 5000ms);
    ADD_FAILURE() << "which_children into a full mailbox did not fail";
  } catch (const call_error& e) {
    EXPECT_EQ(e.which(), call_error::kind::mailbox_full);
  }
  me.exit(sup, exit_reason::error("go"));  // the gate: an exit signal is never refused
  std::set<std::string> replies;
  replies.insert(assert_receive<std::string>(me, 10s));
  replies.insert(assert_receive<std::string>(me, 10s));
  EXPECT_EQ(replies, (std::set<std::string>{"a ok", "b ok"}));
  EXPECT_EQ(dynamic_supervisor::count_children(me, sup).specs, 2);
  EXPECT_EQ(process_info(rt, sup)->messages_dropped, 2u);
}

// -- priority messages (EEP 76) ------------------------------------------------------------------

TEST(Priority, PriorityMessagesAreReceivedAheadOfOrdinaryOnes) {
  runtime rt;
  scoped_process me(rt);
  const pid p = me.spawn([report = me.self()](process& self) -> task<> {
    self.trap_exit(true);
    self.send(report, self.make_priority_alias());
    co_await self.receive(on<exit_message>());  // the gate (an ordinary exit)
    seen s;
    for (;;) {
      auto m = co_await self.receive(on<int>(), after(0ms));
      if (!m) break;
      s.values.push_back(m.get<int>());
    }
    self.send(report, std::move(s));
  });
  const auto alias = assert_receive<priority_alias>(me);
  EXPECT_EQ(alias.owner, p);
  for (int i = 1; i <= 3; ++i) me.send(p, i);
  me.send(alias, 10);
  me.send(alias, 11);
  me.exit(p, exit_reason::error("go"));
  EXPECT_EQ(assert_receive<seen>(me).values, (std::vector<int>{10, 11, 1, 2, 3}));
}

TEST(Priority, AnInactiveAliasDeliversNothing) {
  runtime rt;
  scoped_process me(rt);
  const pid p = me.spawn([report = me.self()](process& self) -> task<> {
    const priority_alias a = self.make_priority_alias();
    self.send(report, a);
    co_await self.receive(on<std::string>());
    const bool was = self.unalias(a);
    const bool again = self.unalias(a);
    self.send(report, was && !again ? std::string("unaliased") : std::string("wrong"));
    co_await self.receive(on<std::string>());
    auto m = co_await self.receive(on<int>(), after(0ms));
    self.send(report, m ? m.get<int>() : -1);
  });
  const auto alias = assert_receive<priority_alias>(me);
  me.send(p, std::string("unalias"));
  EXPECT_EQ(assert_receive<std::string>(me), "unaliased");
  me.send(alias, 5);  // dropped at the door
  me.send(p, std::string("report"));
  EXPECT_EQ(assert_receive<int>(me), -1);
}

TEST(Priority, APriorityExitSignalOvertakesWhenTrapped) {
  runtime rt;
  scoped_process me(rt);
  const pid p = me.spawn([report = me.self()](process& self) -> task<> {
    self.trap_exit(true);
    self.send(report, self.make_priority_alias());
    co_await self.receive(on<std::string>());  // the gate
    auto first = co_await self.receive(on_any());
    self.send(report, std::string(first.is<exit_message>() ? "exit first" : "int first"));
  });
  const auto alias = assert_receive<priority_alias>(me);
  me.send(p, 1);
  me.exit(alias, exit_reason::error("urgent"));
  me.send(p, std::string("go"));  // the gate, last
  EXPECT_EQ(assert_receive<std::string>(me), "exit first");
}

TEST(Priority, APriorityKillEndsTheOwner) {
  runtime rt;
  scoped_process me(rt);
  watched w(rt, [report = me.self()](process& self) -> task<> {
    self.send(report, self.make_priority_alias());
    co_await self.receive(on<std::string>());
  });
  const auto alias = assert_receive<priority_alias>(me);
  me.exit(alias, exit_reason::kill());
  EXPECT_EQ(expect_exit(rt, w), exit_reason::killed());
}

/// A start function that starts nothing (ignore): the cheapest start request.

/// As ignore_start, counting the requests the supervisor handled.
start_function counted_ignore(std::shared_ptr<std::atomic<std::size_t>> handled) {
  return [handled](process&) -> task<start_result> {
    handled->fetch_add(1, std::memory_order_relaxed);
    co_return start_result::ignore();
  };
}

/// Queues `n` start requests in `sup` while it is blocked in a gated start, then opens the gate.
/// The supervisor then works through the backlog, which takes far longer than any single
/// request (about a second for a million).
struct filled {};

/// A process that queues `n` start requests in `sup` and says so. With `stay` it then waits
/// (the replies queue up in it) until it gets a string; else it ends at once, and the replies,
/// which nobody needs, are dropped at its door.
auto filler(pid sup, std::size_t n, pid report, start_function start, bool stay) {
  return [sup, n, report, start, stay](process& self) -> task<> {
    for (std::size_t i = 0; i < n; ++i)
      (void)dynamic_supervisor::send_start_child(self, sup, child_spec("idle", start));
    self.send(report, filled{});
    if (stay) co_await self.receive(on<std::string>());
  };
}

/// Blocks `sup` in a gated start and queues `n` start requests of `start` behind it; the gate is
/// `me`, which opens it with an exit signal.
void block_and_fill(scoped_process& me, pid sup, std::size_t n, start_function start) {
  me.spawn([sup, g = me.self()](process& self) -> task<> {
    (void)co_await dynamic_supervisor::start_child(self, sup, child_spec("gate", gated_start(g)));
  });
  (void)assert_receive<gate_entered>(me, 10s);
  // The filler stays: its exit would drop its million monitors on the supervisor, a storm of
  // lock traffic on the supervisor's watcher set that is not what is measured here.
  (void)me.spawn(filler(sup, n, me.self(), std::move(start), /*stay=*/true));
  (void)assert_receive<filled>(me, 120s);
}

void drown(scoped_process& me, pid sup, std::size_t n) {
  block_and_fill(me, sup, n, ignore_start());
  me.exit(sup, exit_reason::error("go"));
}

/// As ignore_start, but every `every`-th request starts a parked child. Only the supervisor runs
/// it, so the count needs no lock. The children a reply counts say how far into its backlog the
/// supervisor was when it answered: a snapshot that no delay of the reader can change.
start_function sampled_start(std::size_t every) {
  auto seen = std::make_shared<std::size_t>(0);
  return [seen, every](process& sup) -> task<start_result> {
    if (++*seen % every != 0) co_return start_result::ignore();
    co_return start_result::ok(sup.spawn_link(park_forever));
  };
}

/// What an asker saw: the children its reply counted, and when the reply came.
struct asked {
  int order;
  std::size_t children;
  std::chrono::steady_clock::time_point answered;
};

TEST(Priority, ADrowningSupervisorAnswersAPriorityRequestFirst) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t backlog = 1'000'000 / stress_divisor;
  supervisor_options o;
  o.priority = true;
  const pid sup = dynamic_supervisor::start_link(me, o, dynamic_supervisor_flags{}).pid();
  ASSERT_TRUE(published_priority_alias(rt, sup).has_value());
  // Every thousandth queued request starts a child, so a reply's child count tells how much of
  // the backlog had been handled when the supervisor answered.
  block_and_fill(me, sup, backlog, sampled_start(1000));
  // Three requests join the queue behind the whole backlog before the supervisor may look at
  // it: an asker is known to have sent its request once it waits for the reply. (Asking after
  // the gate opened would race the drain: a test thread descheduled for half a second under
  // load saw half the backlog gone.) The first answer also pays for taking the flood in from
  // the inbox (a pass over every arrival, once); the next ones find it in the queue, as a
  // drowning supervisor holds it.
  const auto ask = [&](int order, bool list) {
    const pid asker = me.spawn([sup, order, list, to = me.self()](process& self) -> task<> {
      std::size_t children = 0;
      if (list)
        children = (co_await dynamic_supervisor::which_children(self, sup, 20s)).size();
      else
        children = (co_await dynamic_supervisor::count_children(self, sup, 20s)).specs;
      self.send(to, asked{order, children, std::chrono::steady_clock::now()});
    });
    EXPECT_TRUE(eventually([&] {
      const auto info = process_info(rt, asker);
      return info && info->status == process_status::waiting;
    }));
  };
  ask(0, false);
  ask(1, false);
  ask(2, true);
  const auto opened = std::chrono::steady_clock::now();
  me.exit(sup, exit_reason::error("go"));
  for (int i = 0; i < 3; ++i) {
    const asked a = assert_receive<asked>(me, 30s);
    // Only the gate's child: the supervisor answered before it handled any queued request.
    EXPECT_EQ(a.children, 1u) << "request " << a.order;
    std::cout << "[ priority ] " << (a.order == 2 ? "which_children" : "count_children")
              << " answered "
              << std::chrono::duration<double, std::micro>(a.answered - opened).count()
              << " us after the gate opened, before any of " << backlog
              << " queued start requests\n";
  }
}

TEST(Priority, AnOrdinaryRequestWaitsBehindTheBacklog) {
  runtime rt;
  scoped_process me(rt);
  const std::size_t backlog = 1'000'000 / stress_divisor;
  const pid sup = dynamic_supervisor::start_link(me, {}, dynamic_supervisor_flags{}).pid();
  EXPECT_FALSE(published_priority_alias(rt, sup).has_value());
  drown(me, sup, backlog);
  EXPECT_THROW((void)dynamic_supervisor::count_children(me, sup, 1ms), call_error);
  // It is answered in the end.
  EXPECT_EQ(dynamic_supervisor::count_children(me, sup, 60s).specs, 1);
}

TEST(Priority, APrioritySupervisorTakesItsShutdownAheadOfTheBacklog) {
  runtime rt;
  const std::size_t backlog = 1'000'000 / stress_divisor;
  auto handled = std::make_shared<std::atomic<std::size_t>>(0);
  auto reason = run_process(rt, [&](process& self) -> task<> {
    self.trap_exit(true);
    supervisor_options o;
    o.priority = true;
    const start_result s =
        co_await dynamic_supervisor::start_link(self, o, dynamic_supervisor_flags{});
    CO_ASSERT_TRUE(s.is_ok());
    const pid sup = s.pid();
    const ref mon = self.monitor(sup);
    // Block it, fill it, open the gate. The gate is a process of its own: an exit signal from
    // the parent would be taken as the parent's.
    const pid gate = self.spawn([sup, parent = self.self()](process& g) -> task<> {
      co_await g.receive(on<gate_entered>());
      g.send(parent, gate_entered{});
      co_await g.receive(on<std::string>());
      g.exit(sup, exit_reason::error("go"));
    });
    self.spawn([sup, gate](process& c) -> task<> {
      (void)co_await dynamic_supervisor::start_child(c, sup, child_spec("gate", gated_start(gate)));
    });
    co_await self.receive(on<gate_entered>());
    self.spawn(filler(sup, backlog, self.self(), counted_ignore(handled), /*stay=*/false));
    co_await self.receive(on<filled>());
    self.send(gate, std::string("open"));
    const auto alias = published_priority_alias(*detail::runtime_of(self), sup);
    CO_ASSERT_TRUE(alias.has_value());
    self.exit(*alias, exit_reason::shutdown());  // the parent's shutdown, as priority
    auto d = co_await self.receive(on<down>().when([mon](const down& x) { return x.ref == mon; }),
                                   after(30s));
    CO_ASSERT_TRUE(d);
    EXPECT_EQ(d.get<down>().reason, exit_reason::shutdown());
    // It went down with (nearly) all the backlog unhandled: the shutdown overtook it.
    EXPECT_LT(handled->load(), backlog / 2);
    std::cout << "[ priority ] shut down after handling " << handled->load() << " of " << backlog
              << " queued start requests\n";
  });
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, exit_reason::normal());
}

// -- token buckets and start-rate limits ----------------------------------------------------------

TEST(TokenBucket, AdmitsTheBurstThenTheRate) {
  token_bucket b({.per_second = 10, .burst = 3});
  const token_bucket::time_point t0{std::chrono::seconds(100)};
  EXPECT_TRUE(b.try_acquire(t0));
  EXPECT_TRUE(b.try_acquire(t0));
  EXPECT_TRUE(b.try_acquire(t0));
  EXPECT_FALSE(b.try_acquire(t0));
  EXPECT_FALSE(b.try_acquire(t0 + 99ms));
  EXPECT_TRUE(b.try_acquire(t0 + 100ms));
  EXPECT_FALSE(b.try_acquire(t0 + 100ms));
  EXPECT_NEAR(b.available(t0 + 10s), 3.0, 1e-9);  // never more than the burst
  EXPECT_TRUE(b.try_acquire(t0 + 10s));
}

TEST(TokenBucket, AFineRateStillAdmitsItsBurst) {
  // Above 1e9/s a token's interval rounds to 1 ns: the bucket must still hold one.
  token_bucket b({.per_second = 4e9, .burst = 1});
  const token_bucket::time_point t0{std::chrono::seconds(1)};
  EXPECT_TRUE(b.try_acquire(t0));
  EXPECT_FALSE(b.try_acquire(t0));
  EXPECT_TRUE(b.try_acquire(t0 + 1ns));
}

TEST(TokenBucket, RejectsBadParameters) {
  EXPECT_THROW(token_bucket({.per_second = 0, .burst = 1}), std::invalid_argument);
  EXPECT_THROW(token_bucket({.per_second = -1, .burst = 1}), std::invalid_argument);
  EXPECT_THROW(token_bucket({.per_second = 1, .burst = 0.5}), std::invalid_argument);
  EXPECT_THROW(token_bucket({.per_second = std::nan(""), .burst = 1}), std::invalid_argument);
  EXPECT_THROW(token_bucket({.per_second = 1, .burst = INFINITY}), std::invalid_argument);
}

TEST(TokenBucket, IsExactUnderConcurrentCallers) {
  token_bucket b({.per_second = 1, .burst = 1000});
  const token_bucket::time_point t0{std::chrono::seconds(1)};
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        if (b.try_acquire(t0)) taken.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(taken.load(), 1000);
}

/// A start function that counts its runs.
start_function counted_start(std::shared_ptr<std::atomic<int>> runs) {
  return [runs](process& sup) -> task<start_result> {
    runs->fetch_add(1);
    co_return start_result::ok(sup.spawn_link(park_forever));
  };
}

TEST(RateLimit, OverTheStartRateNothingStarts) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  dynamic_supervisor_flags f;
  f.start_rate = rate_limit{.per_second = 2, .burst = 2};
  const pid sup = dynamic_supervisor::start_link(me, {}, f).pid();
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto start = [&] {
    return dynamic_supervisor::start_child(me, sup, child_spec("c", counted_start(runs)));
  };
  EXPECT_TRUE(start());
  EXPECT_TRUE(start());
  const auto third = start();
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, sup_errc::rate_limited);
  EXPECT_EQ(third.error().to_string(), "rate_limited");
  EXPECT_EQ(runs->load(), 2);
  clock->advance(499ms);
  EXPECT_FALSE(start());
  clock->advance(1ms);
  EXPECT_TRUE(start());
  EXPECT_EQ(runs->load(), 3);
  EXPECT_EQ(dynamic_supervisor::count_children(me, sup).active, 3);
  const auto stats = supervisor_stats(rt);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].rate_limited, 2u);
  EXPECT_NE(prometheus_metrics(rt).find("cause=\"rate_limited\"} 2"), std::string::npos);
}

TEST(RateLimit, AnInvalidRateIsABadInit) {
  runtime rt;
  scoped_process me(rt);
  dynamic_supervisor_flags f;
  f.start_rate = rate_limit{.per_second = 0, .burst = 1};
  const start_result r = dynamic_supervisor::start_link(me, {}, f);
  ASSERT_TRUE(r.is_error());
  EXPECT_NE(r.reason().to_string().find("invalid_start_rate"), std::string::npos)
      << r.reason().to_string();
}

TEST(RateLimit, APartitionSupervisorLimitsAllPartitionsTogether) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  auto reason = run_process(rt, [&](process& self) -> task<> {
    partition_supervisor_options o;
    o.name = "limited";
    o.partitions = 4;
    o.child = child_spec("dyn", dynamic_supervisor_start()).with_type(child_type::supervisor);
    o.total_start_rate = rate_limit{.per_second = 1, .burst = 3};
    const start_result s = co_await partition_supervisor::start_link(self, o);
    CO_ASSERT_TRUE(s.is_ok());
    auto runs = std::make_shared<std::atomic<int>>(0);
    int ok = 0;
    int limited = 0;
    for (int key = 0; key < 8; ++key) {
      auto r = co_await partition_supervisor::start_child(self, "limited", key,
                                                          child_spec("c", counted_start(runs)));
      if (r) ++ok;
      if (!r && r.error().code == sup_errc::rate_limited) ++limited;
    }
    EXPECT_EQ(ok, 3);
    EXPECT_EQ(limited, 5);
    EXPECT_EQ(runs->load(), 3);
    clock->advance(1s);
    auto again = co_await partition_supervisor::start_child(self, "limited", 7,
                                                            child_spec("c", counted_start(runs)));
    EXPECT_TRUE(again);
  });
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, exit_reason::normal());
}

TEST(RateLimit, EachPartitionCanHaveItsOwnLimit) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  auto reason = run_process(rt, [&](process& self) -> task<> {
    dynamic_supervisor_flags f;
    f.start_rate = rate_limit{.per_second = 1, .burst = 1};
    partition_supervisor_options o;
    o.name = "per_partition";
    o.partitions = 2;
    o.child = child_spec("dyn", dynamic_supervisor_start(f)).with_type(child_type::supervisor);
    const start_result s = co_await partition_supervisor::start_link(self, o);
    CO_ASSERT_TRUE(s.is_ok());
    auto runs = std::make_shared<std::atomic<int>>(0);
    // Keys 0 and 2 share partition 0; key 1 has partition 1 to itself.
    auto a = co_await partition_supervisor::start_child(self, "per_partition", 0,
                                                        child_spec("c", counted_start(runs)));
    auto b = co_await partition_supervisor::start_child(self, "per_partition", 2,
                                                        child_spec("c", counted_start(runs)));
    auto c = co_await partition_supervisor::start_child(self, "per_partition", 1,
                                                        child_spec("c", counted_start(runs)));
    EXPECT_TRUE(a);
    EXPECT_FALSE(b);
    EXPECT_TRUE(c);
    EXPECT_EQ(runs->load(), 2);
  });
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, exit_reason::normal());
}

// -- load shedding -------------------------------------------------------------------------------

TEST(Shedding, AboveTheThresholdStartsAreShed) {
  runtime rt;
  scoped_process me(rt);
  dynamic_supervisor_flags f;
  f.shed_above = 5;
  const pid sup = dynamic_supervisor::start_link(me, {}, f).pid();
  auto runs = std::make_shared<std::atomic<int>>(0);
  // Block the supervisor, queue 20 start requests behind it, open the gate.
  me.spawn([sup, g = me.self()](process& self) -> task<> {
    (void)co_await dynamic_supervisor::start_child(self, sup, child_spec("gate", gated_start(g)));
  });
  (void)assert_receive<gate_entered>(me, 10s);
  constexpr int clients = 20;
  for (int i = 0; i < clients; ++i) {
    me.spawn([sup, runs, g = me.self()](process& self) -> task<> {
      auto r =
          co_await dynamic_supervisor::start_child(self, sup, child_spec("c", counted_start(runs)));
      self.send(g, r ? 1 : (r.error().code == sup_errc::overloaded ? 0 : -1));
    });
  }
  wait_queue(rt, sup, clients);
  me.exit(sup, exit_reason::error("go"));
  int accepted = 0;
  int shed = 0;
  for (int i = 0; i < clients; ++i) {
    const int r = assert_receive<int>(me, 10s);
    ASSERT_NE(r, -1);
    (r == 1 ? accepted : shed) += 1;
  }
  // While more than 5 were queued behind a request, it was shed; the last ones got in.
  EXPECT_GE(shed, clients - 6);
  EXPECT_GE(accepted, 1);
  EXPECT_EQ(runs->load(), accepted);
  EXPECT_EQ(supervisor_stats(rt)[0].overloaded, static_cast<std::uint64_t>(shed));
}

TEST(Shedding, TheOperatorSwitchOverridesTheThreshold) {
  runtime rt;
  scoped_process me(rt);
  const pid sup = dynamic_supervisor::start_link(me, {}, dynamic_supervisor_flags{}).pid();
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto start = [&] {
    return dynamic_supervisor::start_child(me, sup, child_spec("c", counted_start(runs)));
  };
  EXPECT_TRUE(start());
  EXPECT_TRUE(dynamic_supervisor::set_shedding(rt, sup, shedding::on));
  const auto r = start();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, sup_errc::overloaded);
  EXPECT_EQ(runs->load(), 1);
  EXPECT_TRUE(dynamic_supervisor::set_shedding(rt, sup, shedding::automatic));
  EXPECT_TRUE(start());
  EXPECT_FALSE(dynamic_supervisor::set_shedding(rt, me.self(), shedding::on));  // not one
  EXPECT_THROW(dynamic_supervisor::set_shedding(rt, sup, static_cast<shedding>(7)),
               std::invalid_argument);
  // `off` wins over a threshold that would shed.
  dynamic_supervisor_flags f;
  f.shed_above = 0;
  const pid strict = dynamic_supervisor::start_link(me, {}, f).pid();
  EXPECT_TRUE(dynamic_supervisor::set_shedding(rt, strict, shedding::off));
  EXPECT_TRUE(dynamic_supervisor::start_child(me, strict, child_spec("c", counted_start(runs))));
}

// -- restart backoff -----------------------------------------------------------------------------

/// A child that crashes as soon as it starts; each start records the supervisor's time.
start_function crashing_start(std::shared_ptr<std::mutex> mu,
                              std::shared_ptr<std::vector<clock_time>> starts) {
  return [mu, starts](process& sup) -> task<start_result> {
    {
      std::lock_guard lock(*mu);
      starts->push_back(sup.now());
    }
    co_return start_result::ok(sup.spawn_link(
        [](process& self) -> task<> { co_await self.exit(exit_reason::error("crash")); }));
  };
}

TEST(Backoff, RestartDelaysFollowTheCurveInVirtualTime) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  dynamic_supervisor_flags f;
  f.intensity = 100;
  f.period = 1;
  const pid sup = dynamic_supervisor::start_link(me, {}, f).pid();
  auto mu = std::make_shared<std::mutex>();
  auto starts = std::make_shared<std::vector<clock_time>>();
  auto count = [&] {
    std::lock_guard lock(*mu);
    return starts->size();
  };
  restart_backoff b;
  b.min = 100ms;
  b.max = 800ms;
  b.jitter = 0;
  ASSERT_TRUE(dynamic_supervisor::start_child(
      me, sup, child_spec("flaky", crashing_start(mu, starts)).with_backoff(b)));
  const std::vector<std::chrono::milliseconds> expected{100ms, 200ms, 400ms, 800ms, 800ms};
  for (std::size_t k = 0; k < expected.size(); ++k) {
    ASSERT_TRUE(eventually([&] {
      return dynamic_supervisor::count_children(me, sup).active == 0;  // crashed, waiting
    }));
    clock->advance(expected[k] - 1ms);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(count(), k + 1) << "restarted before its delay (restart " << k << ")";
    clock->advance(1ms);
    ASSERT_TRUE(eventually([&] { return count() == k + 2; })) << "restart " << k;
  }
  std::lock_guard lock(*mu);
  for (std::size_t k = 0; k < expected.size(); ++k)
    EXPECT_EQ((*starts)[k + 1] - (*starts)[k], expected[k]) << "restart " << k;
}

TEST(Backoff, AStaticSupervisorSpacesRestartsToo) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  auto mu = std::make_shared<std::mutex>();
  auto starts = std::make_shared<std::vector<clock_time>>();
  auto count = [&] {
    std::lock_guard lock(*mu);
    return starts->size();
  };
  restart_backoff b;
  b.min = 50ms;
  b.max = 1s;
  b.jitter = 0;
  supervisor_flags f;
  f.intensity = 100;
  const std::vector<child_spec> kids{
      child_spec("flaky", crashing_start(mu, starts)).with_backoff(b)};
  const pid sup =
      supervisor::start_link(me, {}, [f, kids] { return supervisor_init(f, kids); }).pid();
  const std::vector<std::chrono::milliseconds> expected{50ms, 100ms, 200ms};
  for (std::size_t k = 0; k < expected.size(); ++k) {
    ASSERT_TRUE(eventually([&] {
      if (count() != k + 1) return false;
      const auto c = supervisor::which_children(me, sup);
      return c.size() == 1 && c[0].status == child_info::state::restarting;
    }));
    clock->advance(expected[k] - 1ms);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(count(), k + 1) << "restarted before its delay (restart " << k << ")";
    clock->advance(1ms);
    ASSERT_TRUE(eventually([&] { return count() == k + 2; })) << "restart " << k;
  }
  std::lock_guard lock(*mu);
  for (std::size_t k = 0; k < expected.size(); ++k)
    EXPECT_EQ((*starts)[k + 1] - (*starts)[k], expected[k]) << "restart " << k;
}

TEST(Backoff, OneForAllStopsTheGroupAtOnceAndStartsWhatIsNotRunning) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  restart_backoff b;
  b.min = 100ms;
  b.jitter = 0;
  // A crashes when told; B just runs.
  start_function a_start = [](process& s) -> task<start_result> {
    co_return start_result::ok(s.spawn_link([](process& self) -> task<> {
      co_await self.receive(on<std::string>());
      co_await self.exit(exit_reason::error("crash"));
    }));
  };
  supervisor_flags f;
  f.strategy = restart_strategy::one_for_all;
  f.intensity = 10;
  const std::vector<child_spec> kids{child_spec("a", a_start).with_backoff(b),
                                     child_spec("b", parked_start())};
  const pid sup =
      supervisor::start_link(me, {}, [f, kids] { return supervisor_init(f, kids); }).pid();
  auto child = [&](const char* id) {
    for (const auto& c : supervisor::which_children(me, sup))
      if (c.id == id) return c;
    return child_info{};
  };
  const pid a0 = child("a").pid;
  const pid b0 = child("b").pid;
  me.send(a0, std::string("crash"));
  // The group is stopped at once; A waits for its delay.
  ASSERT_TRUE(eventually(
      [&] { return child("a").status == child_info::state::restarting && !child("b").pid; }));
  EXPECT_FALSE(rt.is_alive(b0));
  // B restarted by hand meanwhile: when the delay is over, only A starts.
  const auto by_hand = supervisor::restart_child(me, sup, "b");
  ASSERT_TRUE(by_hand && by_hand->is_ok());
  const pid b1 = by_hand->pid();
  clock->advance(100ms);
  ASSERT_TRUE(eventually([&] { return child("a").status == child_info::state::running; }));
  EXPECT_NE(child("a").pid, a0);
  EXPECT_EQ(child("b").pid, b1);
  EXPECT_TRUE(rt.is_alive(b1));
}

TEST(Backoff, ResetsAfterTheChildRanLongEnough) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  dynamic_supervisor_flags f;
  f.intensity = 100;
  const pid sup = dynamic_supervisor::start_link(me, {}, f).pid();
  auto starts = std::make_shared<std::atomic<int>>(0);
  restart_backoff b;
  b.min = 100ms;
  b.max = 10s;
  b.reset_after = 5s;
  b.jitter = 0;
  // The child crashes when it gets a string.
  auto start = [starts](process& s) -> task<start_result> {
    starts->fetch_add(1);
    co_return start_result::ok(s.spawn_link([](process& self) -> task<> {
      co_await self.receive(on<std::string>());
      co_await self.exit(exit_reason::error("crash"));
    }));
  };
  ASSERT_TRUE(dynamic_supervisor::start_child(me, sup, child_spec("c", start).with_backoff(b)));
  auto crash_and_wait = [&](std::chrono::milliseconds delay) {
    const auto kids = dynamic_supervisor::which_children(me, sup);
    ASSERT_EQ(kids.size(), 1u);
    const int before = starts->load();
    me.send(kids[0].pid, std::string("crash"));
    ASSERT_TRUE(
        eventually([&] { return dynamic_supervisor::count_children(me, sup).active == 0; }));
    clock->advance(delay - 1ms);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(starts->load(), before);
    clock->advance(1ms);
    ASSERT_TRUE(eventually([&] { return starts->load() == before + 1; }));
    ASSERT_TRUE(
        eventually([&] { return dynamic_supervisor::count_children(me, sup).active == 1; }));
  };
  crash_and_wait(100ms);
  crash_and_wait(200ms);
  crash_and_wait(400ms);
  clock->advance(5s);  // ran for reset_after: the next restart is quick again
  crash_and_wait(100ms);
}

TEST(Backoff, TheIntensityStillApplies) {
  auto clock = std::make_shared<manual_clock>();
  runtime rt({.clock = clock});
  scoped_process me(rt);
  me.trap_exit(true);
  dynamic_supervisor_flags f;
  f.intensity = 3;
  f.period = 5;
  const pid sup = dynamic_supervisor::start_link(me, {}, f).pid();
  auto mu = std::make_shared<std::mutex>();
  auto starts = std::make_shared<std::vector<clock_time>>();
  restart_backoff b;
  b.min = 100ms;
  b.jitter = 0;
  ASSERT_TRUE(dynamic_supervisor::start_child(
      me, sup, child_spec("flaky", crashing_start(mu, starts)).with_backoff(b)));
  auto count = [&] {
    std::lock_guard lock(*mu);
    return starts->size();
  };
  for (std::size_t i = 0; i < 3; ++i) {
    // Started i + 1 times, crashed, and its restart is scheduled: move time past the delay.
    ASSERT_TRUE(eventually([&] {
      return count() == i + 1 && dynamic_supervisor::count_children(me, sup).active == 0;
    }));
    clock->advance(1s);
  }
  // The fourth crash within 5 s ends the supervisor.
  const auto e =
      assert_receive<exit_message>(me, 10s, [sup](const exit_message& x) { return x.from == sup; });
  EXPECT_EQ(e.reason, exit_reason::shutdown());
  std::lock_guard lock(*mu);
  EXPECT_EQ(starts->size(), 4u);
}

TEST(Backoff, JitterStretchesWithinItsBound) {
  restart_backoff b;
  b.min = 100ms;
  b.max = 1s;
  EXPECT_EQ(b.delay(0), 100ms);
  EXPECT_EQ(b.delay(3), 800ms);
  EXPECT_EQ(b.delay(4), 1000ms);
  EXPECT_EQ(b.delay(60), 1000ms);
  b.jitter = 1.5;
  const auto e = validate(child_spec("x", parked_start()).with_backoff(b));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, spec_errc::invalid_backoff);
}

}  // namespace
}  // namespace beamlet::test
