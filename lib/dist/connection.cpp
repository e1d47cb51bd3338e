// One connection to one peer node, as a process: after the handshake (connection_handshake.cpp),
// the connected phase: commands from local processes become packets written in arrival order,
// and packets from the peer become messages and signals for local processes. The connection
// keeps the links and monitors that cross it, so that losing it ends each with `noconnection`.
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/receive.hpp>

#include <map>
#include <random>
#include <set>

#include "connection.hpp"
#include "connection_tables.hpp"
#include "epmd.hpp"
#include "node_state.hpp"
#include "node_table.hpp"
#include "stream.hpp"
#include "term_access.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace {
using clock_type = std::chrono::steady_clock;
namespace core = beamlet::detail;
}  // namespace

// -- connected phase --------------------------------------------------------------------------

void connection::apply(out_command& c) {
  if (!streams_.empty()) {
    if (auto it = streams_.find(c.local); it != streams_.end()) {
      // Its sender has a large message under way: this follows its last fragment. (An exempt
      // large message is counted in outbox::large, not toward busy.)
      if (!c.exempt) held_bytes_ += c.size();
      it->second.held.push_back(std::move(c));
      return;
    }
  }
  if (c.large && fragmenting()) {
    begin_fragments(streams_[c.local], std::move(c));
    return;
  }
  perform(c);
}

void connection::perform(out_command& c) {
  using k = out_command::kind;
  if (c.large) large_done(c.local, c.exempt ? c.size() : 0);  // written whole
  if (c.what != k::down && c.remote && !current(c.remote)) {
    // A pid of an earlier incarnation of the peer: that process is dead.
    if (c.what == k::link)
      core::remote_exit_in(node_.rt(), c.remote, c.local, exit_reason::noproc(), true);
    if (c.what == k::monitor)
      core::remote_down_in(node_.rt(), c.local, c.ref, c.remote, exit_reason::noproc(), {});
    return;
  }
  switch (c.what) {
    case k::packet:
      break;
    case k::link:
      tables_.links.insert({c.local, c.remote});
      break;
    case k::unlink:
    case k::link_exit:
      tables_.links.erase({c.local, c.remote});
      break;
    case k::monitor:
      tables_.watching[c.ref] = watch{c.local, c.remote, std::move(c.name)};
      break;
    case k::demonitor:
      tables_.watching.erase(c.ref);
      break;
    case k::down: {
      auto it = tables_.watched.find(c.ref);
      if (it == tables_.watched.end()) return;
      const watched_by& w = it->second;
      term from = w.name.empty() ? term(c.local) : term::make_atom(w.name);
      queue_packet(term::make_tuple({term(ctl::monitor_p_exit), std::move(from), term(w.watcher),
                                     w.ref, reason_to_term(c.reason)}));
      tables_.forget_watched(it);
      return;
    }
  }
  if (c.splices.empty())
    wbuf_ += c.bytes;
  else
    append_spliced(wbuf_, c.bytes, c.splices, 0, c.size());
}

void connection::take_outbox() {
  // Buffers go round: the outbox gets an empty buffer of an earlier batch, capacity and all,
  // so that packets deposited there do not grow a fresh buffer for every batch (reallocating,
  // copying, and faulting in new pages, which was most of a sender's time at 1000 bytes).
  std::string bytes = std::move(spare_);
  bytes.clear();
  std::vector<outbox::op> ops;
  {
    std::lock_guard lock(box_->mu);
    bytes.swap(box_->bytes);
    ops.swap(box_->ops);
    box_->woken = false;
    box_->unsent += box_->queued;  // still unwritten, now ours
    box_->queued = 0;
  }
  if (ops.empty() && wbuf_.empty()) {
    wbuf_.swap(bytes);  // the common case: only packets, nothing to copy
  } else {
    std::size_t at = 0;
    for (auto& o : ops) {
      wbuf_.append(bytes, at, o.at - at);
      at = o.at;
      apply(o.cmd);
    }
    wbuf_.append(bytes, at, std::string::npos);
  }
  keep_spare(std::move(bytes));
  // Only commands with nothing to write (a DOWN nobody waits for): no flush will count them.
  if (wbuf_.empty()) set_unsent(held_bytes_);
}

