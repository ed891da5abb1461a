#include "healthz/tls_options.h"
#include "client/key_pair.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <map>
#include <sstream>

namespace kcm::healthz {
namespace {

const std::map<std::string, const char*>& cipherTable() {
  // Go crypto/tls names -> OpenSSL names. nullptr: a TLS 1.3 suite (always on, as in Go).
  static const std::map<std::string, const char*> kTable = {
      {"TLS_AES_128_GCM_SHA256", nullptr},
      {"TLS_AES_256_GCM_SHA384", nullptr},
      {"TLS_CHACHA20_POLY1305_SHA256", nullptr},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "ECDHE-ECDSA-RC4-SHA"},
      {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
      {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA"},
      {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
      {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
      {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
      {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
      {"TLS_RSA_WITH_RC4_128_SHA", "RC4-SHA"},
  };
  return kTable;
}

std::string readFile(const std::string& path, bool& ok) {
  std::ifstream f(path, std::ios::binary);
  ok = static_cast<bool>(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

// Names a certificate answers for: its DNS and IP SANs, else its CN.
std::vector<std::string> certificateNames(X509* cert) {
  std::vector<std::string> names;
  if (auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS) {
        names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                           ASN1_STRING_length(g->d.dNSName));
      } else if (g->type == GEN_IPADD) {
        char* text = nullptr;
        if (ASN1_STRING_length(g->d.iPAddress) == 4) {
          const unsigned char* b = ASN1_STRING_get0_data(g->d.iPAddress);
          names.push_back(std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) + "." +
                          std::to_string(b[3]));
        }
        (void)text;
      }
    }
    GENERAL_NAMES_free(sans);
  }
  if (names.empty()) {
    char buf[256] = {0};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf - 1) > 0)
      names.emplace_back(buf);
  }
  return names;
}

int onServerName(SSL* ssl, int*, void* arg) {
  const auto* certs = static_cast<const std::vector<SniCertificate>*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (!name) return SSL_TLSEXT_ERR_OK;  // the default certificate
  if (const SniCertificate* c = selectSniCertificate(*certs, name)) {
    SSL_use_certificate(ssl, c->cert.get());
    SSL_use_PrivateKey(ssl, c->key.get());
  }
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

Result<std::string> openSslCipherList(const std::vector<std::string>& goNames) {
  std::string list;
  for (const auto& n : goNames) {
    auto it = cipherTable().find(n);
    if (it == cipherTable().end())
      return Status(StatusCode::kInvalidArgument,
                    "--tls-cipher-suites: Cipher suite " + n + " not supported or doesn't exist");
    if (!it->second) continue;
    list += (list.empty() ? "" : ":") + std::string(it->second);
  }
  return list;
}

Result<std::vector<SniCertificate>> loadSniCertificates(const std::vector<std::string>& specs) {
  std::vector<SniCertificate> out;
  for (const auto& spec : specs) {
    auto colon = spec.find(':');
    auto files = split(spec.substr(0, colon), ',');
    if (files.size() != 2)
      return Status(StatusCode::kInvalidArgument,
                    "--tls-sni-cert-key \"" + spec + "\": expected \"certfile,keyfile\" optionally followed by "
                    "\":name1,name2\"");
    bool ok;
    std::string certPem = readFile(files[0], ok);
    if (!ok) return Status(StatusCode::kInvalidArgument, "--tls-sni-cert-key: failed to read " + files[0]);
    std::string keyPem = readFile(files[1], ok);
    if (!ok) return Status(StatusCode::kInvalidArgument, "--tls-sni-cert-key: failed to read " + files[1]);
    SniCertificate c;
    BIO* cb = BIO_new_mem_buf(certPem.data(), static_cast<int>(certPem.size()));
    c.cert.reset(PEM_read_bio_X509(cb, nullptr, nullptr, nullptr), X509_free);
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size()));
    c.key.reset(PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr), EVP_PKEY_free);
    BIO_free(kb);
    if (!c.cert) return Status(StatusCode::kInvalidArgument, "--tls-sni-cert-key: " + files[0] + " holds no PEM certificate");
    if (!c.key) return Status(StatusCode::kInvalidArgument, "--tls-sni-cert-key: " + files[1] + " holds no PEM private key");
    if (!client::privateKeyMatches(c.key.get(), X509_get0_pubkey(c.cert.get())))
      return Status(StatusCode::kInvalidArgument,
                    "--tls-sni-cert-key: the certificate " + files[0] + " and key " + files[1] + " do not match");
    c.names = colon == std::string::npos ? certificateNames(c.cert.get()) : split(spec.substr(colon + 1), ',');
    out.push_back(std::move(c));
  }
  return out;
}

const SniCertificate* selectSniCertificate(const std::vector<SniCertificate>& certs, const std::string& serverName) {
  for (const auto& c : certs)
    for (const auto& n : c.names)
      if (n == serverName) return &c;
  auto dot = serverName.find('.');
  if (dot == std::string::npos) return nullptr;
  const std::string wildcard = "*" + serverName.substr(dot);
  for (const auto& c : certs)
    for (const auto& n : c.names)
      if (n == wildcard) return &c;
  return nullptr;
}

void installSni(SSL_CTX& ctx, const std::vector<SniCertificate>* certs) {
  if (!certs || certs->empty()) return;
  SSL_CTX_set_tlsext_servername_callback(&ctx, onServerName);
  SSL_CTX_set_tlsext_servername_arg(&ctx, const_cast<std::vector<SniCertificate>*>(certs));
}

}  // namespace kcm::healthz
