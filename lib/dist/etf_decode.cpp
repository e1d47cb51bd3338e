// ETF decoding, for bytes from another node: every length is checked against what remains
// before it is used, and each element of a list, tuple or map needs at least one byte, so no
// count can make the decoder reserve more than the input could fill. Containers are decoded
// with a stack of frames on the heap, not by recursion: nesting costs memory, never stack.
#include <beamlet/dist/etf.hpp>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "binary_access.hpp"
#include "etf_tags.hpp"
#include "node_table.hpp"
#include "term_access.hpp"
#include "utf8.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {

namespace tag = detail::tag;

class decoder {
 public:
  decoder(std::string_view in, std::size_t pos, const node_incarnation* self,
          const decode_limits& limits, std::size_t* new_nodes, const binary* source)
      : in_(in), pos_(pos), self_(self), limits_(limits), new_nodes_(new_nodes), source_(source) {}

  /// One whole term into `out`.
  bool any(term& out) {
    term value;
    for (;;) {
      // Read one value: a leaf (or an empty container) whole, or a container's header, which
      // opens a frame that its children fill.
      if (!next(value)) return false;
      // Hand it to its container; a container that is complete goes to its own, and so on.
      for (;;) {
        if (stack_.empty()) {
          out = std::move(value);
          return true;
        }
        frame& f = stack_.back();
        f.take(std::move(value));
        if (!f.complete()) break;
        value = f.finish();
        stack_.pop();
      }
    }
  }

  /// Reads one value. A container with children pushes its frame and leaves `t` alone; the
  /// caller loops until the frame is complete.
  bool next(term& t) {
    for (;;) {
      if (++terms_ > limits_.max_terms) return fail("more terms than the limit");
      bool opened = false;
      if (!value(t, opened)) return false;
      if (!opened) return true;
      // A frame was opened: read its first child at once (the frame is never empty).
    }
  }