void connection::begin_fragments(sender_stream& s, out_command&& c) {
  constexpr std::size_t head = 4 + sizeof whole_header;  // what a fragment does not repeat
  const std::size_t size = node_.opts.fragment_size;
  s.total = c.size();
  s.packet = std::move(c.bytes);
  s.splices = std::move(c.splices);
  s.next = head;
  s.sequence = ++sequences_;
  s.left = (s.total - head + size - 1) / size;
  s.exempt = c.exempt;
  if (!s.exempt) held_bytes_ += s.total;
}

void connection::write_fragments() {
  const std::size_t size = node_.opts.fragment_size;
  for (auto it = streams_.begin(); it != streams_.end();) {
    sender_stream& s = it->second;
    const bool first = s.next == 4 + sizeof whole_header;
    const std::size_t n = std::min(size, s.total - s.next);
    const std::size_t start = wbuf_.size();
    wbuf_.append(4, '\0');
    wbuf_ += '\x83';
    wbuf_ += first ? 'E' : 'F';
    put64(wbuf_, s.sequence);
    put64(wbuf_, s.left);
    if (first) wbuf_ += '\0';  // no atom-cache references
    if (s.splices.empty())
      wbuf_.append(s.packet, s.next, n);
    else
      append_spliced(wbuf_, s.packet, s.splices, s.next, n);  // from the sender's binaries
    end_packet(wbuf_, start);
    s.next += n;
    if (--s.left != 0) {
      ++it;
      continue;
    }
    if (!s.exempt) held_bytes_ -= s.total;
    large_done(it->first, s.exempt ? s.total : 0);
    std::string().swap(s.packet);
    s.splices.clear();
    it = release_held(s) ? std::next(it) : streams_.erase(it);
  }
}

bool connection::release_held(sender_stream& s) {
  while (!s.held.empty()) {
    out_command c = std::move(s.held.front());
    s.held.pop_front();
    if (!c.exempt) held_bytes_ -= c.size();
    if (c.large && fragmenting()) {
      begin_fragments(s, std::move(c));
      return true;
    }
    perform(c);
  }
  return false;
}

void connection::large_done(pid sender, std::size_t exempt_bytes) {
  beamlet::detail::pause_ticket lift;
  {
    std::lock_guard lock(box_->mu);
    box_->large -= std::min(box_->large, exempt_bytes);
    auto it = box_->fragmenting.find(sender);
    if (it != box_->fragmenting.end() && --it->second.messages == 0) {
      lift = it->second.pause;
      box_->fragmenting.erase(it);
    }
  }
  core::remote_resume(node_.rt(), lift);
}

void connection::lose_command(out_command& c, const exit_reason& why) {
  using k = out_command::kind;
  if (c.what == k::link) core::remote_exit_in(node_.rt(), c.remote, c.local, why, true);
  if (c.what == k::monitor)
    core::remote_down_in(node_.rt(), c.local, c.ref, c.remote, why, std::move(c.name));
}

void connection::set_unsent(std::size_t n) {
  outbox::pause_map lift;
  {
    std::lock_guard lock(box_->mu);
    box_->unsent = n;
    lift = box_->settle_locked(node_.opts.busy_limit / 2, false);
  }
  resume_all(node_.rt(), std::move(lift));
}

task<std::string> connection::flush() {
  // In slices: a socket takes at most max_packet bytes per send, and a batch can be larger.
  // Each slice the socket takes counts as written, so a busy outbox clears as soon as it can.
  constexpr std::size_t slice = 512u << 10;
  std::string failed;
  if (!dist_header_ && !wbuf_.empty()) {
    // A peer without fragments takes only the older pass-through form.
    std::optional<std::string> older = to_pass_through(wbuf_, me_);
    if (!older) co_return "an outgoing packet could not be rewritten for a peer without fragments";
    wbuf_ = std::move(*older);
  }
  if (box_) set_unsent(wbuf_.size() + held_bytes_);
  for (std::size_t off = 0; off < wbuf_.size(); off += slice) {
    const std::string_view part = std::string_view(wbuf_).substr(off, slice);
    failed = co_await write(part);
    if (!failed.empty()) break;
    if (box_) set_unsent(wbuf_.size() - std::min(wbuf_.size(), off + part.size()) + held_bytes_);
  }
  wbuf_.clear();
  if (wbuf_.capacity() > spare_limit) std::string().swap(wbuf_);  // after a large message
  // What the TLS session has to say of its own (an answer to the peer's session traffic).
  if (failed.empty() && tls_ && tls_->has_output()) failed = co_await write({});
  co_return failed;
}

