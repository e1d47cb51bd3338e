// Process groups shared with Erlang's pg (dist/pg.hpp): a C++ member is listed by Erlang's
// pg:get_members/1 and an Erlang member here, both ways of leaving (leave, and the member's
// end) reach the other side, a lost connection drops that node's members, two beamlet nodes
// share groups, and pg's rules for joining twice and leaving what was never joined.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace dist_pg_cases {

using dist::term;

bool has(const std::vector<pid>& v, pid p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

// An Erlang list of pids as a vector (empty for anything else).
std::vector<pid> pids(const term& t) {
  std::vector<pid> out;
  if (t.is_list())
    for (const term& e : t.elements())
      if (e.is_pid()) out.push_back(e.pid());
  return out;
}

TEST(DistPg, MembersAreSharedWithErlangBothWays) {
  REQUIRE_ERL();
  runtime rt;
  const auto n = start_node(rt, "pg");
  ASSERT_FALSE(n.name.empty());
  const term cpp_group = term::make_atom("cpp_group");
  const term erl_group = term::make_atom("erl_group");
  const pid member = rt.spawn(park_forever);
  ASSERT_TRUE(dist::pg::join(rt, cpp_group, member));
  erl_node erl("pg_peer", std::vector<std::string>{"-kernel", "start_pg", "true"});
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));

  // Ours, listed by Erlang (our scope introduced itself when the connection came up).
  const auto erl_members = [&](const term& g) {
    return pids(erl.eval(me, "pg:get_members(G).", {{"G", g}}));
  };
  EXPECT_TRUE(eventually([&] { return has(erl_members(cpp_group), member); }, 10s))
      << "Erlang's pg does not list the C++ member";
  // Erlang's, listed here.
  const term p = erl.eval(me,
                          "P = spawn(fun() -> receive stop -> ok end end),"
                          "ok = pg:join(erl_group, P), P.");
  ASSERT_TRUE(p.is_pid()) << p.to_string();
  EXPECT_TRUE(eventually([&] { return has(dist::pg::get_members(rt, erl_group), p.pid()); }, 10s))
      << "the Erlang member is not listed here";
  EXPECT_TRUE(dist::pg::get_local_members(rt, erl_group).empty());
  const auto groups = dist::pg::which_groups(rt);
  EXPECT_NE(std::find(groups.begin(), groups.end(), erl_group), groups.end());
  EXPECT_NE(std::find(groups.begin(), groups.end(), cpp_group), groups.end());

  // A second member joins later, and leaves: Erlang sees both.
  const pid second = rt.spawn(park_forever);
  ASSERT_TRUE(dist::pg::join(rt, cpp_group, second));
  EXPECT_TRUE(eventually([&] { return has(erl_members(cpp_group), second); }, 10s));
  ASSERT_TRUE(dist::pg::leave(rt, cpp_group, second));
  EXPECT_TRUE(eventually([&] { return !has(erl_members(cpp_group), second); }, 10s))
      << "Erlang still lists a member that left";
  EXPECT_TRUE(has(erl_members(cpp_group), member));

  // A join undone before the scope told anyone is not told, and neither is its leave: a pg
  // scope crashes on a leave of a group it does not have.
  const term erl_scope = erl.eval(me, "whereis(pg).");
  const pid brief = rt.spawn(park_forever);
  const term fleeting = term::make_atom("fleeting");
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(dist::pg::join(rt, fleeting, brief));
    ASSERT_TRUE(dist::pg::leave(rt, fleeting, brief));
  }
  ASSERT_TRUE(dist::pg::join(rt, fleeting, brief));
  EXPECT_TRUE(eventually([&] { return has(erl_members(fleeting), brief); }, 10s));
  EXPECT_EQ(erl.eval(me, "whereis(pg)."), erl_scope) << "Erlang's pg scope was restarted";
  rt.exit(brief, exit_reason::kill());

  // A member that ends leaves its groups, on both sides.
  rt.exit(member, exit_reason::kill());
  EXPECT_TRUE(eventually([&] { return erl_members(cpp_group).empty(); }, 10s))
      << "Erlang still lists a member that ended";
  EXPECT_TRUE(dist::pg::get_members(rt, cpp_group).empty());
  erl.eval(me, "P ! stop, ok.", {{"P", p}});
  EXPECT_TRUE(eventually([&] { return dist::pg::get_members(rt, erl_group).empty(); }, 10s))
      << "the Erlang member that ended is still listed here";
}

