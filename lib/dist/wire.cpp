#include "wire.hpp"

#include "md5.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

void put16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}
void put32(std::string& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v));
}
void put64(std::string& out, std::uint64_t v) {
  put32(out, static_cast<std::uint32_t>(v >> 32));
  put32(out, static_cast<std::uint32_t>(v));
}
std::uint16_t get16(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::uint16_t>((b[0] << 8) | b[1]);
}
std::uint32_t get32(const char* p) {
  return (std::uint32_t{get16(p)} << 16) | get16(p + 2);
}
std::uint64_t get64(const char* p) {
  return (std::uint64_t{get32(p)} << 32) | get32(p + 4);
}

std::string frame2(std::string_view body) {
  std::string out;
  out.reserve(body.size() + 2);
  put16(out, static_cast<std::uint16_t>(body.size()));
  out.append(body);
  return out;
}

std::string frame4(std::string_view body) {
  std::string out;
  out.reserve(body.size() + 4);
  put32(out, static_cast<std::uint32_t>(body.size()));
  out += body;
  return out;
}

std::string name_packet(std::uint64_t flags, std::uint32_t creation, std::string_view name) {
  std::string b = "N";
  put64(b, flags);
  put32(b, creation);
  put16(b, static_cast<std::uint16_t>(name.size()));
  b.append(name);
  return b;
}

std::string challenge_packet(std::uint64_t flags, std::uint32_t challenge, std::uint32_t creation,
                             std::string_view name) {
  std::string b = "N";
  put64(b, flags);
  put32(b, challenge);
  put32(b, creation);
  put16(b, static_cast<std::uint16_t>(name.size()));
  b.append(name);
  return b;
}

std::optional<name_fields> parse_name(std::string_view p) {
  if (p.size() < 15 || p[0] != 'N') return std::nullopt;
  const std::size_t nlen = get16(p.data() + 13);
  if (nlen == 0 || p.size() < 15 + nlen) return std::nullopt;
  return name_fields{get64(p.data() + 1), get32(p.data() + 9), std::string(p.substr(15, nlen))};
}

std::optional<challenge_fields> parse_challenge(std::string_view p) {
  if (p.size() < 19 || p[0] != 'N') return std::nullopt;
  const std::size_t nlen = get16(p.data() + 17);
  if (p.size() < 19 + nlen) return std::nullopt;
  return challenge_fields{get64(p.data() + 1), get32(p.data() + 9), get32(p.data() + 13),
                          std::string(p.substr(19, nlen))};
}

std::optional<reply_fields> parse_challenge_reply(std::string_view p) {
  if (p.size() != 21 || p[0] != 'r') return std::nullopt;
  return reply_fields{get32(p.data() + 1), std::string(p.substr(5))};
}

std::optional<std::string> parse_challenge_ack(std::string_view p) {
  if (p.size() != 17 || p[0] != 'a') return std::nullopt;
  return std::string(p.substr(1));
}

cut_result cut_packet(std::string_view buf, std::size_t& pos, std::size_t max_packet,
                      std::string_view& packet, std::uint32_t& length) {
  if (buf.size() - pos < 4) return cut_result::need_more;
  length = get32(buf.data() + pos);
  if (length > max_packet) return cut_result::too_large;
  if (buf.size() - pos - 4 < length) return cut_result::need_more;
  const std::string_view p = buf.substr(pos + 4, length);
  if (length != 0 && p[0] != 'p' && p[0] != '\x83') return cut_result::not_data;
  pos += 4 + length;
  if (length == 0) return cut_result::tick;
  packet = p;
  return cut_result::data;
}

