// TLS for distribution connections (node_options::tls): one context per node, made by start()
// from the options' files, and one session per connection, which its process drives over its
// own socket. Sessions run on memory buffers: the connection reads and writes ciphertext with
// its usual socket calls, and the session turns it into plaintext and back, so TLS changes
// nothing else about how a connection works. OpenSSL stays out of this header.
#pragma once

#include <beamlet/core/config.hpp>

#include <memory>
#include <string>
#include <string_view>

#include <beamlet/core/expected.hpp>
#include <beamlet/dist/tls.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// Whether the library was built with TLS (BEAMLET_TLS).
bool tls_built() noexcept;

/// The OpenSSL contexts of a node (one to initiate, one to accept). Read-only once made, so
/// connections share it without locking.
class tls_context {
 public:
  /// Loads the certificate, key and CAs; why not, if they cannot be used.
  static expected<std::shared_ptr<tls_context>, std::string> make(const tls_options& o);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  const tls_options& options() const { return opts_; }
  void* client() const { return client_; }
  void* server() const { return server_; }

 private:
  tls_context() = default;
  tls_options opts_;
  void* client_ = nullptr;  // SSL_CTX
  void* server_ = nullptr;
};

/// One connection's TLS state, used only by its process.
class tls_session {
 public:
  /// A session that accepts (`server`) or initiates toward `host` (checked against the peer's
  /// certificate when the options say so).
  static expected<std::unique_ptr<tls_session>, std::string> make(const tls_context& c, bool server,
                                                                  const std::string& host);
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  enum class step : std::uint8_t { done, more, failed };
  /// Advances the handshake: what it has to send is appended to `out`; `more` wants more of
  /// the peer's bytes (given with put), `failed` says why in `error`.
  step handshake(std::string& out, std::string& error);
  /// Ciphertext from the peer, for the handshake.
  void put(std::string_view cipher);
  /// Ciphertext from the peer in, the plaintext it completes appended to `plain`. False when
  /// the peer broke or closed the session (`error` says which).
  bool open(std::string_view cipher, std::string& plain, std::string& error);
  /// Plaintext out: its ciphertext (and anything else the session has to send) appended to
  /// `out`. False when the session cannot write.
  bool seal(std::string_view plain, std::string& out, std::string& error);
  /// Whether the session has something of its own to send (an answer to the peer's session
  /// traffic): seal("") takes it.
  bool has_output() const;

 private:
  tls_session() = default;
  void drain(std::string& out);
  void* ssl_ = nullptr;  // SSL
  void* in_ = nullptr;   // BIO: ciphertext from the peer
  void* out_ = nullptr;  // BIO: ciphertext to the peer
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
