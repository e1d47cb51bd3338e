// beamlet::expected: the value-or-error type of the supervisor API (a C++20 subset of
// std::expected).
#include <beamlet/core/expected.hpp>

#include <string>

#include "test_support.hpp"

namespace beamlet::test {

namespace {
using result = expected<int, std::string>;
result half(int n) {
  if (n % 2 != 0) return unexpected(std::string("odd"));
  return n / 2;
}
}  // namespace

TEST(Expected, ValueAndError) {
  const result ok = 4;
  const result bad = unexpected(std::string("nope"));
  EXPECT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 4);
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.error(), "nope");
  EXPECT_THROW((void)bad.value(), bad_expected_access);
  EXPECT_THROW((void)ok.error(), bad_expected_access);
}

TEST(Expected, ValueOr) {
  EXPECT_EQ(result(4).value_or(0), 4);
  EXPECT_EQ(result(unexpected(std::string("x"))).value_or(7), 7);
  expected<std::string, int> s = std::string("moved");
  EXPECT_EQ(std::move(s).value_or("fallback"), "moved");
}

TEST(Expected, AndThenChainsFailures) {
  EXPECT_EQ(half(8).and_then(half).and_then(half).value(), 1);
  const result r = half(8).and_then(half).and_then(half).and_then(half);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "odd");
  EXPECT_EQ(half(3).and_then(half).error(), "odd");  // the first error wins
}

TEST(Expected, TransformMapsTheValue) {
  const auto s = half(8).transform([](int n) { return std::to_string(n) + "!"; });
  EXPECT_EQ(s.value(), "4!");
  const auto e = half(3).transform([](int n) { return n * 10; });
  EXPECT_EQ(e.error(), "odd");
  int seen = 0;
  const expected<void, std::string> v = half(2).transform([&](int n) { seen = n; });
  EXPECT_TRUE(v.has_value());
  EXPECT_EQ(seen, 1);
  // expected<void, E>
  const expected<void, std::string> done;
  EXPECT_EQ(done.transform([] { return 5; }).value(), 5);
  EXPECT_EQ(done.and_then([] { return result(6); }).value(), 6);
  const expected<void, std::string> failed = unexpected(std::string("f"));
  EXPECT_EQ(failed.transform([] { return 5; }).error(), "f");
}

}  // namespace beamlet::test
