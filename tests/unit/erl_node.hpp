// A real Erlang node for distribution tests: `erl` started as a child process on loopback
// (`-name <alive>@127.0.0.1`), running an agent registered as `agent` that evaluates Erlang
// expressions sent to it and answers with their value. Tests script the Erlang side with it:
//
//   erl_node erl("peer");
//   term v = erl.eval(me, "node()");
//   erl.eval(me, "spawn(fun() -> link(P), exit(boom) end)", {{"P", term(me.self())}});
//
// The node is killed (SIGKILL) and reaped when the object goes. erl_available() says whether
// `erl` can run here; tests skip with a message when it cannot.
#pragma once

#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace beamlet::test {

inline bool erl_available() {
  return std::system("command -v erl >/dev/null 2>&1") == 0;
}
/// Skips the test where no `erl` is installed.
#define REQUIRE_ERL()                                                    \
  if (!erl_available()) GTEST_SKIP() << "erl is not installed: skipped"; \
  static_assert(true)

inline bool elixir_available() {
  return std::system("command -v elixir >/dev/null 2>&1") == 0;
}

/// A node name unique to this test process: `<base>_<pid>@127.0.0.1`.
inline std::string unique_node(const std::string& base) {
  return base + "_" + std::to_string(::getpid()) + "@127.0.0.1";
}

inline const char* test_cookie() {
  return "beamlet_test_cookie";
}

/// Runs argv[0] (searched in PATH) as a child; 0 when it cannot be started.
inline pid_t spawn_child(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return 0;
  return child;
}

/// SIGKILL and reap.
inline void kill_child(pid_t& child) {
  if (child == 0) return;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  child = 0;
}

class erl_node {
 public:
  /// An `erl` node; with `elixir`, an Elixir node (`elixir --name`) running `elixir_code`
  /// first, with the same agent.
  explicit erl_node(const std::string& base, std::string cookie = test_cookie(),
                    bool elixir = false, const std::string& elixir_code = {})
      : name_(unique_node(base)) {
    std::vector<std::string> args;
    if (elixir) {
      // The agent is Erlang: Elixir runs it through erl_eval, so tests script both alike.
      std::string code = elixir_code + "\n" + "src = ~S\"\"\"\n" + agent() + "\n\"\"\"\n" +
                         "{:ok, toks, _} = :erl_scan.string(String.to_charlist(src))\n"
                         "{:ok, exprs} = :erl_parse.parse_exprs(toks)\n"
                         ":erl_eval.exprs(exprs, :erl_eval.new_bindings())\n";
      args = {"elixir", "--name", name_, "--cookie", cookie, "-e", code};
    } else {
      args = {"erl", "-noshell", "-name", name_, "-setcookie", cookie, "-eval", agent()};
    }
    os_pid_ = spawn_child(std::move(args));
  }
  /// An `erl` node with more arguments (`-proto_dist inet_tls ...`, say).
  erl_node(const std::string& base, const std::vector<std::string>& erl_args,
           std::string cookie = test_cookie())
      : name_(unique_node(base)) {
    std::vector<std::string> args = {"erl", "-noshell", "-name", name_, "-setcookie", cookie};
    args.insert(args.end(), erl_args.begin(), erl_args.end());
    args.insert(args.end(), {"-eval", agent()});
    os_pid_ = spawn_child(std::move(args));
  }
  ~erl_node() { kill(); }
  erl_node(const erl_node&) = delete;
  erl_node& operator=(const erl_node&) = delete;

 private:
  static const char* agent() {
    return "register(agent, self()),"
           "Loop = fun L() ->"
           "  receive"
           "    {eval, From, Ref, Src, Bs} ->"
           "      R = try"
           "            {ok, Toks, _} = erl_scan:string(binary_to_list(Src)),"
           "            {ok, Exprs} = erl_parse:parse_exprs(Toks),"
           "            B = lists:foldl(fun({K, V}, A) -> erl_eval:add_binding(K, V, A) end,"
           "                            erl_eval:new_bindings(), Bs),"
           "            {value, V, _} = erl_eval:exprs(Exprs, B),"
           "            V"
           "          catch C:E -> {eval_error, C, E} end,"
           "      From ! {Ref, R}, L();"
           "    stop -> halt()"
           "  end "
           "end,"
           "Loop().";
  }

 public:
  const std::string& name() const { return name_; }
  bool started() const { return os_pid_ != 0; }

  /// SIGKILL: the node vanishes without closing anything (its connections see a reset or EOF).
  void kill() { kill_child(os_pid_); }
  /// SIGSTOP: the node stops reading its sockets (and answering) until thaw(); what it is sent
  /// meanwhile fills the socket buffers between us.
  void freeze() {
    if (os_pid_ != 0) ::kill(os_pid_, SIGSTOP);
  }
  void thaw() {
    if (os_pid_ != 0) ::kill(os_pid_, SIGCONT);
  }

