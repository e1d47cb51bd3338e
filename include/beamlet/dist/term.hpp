/// @file
/// beamlet/dist/term.hpp: Erlang terms as a C++ value type, and the mapping of C++ types to them.
///
/// A `term` holds any value another Erlang node can send: atoms, integers (64-bit, and bignums
/// beyond), floats, binaries and bitstrings, lists (proper and improper), tuples, maps, pids,
/// references, ports, and funs (kept opaque, as their encoded bytes). It is what a message from
/// another node is when it reaches a process (`receive(on<term>())`), and what a process sends
/// to another node when its message type is not mapped.
///
/// Mapping: `to_term(x)` and `from_term<T>(t)` cover bool, integers, floating point, std::string
/// (a binary, as Elixir strings are), atom, pid, term itself, std::vector, std::map,
/// std::unordered_map, std::pair, std::tuple and std::optional (`undefined` when empty). A user
/// type joins by specializing `term_traits<T>` with `static term to_term(const T&)` and
/// `static std::optional<T> from_term(const term&)`.
///
/// Values: terms are ordinary values (copyable, comparable with ==, printable in Erlang syntax);
/// no sharing, no thread-safety beyond that of a std::vector. from_term never throws on a term
/// of the wrong shape: it returns std::nullopt. Depth costs no stack: copying, comparing,
/// printing, encoding and destroying a term are iterative, so a list nested a million deep is
/// as safe as a flat one.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <beamlet/core/config.hpp>
#include <beamlet/core/expected.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// An atom, by its UTF-8 name.
struct atom {
  std::string name;
  friend bool operator==(const atom&, const atom&) = default;
  friend auto operator<=>(const atom&, const atom&) = default;
};

/// An integer beyond 64 bits: sign and magnitude, least significant byte first (ETF's order).
struct bignum {
  bool negative = false;
  std::vector<std::uint8_t> magnitude;  ///< no trailing zero bytes
  friend bool operator==(const bignum&, const bignum&) = default;
};

/// A binary, or a bitstring when the last byte holds fewer than 8 bits.
struct binary {
  std::string bytes;
  std::uint8_t last_bits = 8;  ///< bits used in the last byte (1..8)
  friend bool operator==(const binary&, const binary&) = default;
};

/// A reference from any node (up to five 32-bit words, as OTP 25 makes them).
struct reference {
  std::string node;
  std::uint32_t creation = 0;
  std::vector<std::uint32_t> words;
  friend bool operator==(const reference&, const reference&) = default;
};

/// A port identifier from another node; kept so it can be sent back.
struct port_id {
  std::string node;
  std::uint64_t id = 0;
  std::uint32_t creation = 0;
  friend bool operator==(const port_id&, const port_id&) = default;
};

/// A fun or an external fun, kept as its encoded bytes: it can be received and sent on, not
/// called.
struct opaque_fun {
  std::string encoded;  ///< the ETF bytes, tag included
  friend bool operator==(const opaque_fun&, const opaque_fun&) = default;
};

class term;
using term_list = std::vector<term>;

namespace detail {
struct term_access;
// The node table's count of the terms that hold a pid of a node slot (node_table.cpp).
void retain_node(std::uint32_t slot) noexcept;
void release_node(std::uint32_t slot) noexcept;
void pin_node(std::uint32_t slot) noexcept;
}  // namespace detail

class term {
 public:
  enum class type : std::uint8_t {
    atom,
    integer,
    bignum,
    floating,
    binary,
    list,  ///< proper, or improper (see tail())
    tuple,
    map,
    pid,
    reference,
    port,
    fun
  };

  /// The empty list, `[]`.
  term() = default;
  term(dist::atom a) : v_(std::move(a)) {}
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  term(I i) : v_(static_cast<std::int64_t>(i)) {}
  term(bool) = delete;  // an atom: to_term(true), or make_atom("true")
  term(dist::bignum b);
  term(double d) : v_(d) {}
  term(dist::binary b) : v_(std::move(b)) {}
  term(beamlet::pid p) : v_(p) {
    if (p.is_remote()) detail::retain_node(p.node_slot());
  }
  term(dist::reference r) : v_(std::move(r)) {}
  term(port_id p) : v_(std::move(p)) {}
  term(opaque_fun f) : v_(std::move(f)) {}

