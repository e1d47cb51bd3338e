// ETF encoding: a term into the bytes term_to_binary/1 would make for it.
#include <beamlet/dist/etf.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "etf_tags.hpp"
#include "node_table.hpp"
#include "splice.hpp"
#include "term_access.hpp"
#include "utf8.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {

namespace tag = detail::tag;

void put8(std::string& out, std::uint8_t v) {
  out.push_back(static_cast<char>(v));
}
void put16(std::string& out, std::uint16_t v) {
  const char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 2);
}
void put32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

/// Bytes as they can go into a log line.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

class encoder {
 public:
  encoder(std::string& out, const node_incarnation* self, detail::splice_list* splices = nullptr)
      : out_(out), self_(self), splices_(splices) {}

  bool atom(std::string_view name) {
    // What an Erlang node accepts: valid UTF-8, at most 255 characters. Anything else would
    // make the peer drop the whole connection, so it is refused here, at the send.
    const std::size_t chars = detail::utf8_length(name);
    if (chars == detail::invalid_utf8)
      return fail("an atom that is not valid UTF-8: " + printable(name.substr(0, 40)));
    if (chars > 255)
      return fail("an atom of " + std::to_string(chars) +
                  " characters (at most 255): " + printable(name.substr(0, 40)) + "...");
    if (name.size() < 256) {
      put8(out_, tag::small_atom_utf8);
      put8(out_, static_cast<std::uint8_t>(name.size()));
    } else {
      put8(out_, tag::atom_utf8);
      put16(out_, static_cast<std::uint16_t>(name.size()));
    }
    out_.append(name);
    return true;
  }

  bool pid(beamlet::pid p) {
    std::string_view node = "nonode@nohost";
    std::uint32_t creation = 0;
    std::uint64_t data = p.serial();
    if (p.is_remote()) {
      const node_incarnation* remote = detail::node_entry(p.node_slot());
      if (remote == nullptr) return fail("a pid of an unknown node slot");
      node = remote->name;
      creation = remote->creation;
      data = p.data();
    } else if (self_ != nullptr) {
      node = self_->name;
      creation = self_->creation;
    }
    put8(out_, tag::new_pid);
    if (!atom(node)) return false;
    put32(out_, static_cast<std::uint32_t>(data & 0xffffffffu));
    put32(out_, static_cast<std::uint32_t>(data >> 32));
    put32(out_, creation);
    return true;
  }

  bool big(const bignum& b) {
    if (b.magnitude.size() < 256) {
      put8(out_, tag::small_big);
      put8(out_, static_cast<std::uint8_t>(b.magnitude.size()));
    } else {
      put8(out_, tag::large_big);
      put32(out_, static_cast<std::uint32_t>(b.magnitude.size()));
    }
    put8(out_, b.negative ? 1 : 0);
    out_.append(reinterpret_cast<const char*>(b.magnitude.data()), b.magnitude.size());
    return true;
  }

  bool integer(std::int64_t v) {
    if (v >= 0 && v <= 255) {
      put8(out_, tag::small_integer);
      put8(out_, static_cast<std::uint8_t>(v));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      put8(out_, tag::integer);
      put32(out_, static_cast<std::uint32_t>(static_cast<std::int32_t>(v)));
    } else {
      bignum b;
      b.negative = v < 0;
      std::uint64_t m =
          b.negative ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      for (; m != 0; m >>= 8) b.magnitude.push_back(static_cast<std::uint8_t>(m & 0xff));
      return big(b);
    }
    return true;
  }

  /// The whole term, children after their container's header, without recursion.
  bool any(const term& root) {
    struct frame {
      const term* t = nullptr;
      std::size_t next = 0;
    };
    detail::small_stack<frame, 32> stack;
    const auto visit = [&](const term& t) {
      if (!head(t)) return false;
      if (detail::term_access::children(t) != 0) stack.push({&t, 0});
      return true;
    };
    if (!visit(root)) return false;
    while (!stack.empty()) {
      frame& f = stack.back();
      if (f.next == detail::term_access::children(*f.t)) {
        // A proper list ends with NIL; an improper one ended with its tail.
        if (f.t->is_list() && f.t->tail() == nullptr) put8(out_, tag::nil);
        stack.pop();
        continue;
      }
      const term& c = detail::term_access::child(*f.t, f.next++);
      if (!visit(c)) return false;  // f may dangle from here on
    }
    return true;
  }

