// Reassembling the fragmented messages of a peer (DFLAG_FRAGMENTS, OTP 22+): a large message
// comes as a first fragment (131 'E', a sequence id, the number of fragments N) and N - 1 more
// (131 'F', the same sequence id, numbers N - 1 down to 1), possibly with other packets, and
// other sequences' fragments, between them. One assembler per connection, used only by its
// process.
//
// Bad input is an error, never a guess: a sequence started twice, a fragment of a sequence
// never started, a fragment out of order or missing, more bytes held than the limit, more
// sequences open than the limit. The connection closes on any of them.
#pragma once

#include <beamlet/core/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

class fragment_assembler {
 public:
  /// At most `max_bytes` held in partial messages at once (the connection's max_packet: a
  /// reassembled message may be as large as one packet may be), in at most `max_sequences`.
  fragment_assembler(std::size_t max_bytes, std::size_t max_sequences)
      : max_bytes_(max_bytes), max_sequences_(max_sequences) {}

  enum class status : std::uint8_t {
    complete,  ///< `out` holds the whole message (its terms, without version bytes)
    pending,   ///< more fragments to come
    bad,       ///< `why` says what was wrong
  };
  /// The first fragment of `sequence`, of `count` in all, carrying `piece`.
  status first(std::uint64_t sequence, std::uint64_t count, std::string_view piece,
               std::string& out, std::string& why);
  /// Fragment number `number` of `sequence`.
  status next(std::uint64_t sequence, std::uint64_t number, std::string_view piece,
              std::string& out, std::string& why);

  std::size_t open_sequences() const { return partial_.size(); }
  std::size_t held_bytes() const { return held_; }

 private:
  struct partial {
    std::uint64_t expected = 0;  ///< the number the next fragment must have
    std::string data;
  };
  status add(partial& p, std::uint64_t number, std::string_view piece, std::string& why);

  std::unordered_map<std::uint64_t, partial> partial_;
  std::size_t held_ = 0;
  std::size_t max_bytes_;
  std::size_t max_sequences_;
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