task<std::string> connection::run() {
  const node_options& o = node_.opts;
  const auto tick = std::max(o.net_ticktime / 4, std::chrono::milliseconds(1));
  // Reading is bounded: after `window` packets the socket pauses until we ask for more, so a
  // peer that floods us is held back by TCP instead of growing our mailbox.
  constexpr int window = 64;
  if (!net::set_active(self_, sock_, net::active_mode::n(window))) co_return "socket gone";
  auto last_in = clock_type::now();
  auto last_out = last_in;
  if (!rbuf_.empty() && !dispatch(std::string())) co_return "a malformed packet";
  const net::socket_id sid = sock_.id();
  bool stopping = false;
  for (;;) {
    auto m = co_await self_.receive(on<outbox_ready>(), on<net::tcp_data>(), on<net::tcp_passive>(),
                                    on<net::tcp_closed>(), on<net::tcp_error>(), on<conn_stop>(),
                                    on<exit_message>(),
                                    // Fragments to write: only look at what is there.
                                    after(streams_.empty() ? tick : decltype(tick){0}));
    const auto now = clock_type::now();
    if (m.is<outbox_ready>()) {
      take_outbox();
    } else if (m.is<net::tcp_data>()) {
      auto& d = m.get<net::tcp_data>();
      if (d.socket != sid) continue;
      last_in = now;
      if (tls_) {
        std::string plain;
        std::string error;
        const bool open = tls_->open(d.data, plain, error);
        // What came before the peer's close_notify is still delivered.
        if (!plain.empty() && !dispatch(std::move(plain))) co_return "a malformed packet";
        if (!open) co_return error;
      } else if (!dispatch(std::move(d.data))) {
        co_return "a malformed packet";
      }
    } else if (m.is<net::tcp_passive>()) {
      if (!net::set_active(self_, sock_, net::active_mode::n(window))) co_return "socket gone";
    } else if (m.is<net::tcp_closed>()) {
      co_return "the peer closed the connection";
    } else if (m.is<net::tcp_error>()) {
      co_return m.get<net::tcp_error>().error.message();
    } else if (m.is<conn_stop>()) {
      stopping = true;
    }
    if (now - last_in > o.net_ticktime) {
      node_.log(log_level::error,
                "distribution: node '" + peer_ + "' not responding (net_tick_timeout)");
      co_return "net_tick_timeout";
    }
    if (!streams_.empty()) write_fragments();
    if (wbuf_.empty() && now - last_out >= tick) wbuf_.append(4, '\0');  // a tick
    if (!wbuf_.empty() || (tls_ && tls_->has_output())) {
      std::string failed = co_await flush();
      if (!failed.empty()) co_return failed;
      last_out = clock_type::now();
    }
    if (stopping) {
      // What processes sent before the stop still reaches the peer.
      take_outbox();
      while (!streams_.empty()) write_fragments();
      std::string failed = co_await flush();
      (void)failed;
      co_return m.get<conn_stop>().why;
    }
  }
}

namespace {
/// A packet that holds a whole message (not a fragment of one).
bool whole_message(std::string_view p) {
  const std::optional<data_header> h = parse_data_header(p);
  return h && (h->kind == data_header::form::whole || h->kind == data_header::form::pass_through);
}
}  // namespace