  /// A leaf whole, or a container's header (its children follow).
  bool head(const term& t) {
    switch (t.which()) {
      case term::type::atom:
        return atom(t.atom_name());
      case term::type::integer:
        return integer(t.integer());
      case term::type::bignum:
        return big(t.big());
      case term::type::floating: {
        if (!std::isfinite(t.floating()))
          return fail(std::string("a float that is ") +
                      (std::isnan(t.floating()) ? "NaN" : "infinite") + " (Erlang has neither)");
        put8(out_, tag::new_float);
        const auto bits = std::bit_cast<std::uint64_t>(t.floating());
        put32(out_, static_cast<std::uint32_t>(bits >> 32));
        put32(out_, static_cast<std::uint32_t>(bits));
        return true;
      }
      case term::type::binary: {
        const binary& b = t.bin();
        if (b.size() > UINT32_MAX) return fail("binary too large");
        // (A bitstring always has its last byte: the binary's constructors check.)
        put8(out_, b.is_bitstring() ? tag::bit_binary : tag::binary);
        put32(out_, static_cast<std::uint32_t>(b.size()));
        if (b.is_bitstring()) put8(out_, b.last_bits());
        if (splices_ != nullptr && b.size() >= detail::splice_min)
          splices_->push_back({out_.size(), b});  // written from b when the packet is
        else
          out_.append(b.bytes());
        return true;
      }
      case term::type::list: {
        const term_list& items = t.elements();
        if (items.empty() && t.tail() == nullptr) {
          put8(out_, tag::nil);
          return true;
        }
        if (items.size() > UINT32_MAX) return fail("list too long");
        put8(out_, tag::list);
        put32(out_, static_cast<std::uint32_t>(items.size()));
        return true;
      }
      case term::type::tuple: {
        const term_list& items = t.elements();
        if (items.size() < 256) {
          put8(out_, tag::small_tuple);
          put8(out_, static_cast<std::uint8_t>(items.size()));
        } else {
          if (items.size() > UINT32_MAX) return fail("tuple too large");
          put8(out_, tag::large_tuple);
          put32(out_, static_cast<std::uint32_t>(items.size()));
        }
        return true;
      }
      case term::type::map:
        if (t.map_entries().size() > UINT32_MAX) return fail("map too large");
        put8(out_, tag::map);
        put32(out_, static_cast<std::uint32_t>(t.map_entries().size()));
        return true;
      case term::type::pid:
        return pid(detail::term_access::raw_pid(t));
      case term::type::reference: {
        const reference& r = t.ref();
        if (r.words.empty() || r.words.size() > 5) return fail("a reference needs 1 to 5 words");
        put8(out_, tag::newer_reference);
        put16(out_, static_cast<std::uint16_t>(r.words.size()));
        if (!atom(r.node)) return false;
        put32(out_, r.creation);
        for (std::uint32_t w : r.words) put32(out_, w);
        return true;
      }
      case term::type::port: {
        const port_id& p = t.port();
        put8(out_, tag::v4_port);
        if (!atom(p.node)) return false;
        put32(out_, static_cast<std::uint32_t>(p.id >> 32));
        put32(out_, static_cast<std::uint32_t>(p.id));
        put32(out_, p.creation);
        return true;
      }
      case term::type::fun:
        out_.append(t.fun().encoded);
        return true;
    }
    return fail("unknown term type");
  }

  const std::string& error() const { return error_; }

 private:
  bool fail(std::string what) {
    error_ = std::move(what);
    return false;
  }

  std::string& out_;
  const node_incarnation* self_;
  detail::splice_list* splices_;
  std::string error_;
};

}  // namespace

expected<void, std::string> encode(const term& t, std::string& out, const node_incarnation* self,
                                   bool versioned) {
  const std::size_t start = out.size();
  if (versioned) put8(out, tag::version);
  encoder e(out, self);
  if (!e.any(t)) {
    out.resize(start);
    return unexpected(e.error());
  }
  return {};
}

namespace detail {

expected<void, std::string> encode_spliced(const term& t, std::string& out,
                                           const node_incarnation* self, splice_list& splices) {
  const std::size_t start = out.size();
  const std::size_t count = splices.size();
  encoder e(out, self, &splices);
  if (!e.any(t)) {
    out.resize(start);
    splices.resize(count);
    return unexpected(e.error());
  }
  return {};
}

void append_spliced(std::string& out, std::string_view bytes, const splice_list& splices,
                    std::size_t from, std::size_t n) {
  // Walk the packet's pieces (bytes between splices, then a splice's binary) in order,
  // copying what overlaps [from, from + n).
  std::size_t pos = 0;   // position in the packet
  std::size_t done = 0;  // of bytes
  const auto piece = [&](std::string_view p) {
    if (n != 0 && from < pos + p.size()) {
      const std::size_t skip = from > pos ? from - pos : 0;
      const std::size_t take = std::min(n, p.size() - skip);
      out.append(p.data() + skip, take);
      from += take;
      n -= take;
    }
    pos += p.size();
  };
  for (const splice& s : splices) {
    piece(bytes.substr(done, s.at - done));
    done = s.at;
    piece(s.bin.bytes());
    if (n == 0) return;
  }
  piece(bytes.substr(done));
}

}  // namespace detail

expected<std::string, std::string> to_binary(const term& t, const node_incarnation* self) {
  std::string out;
  auto r = encode(t, out, self, true);
  if (!r) return unexpected(r.error());
  return out;
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
