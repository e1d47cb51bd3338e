// rpc:call and erpc:call from other nodes into C++ functions the service registers. OTP 23+
// runs such a call as a spawn request for erpc:execute_call(Res, M, F, A), monitored by the
// caller, whose DOWN reason carries the result: {Res, return, Value}, or {Res, error, Reason,
// Stack} for a failure. beamlet answers exactly that request (for registered functions) with a
// real process of its own that runs the function; any other spawn request is refused
// (`notsup`), as code cannot be sent to a C++ node.
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/extension.hpp>
#include <beamlet/dist/node.hpp>

#include <exception>
#include <map>
#include <mutex>

#include "node_state.hpp"
#include "rpc_table.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace detail {

namespace core = beamlet::detail;

namespace {

// What the caller's monitor reports: the call's outcome in erpc's shape.
term outcome(const term& res, const rpc_function* f, const term& module, const term& function,
             const term& args) {
  if (f == nullptr) {
    // undef, with the stack entry erpc shows: [{M, F, Args, []}]
    return term::make_tuple(
        {res, term::make_atom("error"), term::make_atom("undef"),
         term::make_list({term::make_tuple({module, function, args, term::make_list({})})})});
  }
  try {
    return term::make_tuple({res, term::make_atom("return"), (*f)(args.elements())});
  } catch (const std::exception& e) {
    return term::make_tuple(
        {res, term::make_atom("error"),
         term::make_tuple({term::make_atom("cpp_exception"), term::make_binary(e.what())}),
         term::make_list({})});
  } catch (...) {
    return term::make_tuple(
        {res, term::make_atom("error"), term::make_atom("cpp_exception"), term::make_list({})});
  }
}

}  // namespace

bool handle_spawn_request(node_state& node, process& self, const node_incarnation& me,
                          std::string& out, const std::string& peer, const term& ct, term* msg) {
  // {29, ReqId, From, GroupLeader, {Module, Function, Arity}, OptList} + the argument list.
  const term& req = ct[1];
  const pid from = ct[2].pid();
  const term& mfa = ct[4];
  bool error_only = false, monitor = false, refused_opt = false;
  if (ct[5].is_list()) {
    for (const term& o : ct[5].elements()) {
      if (o.is_atom("monitor"))
        monitor = true;
      else if (o.is_tuple() && o.size() == 2 && o[0].is_atom("reply"))
        error_only = o[1].is_atom("error_only");
      else if (o.is_atom("link") || o.is_tuple())
        refused_opt = true;  // links, spawn options for the BEAM: not for a C++ node
    }
  }
  auto refuse = [&](const char* why) {
    (void)append_packet(
        out,
        term::make_tuple({term(ctl::spawn_reply), req, term(from), term(0), term::make_atom(why)}),
        nullptr, me);
    return true;
  };
  const bool is_erpc = mfa.is_tuple() && mfa.size() == 3 && mfa[0].is_atom("erpc") &&
                       mfa[1].is_atom("execute_call") && mfa[2] == term(4);
  if (!is_erpc || refused_opt || msg == nullptr || !msg->is_list() || msg->size() != 4 ||
      !(*msg)[1].is_atom() || !(*msg)[2].is_atom() || !(*msg)[3].is_list() ||
      (*msg)[3].tail() != nullptr)
    return refuse("notsup");
  const term res = (*msg)[0];
  const term module = (*msg)[1];
  const term function = (*msg)[2];
  const term args = (*msg)[3];
  const std::optional<rpc_function> f =
      extension<rpc_table>(node.rt()).find(module.atom_name(), function.atom_name());
  node_state* st = &node;
  const pid worker = self.spawn([st, peer, f, res, module, function, args, req, from,
                                 monitor](process& p) -> task<> {
    const term reason = outcome(res, f ? &*f : nullptr, module, function, args);
    if (!monitor) co_return;
    out_command c;
    term down =
        term::make_tuple({term(ctl::monitor_p_exit), term(p.self()), term(from), req, reason});
    auto written = append_packet(c.bytes, down, nullptr, st->self);
    if (!written) {
      // A result ETF cannot carry (an atom over 255 characters, a NaN): the caller gets an
      // error that says so ({badrpc, {'EXIT', {{unencodable_result, Why}, []}}} from
      // rpc:call) instead of a connection the peer drops.
      st->log(log_level::error, "distribution: the result of " + module.atom_name() + ":" +
                                    function.atom_name() +
                                    " cannot be encoded: " + written.error());
      const term failure =
          term::make_tuple({res, term::make_atom("error"),
                            term::make_tuple({term::make_atom("unencodable_result"),
                                              term::make_binary(written.error())}),
                            term::make_list({})});
      down =
          term::make_tuple({term(ctl::monitor_p_exit), term(p.self()), term(from), req, failure});
      written = append_packet(c.bytes, down, nullptr, st->self);
    }
    if (written) st->post(peer, std::move(c));
  });
  if (!error_only) {
    (void)append_packet(out,
                        term::make_tuple({term(ctl::spawn_reply), req, term(from),
                                          term(monitor ? 2 : 0), term(worker)}),
                        nullptr, me);
  }
  return true;
}

}  // namespace detail

void register_rpc(runtime& rt, std::string module, std::string function, rpc_function f) {
  auto& t = extension<detail::rpc_table>(rt);
  std::lock_guard lock(t.mu);
  t.functions[{std::move(module), std::move(function)}] = std::move(f);
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
