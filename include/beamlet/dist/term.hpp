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
/// Values: terms are ordinary values (copyable, comparable with ==, printable in Erlang syntax),
/// with the thread-safety of a std::vector. Binaries are the one part shared: a copy of a term
/// shares its binaries' bytes (binary.hpp), which never change, so copies are independent.
/// from_term never throws on a term of the wrong shape: it returns std::nullopt. Depth costs no
/// stack: copying, comparing, printing, encoding and destroying a term are iterative, so a list
/// nested a million deep is as safe as a flat one.
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
#include <beamlet/dist/binary.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

/// An atom, by its UTF-8 name.
struct atom {
  std::string name;  ///< sent only if valid UTF-8 of at most 255 characters
  /// Atoms are equal when their names are.
  friend bool operator==(const atom&, const atom&) = default;
  /// Ordered by name (so that an atom can key a std::map).
  friend auto operator<=>(const atom&, const atom&) = default;
};

/// An integer beyond 64 bits: sign and magnitude, least significant byte first (ETF's order).
struct bignum {
  bool negative = false;                ///< true for a value below zero
  std::vector<std::uint8_t> magnitude;  ///< no trailing zero bytes
  /// Same sign and same magnitude.
  friend bool operator==(const bignum&, const bignum&) = default;
};

/// A reference from any node (up to five 32-bit words, as OTP 25 makes them).
struct reference {
  std::string node;                  ///< the node that made it (`alive@host`)
  std::uint32_t creation = 0;        ///< that node's incarnation
  std::vector<std::uint32_t> words;  ///< its ID words (1 to 5 for it to be sent)
  /// Same node, creation and words.
  friend bool operator==(const reference&, const reference&) = default;
};

/// A port identifier from another node; kept so it can be sent back.
struct port_id {
  std::string node;            ///< the node the port is on (`alive@host`)
  std::uint64_t id = 0;        ///< the port's number on that node
  std::uint32_t creation = 0;  ///< that node's incarnation
  /// Same node, number and creation.
  friend bool operator==(const port_id&, const port_id&) = default;
};

/// A fun or an external fun, kept as its encoded bytes: it can be received and sent on, not
/// called.
struct opaque_fun {
  std::string encoded;  ///< the ETF bytes, tag included
  /// Same encoded bytes.
  friend bool operator==(const opaque_fun&, const opaque_fun&) = default;
};

class term;
/// A sequence of terms: the elements of a tuple or a list, the arguments of an rpc.
using term_list = std::vector<term>;

namespace detail {
struct term_access;
// The node table's count of the terms that hold a pid of a node slot (node_table.cpp).
void retain_node(std::uint32_t slot) noexcept;
void release_node(std::uint32_t slot) noexcept;
void pin_node(std::uint32_t slot) noexcept;
}  // namespace detail

/// One Erlang value of any type (the kinds are listed by term::type), held by value: copying
/// a term copies all of it but its binaries' bytes, which copies share.
class term {
 public:
  /// The kind of value a term holds (which()).
  enum class type : std::uint8_t {
    atom,       ///< an atom (atom_name())
    integer,    ///< an integer that fits in 64 bits, signed (integer())
    bignum,     ///< an integer beyond 64 bits (big())
    floating,   ///< a float (floating())
    binary,     ///< a binary or a bitstring (bin())
    list,       ///< proper, or improper (see tail())
    tuple,      ///< a tuple (elements())
    map,        ///< a map (map_entries())
    pid,        ///< a pid, local or remote (pid())
    reference,  ///< a reference (ref())
    port,       ///< a port identifier (port())
    fun         ///< a fun, kept opaque (fun())
  };