std::string digest(std::string_view cookie, std::uint32_t challenge) {
  std::string text(cookie);
  text += std::to_string(challenge);
  const auto d = md5(text);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::optional<data_header> parse_data_header(std::string_view p) {
  data_header h;
  if (p.empty()) return std::nullopt;
  if (p[0] == 'p') {
    h.body = 1;
    return h;
  }
  if (p.size() < 2 || p[0] != '\x83') return std::nullopt;
  switch (p[1]) {
    case 'D':
      // The atom-cache references, which must be none: the cache is never negotiated.
      if (p.size() < 3 || p[2] != '\0') return std::nullopt;
      h.kind = data_header::form::whole;
      h.body = 3;
      return h;
    case 'E':
    case 'F': {
      const bool first = p[1] == 'E';
      const std::size_t fixed = 2 + 8 + 8 + (first ? 1 : 0);
      if (p.size() < fixed || (first && p[fixed - 1] != '\0')) return std::nullopt;
      h.kind = first ? data_header::form::first_fragment : data_header::form::next_fragment;
      h.sequence = get64(p.data() + 2);
      h.fragment = get64(p.data() + 10);
      if (h.fragment == 0) return std::nullopt;
      h.body = fixed;
      return h;
    }
    default:
      return std::nullopt;
  }
}

std::optional<std::string> to_pass_through(std::string_view stream, const node_incarnation& self) {
  std::string out;
  out.reserve(stream.size() + stream.size() / 64);
  std::size_t pos = 0;
  while (pos < stream.size()) {
    if (stream.size() - pos < 4) return std::nullopt;
    const std::uint32_t len = get32(stream.data() + pos);
    if (stream.size() - pos - 4 < len) return std::nullopt;
    const std::string_view p = stream.substr(pos + 4, len);
    pos += 4 + len;
    if (len == 0 || p[0] == 'p') {  // a tick, or already in this form
      out.append(stream.data() + pos - 4 - len, 4 + len);
      continue;
    }
    const auto h = parse_data_header(p);
    if (!h || h->kind != data_header::form::whole) return std::nullopt;
    // Where the control term ends: read back (this form is for old peers only, off the hot path).
    std::size_t at = h->body;
    if (!decode(p, at, &self, false)) return std::nullopt;
    const std::size_t start = out.size();
    out.append(4, '\0');
    out.push_back('p');
    out.push_back('\x83');
    out.append(p.substr(h->body, at - h->body));
    if (at < p.size()) {
      out.push_back('\x83');
      out.append(p.substr(at));
    }
    end_packet(out, start);
  }
  return out;
}

void end_packet(std::string& out, std::size_t start, std::size_t spliced) {
  const auto len = static_cast<std::uint32_t>(out.size() - start - 4 + spliced);
  out[start] = static_cast<char>(len >> 24);
  out[start + 1] = static_cast<char>(len >> 16);
  out[start + 2] = static_cast<char>(len >> 8);
  out[start + 3] = static_cast<char>(len);
}

expected<void, std::string> append_packet(std::string& out, const term& control,
                                          const term* message, const node_incarnation& self,
                                          splice_list* splices) {
  const std::size_t start = out.size();
  const std::size_t before = splices != nullptr ? spliced_size(*splices) : 0;
  out.append(4, '\0');
  out.append(whole_header, sizeof whole_header);
  auto r = encode(control, out, &self, false);
  if (r && message != nullptr)
    r = splices != nullptr ? encode_spliced(*message, out, &self, *splices)
                           : encode(*message, out, &self, false);
  if (!r) {
    out.resize(start);
    return r;
  }
  end_packet(out, start, splices != nullptr ? spliced_size(*splices) - before : 0);
  return {};
}

term ref_term(std::uint64_t ref, const node_incarnation& self) {
  reference r;
  r.node = self.name;
  r.creation = self.creation;
  // OTP keeps the first word to 18 bits; the 64-bit ref goes into the next two.
  r.words = {0, static_cast<std::uint32_t>(ref), static_cast<std::uint32_t>(ref >> 32)};
  return term(std::move(r));
}

std::uint64_t ref_of(const term& t, const node_incarnation& self) {
  if (t.which() != term::type::reference) return 0;
  const reference& r = t.ref();
  if (r.node != self.name || r.creation != self.creation || r.words.size() != 3 || r.words[0] != 0)
    return 0;
  return (std::uint64_t{r.words[2]} << 32) | r.words[1];
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
