// rpc from C++ (rpc_call), and the two processes that make a beamlet node answer rpc the way an
// Erlang node does:
//  * `rex`, the registered server that rpc:call reaches with gen_server:call({rex, Node},
//    {call, M, F, A, GroupLeader}) (rpc_call uses the same path, so it reaches Erlang, Elixir
//    and beamlet nodes alike): it runs a function registered with register_rpc in a process of
//    its own and replies with its value, or {badrpc, {'EXIT', {Reason, Stack}}};
//  * the group leader that rpc_call names, so that a remote function that prints (io:format)
//    gets its io_reply instead of waiting for one forever. What it prints is logged (info).
#include <beamlet/core/receive.hpp>
#include <beamlet/dist/gen_call.hpp>
#include <beamlet/dist/node.hpp>

#include "node_state.hpp"
#include "rpc_table.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace detail {

namespace {

/// {badrpc, {'EXIT', {Reason, Stack}}}, as rex answers a call that failed.
term badrpc_exit(term reason, term stack) {
  return term::make_tuple(
      {term::make_atom("badrpc"),
       term::make_tuple(
           {term::make_atom("EXIT"), term::make_tuple({std::move(reason), std::move(stack)})})});
}

term run_rpc(const std::optional<rpc_function>& f, const term& module, const term& function,
             const term& args) {
  if (!f)
    return badrpc_exit(
        term::make_atom("undef"),
        term::make_list({term::make_tuple({module, function, args, term::make_list({})})}));
  try {
    return (*f)(args.elements());
  } catch (const std::exception& e) {
    return badrpc_exit(
        term::make_tuple({term::make_atom("cpp_exception"), term::make_binary(e.what())}),
        term::make_list({}));
  } catch (...) {
    return badrpc_exit(term::make_atom("cpp_exception"), term::make_list({}));
  }
}

/// The text of an io request's characters, when it carries them as data.
std::optional<std::string> chars_of(const term& t) {
  if (t.is_binary()) return t.bin().str();
  if (auto s = from_term<std::string>(t)) return s;
  return std::nullopt;
}

}  // namespace

task<> rex_body(process& self, node_state& node) {
  (void)self.register_name("rex");
  for (;;) {
    auto m = co_await self.receive(on<term>());
    const auto call = as_gen_call(m.get<term>());
    if (!call) continue;
    const term& r = call->request;
    if (!r.is_tuple() || r.size() != 5 || !r[0].is_atom("call") || !r[1].is_atom() ||
        !r[2].is_atom() || !r[3].is_list() || r[3].tail() != nullptr) {
      reply(self, *call, badrpc_exit(term::make_atom("badarg"), term::make_list({})));
      continue;
    }
    // Each call runs in a process of its own: a slow function does not hold up the others.
    auto f = extension<rpc_table>(node.rt()).find(r[1].atom_name(), r[2].atom_name());
    self.spawn([c = *call, f = std::move(f)](process& worker) -> task<> {
      const term& req = c.request;
      term value = run_rpc(f, req[1], req[2], req[3]);
      reply(worker, c, std::move(value));
      co_return;
    });
  }
}

task<> group_leader_body(process& self, node_state& node) {
  for (;;) {
    auto m = co_await self.receive(on<term>());
    const term& t = m.get<term>();
    // {io_request, From, ReplyAs, Request} -> From ! {io_reply, ReplyAs, Reply}
    if (!t.is_tuple() || t.size() != 4 || !t[0].is_atom("io_request") || !t[1].is_pid()) continue;
    const term& req = t[3];
    term answer = term::make_atom("ok");
    if (req.is_tuple() && req.size() >= 3 && req[0].is_atom("put_chars")) {
      const auto text = req.size() == 3 ? chars_of(req[2]) : std::nullopt;
      node.log(log_level::info,
               "distribution: output of a remote call: " + (text ? *text : req.to_string()));
    } else if (!(req.is_tuple() && req.size() >= 1 && req[0].is_atom("setopts"))) {
      answer = term::make_tuple(
          {term::make_atom("error"), term::make_atom("enotsup")});  // no input here
    }
    self.send(t[1].pid(), term::make_tuple({term::make_atom("io_reply"), t[2], std::move(answer)}));
  }
}

}  // namespace detail

task<expected<term, term>> rpc_call(process& self, std::string node, std::string module,
                                    std::string function, term_list args, timeout_value timeout) {
  auto& st = extension<detail::node_state>(self);
  const term request =
      term::make_tuple({term::make_atom("call"), term::make_atom(std::move(module)),
                        term::make_atom(std::move(function)), term::make_list(std::move(args)),
                        term(st.group_leader)});
  auto r = co_await call(self, "rex", std::move(node), request, timeout);
  if (!r) {
    const exit_reason& why = r.error();
    if (why == exit_reason::error("timeout")) co_return unexpected(term::make_atom("timeout"));
    if (why == exit_reason::error("noconnection"))
      co_return unexpected(term::make_atom("nodedown"));
    co_return unexpected(reason_to_term(why));
  }
  if (r->is_tuple() && r->size() == 2 && (*r)[0].is_atom("badrpc")) co_return unexpected((*r)[1]);
  co_return std::move(*r);
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
