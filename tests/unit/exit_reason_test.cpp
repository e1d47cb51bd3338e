// exit_reason values and spec §2 rule 8 (clean reasons).
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

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

// Structured reasons print as Erlang would, whatever their parts hold.
TEST(ExitReason, ErrorTuplesAreBuiltFromPartsAndEscaped) {
  EXPECT_EQ(exit_reason::error_tuple("already_started", std::string("pool")).to_string(),
            "{already_started,\"pool\"}");
  EXPECT_EQ(exit_reason::error_tuple("bad", "a \"quoted\" \\ name\n\x01").to_string(),
            "{bad,\"a \\\"quoted\\\" \\\\ name\\n\\001\"}");
  EXPECT_EQ(
      exit_reason::error_tuple("invalid_mailbox_limit", reason_atom{"drop_oldest"}).to_string(),
      "{invalid_mailbox_limit,drop_oldest}");
  EXPECT_EQ(exit_reason::error_tuple("Tag", reason_atom{"it's"}, reason_atom{"a@b_1"}, 42, -7L,
                                     true, exit_reason::shutdown("x"))
                .to_string(),
            "{'Tag','it\\'s',a@b_1,42,-7,true,{shutdown,x}}");
  EXPECT_EQ(exit_reason::error_tuple("only").to_string(), "{only}");
  // A reserved word is quoted, or it would not read back as an atom.
  EXPECT_EQ(exit_reason::error_tuple("end", reason_atom{"of"}).to_string(), "{'end','of'}");
  EXPECT_FALSE(exit_reason::error_tuple("e", 1).is_clean());
}

// spec §2 rule 8: normal, shutdown and {shutdown, _} are clean; everything else is not.
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

namespace {
struct null_what : std::exception {
  const char* what() const noexcept override { return nullptr; }
};
struct not_a_std_exception {
  std::string why = "custom";
};
template <class E>
exit_reason reason_of(E e) {
  try {
    throw e;
  } catch (...) {
    return exit_reason::from_exception(std::current_exception());
  }
}
}  // namespace

TEST(ExitReason, ExceptionWithNullWhat) {
  const exit_reason r = reason_of(null_what{});
  EXPECT_EQ(r.which(), exit_reason::kind::exception);
  EXPECT_EQ(r.detail(), "");
  EXPECT_NE(r.exception_type().find("null_what"), std::string::npos) << r.exception_type();
}

TEST(ExitReason, ThrownStringsKeepTheirText) {
  const exit_reason c = reason_of("boom");
  EXPECT_EQ(c.exception_type(), "const char*");
  EXPECT_EQ(c.detail(), "boom");
  EXPECT_EQ(reason_of(static_cast<const char*>(nullptr)).detail(), "");
  const exit_reason s = reason_of(std::string("bang"));
  EXPECT_EQ(s.detail(), "bang");
}

// Whatever escapes a process body becomes its exit reason; the program goes on.
TEST(ExitReason, ExceptionsOfEveryShapeEndOnlyTheProcess) {
  runtime rt;
  std::vector<std::function<void()>> throwers{
      [] { throw null_what{}; },
      [] { throw 42; },
      [] { throw "text"; },
      [] { throw std::string("string"); },
      [] { throw not_a_std_exception{}; },
      [] { throw std::bad_alloc(); },
      [] { throw exit_exception(exit_reason::error("custom_exit")); },
      [] {
        try {
          throw std::runtime_error("inner");
        } catch (...) {
          std::throw_with_nested(std::logic_error("outer"));
        }
      },
  };
  std::vector<std::string> got;
  for (auto& f : throwers) {
    const auto r = run_process(rt, [&f](process&) -> task<> {
      f();
      co_return;
    });
    ASSERT_TRUE(r);
    got.push_back(r->which() == exit_reason::kind::exception ? r->detail() : r->to_string());
  }
  EXPECT_EQ(got, (std::vector<std::string>{"", "", "text", "string", "", "std::bad_alloc",
                                           "custom_exit", "outer"}));
}

// A value of a layer above rides along with a reason: copies share it, a process that dies of
// the reason passes it on, and comparison and printing go by the text.
TEST(ExitReason, CarriesAValueOfALayerAbove) {
  struct structured {
    std::vector<int> parts;
  };
  const exit_reason plain = exit_reason::error("{badarg,<9.1.0>}");
  const exit_reason r = plain.with_value(structured{{1, 2, 3}});
  ASSERT_NE(r.value<structured>(), nullptr);
  EXPECT_EQ(r.value<structured>()->parts, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(r.value<int>(), nullptr);  // another type: nothing
  EXPECT_EQ(plain.value<structured>(), nullptr);
  EXPECT_EQ(r, plain);
  EXPECT_EQ(r.to_string(), "{badarg,<9.1.0>}");
  const exit_reason copy = r;
  EXPECT_EQ(copy.value<structured>(), r.value<structured>());  // shared, not copied
  // Reasons without a payload have nowhere to keep one.
  EXPECT_EQ(exit_reason::normal().with_value(structured{}).value<structured>(), nullptr);
  // Relayed through a process that dies of it.
  runtime rt;
  const auto ended = run_process(rt, [r](process& self) -> task<> { co_await self.exit(r); });
  ASSERT_TRUE(ended);
  ASSERT_NE(ended->value<structured>(), nullptr);
  EXPECT_EQ(ended->value<structured>()->parts.size(), 3u);
}

}  // namespace beamlet::test
