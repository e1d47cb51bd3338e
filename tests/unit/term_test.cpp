// The term value type, its printed and parsed forms, the mapping of C++ types, and the external
// term format both ways (byte-exact against what Erlang's term_to_binary/1 writes).
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace beamlet::dist {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

term parsed(std::string_view text) {
  auto t = term::parse(text);
  EXPECT_TRUE(t) << text << ": " << (t ? "" : t.error());
  return t ? *t : term();
}

// A reason built from parts parses back into the parts, whatever a string part holds.
TEST(Term, ErrorTuplesParseBackIntoTheirParts) {
  const std::string name = "we\"ird\\ \n\t\x02 name";
  const auto r = exit_reason::error_tuple("already_started", name, reason_atom{"Odd Atom"}, 12);
  const term t = parsed(r.to_string());
  ASSERT_TRUE(t.is_tuple());
  ASSERT_EQ(t.elements().size(), 4u);
  EXPECT_EQ(t.elements()[0], term::make_atom("already_started"));
  EXPECT_EQ(t.elements()[1], term::make_charlist(name));
  EXPECT_EQ(t.elements()[2], term::make_atom("Odd Atom"));
  EXPECT_EQ(t.elements()[3], term(12));
}

TEST(Term, PrintsAsErlangDoes) {
  EXPECT_EQ(parsed("{ok, [1, 2, 3]}").to_string(), "{ok,[1,2,3]}");
  EXPECT_EQ(parsed("'hello world'").to_string(), "'hello world'");
  EXPECT_EQ(parsed("'Cap'").to_string(), "'Cap'");
  EXPECT_EQ(parsed("<<\"abc\">>").to_string(), "<<\"abc\">>");
  EXPECT_EQ(parsed("<<1,2,255>>").to_string(), "<<1,2,255>>");
  EXPECT_EQ(parsed("\"abc\"").to_string(), "\"abc\"");
  EXPECT_EQ(parsed("[a | b]").to_string(), "[a|b]");
  EXPECT_EQ(parsed("#{a => 1}").to_string(), "#{a => 1}");
  EXPECT_EQ(parsed("1.5").to_string(), "1.5");
  EXPECT_EQ(parsed("[]").to_string(), "[]");
  EXPECT_EQ(parsed("-12").to_string(), "-12");
}

TEST(Term, BignumsRoundTripThroughText) {
  const char* big = "123456789012345678901234567890";
  const term t = parsed(big);
  EXPECT_EQ(t.which(), term::type::bignum);
  EXPECT_EQ(t.to_string(), big);
  EXPECT_EQ(parsed("-123456789012345678901234567890").to_string(),
            "-123456789012345678901234567890");
  // A bignum that fits is an integer: one value, one representation.
  EXPECT_EQ(parsed("9223372036854775807").which(), term::type::integer);
  EXPECT_EQ(parsed("-9223372036854775808").which(), term::type::integer);
  EXPECT_EQ(parsed("9223372036854775808").which(), term::type::bignum);
}

TEST(Term, ParseErrorsSayWhere) {
  for (const char* bad : {"{a,", "[1,2", "'open", "<<300>>", "#{a 1}", "{a} b", "", "@"}) {
    auto t = term::parse(bad);
    EXPECT_FALSE(t) << bad;
    if (!t) {
      EXPECT_NE(t.error().find("offset"), std::string::npos) << t.error();
    }
  }
  std::string deep(1000, '[');
  EXPECT_FALSE(term::parse(deep));
}

// Found by the term_parse fuzz target: an out-of-range literal became an infinity, which no
// peer accepts and which printed as an atom (inf); an exponent without digits was ignored.
TEST(Term, FloatLiteralsOutOfRangeOrWithoutExponentDigitsAreRefused) {
  for (const char* bad :
       {"1.0e309", "-1.0e309", "184461.0e308744073709551616", "1.0e", "1.5e+", "[2.0e-]"}) {
    auto t = term::parse(bad);
    EXPECT_FALSE(t) << bad << " parsed as " << (t ? t->to_string() : "");
  }
  auto tiny = term::parse("1.0e-400");  // underflows to zero, as in Erlang
  ASSERT_TRUE(tiny);
  EXPECT_EQ(*term::parse(tiny->to_string()), *tiny);
  auto big = term::parse("1.7976931348623157e308");
  ASSERT_TRUE(big);
  EXPECT_EQ(*term::parse(big->to_string()), *big);
}

TEST(Term, StandardTypesMapBothWays) {
  const std::vector<int> v{1, 2, 3};
  EXPECT_EQ(to_term(v).to_string(), "[1,2,3]");
  EXPECT_EQ(from_term<std::vector<int>>(to_term(v)), v);
  const std::map<std::string, int> m{{"a", 1}};
  EXPECT_EQ(to_term(m).to_string(), "#{<<\"a\">> => 1}");
  EXPECT_EQ(from_term<decltype(m)>(to_term(m)), m);
  const auto tup = std::make_tuple(atom{"ok"}, 7, std::string("x"));
  EXPECT_EQ(to_term(tup).to_string(), "{ok,7,<<\"x\">>}");
  EXPECT_EQ(from_term<decltype(tup)>(to_term(tup)), tup);
  EXPECT_EQ(to_term(std::optional<int>{}).to_string(), "undefined");
  const auto none = from_term<std::optional<int>>(term::make_atom("nil"));
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
  const auto five = from_term<std::optional<int>>(term(5));
  ASSERT_TRUE(five.has_value() && five->has_value());
  EXPECT_EQ(**five, 5);
  EXPECT_EQ(to_term(true).to_string(), "true");
  EXPECT_EQ(from_term<std::string>(term::make_charlist("hi")), "hi");
  // Wrong shapes are nullopt, never an exception.
  EXPECT_FALSE(from_term<int>(term::make_atom("x")));
  EXPECT_FALSE(from_term<std::uint8_t>(term(300)));
  EXPECT_FALSE((from_term<std::pair<int, int>>(parsed("{1,2,3}"))));
  EXPECT_EQ(to_term(std::uint64_t{18446744073709551615u}).to_string(), "18446744073709551615");
  EXPECT_EQ(from_term<std::uint64_t>(parsed("18446744073709551615")),
            std::uint64_t{18446744073709551615u});
}

struct point {
  int x, y;
  friend bool operator==(const point&, const point&) = default;
};

}  // namespace