  term(const term& other);
  term(term&& other) noexcept : v_(std::move(other.v_)) {
    if (v_.index() == pid_index) other.v_.emplace<list_data>();  // one holder of the pid's slot
  }
  term& operator=(const term& other);
  term& operator=(term&& other) noexcept;
  ~term() {
    const std::size_t i = v_.index();
    if (i == list_index || (i >= tuple_index && i <= pid_index)) release();
  }

  static term make_atom(std::string name) { return term(dist::atom{std::move(name)}); }
  static term make_binary(std::string bytes) { return term(dist::binary{std::move(bytes), 8}); }
  static term make_tuple(term_list items);
  static term make_list(term_list items);
  /// `[a, b | tail]`: a non-list tail makes an improper list.
  static term make_improper_list(term_list items, term tail);
  /// A charlist (what Erlang's "abc" is): one integer per byte.
  static term make_charlist(std::string_view s);
  static term make_map(std::vector<std::pair<term, term>> entries);
  /// `{a, b, ...}` from any values with a mapping.
  template <class... Ts>
  static term tuple(Ts&&... xs);

  /// Parses Erlang syntax: atoms ('quoted' too), integers of any size, floats, "strings"
  /// (charlists), <<"binaries">> and <<1,2>>, tuples, lists (with `| Tail`), maps (`#{K => V}`).
  static expected<term, std::string> parse(std::string_view text);

  type which() const noexcept;
  bool is_atom() const noexcept { return which() == type::atom; }
  bool is_atom(std::string_view name) const noexcept;
  bool is_integer() const noexcept { return which() == type::integer; }
  bool is_tuple() const noexcept { return which() == type::tuple; }
  bool is_list() const noexcept { return which() == type::list; }
  bool is_nil() const noexcept;  ///< the empty list
  bool is_binary() const noexcept { return which() == type::binary; }
  bool is_pid() const noexcept { return which() == type::pid; }
  bool is_map() const noexcept { return which() == type::map; }

  // Accessors: each throws std::bad_variant_access on a term of another type.
  const std::string& atom_name() const { return std::get<dist::atom>(v_).name; }
  std::int64_t integer() const { return std::get<std::int64_t>(v_); }
  const dist::bignum& big() const { return std::get<dist::bignum>(v_); }
  double floating() const { return std::get<double>(v_); }
  const dist::binary& bin() const { return std::get<dist::binary>(v_); }
  /// The pid (a plain value from now on: its node's slot is kept for good, see intern_node).
  beamlet::pid pid() const {
    const beamlet::pid p = std::get<beamlet::pid>(v_);
    if (p.is_remote()) detail::pin_node(p.node_slot());
    return p;
  }
  const dist::reference& ref() const { return std::get<dist::reference>(v_); }
  const port_id& port() const { return std::get<port_id>(v_); }
  const opaque_fun& fun() const { return std::get<opaque_fun>(v_); }
  /// Elements of a tuple or of a list (without an improper tail).
  const term_list& elements() const;
  term_list& elements();
  /// The tail of an improper list; null for a proper one.
  const term* tail() const noexcept;
  const std::vector<std::pair<term, term>>& map_entries() const;
  /// Element `i` of a tuple or list; throws std::out_of_range.
  const term& operator[](std::size_t i) const;
  std::size_t size() const;  ///< elements of a tuple/list, entries of a map; 0 otherwise
  /// The value under `key` in a map, or null.
  const term* find(const term& key) const;

  /// Erlang's printed form (`{ok,[1,2]}`, `<<"abc">>`, `'hello world'`).
  std::string to_string() const;
  friend std::ostream& operator<<(std::ostream& os, const term& t);
  friend bool operator==(const term& a, const term& b);