bool connection::dispatch(std::string&& data) {
  std::size_t from = 0;  // where the chunk's unread bytes start
  if (!rbuf_.empty()) {
    // A packet begun in an earlier chunk: complete it from the front of this one, then go on
    // with the chunk where it is (copying what the begun packet needs, not the whole chunk).
    if (rbuf_.size() < 4) {
      from = std::min(4 - rbuf_.size(), data.size());
      rbuf_.append(data, 0, from);
    }
    if (rbuf_.size() >= 4) {
      const std::size_t want = 4 + std::size_t{get32(rbuf_.data())};
      if (want > rbuf_.size() && want - 4 <= node_.opts.max_packet) {
        const std::size_t take = std::min(want - rbuf_.size(), data.size() - from);
        rbuf_.append(data, from, take);
        from += take;
      }
    }
    std::size_t pos = 0;
    if (!consume(rbuf_, pos)) return false;
    if (pos < rbuf_.size()) {  // still not whole: this chunk went into it
      rbuf_.erase(0, pos);
      return true;
    }
    rbuf_.clear();
  }
  if (!consume(data, from)) return false;
  if (from == 0)
    rbuf_.swap(data);  // all of it unread: it is the begun packet
  else if (from < data.size())
    rbuf_.assign(data, from);
  return true;
}

bool connection::consume(std::string& buf, std::size_t& pos) {
  for (;;) {
    std::string_view p;
    std::uint32_t len = 0;
    const cut_result r = cut_packet(buf, pos, node_.opts.max_packet, p, len);
    if (r == cut_result::need_more) return true;
    if (r == cut_result::too_large) {
      refuse("a packet of " + std::to_string(len) + " bytes, over the limit");
      return false;
    }
    if (r == cut_result::not_data) {
      refuse("a packet that is not a pass-through data packet");
      return false;
    }
    if (r != cut_result::data) continue;
    if (p.size() < in_place_packet || buf.size() > 2 * p.size() || !whole_message(p)) {
      if (!packet(p)) return false;
      continue;
    }
    // A large message, not a fragment, that is most of the buffer: the buffer becomes a
    // binary (its characters stay where they are), and the message's binaries refer to it
    // instead of being copied. What follows the packet goes back to buf (less than the
    // packet).
    const std::size_t start = static_cast<std::size_t>(p.data() - buf.data());
    const binary whole(std::move(buf));
    buf.assign(whole.bytes().substr(pos));
    pos = 0;
    if (!packet(whole.bytes().substr(start, p.size()), &whole, start)) return false;
  }
}

bool connection::packet(std::string_view p, const binary* buffer, std::size_t start) {
  const std::optional<data_header> h = parse_data_header(p);
  if (!h) {
    refuse("a packet with a malformed distribution header");
    return false;
  }
  using form = data_header::form;
  if (h->kind == form::pass_through || h->kind == form::whole) {
    if (buffer == nullptr) return terms(p, h->body, h->kind == form::pass_through);
    const binary own = buffer->sub(start, p.size());
    return terms(own.bytes(), h->body, h->kind == form::pass_through, &own);
  }
  std::string whole;
  std::string why;
  const std::string_view piece = p.substr(h->body);
  const auto s = h->kind == form::first_fragment
                     ? fragments_.first(h->sequence, h->fragment, piece, whole, why)
                     : fragments_.next(h->sequence, h->fragment, piece, whole, why);
  if (s == fragment_assembler::status::bad) {
    refuse(why);
    return false;
  }
  if (s == fragment_assembler::status::pending) return true;
  // The reassembled message is a buffer of its own: its binaries refer to it in place.
  const binary message(std::move(whole));
  return terms(message.bytes(), 0, false, &message);
}

bool connection::terms(std::string_view p, std::size_t at, bool versioned, const binary* source) {
  const decode_limits& limits = node_.opts.limits;
  // The hot path: SEND {2, Unused, To} is taken apart without building the control tuple.
  static constexpr char send_head[] = {'\x68', '\x03', '\x61', '\x02'};
  const std::size_t head = at + (versioned ? 1 : 0);
  if (p.size() > head + sizeof send_head + 2 && (!versioned || p[at] == '\x83') &&
      p.substr(head, sizeof send_head) == std::string_view(send_head, sizeof send_head)) {
    std::size_t fast = head + sizeof send_head;
    auto unused = decode_counting(p, fast, &me_, false, limits, &foreign_budget_);
    auto to = unused ? decode_counting(p, fast, &me_, false, limits, &foreign_budget_) : unused;
    if (to && to->is_pid() && fast < p.size()) {
      auto msg = decode_counting(p, fast, &me_, versioned, limits, &foreign_budget_, source);
      if (!msg || fast != p.size()) {
        refuse("a malformed message: " + (msg ? std::string("bytes after it") : msg.error()));
        return false;
      }
      const pid dest = term_access::raw_pid(*to);  // not kept: its slot is not pinned
      if (!dest.is_remote()) deliver_to_local(node_.rt(), me_, dest, std::move(*msg));
      return true;
    }
  }
  auto ct = decode_counting(p, at, &me_, versioned, limits, &foreign_budget_);
  if (!ct) {
    refuse("a malformed control message: " + ct.error());
    return false;
  }
  std::optional<term> msg;
  if (at < p.size()) {
    auto mt = decode_counting(p, at, &me_, versioned, limits, &foreign_budget_, source);
    if (!mt || at != p.size()) {
      refuse("a malformed message: " + (mt ? std::string("bytes after it") : mt.error()));
      return false;
    }
    msg = std::move(*mt);
  }
  return control(*ct, msg ? &*msg : nullptr);
}