// The connection comes up before the Erlang node runs pg (as when a node is reached while it
// boots): our scope's first discover goes nowhere, and Erlang's pg, started later, looks only at
// visible nodes; the discover sent again finds it. Then the node goes, and its members with it.
TEST(DistPg, ANodeWhosePgStartsLaterIsFoundAndItsLossDropsItsMembers) {
  REQUIRE_ERL();
  runtime rt;
  ASSERT_FALSE(start_node(rt, "pg_lost").name.empty());
  erl_node erl("pg_lost_peer");
  scoped_process me(rt);
  ASSERT_TRUE(erl.wait_up(me));
  const term group = term::make_atom("doomed");
  const term p = erl.eval(me,
                          "{ok, _} = pg:start(pg),"
                          "P = spawn(fun() -> receive stop -> ok end end),"
                          "ok = pg:join(doomed, P), P.");
  ASSERT_TRUE(p.is_pid()) << p.to_string();
  ASSERT_TRUE(eventually([&] { return has(dist::pg::get_members(rt, group), p.pid()); }, 20s))
      << "the Erlang node's pg, started after the connection, was never found";
  erl.kill();
  EXPECT_TRUE(eventually([&] { return dist::pg::get_members(rt, group).empty(); }, 20s))
      << "the members of a node that went away are still listed";
}

TEST(DistPg, TwoBeamletNodesShareGroups) {
  runtime a;
  runtime b;
  const auto na = start_node(a, "pg_a");
  const auto nb = start_node(b, "pg_b");
  ASSERT_FALSE(na.name.empty() || nb.name.empty());
  const term group = term::make_tuple({term::make_atom("shard"), term(7)});
  const pid m = a.spawn(park_forever);
  ASSERT_TRUE(dist::pg::join(a, group, m));
  // Any traffic brings the connection up; the scopes then introduce themselves.
  scoped_process me(b);
  me.send("pg", na.name, term::make_atom("hello"));
  // (m is a local pid to `a`; `b` holds it as a pid of a's node.)
  const auto from_a = [&] {
    const auto v = dist::pg::get_members(b, group);
    return v.size() == 1 && v[0].is_remote() && dist::node_name(b, v[0]) == na.name;
  };
  EXPECT_TRUE(eventually(from_a, 10s)) << "the other beamlet node's member is not listed";
  a.exit(m, exit_reason::kill());
  EXPECT_TRUE(eventually([&] { return dist::pg::get_members(b, group).empty(); }, 10s));
}

TEST(DistPg, JoiningTwiceMeansLeavingTwice) {
  runtime rt;
  const term group = term::make_atom("g");
  const pid p = rt.spawn(park_forever);
  EXPECT_FALSE(dist::pg::join(rt, group, p)) << "joined without a node";
  ASSERT_FALSE(start_node(rt, "pg_local").name.empty());
  ASSERT_TRUE(dist::pg::join(rt, group, p));
  ASSERT_TRUE(dist::pg::join(rt, group, p));
  EXPECT_EQ(dist::pg::get_local_members(rt, group), (std::vector<pid>{p, p}));
  EXPECT_TRUE(dist::pg::leave(rt, group, p));
  EXPECT_EQ(dist::pg::get_local_members(rt, group), (std::vector<pid>{p}));
  EXPECT_TRUE(dist::pg::leave(rt, group, p));
  EXPECT_TRUE(dist::pg::get_local_members(rt, group).empty());
  EXPECT_FALSE(dist::pg::leave(rt, group, p)) << "left a group it was not in (not_joined)";
  EXPECT_FALSE(dist::pg::join(rt, group, pid::remote(1, 1))) << "a remote pid joined";
  EXPECT_TRUE(dist::pg::which_groups(rt).empty());
}

}  // namespace dist_pg_cases
}  // namespace beamlet::test
