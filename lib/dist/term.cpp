// The term value type: construction, access, comparison, and Erlang's printed form.
#include <beamlet/dist/term.hpp>

#include <charconv>
#include <ostream>
#include <stdexcept>

#include <beamlet/core/exit_reason.hpp>

#include "bignum_text.hpp"
#include "term_access.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

term::term(dist::bignum b) {
  while (!b.magnitude.empty() && b.magnitude.back() == 0) b.magnitude.pop_back();
  // A bignum that fits is an integer: one value, one representation (== relies on it).
  if (b.magnitude.size() <= 8) {
    std::uint64_t m = 0;
    for (std::size_t i = b.magnitude.size(); i-- > 0;) m = (m << 8) | b.magnitude[i];
    if (!b.negative && m <= static_cast<std::uint64_t>(INT64_MAX)) {
      v_ = static_cast<std::int64_t>(m);
      return;
    }
    if (b.negative && m <= static_cast<std::uint64_t>(INT64_MAX) + 1) {
      v_ = static_cast<std::int64_t>(0 - m);
      return;
    }
  }
  if (b.magnitude.empty()) b.negative = false;
  v_ = std::move(b);
}

term term::make_tuple(term_list items) {
  term t;
  t.v_ = tuple_data{std::move(items)};
  return t;
}

term term::make_list(term_list items) {
  term t;
  t.v_ = list_data{std::move(items), {}};
  return t;
}

term term::make_improper_list(term_list items, term tail) {
  if (tail.is_list()) {  // [a | [b, c]] is [a, b, c]
    auto& l = std::get<list_data>(tail.v_);
    items.insert(items.end(), std::make_move_iterator(l.items.begin()),
                 std::make_move_iterator(l.items.end()));
    term t;
    t.v_ = list_data{std::move(items), std::move(l.tail)};
    return t;
  }
  if (items.empty()) return tail;
  term t;
  list_data d{std::move(items), {}};
  d.tail.push_back(std::move(tail));
  t.v_ = std::move(d);
  return t;
}

term term::make_charlist(std::string_view s) {
  term_list items;
  items.reserve(s.size());
  for (unsigned char c : s) items.emplace_back(static_cast<std::int64_t>(c));
  return make_list(std::move(items));
}

term term::make_map(std::vector<std::pair<term, term>> entries) {
  term t;
  t.v_ = map_data{std::move(entries)};
  return t;
}

term::type term::which() const noexcept {
  switch (v_.index()) {
    case 0:
      return type::list;
    case 1:
      return type::atom;
    case 2:
      return type::integer;
    case 3:
      return type::bignum;
    case 4:
      return type::floating;
    case 5:
      return type::binary;
    case 6:
      return type::tuple;
    case 7:
      return type::map;
    case 8:
      return type::pid;
    case 9:
      return type::reference;
    case 10:
      return type::port;
    default:
      return type::fun;
  }
}

bool term::is_atom(std::string_view name) const noexcept {
  const auto* a = std::get_if<dist::atom>(&v_);
  return a != nullptr && a->name == name;
}

bool term::is_nil() const noexcept {
  const auto* l = std::get_if<list_data>(&v_);
  return l != nullptr && l->items.empty() && l->tail.empty();
}

const term_list& term::elements() const {
  if (const auto* t = std::get_if<tuple_data>(&v_)) return t->items;
  return std::get<list_data>(v_).items;
}

term_list& term::elements() {
  if (auto* t = std::get_if<tuple_data>(&v_)) return t->items;
  return std::get<list_data>(v_).items;
}

const term* term::tail() const noexcept {
  const auto* l = std::get_if<list_data>(&v_);
  return l != nullptr && !l->tail.empty() ? &l->tail.front() : nullptr;
}

const std::vector<std::pair<term, term>>& term::map_entries() const {
  return std::get<map_data>(v_).entries;
}

const term& term::operator[](std::size_t i) const {
  const term_list& e = elements();
  if (i >= e.size()) throw std::out_of_range("beamlet::dist::term: element index out of range");
  return e[i];
}

std::size_t term::size() const {
  if (const auto* t = std::get_if<tuple_data>(&v_)) return t->items.size();
  if (const auto* l = std::get_if<list_data>(&v_)) return l->items.size();
  if (const auto* m = std::get_if<map_data>(&v_)) return m->entries.size();
  return 0;
}

const term* term::find(const term& key) const {
  const auto* m = std::get_if<map_data>(&v_);
  if (m == nullptr) return nullptr;
  for (const auto& [k, v] : m->entries)
    if (k == key) return &v;
  return nullptr;
}

// -- the special members: no recursion, whatever the depth -------------------------------------

namespace {
using detail::term_access;
}  // namespace

