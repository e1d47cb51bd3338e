#include "fragments.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

fragment_assembler::status fragment_assembler::add(partial& p, std::uint64_t number,
                                                   std::string_view piece, std::string& why) {
  if (piece.size() > max_bytes_ - held_) {
    why = "fragmented messages of more than " + std::to_string(max_bytes_) + " bytes";
    return status::bad;
  }
  p.data.append(piece);
  held_ += piece.size();
  p.expected = number - 1;
  return status::pending;
}

fragment_assembler::status fragment_assembler::first(std::uint64_t sequence, std::uint64_t count,
                                                     std::string_view piece, std::string& out,
                                                     std::string& why) {
  if (partial_.contains(sequence)) {
    why = "a fragment sequence started twice";
    return status::bad;
  }
  if (count == 1) {  // a message in one fragment
    out.assign(piece);
    return status::complete;
  }
  if (partial_.size() >= max_sequences_) {
    why = "more than " + std::to_string(max_sequences_) + " fragmented messages at once";
    return status::bad;
  }
  partial& p = partial_[sequence];
  if (add(p, count, piece, why) == status::bad) {
    partial_.erase(sequence);
    return status::bad;
  }
  return status::pending;
}

fragment_assembler::status fragment_assembler::next(std::uint64_t sequence, std::uint64_t number,
                                                    std::string_view piece, std::string& out,
                                                    std::string& why) {
  auto it = partial_.find(sequence);
  if (it == partial_.end()) {
    why = "a fragment of a sequence that was never started";
    return status::bad;
  }
  partial& p = it->second;
  if (number != p.expected) {
    why = "fragment " + std::to_string(number) + " where " + std::to_string(p.expected) +
          " was due (out of order or missing)";
    return status::bad;
  }
  if (add(p, number, piece, why) == status::bad) return status::bad;
  if (number != 1) return status::pending;
  held_ -= p.data.size();
  out = std::move(p.data);
  partial_.erase(it);
  return status::complete;
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