  /// Waits until the node answers (it takes a second or two to boot).
  bool wait_up(scoped_process& me, std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      auto v = try_eval(me, "ok.", {}, std::chrono::milliseconds(500));
      if (v && v->is_atom("ok")) return true;
    }
    return false;
  }

  /// Evaluates `src` (Erlang expressions ending with '.') with `bindings`; the value, or
  /// nullopt if no answer came within `limit`.
  std::optional<dist::term> try_eval(scoped_process& me, const std::string& src,
                                     std::vector<std::pair<std::string, dist::term>> bindings,
                                     std::chrono::milliseconds limit) {
    const ref r = me.make_ref();
    const dist::term tag = dist::term::make_tuple(
        {dist::term::make_atom("tag"), dist::term(static_cast<std::int64_t>(r.value()))});
    dist::term_list bs;
    for (auto& [k, v] : bindings)
      bs.push_back(dist::term::make_tuple({dist::term::make_atom(k), std::move(v)}));
    me.send("agent", name_,
            dist::term::make_tuple({dist::term::make_atom("eval"), dist::term(me.self()), tag,
                                    dist::term::make_binary(src),
                                    dist::term::make_list(std::move(bs))}));
    auto m = me.receive(on<dist::term>().when([&](const dist::term& t) {
      return t.is_tuple() && t.size() == 2 && t[0] == tag;
    }),
                        after(limit));
    if (!m) return std::nullopt;
    return m.get<dist::term>()[1];
  }

  /// `limit` bounds the wait for the answer; an answer that follows a large message on the
  /// same connection waits for that message to be read and decoded first.
  dist::term eval(scoped_process& me, const std::string& src,
                  std::vector<std::pair<std::string, dist::term>> bindings = {},
                  std::chrono::seconds limit = std::chrono::seconds(10)) {
    auto v = try_eval(me, src, std::move(bindings), limit);
    EXPECT_TRUE(v) << "no answer from " << name_ << " to: " << src;
    if (v && v->is_tuple() && v->size() == 3 && (*v)[0].is_atom("eval_error"))
      ADD_FAILURE() << src << " failed on the Erlang side: " << v->to_string();
    return v ? *v : dist::term::make_atom("no_answer");
  }

 private:
  std::string name_;
  pid_t os_pid_ = 0;
};

#ifdef BEAMLET_DIST_PEER
/// Another beamlet node in its own OS process (tests/dist/dist_peer.cpp), with a registered
/// `echo` process; killed (SIGKILL) and reaped when the object goes.
class beamlet_peer {
 public:
  /// `visible`: a visible node (node_options::hidden = false).
  explicit beamlet_peer(const std::string& base, std::string cookie = test_cookie(),
                        int seconds = 120, int net_ticktime_ms = 60000, bool visible = false)
      : name_(unique_node(base)) {
    std::vector<std::string> args = {BEAMLET_DIST_PEER, name_, std::move(cookie),
                                     std::to_string(seconds), std::to_string(net_ticktime_ms)};
    if (visible) args.emplace_back("visible");
    os_pid_ = spawn_child(std::move(args));
  }
  ~beamlet_peer() { kill(); }
  beamlet_peer(const beamlet_peer&) = delete;
  beamlet_peer& operator=(const beamlet_peer&) = delete;

  const std::string& name() const { return name_; }
  void kill() { kill_child(os_pid_); }
  /// Waits until its echo process answers; returns the echo's pid (null on failure).
  pid wait_up(scoped_process& me, std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      me.send("echo", name_,
              dist::term::make_tuple({dist::term(me.self()), dist::term::make_atom("up")}));
      auto m = me.receive(on<dist::term>().when([](const dist::term& t) {
        return t.is_tuple() && t.size() == 3 && t[0].is_atom("echoed") && t[1].is_atom("up");
      }),
                          after(std::chrono::milliseconds(500)));
      if (m) {
        // Later "up" answers may still come: they carry the same pid.
        return m.get<dist::term>()[2].pid();
      }
    }
    return pid();
  }

 private:
  std::string name_;
  pid_t os_pid_ = 0;
};
#endif

/// A node on loopback named `<base>_<pid>@127.0.0.1`, with `cookie`.
inline dist::node_options loopback_options(const std::string& base,
                                           std::string cookie = test_cookie()) {
  dist::node_options o;
  o.name = unique_node(base);
  o.long_names = true;
  o.cookie = std::move(cookie);
  o.listen_address = "127.0.0.1";
  return o;
}

/// Starts distribution on `rt` as loopback_options(base, cookie) says.
inline dist::node_info start_node(runtime& rt, const std::string& base,
                                  std::string cookie = test_cookie()) {
  auto n = dist::start(rt, loopback_options(base, std::move(cookie)));
  EXPECT_TRUE(n) << (n ? "" : n.error().message());
  return n ? *n : dist::node_info{};
}

}  // namespace beamlet::test