  bool value(term& t, bool& opened) {
    std::uint8_t k;
    if (!u8(k)) return false;
    switch (k) {
      case tag::small_integer: {
        std::uint8_t v;
        if (!u8(v)) return false;
        t = term(static_cast<std::int64_t>(v));
        return true;
      }
      case tag::integer: {
        std::uint32_t v;
        if (!u32(v)) return false;
        t = term(static_cast<std::int64_t>(static_cast<std::int32_t>(v)));
        return true;
      }
      case tag::small_big:
      case tag::large_big: {
        std::uint32_t n;
        if (k == tag::small_big) {
          std::uint8_t n8;
          if (!u8(n8)) return false;
          n = n8;
        } else if (!u32(n)) {
          return false;
        }
        std::uint8_t sign;
        if (!u8(sign) || !need(n)) return false;
        bignum b;
        b.negative = sign != 0;
        b.magnitude.assign(reinterpret_cast<const std::uint8_t*>(in_.data() + pos_),
                           reinterpret_cast<const std::uint8_t*>(in_.data() + pos_ + n));
        pos_ += n;
        t = term(std::move(b));
        return true;
      }
      case tag::new_float: {
        std::uint32_t hi, lo;
        if (!u32(hi) || !u32(lo)) return false;
        const double d = std::bit_cast<double>((std::uint64_t{hi} << 32) | lo);
        if (!std::isfinite(d)) return fail("a float that is not finite");
        t = term(d);
        return true;
      }
      case tag::float_text: {  // 31 bytes of printf text, from very old nodes
        if (!need(31)) return false;
        const std::string text(in_.substr(pos_, 31).data(), strnlen(in_.data() + pos_, 31));
        pos_ += 31;
        const double d = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(d)) return fail("a float that is not finite");
        t = term(d);
        return true;
      }
      case tag::atom_utf8:
      case tag::small_atom_utf8:
      case tag::atom_latin1:
      case tag::small_atom_latin1: {
        std::string name;
        if (!atom_body(k, name)) return false;
        t = term::make_atom(std::move(name));
        return true;
      }
      case tag::small_tuple:
      case tag::large_tuple: {
        std::uint32_t n;
        if (k == tag::small_tuple) {
          std::uint8_t n8;
          if (!u8(n8)) return false;
          n = n8;
        } else if (!u32(n)) {
          return false;
        }
        if (n == 0) {
          t = term::make_tuple({});
          return true;
        }
        return open(frame::kind::tuple, n, opened);
      }
      case tag::nil:
        t = term::make_list({});
        return true;
      case tag::string: {
        std::uint16_t n;
        if (!u16(n) || !need(n)) return false;
        if ((terms_ += n) > limits_.max_terms) return fail("more terms than the limit");
        t = term::make_charlist(in_.substr(pos_, n));
        pos_ += n;
        return true;
      }
      case tag::list: {
        std::uint32_t n;
        if (!u32(n)) return false;
        // n elements and the tail: n + 1 children.
        return open(frame::kind::list, std::size_t{n} + 1, opened);
      }
      case tag::binary: {
        std::uint32_t n;
        if (!u32(n) || !need(n)) return false;
        t = term(bytes(n, 8));
        pos_ += n;
        return true;
      }
      case tag::bit_binary: {
        std::uint32_t n;
        std::uint8_t bits;
        if (!u32(n) || !u8(bits) || !need(n)) return false;
        if (bits < 1 || bits > 8 || n == 0) return fail("a bitstring with a bad bit count");
        t = term(bytes(n, bits));
        pos_ += n;
        return true;
      }
      case tag::map: {
        std::uint32_t n;
        if (!u32(n)) return false;
        if (n > remaining() / 2) return fail("a map longer than its packet");
        if (n == 0) {
          t = term::make_map({});
          return true;
        }
        return open(frame::kind::map, std::size_t{n} * 2, opened);
      }
      case tag::new_pid:
      case tag::pid:
        return pid(k, t);
      case tag::newer_reference:
      case tag::new_reference: {
        std::uint16_t n;
        if (!u16(n)) return false;
        if (n == 0 || n > 5) return fail("a reference with a bad word count");
        reference r;
        if (!node_name(r.node)) return false;
        if (k == tag::newer_reference) {
          if (!u32(r.creation)) return false;
        } else {
          std::uint8_t c;
          if (!u8(c)) return false;
          r.creation = c;
        }
        r.words.resize(n);
        for (auto& w : r.words)
          if (!u32(w)) return false;
        t = term(std::move(r));
        return true;
      }
      case tag::reference_old: {
        reference r;
        std::uint32_t id;
        std::uint8_t c;
        if (!node_name(r.node) || !u32(id) || !u8(c)) return false;
        r.creation = c;
        r.words = {id};
        t = term(std::move(r));
        return true;
      }
      case tag::v4_port:
      case tag::new_port:
      case tag::port: {
        port_id p;
        if (!node_name(p.node)) return false;
        if (k == tag::v4_port) {
          std::uint32_t hi, lo;
          if (!u32(hi) || !u32(lo) || !u32(p.creation)) return false;
          p.id = (std::uint64_t{hi} << 32) | lo;
        } else {
          std::uint32_t id;
          if (!u32(id)) return false;
          p.id = id;
          if (k == tag::new_port) {
            if (!u32(p.creation)) return false;
          } else {
            std::uint8_t c;
            if (!u8(c)) return false;
            p.creation = c;
          }
        }
        t = term(std::move(p));
        return true;
      }
      case tag::new_fun: {
        // Size counts itself and everything after the tag: keep the bytes as they are.
        const std::size_t start = pos_ - 1;
        std::uint32_t size;
        if (!u32(size)) return false;
        if (size < 4 || !need(size - 4)) return fail("a fun longer than its packet");
        pos_ += size - 4;
        t = term(opaque_fun{std::string(in_.substr(start, pos_ - start))});
        return true;
      }
      case tag::export_fun: {
        const std::size_t start = pos_ - 1;
        // Module and function atoms, an integer arity: leaves, read in place.
        for (int part = 0; part < 3; ++part) {
          std::uint8_t k2;
          if (!u8(k2)) return false;
          const bool atom_tag = k2 == tag::atom_utf8 || k2 == tag::small_atom_utf8 ||
                                k2 == tag::atom_latin1 || k2 == tag::small_atom_latin1;
          std::string ignored;
          if (part < 2 && atom_tag) {
            if (!atom_body(k2, ignored)) return false;
          } else if (part == 2 && k2 == tag::small_integer) {
            if (!need(1)) return false;
            ++pos_;
          } else if (part == 2 && k2 == tag::integer) {
            if (!need(4)) return false;
            pos_ += 4;
          } else {
            return fail("an export fun that is not {atom, atom, arity}");
          }
        }
        t = term(opaque_fun{std::string(in_.substr(start, pos_ - start))});
        return true;
      }
      case tag::compressed:
        return fail("compressed terms are not accepted");
      case tag::atom_cache_ref:
        return fail("an atom cache reference (the cache is not negotiated)");
      default:
        return fail("unknown tag " + std::to_string(k));
    }
  }

  std::size_t pos() const { return pos_; }
  const std::string& error() const { return error_; }

  /// The binary of the next `n` bytes (checked by need()): in place in source_ when there is
  /// one and it is large enough, a copy otherwise.
  binary bytes(std::size_t n, std::uint8_t last_bits) {
    if (source_ != nullptr && n >= decode_in_place_min)
      return detail::binary_access::view(*source_, pos_, n, last_bits);
    return detail::binary_access::copy(in_.substr(pos_, n), last_bits);
  }

  bool u8(std::uint8_t& v) {
    if (!need(1)) return false;
    v = static_cast<std::uint8_t>(in_[pos_++]);
    return true;
  }

 private:
  std::size_t remaining() const { return in_.size() - pos_; }
  bool need(std::size_t n) {
    if (n > remaining()) return fail("truncated term");
    return true;
  }
  bool fail(std::string what) {
    if (error_.empty()) error_ = std::move(what) + " (at byte " + std::to_string(pos_) + ")";
    return false;
  }
  bool u16(std::uint16_t& v) {
    if (!need(2)) return false;
    const auto* b = reinterpret_cast<const std::uint8_t*>(in_.data() + pos_);
    v = static_cast<std::uint16_t>((b[0] << 8) | b[1]);
    pos_ += 2;
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (!need(4)) return false;
    const auto* b = reinterpret_cast<const std::uint8_t*>(in_.data() + pos_);
    v = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
        b[3];
    pos_ += 4;
    return true;
  }

  bool atom_body(std::uint8_t k, std::string& name) {
    std::size_t n;
    if (k == tag::small_atom_utf8 || k == tag::small_atom_latin1) {
      std::uint8_t n8;
      if (!u8(n8)) return false;
      n = n8;
    } else {
      std::uint16_t n16;
      if (!u16(n16)) return false;
      n = n16;
    }
    if (!need(n)) return false;
    const std::string_view raw = in_.substr(pos_, n);
    pos_ += n;
    if (k == tag::atom_utf8 || k == tag::small_atom_utf8) {
      const std::size_t chars = detail::utf8_length(raw);
      if (chars == detail::invalid_utf8) return fail("an atom that is not valid UTF-8");
      if (chars > detail::max_atom_characters) return fail("an atom over 255 characters");
      name.assign(raw);
      return true;
    }
    if (raw.size() > detail::max_atom_characters) return fail("an atom over 255 characters");
    name.clear();  // Latin-1 to UTF-8
    for (unsigned char c : raw) {
      if (c < 0x80) {
        name.push_back(static_cast<char>(c));
      } else {
        name.push_back(static_cast<char>(0xc0 | (c >> 6)));
        name.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      }
    }
    return true;
  }

  bool node_name(std::string& name) {
    std::uint8_t k;
    if (!u8(k)) return false;
    if (k != tag::atom_utf8 && k != tag::small_atom_utf8 && k != tag::atom_latin1 &&
        k != tag::small_atom_latin1)
      return fail("a node name that is not an atom");
    return atom_body(k, name);
  }

  /// A container being filled: its children so far, in order (a list's tail last; a map's
  /// keys and values alternating). Small, as a deep term has one per level.
  struct frame {
    enum class kind : std::uint8_t { tuple, list, map };
    kind what = kind::tuple;
    std::size_t count = 0;  ///< children expected
    term_list items;

    void take(term&& v) { items.push_back(std::move(v)); }
    bool complete() const noexcept { return items.size() == count; }
    term finish() {
      switch (what) {
        case kind::tuple:
          return term::make_tuple(std::move(items));
        case kind::list: {
          term tail = std::move(items.back());
          items.pop_back();
          return tail.is_nil() ? term::make_list(std::move(items))
                               : term::make_improper_list(std::move(items), std::move(tail));
        }
        case kind::map:
          break;
      }
      std::vector<std::pair<term, term>> entries;
      entries.reserve(items.size() / 2);
      for (std::size_t i = 0; i + 1 < items.size(); i += 2)
        entries.emplace_back(std::move(items[i]), std::move(items[i + 1]));
      return term::make_map(std::move(entries));
    }
  };

  /// Opens a frame for `children` children (at least one byte each must remain).
  bool open(frame::kind what, std::size_t children, bool& opened) {
    if (children - (what == frame::kind::list ? 1 : 0) > remaining())
      return fail("a sequence longer than its packet");
    if (stack_.size() >= limits_.max_depth) return fail("nesting deeper than the limit");
    frame f{what, children, {}};
    f.items.reserve(children);
    stack_.push(std::move(f));
    opened = true;
    return true;
  }

  bool pid(std::uint8_t k, term& t) {
    std::string node;
    std::uint32_t num, serial, creation;
    if (!node_name(node) || !u32(num) || !u32(serial)) return false;
    if (k == tag::new_pid) {
      if (!u32(creation)) return false;
    } else {
      std::uint8_t c;
      if (!u8(c)) return false;
      creation = c;
    }
    const std::uint64_t data = (std::uint64_t{serial} << 32) | num;
    const bool ours = self_ != nullptr ? node == self_->name && creation == self_->creation
                                       : node == "nonode@nohost";
    if (ours) {
      t = term(beamlet::pid(data));
      return true;
    }
    if ((data & ~beamlet::pid::data_mask) != 0)
      return fail("a pid whose serial is beyond what beamlet can hold (2^16)");
    const std::size_t budget_before = new_nodes_ != nullptr ? *new_nodes_ : 0;
    const std::uint32_t slot = detail::intern_held(node, creation, new_nodes_);
    if (slot == 0)
      return fail(new_nodes_ != nullptr && budget_before == 0
                      ? "more new node names than this connection may introduce"
                      : "too many node incarnations to name this pid");
    t = term(beamlet::pid::remote(slot, data));  // the term holds the slot now
    detail::release_node(slot);
    return true;
  }

  std::string_view in_;
  std::size_t pos_;
  const node_incarnation* self_;
  const decode_limits& limits_;
  std::size_t* new_nodes_;  // what the connection may still introduce (null: unbounded)
  const binary* source_;    // the binary in_ is the bytes of, for binaries in place (or null)
  std::size_t terms_ = 0;
  std::string error_;
  detail::small_stack<frame, 16> stack_;
};

}  // namespace

