// Distribution over TLS (node_options::tls) with real Erlang nodes running
// `erl -proto_dist inet_tls -ssl_dist_optfile ...` and a PKI the test makes: connections both
// ways (beamlet initiating, erl initiating), large messages (fragments inside TLS), two beamlet
// nodes, a certificate from another CA refused in either direction, a plaintext peer refused in
// either direction, and files that cannot be used failing start().
#include <beamlet/core/runtime.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "erl_node.hpp"
#include "test_support.hpp"
#include "tls_pki.hpp"

#define REQUIRE_TLS_TOOLS()                                                 \
  if (!erl_available() || !openssl_available())                             \
    GTEST_SKIP() << "erl or the openssl command is not installed: skipped"; \
  static_assert(true)

namespace beamlet::test {
namespace dist_tls_cases {

using dist::term;

std::vector<std::string> erl_tls(const std::string& optfile) {
  return {"-proto_dist", "inet_tls", "-ssl_dist_optfile", optfile};
}

dist::node_options tls_node(const std::string& base, dist::tls_options t) {
  dist::node_options o = loopback_options(base);
  o.tls = std::move(t);
  return o;
}

// A PKI with CA `ca` and `rogue_ca`; certificates `beamlet` and `erl` from the first, `rogue`
// and `erl_rogue` from the second.
bool make_pki(test_pki& pki) {
  return pki.ok() && pki.make_ca("ca") && pki.make_ca("rogue_ca") &&
         pki.make_cert("beamlet", "ca") && pki.make_cert("erl", "ca") &&
         pki.make_cert("rogue", "rogue_ca") && pki.make_cert("erl_rogue", "rogue_ca");
}

bool contains(const log_event& e, const std::string& a, const std::string& b) {
  return e.message.find(a) != std::string::npos && e.message.find(b) != std::string::npos;
}

// Tries to reach erl until a failed connection with it whose log line says `what` is logged
// (true), erl answers (false: not refused), or 30 s pass. Attempts made while erl boots fail
// earlier, at epmd, and say something else.
bool refused(erl_node& erl, scoped_process& me, captured_log& log, const std::string& what) {
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < end) {
    if (erl.try_eval(me, "ok.", {}, 300ms)) return false;
    if (auto e = log.wait_for([&](const log_event& x) { return contains(x, erl.name(), what); },
                              200ms)) {
      std::printf("refused: %s\n", e->message.c_str());
      return true;
    }
  }
  return false;
}

TEST(DistTls, BeamletAndErlangTalkOverTlsBothWays) {
  REQUIRE_TLS_TOOLS();
  test_pki pki;
  ASSERT_TRUE(make_pki(pki));
  runtime rt;
  auto n = dist::start(rt, tls_node("tls", pki.options("beamlet", "ca")));
  ASSERT_TRUE(n) << n.error().message();
  erl_node erl("tls_peer", erl_tls(pki.erl_optfile("erl", "ca")));
  scoped_process me(rt);
  // beamlet initiates (the agent's answers come back over the same connection).
  ASSERT_TRUE(erl.wait_up(me)) << "no TLS connection to erl";
  // erl initiates: it drops the connection and makes a new one itself.
  const term again = erl.eval(me, "erlang:disconnect_node(Me), net_kernel:connect_node(Me).",
                              {{"Me", term::make_atom(n->name)}});
  EXPECT_TRUE(again.is_atom("true")) << again.to_string();
  const term proto = erl.eval(me, "init:get_argument(proto_dist).");
  EXPECT_NE(proto.to_string().find("inet_tls"), std::string::npos) << proto.to_string();
  // Large messages both ways: 64 KiB fragments, each in TLS records.
  const std::string big(std::size_t{4} << 20, 'x');
  const term size = erl.eval(me, "byte_size(B).", {{"B", term::make_binary(big)}});
  EXPECT_EQ(size, term(static_cast<std::int64_t>(big.size()))) << size.to_string();
  const term back = erl.eval(me, "binary:copy(<<\"y\">>, 4194304).");
  ASSERT_TRUE(back.is_binary()) << back.to_string();
  EXPECT_EQ(back.bin().bytes(), std::string(std::size_t{4} << 20, 'y'));
}

TEST(DistTls, TwoBeamletNodesTalkOverTls) {
  REQUIRE_TLS_TOOLS();
  test_pki pki;
  ASSERT_TRUE(make_pki(pki));
  runtime a;
  runtime b;
  auto na = dist::start(a, tls_node("tls_a", pki.options("beamlet", "ca")));
  auto nb = dist::start(b, tls_node("tls_b", pki.options("erl", "ca")));
  ASSERT_TRUE(na && nb);
  a.spawn([](process& self) -> task<> {
    (void)self.register_name("tls_echo");
    for (;;) {
      auto m = co_await self.receive(on<term>());
      const term& t = m.get<term>();
      if (t.is_tuple() && t.size() == 2 && t[0].is_pid()) self.send(t[0].pid(), t[1]);
    }
  });
  scoped_process me(b);
  const term hello = term::make_tuple({term(me.self()), term::make_binary("over TLS")});
  me.send("tls_echo", na->name, hello);
  auto r = me.receive(on<term>(), after(20s));
  ASSERT_TRUE(r) << "no answer from the other beamlet node";
  EXPECT_EQ(r.get<term>(), term::make_binary("over TLS"));
}

// A beamlet node with certificate `ours` reaches an erl node with certificate `theirs` (each
// trusting the other's CA as given); true when the connection fails with a log line saying
// `what`.
bool refused_between(const test_pki& pki, const std::string& ours, const std::string& our_ca,
                     const std::string& theirs, const std::string& their_ca,
                     const std::string& what) {
  runtime rt;
  captured_log log(rt);
  EXPECT_TRUE(dist::start(rt, tls_node("tls_" + ours, pki.options(ours, our_ca))));
  erl_node erl("tls_" + theirs + "_peer", erl_tls(pki.erl_optfile(theirs, their_ca)));
  scoped_process me(rt);
  return refused(erl, me, log, what);
}

TEST(DistTls, ACertificateFromAnotherAuthorityIsRefusedEitherWay) {
  REQUIRE_TLS_TOOLS();
  test_pki pki;
  ASSERT_TRUE(make_pki(pki));
  // Ours is not from the CA erl trusts: erl refuses us during the TLS handshake. (With TLS 1.3
  // our side of the handshake completes first; erl's alert ends the next read.)
  EXPECT_TRUE(refused_between(pki, "rogue", "ca", "erl", "ca", "TLS"))
      << "erl accepted a certificate of another CA";
  // erl's is not from the CA we trust: we refuse it, naming the certificate.
  EXPECT_TRUE(refused_between(pki, "beamlet", "ca", "erl_rogue", "rogue_ca", "certificate"))
      << "we accepted a certificate of another CA";
}

TEST(DistTls, APlaintextPeerIsRefusedEitherWay) {
  REQUIRE_TLS_TOOLS();
  test_pki pki;
  ASSERT_TRUE(make_pki(pki));
  runtime rt;
  captured_log log(rt);
  dist::node_options o = tls_node("tls_only", pki.options("beamlet", "ca"));
  o.handshake_timeout = 2s;  // a plain erl waits for the rest of what it takes for a packet
  auto n = dist::start(rt, o);
  ASSERT_TRUE(n);
  scoped_process me(rt);
  {
    // We speak TLS to a plain erl: it reads our ClientHello as a handshake packet, and never
    // answers in TLS.
    erl_node erl("plain_peer");
    EXPECT_TRUE(refused(erl, me, log, "TLS handshake")) << "a plain erl answered us";
  }
  {
    // A plain beamlet node speaks the distribution handshake to us: refused before a byte of
    // it is taken for anything but TLS.
    runtime plain;
    ASSERT_TRUE(start_node(plain, "plain_beamlet").name.size() > 0);
    scoped_process other(plain);
    other.send("anything", n->name, term::make_atom("hello"));
    const auto e = log.wait_for(
        [&](const log_event& x) { return contains(x, "an incoming connection", "TLS"); }, 20s);
    ASSERT_TRUE(e) << "the plaintext peer was not refused";
    std::printf("refused: %s\n", e->message.c_str());
    EXPECT_TRUE(dist::nodes(rt).empty());
  }
}

TEST(DistTls, TheAcceptorsCertificateMustNameItsHost) {
  REQUIRE_TLS_TOOLS();
  test_pki pki;
  ASSERT_TRUE(make_pki(pki));
  ASSERT_TRUE(pki.make_cert("elsewhere", "ca", "DNS:elsewhere.invalid"));
  const auto answers = [&](bool check_host) {
    runtime a;
    runtime b;
    auto na = dist::start(a, tls_node("tls_host_a", pki.options("elsewhere", "ca")));
    dist::tls_options t = pki.options("beamlet", "ca");
    t.check_host = check_host;
    auto nb = dist::start(b, tls_node("tls_host_b", t));
    EXPECT_TRUE(na && nb);
    if (!na || !nb) return false;
    a.spawn([](process& self) -> task<> {
      (void)self.register_name("tls_echo");
      auto m = co_await self.receive(on<term>());
      const term& x = m.get<term>();
      if (x.is_pid()) self.send(x.pid(), term::make_atom("here"));
    });
    scoped_process me(b);
    me.send("tls_echo", na->name, term(me.self()));
    return static_cast<bool>(me.receive(on<term>(), after(5s)));
  };
  // Its certificate is good (our CA signed it) but for another host: the initiator refuses it,
  // unless told not to look.
  EXPECT_FALSE(answers(true)) << "a certificate for another host was taken";
  EXPECT_TRUE(answers(false)) << "check_host = false still refused the connection";
}

TEST(DistTls, FilesThatCannotBeUsedFailStart) {
  REQUIRE_TLS_TOOLS();
  test_pki pki;
  ASSERT_TRUE(make_pki(pki));
  const auto error_of = [](dist::tls_options t) {
    runtime rt;
    auto n = dist::start(rt, tls_node("tls_bad", std::move(t)));
    return n ? std::error_code() : n.error();
  };
  dist::tls_options t = pki.options("beamlet", "ca");
  t.certfile = pki.path("missing", "pem");
  EXPECT_EQ(error_of(t), dist::dist_errc::tls_setup);
  t = pki.options("beamlet", "ca");
  t.keyfile = pki.path("erl", "key");  // another certificate's key
  EXPECT_EQ(error_of(t), dist::dist_errc::tls_setup);
  t = pki.options("beamlet", "ca");
  t.cacertfile.clear();  // nothing to verify peers with
  EXPECT_EQ(error_of(t), dist::dist_errc::tls_setup);
  t.verify_peer = false;  // unless peers are not verified
  EXPECT_EQ(error_of(t), std::error_code());
}

}  // namespace dist_tls_cases
}  // namespace beamlet::test
