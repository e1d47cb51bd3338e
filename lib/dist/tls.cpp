// TLS sessions on memory BIOs (tls.hpp). Built with BEAMLET_TLS; without it, make() says so.
#include "tls.hpp"

#include <algorithm>
#include <climits>

#if BEAMLET_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#endif

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

#if BEAMLET_TLS

namespace {

SSL_CTX* ctx(void* p) {
  return static_cast<SSL_CTX*>(p);
}
SSL* ssl(void* p) {
  return static_cast<SSL*>(p);
}
BIO* bio(void* p) {
  return static_cast<BIO*>(p);
}

// OpenSSL's queued errors, oldest first (and the queue left empty for the next call).
std::string errors(std::string what) {
  bool first = true;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    what += first ? ": " : "; ";
    what += buf;
    first = false;
  }
  return what;
}

bool is_ip(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

expected<SSL_CTX*, std::string> make_ctx(const tls_options& o, bool server) {
  ERR_clear_error();
  SSL_CTX* c = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (c == nullptr) return unexpected(errors("cannot make a TLS context"));
  auto fail = [c](std::string why) {
    SSL_CTX_free(c);
    return unexpected(errors(std::move(why)));
  };
  SSL_CTX_ctrl(c, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  // A renegotiation (TLS 1.2) would make a write wait for a read: refused.
  SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(c, o.certfile.c_str()) != 1)
    return fail("certfile '" + o.certfile + "'");
  const std::string& key = o.keyfile.empty() ? o.certfile : o.keyfile;
  if (SSL_CTX_use_PrivateKey_file(c, key.c_str(), SSL_FILETYPE_PEM) != 1)
    return fail("keyfile '" + key + "'");
  if (SSL_CTX_check_private_key(c) != 1) return fail("the key does not match the certificate");
  if (!o.cacertfile.empty() && SSL_CTX_load_verify_locations(c, o.cacertfile.c_str(), nullptr) != 1)
    return fail("cacertfile '" + o.cacertfile + "'");
  if (o.verify_peer)
    SSL_CTX_set_verify(
        c, server ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER, nullptr);
  else
    SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
  return c;
}

}  // namespace

bool tls_built() noexcept {
  return true;
}

expected<std::shared_ptr<tls_context>, std::string> tls_context::make(const tls_options& o) {
  if (o.certfile.empty()) return unexpected(std::string("no certfile"));
  if (o.verify_peer && o.cacertfile.empty())
    return unexpected(std::string("no cacertfile to verify peers with"));
  std::shared_ptr<tls_context> t(new tls_context);
  t->opts_ = o;
  auto s = make_ctx(o, true);
  if (!s) return unexpected(s.error());
  t->server_ = *s;
  auto c = make_ctx(o, false);
  if (!c) return unexpected(c.error());
  t->client_ = *c;
  return t;
}

tls_context::~tls_context() {
  SSL_CTX_free(ctx(server_));
  SSL_CTX_free(ctx(client_));
}

expected<std::unique_ptr<tls_session>, std::string> tls_session::make(const tls_context& c,
                                                                      bool server,
                                                                      const std::string& host) {
  ERR_clear_error();
  std::unique_ptr<tls_session> s(new tls_session);
  SSL* x = SSL_new(ctx(server ? c.server() : c.client()));
  if (x == nullptr) return unexpected(errors("cannot make a TLS session"));
  s->ssl_ = x;
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (in == nullptr || out == nullptr) {
    BIO_free(in);
    BIO_free(out);
    return unexpected(errors("cannot make TLS buffers"));
  }
  SSL_set_bio(x, in, out);  // the session owns them now
  s->in_ = in;
  s->out_ = out;
  // An empty buffer reads as "no data yet", not as the end of the stream.
  BIO_ctrl(in, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nullptr);
  if (server) {
    SSL_set_accept_state(x);
  } else {
    SSL_set_connect_state(x);
    const tls_options& o = c.options();
    // (OpenSSL's macros for these cast in C style: the calls they stand for, spelled out.)
    if (!is_ip(host) && !host.empty())
      SSL_ctrl(x, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(host.c_str()));
    if (o.verify_peer && o.check_host && !host.empty()) {
      X509_VERIFY_PARAM* p = SSL_get0_param(x);
      const int ok = is_ip(host) ? X509_VERIFY_PARAM_set1_ip_asc(p, host.c_str())
                                 : X509_VERIFY_PARAM_set1_host(p, host.c_str(), 0);
      if (ok != 1) return unexpected(errors("cannot check the host '" + host + "'"));
    }
  }
  return s;
}

