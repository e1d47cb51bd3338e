// exit_reason values and SEMANTICS §2 rule 8 (clean reasons).
#include <stdexcept>

#include "test_support.hpp"

namespace beamlet::test {

TEST(ExitReason, PrintsErlangTerms) {
  EXPECT_EQ(exit_reason().to_string(), "normal");
  EXPECT_EQ(exit_reason::shutdown().to_string(), "shutdown");
  EXPECT_EQ(exit_reason::shutdown("restart").to_string(), "{shutdown,restart}");
  EXPECT_EQ(exit_reason::killed().to_string(), "killed");
  EXPECT_EQ(exit_reason::kill().to_string(), "kill");
  EXPECT_EQ(exit_reason::noproc().to_string(), "noproc");
  EXPECT_EQ(exit_reason::error("timeout").to_string(), "timeout");
}

// SEMANTICS §2 rule 8: normal, shutdown and {shutdown, _} are clean; everything else is not.
TEST(ExitReason, S2_8_CleanReasons) {
  EXPECT_TRUE(exit_reason::normal().is_clean());
  EXPECT_TRUE(exit_reason::shutdown().is_clean());
  EXPECT_TRUE(exit_reason::shutdown("detail").is_clean());
  EXPECT_FALSE(exit_reason::kill().is_clean());
  EXPECT_FALSE(exit_reason::killed().is_clean());
  EXPECT_FALSE(exit_reason::noproc().is_clean());
  EXPECT_FALSE(exit_reason::error("boom").is_clean());
  EXPECT_FALSE(exit_reason::exception("std::runtime_error", "x").is_clean());
}

TEST(ExitReason, EqualityAndCopies) {
  const exit_reason a = exit_reason::error("x");
  exit_reason b = a;
  EXPECT_EQ(a, b);
  exit_reason c = std::move(b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(b, exit_reason::normal());  // moved-from is normal
  EXPECT_NE(exit_reason::shutdown(), exit_reason::shutdown("x"));
  c = exit_reason::killed();
  EXPECT_EQ(c.which(), exit_reason::kind::killed);
}

TEST(ExitReason, FromExceptionCarriesTypeAndWhat) {
  exit_reason r;
  try {
    throw std::out_of_range("index 7");
  } catch (...) {
    r = exit_reason::from_exception(std::current_exception());
  }
  EXPECT_EQ(r.which(), exit_reason::kind::exception);
  EXPECT_EQ(r.exception_type(), "std::out_of_range");
  EXPECT_EQ(r.detail(), "index 7");
  EXPECT_EQ(r.to_string(), "{exception,std::out_of_range,\"index 7\"}");
}

TEST(ExitReason, FromExitExceptionIsUnwrapped) {
  exit_reason r;
  try {
    throw exit_exception(exit_reason::shutdown("bye"));
  } catch (...) {
    r = exit_reason::from_exception(std::current_exception());
  }
  EXPECT_EQ(r, exit_reason::shutdown("bye"));
}

TEST(ExitReason, NonStdExceptionKeepsItsType) {
  exit_reason r;
  try {
    throw 42;
  } catch (...) {
    r = exit_reason::from_exception(std::current_exception());
  }
  EXPECT_EQ(r.exception_type(), "int");
}

}  // namespace beamlet::test