term::term(const term& other) {
  if (!term_access::is_container(other)) {
    v_ = other.v_;
    if (v_.index() == pid_index && std::get<beamlet::pid>(v_).is_remote())
      detail::retain_node(std::get<beamlet::pid>(v_).node_slot());
    return;
  }
  // Shape first, then the children, each a leaf copied or a container shaped and queued.
  *this = term_access::shape_of(other);
  detail::small_stack<std::pair<const term*, term*>, 32> todo;
  todo.push({&other, this});
  while (!todo.empty()) {
    const auto [from, to] = todo.back();
    todo.pop();
    const std::size_t n = term_access::children(*from);
    for (std::size_t i = 0; i < n; ++i) {
      const term& c = term_access::child(*from, i);
      term& d = term_access::child(*to, i);
      if (term_access::is_container(c)) {
        d = term_access::shape_of(c);
        if (term_access::children(c) != 0) todo.push({&c, &d});
      } else {
        term_access::copy_leaf(d, c);
      }
    }
  }
}

term& term::operator=(const term& other) {
  if (this != &other) {
    term copy(other);
    *this = std::move(copy);
  }
  return *this;
}

term& term::operator=(term&& other) noexcept {
  if (this != &other) {
    term old(std::move(*this));  // destroyed last, without recursion
    v_ = std::move(other.v_);
    if (v_.index() == pid_index) other.v_.emplace<list_data>();
  }
  return *this;
}

void term::release() noexcept {
  if (v_.index() == pid_index) {
    const beamlet::pid p = std::get<beamlet::pid>(v_);
    if (p.is_remote()) detail::release_node(p.node_slot());
    return;
  }
  // Children that have children of their own are moved out before this term's storage goes,
  // and taken apart the same way, so destruction never nests more than one level.
  const auto has_children = [](const term& t) { return term_access::children(t) != 0; };
  std::vector<term> pending;
  try {
    for (std::size_t i = 0, n = term_access::children(*this); i < n; ++i) {
      term& c = term_access::child(*this, i);
      if (term_access::is_container(c) && has_children(c)) pending.push_back(std::move(c));
    }
    while (!pending.empty()) {
      term t = std::move(pending.back());
      pending.pop_back();
      for (std::size_t i = 0, n = term_access::children(t); i < n; ++i) {
        term& c = term_access::child(t, i);
        if (term_access::is_container(c) && has_children(c)) pending.push_back(std::move(c));
      }
    }  // each t goes with leaves and emptied containers only
  } catch (...) {
    // Out of memory for the worklist: what is left is destroyed the ordinary way.
  }
}

bool detail::term_access::shallow_equal(const term& a, const term& b) {
  if (a.v_.index() != b.v_.index()) return false;
  switch (a.which()) {
    case term::type::list: {
      const auto& x = std::get<term::list_data>(a.v_);
      const auto& y = std::get<term::list_data>(b.v_);
      return x.items.size() == y.items.size() && x.tail.size() == y.tail.size();
    }
    case term::type::tuple:
    case term::type::map:
      return children(a) == children(b);
    case term::type::atom:
      return a.atom_name() == b.atom_name();
    case term::type::integer:
      return a.integer() == b.integer();
    case term::type::bignum:
      return a.big() == b.big();
    case term::type::floating:
      return a.floating() == b.floating();
    case term::type::binary:
      return a.bin() == b.bin();
    case term::type::pid:
      return raw_pid(a) == raw_pid(b);
    case term::type::reference:
      return a.ref() == b.ref();
    case term::type::port:
      return a.port() == b.port();
    case term::type::fun:
      return a.fun() == b.fun();
  }
  return false;
}

bool operator==(const term& a, const term& b) {
  // Compared level by level: the pairs still to compare wait on a stack, not in recursion.
  detail::small_stack<std::pair<const term*, const term*>, 32> todo;
  todo.push({&a, &b});
  while (!todo.empty()) {
    const auto [x, y] = todo.back();
    todo.pop();
    if (!term_access::shallow_equal(*x, *y)) return false;
    for (std::size_t i = term_access::children(*x); i-- > 0;) {
      const term& cx = term_access::child(*x, i);
      const term& cy = term_access::child(*y, i);
      if (term_access::is_container(cx))
        todo.push({&cx, &cy});
      else if (!term_access::shallow_equal(cx, cy))
        return false;
    }
  }
  return true;
}

std::optional<std::string> term_traits<std::string>::from_term(const term& t) {
  if (t.is_binary()) {
    if (t.bin().is_bitstring()) return std::nullopt;
    return t.bin().str();
  }
  if (!t.is_list() || t.tail() != nullptr) return std::nullopt;
  std::string out;
  out.reserve(t.size());
  for (const term& e : t.elements()) {
    if (!e.is_integer() || e.integer() < 0 || e.integer() > 255) return std::nullopt;
    out.push_back(static_cast<char>(e.integer()));
  }
  return out;
}

