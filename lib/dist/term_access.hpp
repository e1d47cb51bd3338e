// Inside a term, for the codec and the term's own operations: the pid without pinning its slot
// (the encoder writes it, it does not keep it), and a term's children as one sequence, which is
// what the iterative walks (copy, comparison, printing, encoding) step through.
#pragma once

#include <beamlet/config.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist::detail {

struct term_access {
  static beamlet::pid raw_pid(const term& t) { return std::get<beamlet::pid>(t.v_); }

  /// The children of a list (its items, then an improper tail), a tuple (its items) or a map
  /// (key, value, key, value...); none for anything else.
  static std::size_t children(const term& t) noexcept {
    switch (t.v_.index()) {
      case term::list_index: {
        const auto& l = std::get<term::list_data>(t.v_);
        return l.items.size() + l.tail.size();
      }
      case term::tuple_index:
        return std::get<term::tuple_data>(t.v_).items.size();
      case term::map_index:
        return 2 * std::get<term::map_data>(t.v_).entries.size();
      default:
        return 0;
    }
  }
  static const term& child(const term& t, std::size_t i) noexcept {
    switch (t.v_.index()) {
      case term::list_index: {
        const auto& l = std::get<term::list_data>(t.v_);
        return i < l.items.size() ? l.items[i] : l.tail.front();
      }
      case term::tuple_index:
        return std::get<term::tuple_data>(t.v_).items[i];
      default: {
        const auto& e = std::get<term::map_data>(t.v_).entries[i / 2];
        return i % 2 == 0 ? e.first : e.second;
      }
    }
  }
  static term& child(term& t, std::size_t i) noexcept {
    return const_cast<term&>(child(static_cast<const term&>(t), i));
  }
  /// A container of t's kind and shape with default (empty-list) children, to be filled.
  static term shape_of(const term& t) {
    term out;
    switch (t.v_.index()) {
      case term::list_index: {
        const auto& l = std::get<term::list_data>(t.v_);
        out.v_.emplace<term::list_data>(
            term::list_data{term_list(l.items.size()), std::vector<term>(l.tail.size())});
        break;
      }
      case term::tuple_index:
        out.v_.emplace<term::tuple_data>(
            term::tuple_data{term_list(std::get<term::tuple_data>(t.v_).items.size())});
        break;
      default:
        out.v_.emplace<term::map_data>(term::map_data{
            std::vector<std::pair<term, term>>(std::get<term::map_data>(t.v_).entries.size())});
        break;
    }
    return out;
  }
  static bool is_container(const term& t) noexcept {
    const std::size_t i = t.v_.index();
    return i == term::list_index || i == term::tuple_index || i == term::map_index;
  }
  /// Same kind and, for containers, same shape (sizes, improper or not); leaves equal.
  static bool shallow_equal(const term& a, const term& b);
};

}  // namespace dist::detail
BEAMLET_END_NAMESPACE