namespace detail {
expected<term, std::string> decode_counting(std::string_view in, std::size_t& pos,
                                            const node_incarnation* self, bool versioned,
                                            const decode_limits& limits, std::size_t* new_nodes,
                                            const binary* source) {
  if (pos > in.size()) return unexpected(std::string("decode: position past the end"));
  decoder d(in, pos, self, limits, new_nodes, source);
  if (versioned) {
    std::uint8_t v = 0;
    if (!d.u8(v) || v != tag::version)
      return unexpected(std::string("not an external term (no version byte 131)"));
  }
  term t;
  if (!d.any(t)) return unexpected(d.error());
  pos = d.pos();
  return t;
}
}  // namespace detail

expected<term, std::string> decode(std::string_view in, std::size_t& pos,
                                   const node_incarnation* self, bool versioned,
                                   const decode_limits& limits) {
  return detail::decode_counting(in, pos, self, versioned, limits, nullptr);
}

expected<term, std::string> from_binary(std::string_view in, const node_incarnation* self,
                                        const decode_limits& limits) {
  std::size_t pos = 0;
  auto t = decode(in, pos, self, true, limits);
  if (t && pos != in.size()) return unexpected(std::string("bytes left after the term"));
  return t;
}

expected<term, std::string> decode(const binary& in, std::size_t& pos, const node_incarnation* self,
                                   bool versioned, const decode_limits& limits) {
  return detail::decode_counting(in.bytes(), pos, self, versioned, limits, nullptr, &in);
}

expected<term, std::string> from_binary(const binary& in, const node_incarnation* self,
                                        const decode_limits& limits) {
  std::size_t pos = 0;
  auto t = decode(in, pos, self, true, limits);
  if (t && pos != in.size()) return unexpected(std::string("bytes left after the term"));
  return t;
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