tls_session::~tls_session() {
  SSL_free(ssl(ssl_));  // and its BIOs
}

void tls_session::drain(std::string& out) {
  while (const std::size_t n = BIO_ctrl_pending(bio(out_))) {
    const std::size_t at = out.size();
    out.resize(at + n);
    const int got =
        BIO_read(bio(out_), out.data() + at, static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
    out.resize(at + static_cast<std::size_t>(std::max(got, 0)));
    if (got <= 0) break;
  }
}

bool tls_session::has_output() const {
  return BIO_ctrl_pending(bio(out_)) != 0;
}

void tls_session::put(std::string_view cipher) {
  while (!cipher.empty()) {
    const int n = BIO_write(bio(in_), cipher.data(),
                            static_cast<int>(std::min<std::size_t>(cipher.size(), INT_MAX)));
    if (n <= 0) return;  // a memory BIO takes everything, or memory ran out
    cipher.remove_prefix(static_cast<std::size_t>(n));
  }
}

tls_session::step tls_session::handshake(std::string& out, std::string& error) {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl(ssl_));
  drain(out);  // what it sends, an alert about a failure included
  if (r == 1) return step::done;
  const int e = SSL_get_error(ssl(ssl_), r);
  if (e == SSL_ERROR_WANT_READ) return step::more;
  error = errors("TLS handshake failed");
  const long v = SSL_get_verify_result(ssl(ssl_));
  if (v != X509_V_OK)
    error += std::string(" (certificate: ") + X509_verify_cert_error_string(v) + ")";
  return step::failed;
}

bool tls_session::open(std::string_view cipher, std::string& plain, std::string& error) {
  put(cipher);
  ERR_clear_error();
  char buf[16384];
  for (;;) {
    const int n = SSL_read(ssl(ssl_), buf, sizeof buf);
    if (n > 0) {
      plain.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    const int e = SSL_get_error(ssl(ssl_), n);
    if (e == SSL_ERROR_WANT_READ) return true;
    error =
        e == SSL_ERROR_ZERO_RETURN ? std::string("the peer closed the TLS session") : errors("TLS");
    return false;
  }
}

bool tls_session::seal(std::string_view plain, std::string& out, std::string& error) {
  ERR_clear_error();
  while (!plain.empty()) {
    const int n = SSL_write(ssl(ssl_), plain.data(),
                            static_cast<int>(std::min<std::size_t>(plain.size(), 1u << 30)));
    if (n <= 0) {
      error = errors("TLS write");
      return false;
    }
    plain.remove_prefix(static_cast<std::size_t>(n));
  }
  drain(out);
  return true;
}

#else  // !BEAMLET_TLS

bool tls_built() noexcept {
  return false;
}
expected<std::shared_ptr<tls_context>, std::string> tls_context::make(const tls_options&) {
  return unexpected(std::string("TLS is not built in (BEAMLET_TLS)"));
}
tls_context::~tls_context() = default;
expected<std::unique_ptr<tls_session>, std::string> tls_session::make(const tls_context&, bool,
                                                                      const std::string&) {
  return unexpected(std::string("TLS is not built in (BEAMLET_TLS)"));
}
tls_session::~tls_session() = default;
void tls_session::drain(std::string&) {}
bool tls_session::has_output() const {
  return false;
}
void tls_session::put(std::string_view) {}
tls_session::step tls_session::handshake(std::string&, std::string& error) {
  error = "TLS is not built in";
  return step::failed;
}
bool tls_session::open(std::string_view, std::string&, std::string& error) {
  error = "TLS is not built in";
  return false;
}
bool tls_session::seal(std::string_view, std::string&, std::string& error) {
  error = "TLS is not built in";
  return false;
}

#endif

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