  /// The empty list, `[]`.
  term() = default;
  /// An atom.
  term(dist::atom a) : v_(std::move(a)) {}
  /// An integer, from any integral type but bool. An unsigned value above INT64_MAX wraps
  /// here; to_term() makes it a bignum instead.
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  term(I i) : v_(static_cast<std::int64_t>(i)) {}
  term(bool) = delete;  // an atom: to_term(true), or make_atom("true")
  /// An integer beyond 64 bits; one that fits in 64 bits becomes type::integer (one value,
  /// one representation, which == relies on).
  term(dist::bignum b);
  /// A float. NaN and the infinities are held, but refused when sent (Erlang has none).
  term(double d) : v_(d) {}
  /// A binary or a bitstring.
  term(dist::binary b) : v_(std::move(b)) {}
  /// A pid, local or remote.
  term(beamlet::pid p) : v_(p) {
    if (p.is_remote()) detail::retain_node(p.node_slot());
  }
  /// A reference.
  term(dist::reference r) : v_(std::move(r)) {}
  /// A port identifier.
  term(port_id p) : v_(std::move(p)) {}
  /// A fun, kept opaque.
  term(opaque_fun f) : v_(std::move(f)) {}

  /// A deep copy (binaries shared), made without recursion whatever the depth.
  term(const term& other);
  /// Takes `other`'s value; `other` is left valid, its value unspecified.
  term(term&& other) noexcept : v_(std::move(other.v_)) {
    if (v_.index() == pid_index) other.v_.emplace<list_data>();  // one holder of the pid's slot
  }
  /// Replaces the value with a deep copy of `other`'s.
  term& operator=(const term& other);
  /// Takes `other`'s value; the old value is destroyed without recursion.
  term& operator=(term&& other) noexcept;
  ~term() {
    const std::size_t i = v_.index();
    if (i == list_index || (i >= tuple_index && i <= pid_index)) release();
  }

  /// The atom `name`. Not checked here: one over 255 characters or not valid UTF-8 is refused
  /// when sent.
  static term make_atom(std::string name) { return term(dist::atom{std::move(name)}); }
  /// A binary of these bytes (as a std::string maps).
  static term make_binary(std::string bytes) { return term(dist::binary(std::move(bytes))); }
  /// The tuple `{Items...}`.
  static term make_tuple(term_list items);
  /// The proper list `[Items...]`.
  static term make_list(term_list items);
  /// `[a, b | tail]`: a non-list tail makes an improper list.
  static term make_improper_list(term_list items, term tail);
  /// A charlist (what Erlang's "abc" is): one integer per byte.
  static term make_charlist(std::string_view s);
  /// The map of these entries, kept as given: not sorted, and a repeated key not merged.
  static term make_map(std::vector<std::pair<term, term>> entries);
  /// `{a, b, ...}` from any values with a mapping.
  template <class... Ts>
  static term tuple(Ts&&... xs);

  /// Parses Erlang syntax: atoms ('quoted' too), integers of any size, floats, "strings"
  /// (charlists), <<"binaries">> and <<1,2>>, tuples, lists (with `| Tail`), maps (`#{K => V}`).
  static expected<term, std::string> parse(std::string_view text);

  /// The kind of value held.
  type which() const noexcept;
  /// True for an atom.
  bool is_atom() const noexcept { return which() == type::atom; }
  /// True for the atom `name`.
  bool is_atom(std::string_view name) const noexcept;
  /// True for a 64-bit integer (a bignum is type::bignum).
  bool is_integer() const noexcept { return which() == type::integer; }
  /// True for a tuple.
  bool is_tuple() const noexcept { return which() == type::tuple; }
  /// True for a list: `[]`, a proper list or an improper one.
  bool is_list() const noexcept { return which() == type::list; }
  bool is_nil() const noexcept;  ///< the empty list
  /// True for a binary or a bitstring.
  bool is_binary() const noexcept { return which() == type::binary; }
  /// True for a pid.
  bool is_pid() const noexcept { return which() == type::pid; }
  /// True for a map.
  bool is_map() const noexcept { return which() == type::map; }