 private:
  // (No defaulted comparisons here: they would need term complete; term.cpp compares.)
  struct list_data {
    term_list items;
    std::vector<term> tail;  ///< empty, or one element: the improper tail
  };
  struct tuple_data {
    term_list items;
  };
  struct map_data {
    std::vector<std::pair<term, term>> entries;
  };
  using storage =
      std::variant<list_data, dist::atom, std::int64_t, dist::bignum, double, dist::binary,
                   tuple_data, map_data, beamlet::pid, dist::reference, port_id, opaque_fun>;
  static constexpr std::size_t list_index = 0, tuple_index = 6, map_index = 7, pid_index = 8;
  /// The destructor's slow path (term.cpp): children taken apart without recursion, a remote
  /// pid's slot released.
  void release() noexcept;
  friend struct detail::term_access;
  storage v_;
};

// -- the mapping ------------------------------------------------------------------------------

/// Specialize for a user type: `static term to_term(const T&)` and
/// `static std::optional<T> from_term(const term&)`.
template <class T, class = void>
struct term_traits;

template <class T>
concept term_mapped = requires(const T& x, const term& t) {
  { term_traits<std::remove_cvref_t<T>>::to_term(x) } -> std::convertible_to<term>;
  {
    term_traits<std::remove_cvref_t<T>>::from_term(t)
    } -> std::same_as<std::optional<std::remove_cvref_t<T>>>;
};

template <class T>
term to_term(const T& x) {
  return term_traits<std::remove_cvref_t<T>>::to_term(x);
}
inline term to_term(const char* s) {
  return term::make_binary(s);
}
template <class T>
std::optional<std::remove_cv_t<T>> from_term(const term& t) {
  return term_traits<std::remove_cv_t<T>>::from_term(t);
}

template <>
struct term_traits<term> {
  static term to_term(const term& t) { return t; }
  static std::optional<term> from_term(const term& t) { return t; }
};
template <>
struct term_traits<atom> {
  static term to_term(const atom& a) { return term(a); }
  static std::optional<atom> from_term(const term& t) {
    if (!t.is_atom()) return std::nullopt;
    return atom{t.atom_name()};
  }
};
template <>
struct term_traits<bool> {
  static term to_term(bool b) { return term::make_atom(b ? "true" : "false"); }
  static std::optional<bool> from_term(const term& t) {
    if (t.is_atom("true")) return true;
    if (t.is_atom("false")) return false;
    return std::nullopt;
  }
};
template <class T>
struct term_traits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static term to_term(T x) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      if (x > static_cast<T>(INT64_MAX)) return unsigned_big(static_cast<std::uint64_t>(x));
    }
    return term(static_cast<std::int64_t>(x));
  }
  static std::optional<T> from_term(const term& t) {
    if (t.is_integer()) {
      const std::int64_t v = t.integer();
      if constexpr (std::is_unsigned_v<T>) {
        if (v < 0) return std::nullopt;
        if (static_cast<std::uint64_t>(v) > std::numeric_limits<T>::max()) return std::nullopt;
      } else {
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
          return std::nullopt;
      }
      return static_cast<T>(v);
    }
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      if (t.which() == term::type::bignum && !t.big().negative && t.big().magnitude.size() <= 8) {
        std::uint64_t v = 0;
        for (std::size_t i = t.big().magnitude.size(); i-- > 0;)
          v = (v << 8) | t.big().magnitude[i];
        return static_cast<T>(v);
      }
    }
    return std::nullopt;
  }

 private:
  static term unsigned_big(std::uint64_t v) {
    bignum b;
    for (; v != 0; v >>= 8) b.magnitude.push_back(static_cast<std::uint8_t>(v & 0xff));
    return term(std::move(b));
  }
};
template <class T>
struct term_traits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static term to_term(T x) { return term(static_cast<double>(x)); }
  static std::optional<T> from_term(const term& t) {
    if (t.which() == term::type::floating) return static_cast<T>(t.floating());
    if (t.is_integer()) return static_cast<T>(t.integer());
    return std::nullopt;
  }
};
template <>
struct term_traits<std::string> {
  static term to_term(const std::string& s) { return term::make_binary(s); }
  /// A binary, or a charlist of bytes.
  static std::optional<std::string> from_term(const term& t);
};
template <>
struct term_traits<std::string_view> {
  static term to_term(std::string_view s) { return term::make_binary(std::string(s)); }
};
template <>
struct term_traits<beamlet::pid> {
  static term to_term(beamlet::pid p) { return term(p); }
  static std::optional<beamlet::pid> from_term(const term& t) {
    if (!t.is_pid()) return std::nullopt;
    return t.pid();
  }
};
template <class T>
struct term_traits<std::vector<T>> {
  static term to_term(const std::vector<T>& v) {
    term_list items;
    items.reserve(v.size());
    for (const auto& x : v) items.push_back(dist::to_term(x));
    return term::make_list(std::move(items));
  }
  static std::optional<std::vector<T>> from_term(const term& t) {
    if (!t.is_list() || t.tail() != nullptr) return std::nullopt;
    std::vector<T> out;
    out.reserve(t.size());
    for (const term& e : t.elements()) {
      auto x = dist::from_term<T>(e);
      if (!x) return std::nullopt;
      out.push_back(std::move(*x));
    }
    return out;
  }
};
namespace detail {
template <class M>
struct map_traits {
  static term to_term(const M& m) {
    std::vector<std::pair<term, term>> entries;
    entries.reserve(m.size());
    for (const auto& [k, v] : m) entries.emplace_back(dist::to_term(k), dist::to_term(v));
    return term::make_map(std::move(entries));
  }
  static std::optional<M> from_term(const term& t) {
    if (!t.is_map()) return std::nullopt;
    M out;
    for (const auto& [k, v] : t.map_entries()) {
      auto key = dist::from_term<typename M::key_type>(k);
      auto val = dist::from_term<typename M::mapped_type>(v);
      if (!key || !val) return std::nullopt;
      out.emplace(std::move(*key), std::move(*val));
    }
    return out;
  }
};
template <class Tuple, std::size_t... I>
std::optional<Tuple> tuple_from(const term& t, std::index_sequence<I...>) {
  if (!t.is_tuple() || t.size() != sizeof...(I)) return std::nullopt;
  std::tuple<std::optional<std::tuple_element_t<I, Tuple>>...> parts{
      dist::from_term<std::tuple_element_t<I, Tuple>>(t[I])...};
  if (!(std::get<I>(parts).has_value() && ...)) return std::nullopt;
  return Tuple{std::move(*std::get<I>(parts))...};
}
}  // namespace detail
template <class K, class V, class C, class A>
struct term_traits<std::map<K, V, C, A>> : detail::map_traits<std::map<K, V, C, A>> {};
template <class K, class V, class H, class E, class A>
struct term_traits<std::unordered_map<K, V, H, E, A>>
    : detail::map_traits<std::unordered_map<K, V, H, E, A>> {};