template <>
struct term_traits<point> {
  static term to_term(const point& p) { return term::tuple(atom{"point"}, p.x, p.y); }
  static std::optional<point> from_term(const term& t) {
    auto v = dist::from_term<std::tuple<atom, int, int>>(t);
    if (!v || std::get<0>(*v).name != "point") return std::nullopt;
    return point{std::get<1>(*v), std::get<2>(*v)};
  }
};

namespace {

TEST(Term, UserTypesJoinThroughTermTraits) {
  const point p{3, -4};
  EXPECT_EQ(to_term(p).to_string(), "{point,3,-4}");
  EXPECT_EQ(from_term<point>(to_term(p)), p);
  EXPECT_EQ(to_term(std::vector<point>{p}).to_string(), "[{point,3,-4}]");
}

// term_to_binary/1 of each term, as an OTP 25 node writes it.
TEST(Etf, EncodesAsTermToBinary) {
  struct sample {
    const char* text;
    std::string etf;
  };
  const sample samples[] = {
      {"1", bytes({131, 97, 1})},
      {"-1", bytes({131, 98, 255, 255, 255, 255})},
      {"300", bytes({131, 98, 0, 0, 1, 44})},
      {"4294967296", bytes({131, 110, 5, 0, 0, 0, 0, 0, 1})},
      {"abc", bytes({131, 119, 3, 'a', 'b', 'c'})},
      {"{}", bytes({131, 104, 0})},
      {"[]", bytes({131, 106})},
      {"[1,2]", bytes({131, 108, 0, 0, 0, 2, 97, 1, 97, 2, 106})},
      {"<<\"hi\">>", bytes({131, 109, 0, 0, 0, 2, 'h', 'i'})},
      {"#{a => 1}", bytes({131, 116, 0, 0, 0, 1, 119, 1, 'a', 97, 1})},
      {"1.5", bytes({131, 70, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0})},
      {"[a|b]", bytes({131, 108, 0, 0, 0, 1, 119, 1, 'a', 119, 1, 'b'})},
  };
  for (const auto& s : samples) {
    auto e = to_binary(parsed(s.text));
    ASSERT_TRUE(e) << s.text;
    EXPECT_EQ(*e, s.etf) << s.text;
    auto d = from_binary(s.etf);
    ASSERT_TRUE(d) << s.text << ": " << d.error();
    EXPECT_EQ(*d, parsed(s.text)) << s.text;
  }
}

TEST(Etf, DecodesWhatOlderNodesWrite) {
  // STRING_EXT "ab", ATOM_EXT (Latin-1) 'a', SMALL_ATOM_EXT, LARGE_TUPLE_EXT {1}.
  EXPECT_EQ(*from_binary(bytes({131, 107, 0, 2, 'a', 'b'})), term::make_charlist("ab"));
  EXPECT_EQ(*from_binary(bytes({131, 100, 0, 1, 'a'})), term::make_atom("a"));
  EXPECT_EQ(*from_binary(bytes({131, 115, 1, 0xe9})), term::make_atom("\xc3\xa9"));
  EXPECT_EQ(from_binary(bytes({131, 105, 0, 0, 0, 1, 97, 1}))->to_string(), "{1}");
}

TEST(Etf, PidsOfThisNodeAreLocalAndOthersAreRemote) {
  const node_incarnation me{"me@127.0.0.1", 77};
  const pid local(42);
  auto e = to_binary(term(local), &me);
  ASSERT_TRUE(e);
  auto back = from_binary(*e, &me);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pid(), local);
  // The same bytes seen by another node: a remote pid, of node me@... with creation 77.
  const node_incarnation other{"other@127.0.0.1", 1};
  auto there = from_binary(*e, &other);
  ASSERT_TRUE(there);
  ASSERT_TRUE(there->pid().is_remote());
  EXPECT_EQ(node_of(there->pid()), me);
  // And it encodes back to the very same bytes.
  EXPECT_EQ(*to_binary(*there, &other), *e);
  // A pid of an earlier incarnation of this node is not one of ours.
  const node_incarnation me_restarted{"me@127.0.0.1", 78};
  EXPECT_TRUE(from_binary(*e, &me_restarted)->pid().is_remote());
}