  // Accessors: each throws std::bad_variant_access on a term of another type.
  /// An atom's name.
  const std::string& atom_name() const { return std::get<dist::atom>(v_).name; }
  /// A 64-bit integer's value (a bignum's is big()).
  std::int64_t integer() const { return std::get<std::int64_t>(v_); }
  /// A bignum's sign and magnitude.
  const dist::bignum& big() const { return std::get<dist::bignum>(v_); }
  /// A float's value.
  double floating() const { return std::get<double>(v_); }
  /// A binary's or a bitstring's bytes.
  const dist::binary& bin() const { return std::get<dist::binary>(v_); }
  /// The pid (a plain value from now on: its node's slot is kept for good, see intern_node).
  beamlet::pid pid() const {
    const beamlet::pid p = std::get<beamlet::pid>(v_);
    if (p.is_remote()) detail::pin_node(p.node_slot());
    return p;
  }
  /// A reference.
  const dist::reference& ref() const { return std::get<dist::reference>(v_); }
  /// A port identifier.
  const port_id& port() const { return std::get<port_id>(v_); }
  /// A fun's encoded bytes.
  const opaque_fun& fun() const { return std::get<opaque_fun>(v_); }
  /// Elements of a tuple or of a list (without an improper tail).
  const term_list& elements() const;
  /// The same, to change in place.
  term_list& elements();
  /// The tail of an improper list; null for a proper one.
  const term* tail() const noexcept;
  /// A map's entries, in the order it holds them.
  const std::vector<std::pair<term, term>>& map_entries() const;
  /// Element `i` of a tuple or list; throws std::out_of_range.
  const term& operator[](std::size_t i) const;
  std::size_t size() const;  ///< elements of a tuple/list, entries of a map; 0 otherwise
  /// The value under `key` in a map, or null.
  const term* find(const term& key) const;

  /// Erlang's printed form (`{ok,[1,2]}`, `<<"abc">>`, `'hello world'`).
  std::string to_string() const;
  /// Writes to_string() to `os`.
  friend std::ostream& operator<<(std::ostream& os, const term& t);
  /// Exact equality, as Erlang's `=:=` (1 and 1.0 differ); maps are equal when they hold the
  /// same entries in the same order.
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

/// The term for `x`, by term_traits<T>.
template <class T>
term to_term(const T& x) {
  return term_traits<std::remove_cvref_t<T>>::to_term(x);
}
/// A string literal or C string: a binary, as std::string maps.
inline term to_term(const char* s) {
  return term::make_binary(s);
}
/// The T that `t` stands for, by term_traits<T>; nullopt when `t` does not have T's shape.
template <class T>
std::optional<std::remove_cv_t<T>> from_term(const term& t) {
  return term_traits<std::remove_cv_t<T>>::from_term(t);
}

/// A term maps to itself.
template <>
struct term_traits<term> {
  /// A copy of `t`.
  static term to_term(const term& t) { return t; }
  /// A copy of `t`, always.
  static std::optional<term> from_term(const term& t) { return t; }
};
/// An atom maps to an Erlang atom.
template <>
struct term_traits<atom> {
  /// The atom as a term.
  static term to_term(const atom& a) { return term(a); }
  /// The atom `t` is; nullopt for any other term.
  static std::optional<atom> from_term(const term& t) {
    if (!t.is_atom()) return std::nullopt;
    return atom{t.atom_name()};
  }
};
/// A bool maps to the atom `true` or `false`.
template <>
struct term_traits<bool> {
  /// `true` or `false`.
  static term to_term(bool b) { return term::make_atom(b ? "true" : "false"); }
  /// true or false for those two atoms; nullopt for any other term.
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
  static term to_term(const std::string& s) { return term(dist::binary(std::string_view(s))); }
  /// A binary, or a charlist of bytes.
  static std::optional<std::string> from_term(const term& t);
};
template <>
struct term_traits<std::string_view> {
  static term to_term(std::string_view s) { return term(dist::binary(s)); }
};
/// A pid maps to a pid term, local or remote.
template <>
struct term_traits<beamlet::pid> {
  /// The pid as a term.
  static term to_term(beamlet::pid p) { return term(p); }
  /// The pid `t` holds (see term::pid()); nullopt for any other term.
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
