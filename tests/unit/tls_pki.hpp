// A throwaway PKI for the TLS tests: certificate authorities and the certificates they sign
// for 127.0.0.1 (EC P-256 keys, valid two days), made with the openssl command line in a
// temporary directory that goes with the object. An -ssl_dist_optfile for erl to match.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <beamlet/dist/tls.hpp>

namespace beamlet::test {

inline bool openssl_available() {
  return std::system("openssl version > /dev/null 2>&1") == 0;
}

class test_pki {
 public:
  test_pki() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "beamlet-pki-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) dir_ = tmpl;
  }
  ~test_pki() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  test_pki(const test_pki&) = delete;
  test_pki& operator=(const test_pki&) = delete;

  /// A self-signed CA `name` (name.pem, name.key).
  bool make_ca(const std::string& name) {
    return run(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        " -keyout " +
        path(name, "key") + " -out " + path(name, "pem") + " -days 2 -subj '/CN=" + name + "'");
  }
  /// A certificate `name` for 127.0.0.1 and localhost (or the subjectAltName `san`), signed
  /// by CA `ca`, good for both ends of a connection.
  bool make_cert(const std::string& name, const std::string& ca,
                 // The address as a DNS name too: OTP 25's ssl checks an IP host as a DNS name.
                 const std::string& san = "IP:127.0.0.1,DNS:127.0.0.1,DNS:localhost") {
    const std::string ext = path(name, "ext");
    {
      std::ofstream f(ext);
      f << "subjectAltName=" << san
        << "\n"
           "extendedKeyUsage=serverAuth,clientAuth\n"
           "basicConstraints=CA:FALSE\n";
    }
    return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
               path(name, "key") + " -out " + path(name, "csr") + " -subj '/CN=" + name + "'") &&
           run("openssl x509 -req -in " + path(name, "csr") + " -CA " + path(ca, "pem") +
               " -CAkey " + path(ca, "key") + " -CAcreateserial -out " + path(name, "pem") +
               " -days 2 -extfile " + ext);
  }
  std::string path(const std::string& name, const std::string& ext) const {
    return dir_ + "/" + name + "." + ext;
  }
  /// beamlet's options for certificate `name`, trusting CA `ca`.
  dist::tls_options options(const std::string& name, const std::string& ca) const {
    dist::tls_options o;
    o.certfile = path(name, "pem");
    o.keyfile = path(name, "key");
    o.cacertfile = path(ca, "pem");
    return o;
  }
  /// An -ssl_dist_optfile for erl with certificate `name`, trusting CA `ca`, verifying peers
  /// both ways (as beamlet does); returns its path.
  std::string erl_optfile(const std::string& name, const std::string& ca) const {
    const std::string opts = "{certfile, \"" + path(name, "pem") + "\"}, {keyfile, \"" +
                             path(name, "key") + "\"}, {cacertfile, \"" + path(ca, "pem") +
                             "\"}, {verify, verify_peer}";
    const std::string file = path(name + "_for_erl", "conf");
    std::ofstream f(file);
    f << "[{server, [" << opts << ", {fail_if_no_peer_cert, true}]},\n"
      << " {client, [" << opts << "]}].\n";
    return file;
  }
  bool ok() const { return !dir_.empty(); }

 private:
  static bool run(const std::string& cmd) {
    return std::system((cmd + " > /dev/null 2>&1").c_str()) == 0;
  }
  std::string dir_;
};

}  // namespace beamlet::test