TEST(Etf, MalformedInputIsAnErrorNeverACrash) {
  const std::string cases[] = {
      "",
      bytes({131}),
      bytes({130, 97, 1}),                             // wrong version
      bytes({131, 98, 0, 0}),                          // truncated integer
      bytes({131, 109, 0x7f, 0xff, 0xff, 0xff}),       // a 2 GiB binary in 6 bytes
      bytes({131, 108, 0x7f, 0xff, 0xff, 0xff, 106}),  // a list of 2^31 elements
      bytes({131, 116, 0xff, 0xff, 0xff, 0xff}),       // a map of 2^32 entries
      bytes({131, 104, 3, 97, 1}),                     // a tuple short of elements
      bytes({131, 119, 5, 'a'}),                       // an atom past the end
      bytes({131, 80, 0, 0, 0, 1, 0}),                 // compressed
      bytes({131, 82, 0}),                             // atom cache reference
      bytes({131, 250}),                               // unknown tag
      bytes({131, 77, 0, 0, 0, 1, 9, 0}),              // a bitstring with 9 bits in a byte
      bytes({131, 97, 1, 97}),                         // bytes after the term
  };
  for (const auto& c : cases) {
    auto d = from_binary(c);
    EXPECT_FALSE(d) << "accepted " << c.size() << " bytes";
  }
  // Nesting beyond a limit the user sets.
  std::string deep(1, static_cast<char>(131));
  for (int i = 0; i < 2000; ++i) deep += bytes({104, 1});
  deep += bytes({106});
  decode_limits shallow;
  shallow.max_depth = 512;
  EXPECT_FALSE(from_binary(deep, nullptr, shallow));
  EXPECT_TRUE(from_binary(deep));  // the default takes it
  // What an Erlang node never sends, and could not take back.
  EXPECT_FALSE(from_binary(bytes({131, 119, 2, 0xC0, 0x80})));                // overlong UTF-8
  EXPECT_FALSE(from_binary(bytes({131, 119, 3, 0xED, 0xA0, 0x80})));          // a surrogate
  EXPECT_FALSE(from_binary(bytes({131, 70, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0})));  // NaN
  EXPECT_FALSE(from_binary(bytes({131, 70, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0})));  // infinity
  std::string long_atom = bytes({131, 118, 1, 0});  // ATOM_UTF8_EXT, 256 bytes
  long_atom += std::string(256, 'a');
  EXPECT_FALSE(from_binary(long_atom));
  decode_limits few;
  few.max_terms = 10;
  EXPECT_FALSE(from_binary(*to_binary(parsed("[1,2,3,4,5,6,7,8,9,10,11]")), nullptr, few));
}

