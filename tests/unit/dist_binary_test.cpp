// Binaries: shared bytes (copies and sub-binaries share, small ones are held inline), bytes
// owned by the caller, and the decoder's binaries in place.
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "erl_node.hpp"
#include "test_support.hpp"

namespace beamlet::dist {
namespace {

using namespace std::chrono_literals;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + 1);
  return s;
}

// A pointer inside [b.data(), b.data() + b.size()).
bool points_into(const char* p, const binary& b) {
  return p >= b.data() && p < b.data() + b.size();
}

TEST(Binary, SmallBinariesAreInlineAndCopiedWhole) {
  const binary a(std::string("hello"));
  EXPECT_EQ(a.bytes(), "hello");
  EXPECT_EQ(a.use_count(), 0u);  // inline: nothing shared
  const binary b = a;            // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(b, a);
  EXPECT_NE(b.data(), a.data());
  EXPECT_FALSE(a.shares_with(b));
  const binary at_limit(pattern(binary::inline_capacity));
  EXPECT_EQ(at_limit.use_count(), 0u);
  EXPECT_EQ(binary(pattern(binary::inline_capacity + 1)).use_count(), 1u);
  EXPECT_TRUE(binary().empty());
  EXPECT_EQ(binary("abc").bytes(), "abc");
}

TEST(Binary, CopiesShareLargeBytesAndLetGoOfThem) {
  const std::string text = pattern(1000);
  const binary a(text);
  EXPECT_EQ(a.use_count(), 1u);
  {
    const binary b = a;  // NOLINT(performance-unnecessary-copy-initialization)
    EXPECT_TRUE(b.shares_with(a));
    EXPECT_EQ(b.data(), a.data());  // the same bytes, not a copy of them
    EXPECT_EQ(a.use_count(), 2u);
    binary c;
    c = b;
    EXPECT_EQ(a.use_count(), 3u);
    c = binary("small");  // assigning lets go of the shared bytes
    EXPECT_EQ(a.use_count(), 2u);
  }
  EXPECT_EQ(a.use_count(), 1u);
  EXPECT_EQ(a.bytes(), text);

  binary moved = a;
  const binary taken = std::move(moved);
  EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move): moved-from is <<>>
  EXPECT_EQ(moved.use_count(), 0u);
  EXPECT_EQ(a.use_count(), 2u);
  EXPECT_EQ(taken.data(), a.data());
}

TEST(Binary, ATakenStringKeepsItsCharacters) {
  std::string s = pattern(4096);
  const char* chars = s.data();
  const binary b(std::move(s));
  EXPECT_EQ(b.data(), chars);  // taken, not copied
  EXPECT_EQ(b.bytes(), pattern(4096));
}

TEST(Binary, SubBinariesShareAndKeepTheBitCountOnlyAtTheEnd) {
  const binary whole(pattern(1000));
  const binary mid = whole.sub(100, 500);
  EXPECT_EQ(mid.bytes(), pattern(1000).substr(100, 500));
  EXPECT_TRUE(mid.shares_with(whole));
  EXPECT_EQ(mid.data(), whole.data() + 100);
  EXPECT_EQ(whole.sub(990).bytes(), pattern(1000).substr(990));  // small: inline
  EXPECT_FALSE(whole.sub(990).shares_with(whole));
  EXPECT_TRUE(whole.sub(1000).empty());
  EXPECT_THROW((void)whole.sub(1001), std::out_of_range);

  const binary bits(pattern(100), 3);
  EXPECT_TRUE(bits.is_bitstring());
  EXPECT_EQ(bits.sub(50).last_bits(), 3);      // reaches the last byte
  EXPECT_EQ(bits.sub(10, 40).last_bits(), 8);  // does not
  EXPECT_EQ(bits.sub(100).last_bits(), 8);     // empty: a binary
  EXPECT_NE(bits, binary(pattern(100)));       // same bytes, other bit count
}

TEST(Binary, ABitstringNeedsItsLastByte) {
  EXPECT_THROW(binary(std::string(), 3), std::invalid_argument);
  EXPECT_THROW(binary(std::string("a"), 0), std::invalid_argument);
  EXPECT_THROW(binary(std::string("a"), 9), std::invalid_argument);
  EXPECT_NO_THROW(binary(std::string("a"), 1));
}

TEST(Binary, BytesOwnedByTheCallerLiveAsLongAsABinaryViewsThem) {
  auto buffer = std::make_shared<std::string>(pattern(100000));
  const std::weak_ptr<std::string> watch = buffer;
  const char* start = buffer->data();
  binary part(buffer, std::string_view(*buffer).substr(1000, 5000));
  buffer.reset();
  EXPECT_FALSE(watch.expired());  // the binary keeps it
  EXPECT_EQ(part.data(), start + 1000);
  EXPECT_EQ(part.bytes(), pattern(100000).substr(1000, 5000));
  binary smaller = part.sub(10, 100);
  part = binary();
  EXPECT_FALSE(watch.expired());      // the sub-binary keeps all of it, as in BEAM
  smaller = binary(smaller.bytes());  // a copy of its own lets it go
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(smaller.bytes(), pattern(100000).substr(1010, 100));
}