template <class... Ts>
struct term_traits<std::tuple<Ts...>> {
  static term to_term(const std::tuple<Ts...>& x) {
    return std::apply([](const auto&... e) { return term::tuple(e...); }, x);
  }
  static std::optional<std::tuple<Ts...>> from_term(const term& t) {
    return detail::tuple_from<std::tuple<Ts...>>(t, std::index_sequence_for<Ts...>{});
  }
};
template <class A, class B>
struct term_traits<std::pair<A, B>> {
  static term to_term(const std::pair<A, B>& x) { return term::tuple(x.first, x.second); }
  static std::optional<std::pair<A, B>> from_term(const term& t) {
    return detail::tuple_from<std::pair<A, B>>(t, std::index_sequence<0, 1>{});
  }
};
template <class T>
struct term_traits<std::optional<T>> {
  static term to_term(const std::optional<T>& x) {
    return x ? dist::to_term(*x) : term::make_atom("undefined");
  }
  /// `undefined` (Erlang) and `nil` (Elixir) are both empty.
  static std::optional<std::optional<T>> from_term(const term& t) {
    std::optional<std::optional<T>> out;
    if (t.is_atom("undefined") || t.is_atom("nil")) {
      out.emplace();
    } else if (auto x = dist::from_term<T>(t)) {
      out.emplace(std::move(*x));
    }
    return out;
  }
};

template <class... Ts>
term term::tuple(Ts&&... xs) {
  term_list items;
  items.reserve(sizeof...(Ts));
  (items.push_back(dist::to_term(std::forward<Ts>(xs))), ...);
  return make_tuple(std::move(items));
}

}  // namespace dist
BEAMLET_END_NAMESPACE
