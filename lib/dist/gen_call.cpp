// gen_server's wire form across nodes.
#include <beamlet/core/receive.hpp>
#include <beamlet/dist/gen_call.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/otp/detail/gen_server_dispatch.hpp>

#include "node_state.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {

term call_message(basic_process& self, const term& tag, term request) {
  return term::make_tuple({term::make_atom("$gen_call"), term::make_tuple({term(self.self()), tag}),
                           std::move(request)});
}

// The tag is a reference of this node made from the monitor's ref (first word 1, which no
// other reference of this node has), so it is unique and says which call a reply belongs to:
// the connection hands such a reply over as the call's reply signal (deliver_to_local).
term call_tag(basic_process& self, ref monitor) {
  reference r;
  const auto me = dist::self(self);
  r.node = me ? me->name : "nonode@nohost";
  r.creation = me ? me->creation : 0;
  r.words = {1, static_cast<std::uint32_t>(monitor.value()),
             static_cast<std::uint32_t>(monitor.value() >> 32)};
  return term(std::move(r));
}

/// The monitor ref a tag of this node's calls carries; 0 when `t` is not one.
std::uint64_t call_of(const term& t, const node_incarnation& me) {
  if (t.which() != term::type::reference) return 0;
  const reference& r = t.ref();
  if (r.words.size() != 3 || r.words[0] != 1 || r.creation != me.creation || r.node != me.name)
    return 0;
  return (std::uint64_t{r.words[2]} << 32) | r.words[1];
}

using reply_message = beamlet::detail::call_reply<term>;

task<expected<term, exit_reason>> await_reply(process& self, ref mref, timeout_value timeout) {
  const auto is_reply = [mref](const reply_message& r) { return r.tag == mref.value(); };
  const auto is_down = [mref](const down& d) { return d.ref == mref; };
  auto m = co_await self.receive(on<reply_message>().when(is_reply), on<down>().when(is_down),
                                 after(timeout));
  if (!m) {
    // Giving up on the monitor is giving up on the call: a reply from now on is dropped before
    // it reaches the mailbox, and one that raced the timeout is taken out of it.
    self.demonitor(mref, flush);
    auto late = co_await self.receive(on<reply_message>().when(is_reply),
                                      after(std::chrono::milliseconds(0)));
    (void)late;
    co_return unexpected(exit_reason::error("timeout"));
  }
  if (m.is<down>()) co_return unexpected(m.get<down>().reason);
  self.demonitor(mref, flush);
  co_return std::move(m.get<reply_message>().value);
}

}  // namespace

task<expected<term, exit_reason>> call(process& self, pid server, term request,
                                       timeout_value timeout) {
  const ref mref = self.monitor(server);
  term tag = call_tag(self, mref);
  self.send(server, call_message(self, tag, std::move(request)));
  co_return co_await await_reply(self, mref, timeout);
}

task<expected<term, exit_reason>> call(process& self, std::string name, std::string node,
                                       term request, timeout_value timeout) {
  if (const auto me = dist::self(self); me && me->name == node) {
    // {Name, node()}: a local call.
    const pid local = beamlet::detail::whereis_in(*beamlet::detail::runtime_of(self), name);
    if (!local) co_return unexpected(exit_reason::noproc());
    co_return co_await call(self, local, std::move(request), timeout);
  }
  const ref mref = self.monitor(name, node);
  term tag = call_tag(self, mref);
  self.send(name, node, call_message(self, tag, std::move(request)));
  co_return co_await await_reply(self, mref, timeout);
}

void cast(basic_process& self, pid server, term request) {
  self.send(server, term::make_tuple({term::make_atom("$gen_cast"), std::move(request)}));
}

void cast(basic_process& self, std::string_view name, std::string_view node, term request) {
  self.send(name, node, term::make_tuple({term::make_atom("$gen_cast"), std::move(request)}));
}

std::optional<gen_call> as_gen_call(const term& msg) {
  if (!msg.is_tuple() || msg.size() != 3 || !msg[0].is_atom("$gen_call")) return std::nullopt;
  const term& from = msg[1];
  if (!from.is_tuple() || from.size() != 2 || !from[0].is_pid()) return std::nullopt;
  return gen_call{from[0], from[1], msg[2]};
}

std::optional<term> as_gen_cast(const term& msg) {
  if (!msg.is_tuple() || msg.size() != 2 || !msg[0].is_atom("$gen_cast")) return std::nullopt;
  return msg[1];
}

void reply(basic_process& self, const gen_call& c, term value) {
  // OTP 24+ callers tag calls [alias | Ref]; the reply to their pid matches the same receive.
  const pid to = c.from.pid();
  term msg = term::make_tuple({c.tag, std::move(value)});
  if (to.is_remote()) {
    self.send(to, std::move(msg));
    return;
  }
  // A local caller: its tag names this node, or no node when distribution is not started.
  const auto me = dist::self(self);
  const node_incarnation here =
      me ? node_incarnation{me->name, me->creation} : node_incarnation{"nonode@nohost", 0};
  detail::deliver_to_local(*beamlet::detail::runtime_of(self), here, to, std::move(msg));
}

namespace detail {
void deliver_to_local(beamlet::detail::runtime_core& rt, const node_incarnation& me, pid to,
                      term&& msg) {
  if (msg.is_tuple() && msg.size() == 2) {
    if (const std::uint64_t call = call_of(msg[0], me); call != 0) {
      beamlet::detail::send_node(
          rt, to, beamlet::detail::make_reply_node(ref(call), std::move(msg.elements()[1])));
      return;
    }
  }
  beamlet::detail::send_node(rt, to, beamlet::detail::make_message(std::move(msg)));
}
}  // namespace detail

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