// Copies made and dropped on several threads at once leave the count exact (TSan watches the
// count and the bytes).
TEST(Binary, CopiesOnManyThreadsAtOnce) {
  const binary shared(pattern(10000));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::atomic<long> sum{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      long local = 0;
      for (int i = 0; i < 20000; ++i) {
        const term held(shared);  // a term's copy shares the bytes too
        const term again = held;  // NOLINT(performance-unnecessary-copy-initialization)
        local +=
            static_cast<unsigned char>(again.bin().bytes()[static_cast<std::size_t>(i) % 10000]);
      }
      sum += local;
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(shared.use_count(), 1u);
  long expected = 0;
  const std::string p = pattern(10000);
  for (int i = 0; i < 20000; ++i)
    expected += static_cast<unsigned char>(p[static_cast<std::size_t>(i) % 10000]);
  EXPECT_EQ(sum.load(), 4 * expected);
}

TEST(Binary, ATermsCopySharesItsBinaries) {
  const term t = term::make_tuple({term::make_atom("m"), term::make_binary(pattern(1000))});
  const term u = t;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(u, t);
  EXPECT_TRUE(u[1].bin().shares_with(t[1].bin()));
  EXPECT_EQ(t[1].bin().use_count(), 2u);
}

// decode() of a binary: binaries of decode_in_place_min bytes and more are sub-binaries of the
// input; smaller ones, and everything decoded from a string_view, are copies.
TEST(Binary, DecodingABinaryLeavesLargeBinariesInPlace) {
  const term t = term::make_tuple(
      {term::make_binary(pattern(1000)), term::make_binary(pattern(decode_in_place_min - 1)),
       term::make_binary(pattern(decode_in_place_min)), term(binary(pattern(300), 5))});
  const auto etf = to_binary(t);
  ASSERT_TRUE(etf);
  auto input = std::make_unique<binary>(*etf);
  auto back = from_binary(*input);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, t);
  EXPECT_TRUE((*back)[0].bin().shares_with(*input));
  EXPECT_TRUE(points_into((*back)[0].bin().data(), *input));
  EXPECT_FALSE((*back)[1].bin().shares_with(*input));  // below the limit: copied
  EXPECT_TRUE((*back)[2].bin().shares_with(*input));
  EXPECT_TRUE((*back)[3].bin().shares_with(*input));  // a bitstring too
  EXPECT_EQ((*back)[3].bin().last_bits(), 5);
  EXPECT_EQ(input->use_count(), 4u);
  input.reset();  // the result keeps the bytes it refers to
  EXPECT_EQ(*back, t);

  const auto copied = from_binary(std::string_view(*etf));
  ASSERT_TRUE(copied);
  EXPECT_EQ((*copied)[0].bin().use_count(), 1u);  // its own bytes

  // Malformed input is refused the same way either way.
  const binary truncated(std::string_view(*etf).substr(0, etf->size() - 1));
  EXPECT_FALSE(from_binary(truncated));
  EXPECT_FALSE(from_binary(truncated.bytes()));
  std::size_t pos = 0;
  EXPECT_TRUE(decode(binary(*etf + "trailing"), pos));
  EXPECT_EQ(pos, etf->size());
}

// What a node receives: a large packet (written whole, or reassembled from fragments) is
// decoded in place, so two large binaries of one message share its buffer; a small packet is
// copied out of the read buffer, each binary on its own.
TEST(Binary, ANodeDecodesLargeMessagesInPlaceAndCopiesSmallOnes) {
  runtime a;
  runtime whole_sender;
  runtime fragment_sender;
  const node_info na = test::start_node(a, "bin_a");
  node_options no_fragments = test::loopback_options("bin_whole");
  no_fragments.fragment_size = 0;
  ASSERT_TRUE(start(whole_sender, no_fragments));
  test::start_node(fragment_sender, "bin_frag");
  scoped_process sink(a);
  ASSERT_FALSE(sink.register_name("bin_sink"));

  const auto message = [](std::size_t each) {
    return term::make_tuple({term::make_atom("m"), term::make_binary(pattern(each)),
                             term::make_binary(pattern(each + 1))});
  };
  const auto receive = [&](runtime& from, const term& sent) -> term {
    scoped_process me(from);
    me.send("bin_sink", na.name, sent);
    auto m = sink.receive(on<term>(), after(20s));
    EXPECT_TRUE(m) << "nothing arrived";
    return m ? m.get<term>() : term();
  };

  for (runtime* from : {&whole_sender, &fragment_sender}) {
    // The sender's large binaries are written from the binaries themselves (their bytes are
    // not copied into the outbox): the connection holds them until they are written.
    const term sent = message(300000);
    const term big = receive(*from, sent);
    ASSERT_EQ(big, sent);
    EXPECT_TRUE(big[1].bin().shares_with(big[2].bin())) << "decoded in place";
    EXPECT_TRUE(test::eventually([&] { return sent[1].bin().use_count() == 1; }))
        << "the connection still holds the sent binary";
    const term small = receive(*from, message(1000));
    ASSERT_EQ(small, message(1000));
    EXPECT_FALSE(small[1].bin().shares_with(small[2].bin())) << "copied out";
    EXPECT_EQ(small[1].bin().use_count(), 1u);
  }
}

}  // namespace
}  // namespace beamlet::dist
