// pid and ref value types.
#include <set>
#include <sstream>
#include <unordered_set>

#include "test_support.hpp"

namespace beamlet::test {

TEST(Ids, PidPrintsLikeErlang) {
  EXPECT_EQ(pid(42).to_string(), "<0.42.0>");
  std::ostringstream os;
  os << pid(7);
  EXPECT_EQ(os.str(), "<0.7.0>");
  EXPECT_EQ(ref(9).to_string(), "#Ref<0.9>");
}

TEST(Ids, NullPidIsFalse) {
  EXPECT_FALSE(pid());
  EXPECT_TRUE(pid(1));
  EXPECT_FALSE(ref());
}

TEST(Ids, OrderedAndHashable) {
  EXPECT_LT(pid(1), pid(2));
  EXPECT_EQ(pid(3), pid(3));
  std::unordered_set<pid> s{pid(1), pid(2), pid(1)};
  EXPECT_EQ(s.size(), 2u);
  std::set<ref> r{ref(2), ref(1)};
  EXPECT_EQ(r.begin()->value(), 1u);
}

// Pids are never reused: a stale pid can never reach a newer process.
TEST(Ids, SpawnedPidsAreNeverReused) {
  runtime rt({.schedulers = 2, .max_processes = 1024});
  std::set<pid> seen;
  for (int round = 0; round < 20; ++round) {
    std::vector<pid> batch;
    for (int i = 0; i < 200; ++i) batch.push_back(rt.spawn([](process&) -> task<> { co_return; }));
    for (pid p : batch) {
      EXPECT_TRUE(seen.insert(p).second) << p << " reused";
      expect_gone(rt, p);
    }
  }
  // 4000 pids from a table of 1024 slots: slots were reused, pids were not.
  EXPECT_EQ(seen.size(), 4000u);
}

}  // namespace beamlet::test
