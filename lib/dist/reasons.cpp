// Exit reasons as terms. beamlet's exit_reason keeps OTP's meaningful reasons as kinds and
// everything else as text in Erlang syntax. A reason that came from another node also keeps
// its term (exit_reason::with_value), which goes out again as it came: pids, references, ports,
// funs and bitstrings included, so a relayed reason compares =:= with the original. A reason
// made in C++ as text goes through term::parse.
#include <beamlet/dist/node.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace {

term reason_as_term(const exit_reason& r) {
  if (const term* t = r.value<term>()) return *t;
  using k = exit_reason::kind;
  switch (r.which()) {
    case k::normal:
      return term::make_atom("normal");
    case k::shutdown:
      if (r.detail().empty()) return term::make_atom("shutdown");
      {
        auto d = term::parse(r.detail());
        return term::make_tuple(
            {term::make_atom("shutdown"), d ? std::move(*d) : term::make_binary(r.detail())});
      }
    case k::kill:
      return term::make_atom("kill");
    case k::killed:
      return term::make_atom("killed");
    case k::noproc:
      return term::make_atom("noproc");
    case k::exception:
      return term::make_tuple({term::make_atom("exception"), term::make_atom(r.exception_type()),
                               term::make_binary(r.detail())});
    case k::error: {
      auto t = term::parse(r.detail());
      if (t) return std::move(*t);
      return term::make_binary(r.detail());
    }
  }
  return term::make_atom("normal");
}

}  // namespace

term reason_to_term(const exit_reason& r) {
  term t = reason_as_term(r);
  // A reason must reach the other node whatever it holds (a C++ type name is a long atom):
  // what ETF cannot carry goes as the reason's text.
  thread_local std::string scratch;
  scratch.clear();
  if (!encode(t, scratch, nullptr, false)) return term::make_binary(r.to_string());
  return t;
}

exit_reason reason_from_term(const term& t) {
  if (t.is_atom()) {
    const std::string& a = t.atom_name();
    if (a == "normal") return exit_reason::normal();
    if (a == "shutdown") return exit_reason::shutdown();
    if (a == "kill") return exit_reason::kill();
    if (a == "killed") return exit_reason::killed();
    if (a == "noproc") return exit_reason::noproc();
  }
  if (t.is_tuple() && t.size() == 2 && t[0].is_atom("shutdown"))
    return exit_reason::shutdown(t[1].to_string()).with_value(t);
  if (t.is_tuple() && t.size() == 3 && t[0].is_atom("exception") && t[1].is_atom() &&
      t[2].is_binary())
    return exit_reason::exception(t[1].atom_name(), t[2].bin().str()).with_value(t);
  return exit_reason::error(t.to_string()).with_value(t);
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