// -- printing ---------------------------------------------------------------------------------

namespace {

bool printable_text(std::string_view s) {
  for (unsigned char c : s)
    if ((c < 32 && c != '\n' && c != '\t') || c == 127) return false;
  return true;
}

void print_float(std::string& out, double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  const auto e = s.find('e');
  std::string mant = e == std::string::npos ? s : s.substr(0, e);
  std::string exp = e == std::string::npos ? "" : s.substr(e + 1);
  if (mant.find('.') == std::string::npos && mant.find_first_of("ni") == std::string::npos)
    mant += ".0";
  if (!exp.empty() && exp[0] == '+') exp.erase(0, 1);
  out += mant;
  if (!exp.empty()) out += "e" + exp;
}

/// A charlist of printable characters, which Erlang prints as "text".
bool text_list(const term& t) {
  const term_list& items = t.elements();
  if (items.empty() || t.tail() != nullptr) return false;
  for (const term& e : items)
    if (!e.is_integer() || e.integer() < 32 || e.integer() >= 127) return false;
  return true;
}

/// Prints t if it is printed in one go (a leaf, an empty container, a text list); false for a
/// container whose children the caller walks.
bool print_whole(std::string& out, const term& t) {
  switch (t.which()) {
    case term::type::atom:
      beamlet::detail::append_erlang_atom(out, t.atom_name());
      return true;
    case term::type::integer:
      out += std::to_string(t.integer());
      return true;
    case term::type::bignum:
      out += detail::bignum_to_decimal(t.big());
      return true;
    case term::type::floating:
      print_float(out, t.floating());
      return true;
    case term::type::binary: {
      const binary& b = t.bin();
      out += "<<";
      const std::size_t whole = b.last_bits() == 8 ? b.bytes().size() : b.bytes().size() - 1;
      const std::string_view body(b.bytes().data(), whole);
      if (b.last_bits() == 8 && !body.empty() && printable_text(body)) {
        beamlet::detail::append_erlang_string(out, body);
      } else {
        for (std::size_t i = 0; i < whole; ++i) {
          if (i != 0) out.push_back(',');
          out += std::to_string(static_cast<unsigned char>(b.bytes()[i]));
        }
        if (b.last_bits() != 8) {
          if (whole != 0) out.push_back(',');
          const unsigned v = static_cast<unsigned char>(b.bytes().back()) >> (8 - b.last_bits());
          out += std::to_string(v) + ":" + std::to_string(b.last_bits());
        }
      }
      out += ">>";
      return true;
    }
    case term::type::list:
      if (!text_list(t)) return false;
      {
        std::string s;
        for (const term& e : t.elements()) s.push_back(static_cast<char>(e.integer()));
        beamlet::detail::append_erlang_string(out, s);
      }
      return true;
    case term::type::tuple:
    case term::type::map:
      return false;
    case term::type::pid:
      out += detail::term_access::raw_pid(t).to_string();
      return true;
    case term::type::reference: {
      out += "#Ref<" + t.ref().node;
      for (std::uint32_t w : t.ref().words) out += "." + std::to_string(w);
      out.push_back('>');
      return true;
    }
    case term::type::port:
      out += "#Port<" + t.port().node + "." + std::to_string(t.port().id) + ">";
      return true;
    case term::type::fun:
      out += "#Fun<" + std::to_string(t.fun().encoded.size()) + " bytes>";
      return true;
  }
  return true;
}

const char* opening(const term& t) {
  return t.is_tuple() ? "{" : t.is_map() ? "#{" : "[";
}
char closing(const term& t) {
  return t.is_tuple() || t.is_map() ? '}' : ']';
}
/// What goes before child i of t.
const char* separator(const term& t, std::size_t i) {
  if (i == 0) return "";
  if (t.is_map()) return i % 2 == 1 ? " => " : ",";
  if (t.is_list() && i == t.elements().size()) return "|";  // the improper tail
  return ",";
}

void print(std::string& out, const term& root) {
  if (print_whole(out, root)) return;
  struct frame {
    const term* t = nullptr;
    std::size_t next = 0;
  };
  detail::small_stack<frame, 32> stack;
  stack.push({&root, 0});
  out += opening(root);
  while (!stack.empty()) {
    frame& f = stack.back();
    if (f.next == detail::term_access::children(*f.t)) {
      out.push_back(closing(*f.t));
      stack.pop();
      continue;
    }
    out += separator(*f.t, f.next);
    const term& c = detail::term_access::child(*f.t, f.next++);
    if (!print_whole(out, c)) {
      out += opening(c);
      stack.push({&c, 0});  // f may dangle from here on
    }
  }
}

}  // namespace

std::string term::to_string() const {
  std::string out;
  print(out, *this);
  return out;
}

std::ostream& operator<<(std::ostream& os, const term& t) {
  return os << t.to_string();
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
