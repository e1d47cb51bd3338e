// gen_server's wire form across nodes.
#include <beamlet/dist/gen_call.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/receive.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace dist {

namespace {

term call_message(basic_process& self, const term& tag, term request) {
  return term::make_tuple({term::make_atom("$gen_call"), term::make_tuple({term(self.self()), tag}),
                           std::move(request)});
}

// The tag is a reference of this node made from the monitor's ref, so it is unique and shows
// which call a reply belongs to.
term tag_of(basic_process& self, ref monitor) {
  reference r;
  const auto me = dist::self(self);
  r.node = me ? me->name : "nonode@nohost";
  r.creation = me ? me->creation : 0;
  r.words = {1, static_cast<std::uint32_t>(monitor.value()),
             static_cast<std::uint32_t>(monitor.value() >> 32)};
  return term(std::move(r));
}

task<expected<term, exit_reason>> await_reply(process& self, ref mref, term tag,
                                              timeout_value timeout) {
  const auto is_reply = [&tag](const term& t) {
    return t.is_tuple() && t.size() == 2 && t[0] == tag;
  };
  const auto is_down = [mref](const down& d) { return d.ref == mref; };
  auto m =
      co_await self.receive(on<term>().when(is_reply), on<down>().when(is_down), after(timeout));
  if (!m) {
    self.demonitor(mref, flush);
    // A reply that raced the timeout must not stay in the mailbox.
    auto late =
        co_await self.receive(on<term>().when(is_reply), after(std::chrono::milliseconds(0)));
    (void)late;
    co_return unexpected(exit_reason::error("timeout"));
  }
  if (m.is<down>()) co_return unexpected(m.get<down>().reason);
  self.demonitor(mref, flush);
  co_return std::move(m.get<term>()[1]);
}

}  // namespace

task<expected<term, exit_reason>> call(process& self, pid server, term request,
                                       timeout_value timeout) {
  const ref mref = self.monitor(server);
  term tag = tag_of(self, mref);
  self.send(server, call_message(self, tag, std::move(request)));
  co_return co_await await_reply(self, mref, std::move(tag), timeout);
}

task<expected<term, exit_reason>> call(process& self, std::string name, std::string node,
                                       term request, timeout_value timeout) {
  const ref mref = self.monitor(name, node);
  term tag = tag_of(self, mref);
  self.send(name, node, call_message(self, tag, std::move(request)));
  co_return co_await await_reply(self, mref, std::move(tag), timeout);
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
  self.send(c.from.pid(), term::make_tuple({c.tag, std::move(value)}));
}

}  // namespace dist
BEAMLET_END_NAMESPACE