// A seeded mutation test of the decoder: flipped, dropped and inserted bytes of valid terms.
// Under ASan and UBSan any overread or overflow fails the test; it must never crash or hang.
TEST(Etf, MutatedTermsNeverCrashTheDecoder) {
  const char* seeds[] = {
      "{ok,[1,2,3],<<\"bin\">>,#{a => {b,c}},-5,3.25,'Quoted atom'}",
      "[{a,1},{b,[[[]]]},\"text\",123456789012345678901234567890]",
      "#{<<1,2>> => [x|y], 1 => {}, z => -2147483649}",
  };
  const node_incarnation me{"fuzz@127.0.0.1", 3};
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int decoded = 0, refused = 0;
  for (const char* seed : seeds) {
    std::string base = *to_binary(parsed(seed), &me);
    base += *to_binary(term(pid(5)), &me);  // a pid too
    for (int round = 0; round < 20000; ++round) {
      std::string m = base;
      const int edits = 1 + static_cast<int>(next() % 4);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = next() % m.size();
        switch (next() % 3) {
          case 0:
            m[at] = static_cast<char>(next());
            break;
          case 1:
            m.erase(at, 1 + next() % 3);
            break;
          default:
            m.insert(at, 1, static_cast<char>(next()));
        }
        if (m.empty()) m = "x";
      }
      std::size_t pos = 0;
      auto d = decode(m, pos, &me);
      if (d) {
        ++decoded;
        // Whatever decodes encodes again.
        EXPECT_TRUE(to_binary(*d, &me));
      } else {
        ++refused;
      }
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(refused, 0);
}

TEST(Etf, ReasonsMapToTheirTerms) {
  EXPECT_EQ(reason_to_term(exit_reason::normal()).to_string(), "normal");
  EXPECT_EQ(reason_to_term(exit_reason::error("{badarg,[1]}")).to_string(), "{badarg,[1]}");
  EXPECT_EQ(reason_to_term(exit_reason::shutdown("why")).to_string(), "{shutdown,why}");
  EXPECT_EQ(reason_from_term(term::make_atom("killed")), exit_reason::killed());
  EXPECT_EQ(reason_from_term(parsed("{shutdown,why}")), exit_reason::shutdown("why"));
  EXPECT_EQ(reason_from_term(parsed("{badarith,[x]}")), exit_reason::error("{badarith,[x]}"));
  const exit_reason ex = exit_reason::exception("std::runtime_error", "boom");
  EXPECT_EQ(reason_from_term(reason_to_term(ex)), ex);
}

// A reason from another node keeps its term: a pid, a reference, a bitstring inside it come
// back out exactly, however often the reason is copied or relayed.
TEST(Etf, ReasonsFromOtherNodesKeepTheirTerms) {
  const node_incarnation peer{"peer@127.0.0.1", 9};
  // {badarg, <pid of peer>} and {bits, <<1:3>>}, as Erlang writes them.
  std::string with_pid = bytes({131, 104, 2, 119, 6});
  with_pid += "badarg";
  with_pid += bytes({88, 119, 14});
  with_pid += "peer@127.0.0.1";
  with_pid += bytes({0, 0, 0, 90, 0, 0, 0, 0, 0, 0, 0, 9});
  const auto t = from_binary(with_pid);
  ASSERT_TRUE(t) << t.error();
  const exit_reason r = reason_from_term(*t);
  EXPECT_EQ(r.which(), exit_reason::kind::error);
  const exit_reason relayed = r;  // as a linked process dying with it would pass it on
  ASSERT_NE(relayed.value<term>(), nullptr);
  EXPECT_EQ(*to_binary(reason_to_term(relayed)), with_pid);
  const term bits = parsed("{bits, x}");
  term b = bits;
  b.elements()[1] = term(binary{std::string(1, static_cast<char>(0x20)), 3});
  EXPECT_EQ(reason_to_term(reason_from_term(b)), b);
  EXPECT_EQ(reason_from_term(b).to_string(), "{bits,<<1:3>>}");
  // A reason made in C++ that ETF cannot carry still reaches the other node, as its text.
  const exit_reason huge = exit_reason::exception(std::string(300, 'T'), "what");
  EXPECT_TRUE(reason_to_term(huge).is_binary());
  EXPECT_TRUE(to_binary(reason_to_term(huge)));
}

// What an Erlang node cannot take is refused by the encoder, with the reason, instead of being
// sent to a node that would drop the connection over it.
TEST(Etf, TermsErlangCannotTakeAreRefused) {
  const auto refused = [](const term& t) {
    auto b = to_binary(t);
    return b ? std::string() : b.error();
  };
  EXPECT_NE(refused(term::make_atom(std::string(256, 'a'))).find("256 characters"),
            std::string::npos);
  EXPECT_EQ(refused(term::make_atom(std::string(255, 'a'))), "");
  // 255 characters of two bytes each are fine: the limit is on characters.
  std::string wide;
  for (int i = 0; i < 255; ++i) wide += "\xC3\xA9";
  EXPECT_EQ(refused(term::make_atom(wide)), "");
  EXPECT_NE(refused(term::make_atom("\xFF\xFE")).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(refused(term(std::nan(""))).find("NaN"), std::string::npos);
  EXPECT_NE(refused(term::tuple(1.0, HUGE_VAL)).find("infinite"), std::string::npos);
  EXPECT_NE(refused(term::make_list({term::make_atom(std::string(300, 'x'))})), "");
}

// Depth costs heap, never stack: a list nested a million deep decodes, copies, compares,
// prints, encodes and goes away like any other term.
TEST(Term, DepthCostsNoStack) {
  constexpr int depth = 1'000'000;
  const std::string cons = bytes({108, 0, 0, 0, 1});  // a one-element list whose tail follows
  std::string in(1, static_cast<char>(131));
  in.reserve(1 + cons.size() * depth + depth + 1);
  for (int i = 0; i < depth; ++i) in += cons;
  in.append(depth + 1, static_cast<char>(106));
  auto t = from_binary(in);
  ASSERT_TRUE(t) << t.error();
  {
    const term copy = *t;
    EXPECT_TRUE(copy == *t);
    EXPECT_EQ(*to_binary(copy), in);
    const std::string text = copy.to_string();
    EXPECT_EQ(text.size(), 2u * depth + 2);
    EXPECT_EQ(text.substr(0, 4), "[[[[");
  }
  term moved = std::move(*t);
  moved = term::make_atom("gone");  // the deep one is destroyed here
  EXPECT_TRUE(moved.is_atom("gone"));
}

// Node slots that only terms hold are reclaimed when the last such term goes, so pids of more
// made-up nodes than the table has slots decode one after another; a slot a plain pid was
// taken from is never reused.
TEST(Etf, SlotsOfNodesOnlyMentionedAreReclaimed) {
  const auto pid_of = [](const std::string& node) {
    std::string b = bytes({131, 88, 119, static_cast<int>(node.size())});
    b += node;
    b += bytes({0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1});
    return b;
  };
  const auto kept = from_binary(pid_of("kept@elsewhere"));
  ASSERT_TRUE(kept);
  const pid plain = kept->pid();  // a plain pid now: its slot is pinned
  const std::uint64_t reclaimed_before = node_slot_usage().reclaimed;
  for (int i = 0; i < 40'000; ++i) {
    const auto t = from_binary(pid_of("made_up_" + std::to_string(i) + "@nowhere"));
    ASSERT_TRUE(t) << i << ": " << t.error();
  }
  EXPECT_GT(node_slot_usage().reclaimed, reclaimed_before);
  EXPECT_NE(intern_node("legit@host", 1), 0u);
  ASSERT_TRUE(node_of(plain));
  EXPECT_EQ(node_of(plain)->name, "kept@elsewhere");
  // A term still holding a slot keeps it too.
  const auto held = from_binary(pid_of("held@elsewhere"));
  for (int i = 0; i < 40'000; ++i)
    ASSERT_TRUE(from_binary(pid_of("again_" + std::to_string(i) + "@nowhere")));
  EXPECT_EQ(*to_binary(*held), pid_of("held@elsewhere"));
}

}  // namespace
}  // namespace beamlet::dist
