// Inside a term, for the codec and the term's own operations: the pid without pinning its slot
// (the encoder writes it, it does not keep it), and a term's children as one sequence, which is
// what the iterative walks (copy, comparison, printing, encoding) step through.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/dist/term.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// A stack that keeps its first N elements inline: the iterative walks over a term need one
/// entry per level of nesting, and most terms are a few levels deep, so most walks allocate
/// nothing for it.
template <class T, std::size_t N>
class small_stack {
 public:
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  void push(T v) {
    if (size_ < N)
      inline_[size_] = std::move(v);
    else
      more_.push_back(std::move(v));
    ++size_;
  }
  T& back() noexcept { return size_ <= N ? inline_[size_ - 1] : more_.back(); }
  void pop() {
    if (size_ > N)
      more_.pop_back();
    else
      inline_[size_ - 1] = T{};
    --size_;
  }

 private:
  std::array<T, N> inline_{};
  std::size_t size_ = 0;
  std::vector<T> more_;
};

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
  /// Makes `to` (an empty list, as shape_of leaves children) a copy of the leaf `from`.
  static void copy_leaf(term& to, const term& from) {
    to.v_ = from.v_;
    if (to.v_.index() == term::pid_index && std::get<beamlet::pid>(to.v_).is_remote())
      retain_node(std::get<beamlet::pid>(to.v_).node_slot());
  }
  static bool is_container(const term& t) noexcept {
    const std::size_t i = t.v_.index();
    return i == term::list_index || i == term::tuple_index || i == term::map_index;
  }
  /// Same kind and, for containers, same shape (sizes, improper or not); leaves equal.
  static bool shallow_equal(const term& a, const term& b);
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