bool connection::control(const term& ct, term* msg) {
  std::string error;
  if (!handle_control(node_, self_, me_, peer_, tables_, wbuf_, ct, msg, error)) {
    refuse(error);
    return false;
  }
  return true;
}

connection::~connection() {
  if (finished_) return;
  // Killed (an untrappable exit) before finish(): at least leave the table and let go of the
  // senders paused here, or they would wait for a connection that is gone.
  try {
    {
      std::unique_lock lock(node_.mu);
      auto it = node_.conns.find(peer_);
      if (it != node_.conns.end() && it->second.process == self_.self()) node_.conns.erase(it);
    }
    if (box_) (void)close_box();
  } catch (...) {
  }
}

std::vector<outbox::op> connection::close_box() {
  std::vector<outbox::op> ops;
  outbox::pause_map lift;
  std::unordered_map<pid, outbox::large_sender> large;
  {
    std::lock_guard lock(box_->mu);
    box_->closed = true;
    ops.swap(box_->ops);
    box_->bytes.clear();
    box_->queued = box_->unsent = box_->large = 0;
    lift = box_->settle_locked(0, true);  // what was paused here goes on (as in OTP)
    large.swap(box_->fragmenting);        // senders of large messages go on too
  }
  resume_all(node_.rt(), std::move(lift));
  for (const auto& [who, l] : large) core::remote_resume(node_.rt(), l.pause);
  return ops;
}

void connection::finish(const std::string& why) {
  finished_ = true;
  const exit_reason lost = exit_reason::error("noconnection");
  bool mine = false;  // still in the table: we report our end (else whoever removed us did)
  {
    std::unique_lock lock(node_.mu);
    auto it = node_.conns.find(peer_);
    if (it != node_.conns.end() && it->second.process == self_.self()) {
      node_.conns.erase(it);
      mine = true;
    }
  }
  if (sock_) sock_.close();
  // Commands posted before we left the table: links and monitors they carry are lost too.
  // (A deposit that finds the outbox closed goes to a new connection instead.)
  if (box_)
    for (auto& o : close_box()) lose_command(o.cmd, lost);
  for (auto& [sender, st] : streams_)
    for (auto& c : st.held) lose_command(c, lost);
  streams_.clear();
  tables_.lose(node_.rt(), lost);
  if (connected_)
    node_.log(log_level::notice, "distribution: connection to '" + peer_ + "' closed: " + why);
  if (mine && connected_) {
    node_.node_event(peer_, false, true);
  } else if (mine && registered_) {
    node_.node_event(peer_, false, false);  // monitor_node of a node that could not be reached
  }
}

task<> connection_body(process& self, node_state& node, std::string peer,
                       std::shared_ptr<outbox> box) {
  self.trap_exit(true);  // exit signals end us through finish(), never half-way
  const bool accepting = peer.empty();
  connection c(self, node, std::move(peer), std::move(box));
  std::string why = "closed";
  try {
    bool up = false;
    if (accepting) {
      // The kernel hands us the socket it accepted.
      auto s = co_await self.receive(on<net::tcp_socket>(), after(node.opts.handshake_timeout));
      if (s) up = co_await c.accept(std::move(s.get<net::tcp_socket>()));
    } else {
      up = co_await c.initiate();
    }
    if (up) why = co_await c.run();
  } catch (const std::exception& e) {
    why = e.what();
  }
  c.finish(why);
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
