// Fuzz target: what a peer node sends on a distribution connection, without sockets. The first
// byte chooses the phase. Handshake: the bytes are cut into 2-byte-length packets and each is
// read as a name packet, a challenge, a challenge reply and an acknowledgement (a packet that
// reads as one must be what the writer of that packet would have written). Connected phase: the
// bytes are cut into 4-byte-length packets as the connection cuts them (a limit from the second
// byte), and each data packet is decoded as the connection decodes it: its header (the
// pass-through 'p', or a distribution header, whole or a fragment that goes through the
// reassembly), then the control message and the message, both ETF, nothing after them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/term.hpp>

#include "fragments.hpp"
#include "wire.hpp"

using namespace beamlet;
using namespace beamlet::dist::detail;

namespace {

void handshake(std::string_view in) {
  std::size_t pos = 0;
  while (in.size() - pos >= 2) {
    const std::size_t len = get16(in.data() + pos);
    if (in.size() - pos - 2 < len) return;
    const std::string_view p = in.substr(pos + 2, len);
    pos += 2 + len;
    if (auto n = parse_name(p); n && p.size() == 15 + n->name.size()) {
      if (name_packet(n->flags, n->creation, n->name) != p) std::abort();
    }
    if (auto c = parse_challenge(p); c && p.size() == 19 + c->name.size()) {
      if (challenge_packet(c->flags, c->challenge, c->creation, c->name) != p) std::abort();
    }
    if (auto r = parse_challenge_reply(p)) {
      if (r->digest.size() != 16) std::abort();
    }
    if (auto a = parse_challenge_ack(p)) {
      if (a->size() != 16) std::abort();
    }
  }
}

void connected(std::string_view in, std::size_t max_packet) {
  dist::decode_limits limits;
  limits.max_terms = std::size_t{1} << 20;
  std::size_t pos = 0;
  fragment_assembler fragments(max_packet, 16);
  for (;;) {
    std::string_view p;
    std::uint32_t len = 0;
    const std::size_t before = pos;
    const cut_result r = cut_packet(in, pos, max_packet, p, len);
    if (r == cut_result::need_more || r == cut_result::too_large || r == cut_result::not_data) {
      if (pos != before) std::abort();  // an error or a wait leaves the stream where it was
      return;
    }
    if (pos <= before) std::abort();  // every packet taken moves on
    if (r == cut_result::tick) continue;
    if (p.empty() || (p[0] != 'p' && p[0] != '\x83') || p.size() != len) std::abort();
    const auto h = parse_data_header(p);
    if (!h) continue;
    if (h->body > p.size()) std::abort();
    using form = data_header::form;
    std::string whole;
    std::string_view body = p.substr(h->body);
    if (h->kind == form::first_fragment || h->kind == form::next_fragment) {
      std::string why;
      const std::size_t held = fragments.held_bytes();
      const auto s = h->kind == form::first_fragment
                         ? fragments.first(h->sequence, h->fragment, body, whole, why)
                         : fragments.next(h->sequence, h->fragment, body, whole, why);
      if (fragments.held_bytes() > max_packet) std::abort();  // the bound holds
      if (s == fragment_assembler::status::bad) {
        if (why.empty() || fragments.held_bytes() > held) std::abort();  // said why; took nothing
        return;  // the connection would close
      }
      if (s == fragment_assembler::status::pending) continue;
      body = whole;
    }
    const bool versioned = h->kind == form::pass_through;
    std::size_t at = 0;
    auto control = dist::decode(body, at, nullptr, versioned, limits);
    if (!control) continue;
    if (at < body.size()) {
      auto msg = dist::decode(body, at, nullptr, versioned, limits);
      if (msg) (void)msg->to_string();
    }
    (void)control->to_string();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (data[0] & 1)
    connected(in, data[1] == 255 ? std::size_t{1} << 28 : std::size_t{1} << (data[1] % 24));
  else
    handshake(in);
  return 0;
}
