// The apiserver's certificate chain checked as Go's crypto/x509 checks it, against a local HTTPS fake whose chain
// each case makes: a valid CA, an expired CA, a CA the kubeconfig does not name, an expired serving certificate.
// Each refusal is an error naming the cause in Go's words, never a crash or a hang.
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "client/rest_client.h"

namespace kcm::client {
namespace {

struct KeyCert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  std::string certPem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, cert);
    char* p;
    long n = BIO_get_mem_data(b, &p);
    std::string s(p, static_cast<size_t>(n));
    BIO_free(b);
    return s;
  }
  std::string keyPem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    char* p;
    long n = BIO_get_mem_data(b, &p);
    std::string s(p, static_cast<size_t>(n));
    BIO_free(b);
    return s;
  }
};

void addExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate valid from `fromDays` to `toDays` (relative to now), signed by `issuer` (itself when null).
KeyCert makeCert(const std::string& cn, long fromDays, long toDays, const KeyCert* issuer) {
  KeyCert kc;
  kc.key = EVP_EC_gen("P-256");
  kc.cert = X509_new();
  X509_set_version(kc.cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(kc.cert), ++serial);
  X509_gmtime_adj(X509_getm_notBefore(kc.cert), fromDays * 86400);
  X509_gmtime_adj(X509_getm_notAfter(kc.cert), toDays * 86400);
  X509_set_pubkey(kc.cert, kc.key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(kc.cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* issuerCert = issuer ? issuer->cert : kc.cert;
  X509_set_issuer_name(kc.cert, X509_get_subject_name(issuerCert));
  if (!issuer) {
    addExt(kc.cert, issuerCert, NID_basic_constraints, "critical,CA:TRUE");
    addExt(kc.cert, issuerCert, NID_key_usage, "critical,keyCertSign,digitalSignature");
  } else {
    addExt(kc.cert, issuerCert, NID_subject_alt_name, "IP:127.0.0.1");
    addExt(kc.cert, issuerCert, NID_ext_key_usage, "serverAuth");
  }
  X509_sign(kc.cert, issuer ? issuer->key : kc.key, EVP_sha256());
  return kc;
}

class TlsVerification : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    std::filesystem::remove_all(dir_);
  }
  // Serves GET /healthz over TLS with `server`'s pair.
  void serve(const KeyCert& server) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/tls.crt") << server.certPem();
    std::ofstream(dir_ + "/tls.key") << server.keyPem();
    server_ = std::make_unique<httplib::SSLServer>((dir_ + "/tls.crt").c_str(), (dir_ + "/tls.key").c_str());
    server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Result<Response> healthz(const KeyCert& trustedCa) {
    RestConfig cfg;
    cfg.host = "https://127.0.0.1:" + std::to_string(port_);
    cfg.caData = trustedCa.certPem();
    cfg.qps = -1;
    auto c = RestClient::create(cfg);
    if (!c.ok()) return c.status();
    Request req;
    req.path = "/healthz";
    return (*c)->send(req);
  }
  std::string dir_ = (std::filesystem::temp_directory_path() / ("kcm-tls-" + std::to_string(::getpid()))).string();
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(TlsVerification, ValidChainIsAccepted) {
  KeyCert ca = makeCert("test-ca", -1, 365, nullptr);
  serve(makeCert("apiserver", -1, 365, &ca));
  auto r = healthz(ca);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->body, "ok");
}

TEST_F(TlsVerification, ExpiredCaIsRefusedAsGoWordsIt) {
  KeyCert ca = makeCert("expired-ca", -30, -1, nullptr);
  serve(makeCert("apiserver", -2, 365, &ca));
  auto r = healthz(ca);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tls: failed to verify certificate: x509: certificate has expired or is not "
                                      "yet valid"),
            std::string::npos)
      << r.status().message();
}

TEST_F(TlsVerification, ExpiredServingCertificateIsRefused) {
  KeyCert ca = makeCert("test-ca", -30, 365, nullptr);
  serve(makeCert("apiserver", -30, -1, &ca));
  auto r = healthz(ca);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x509: certificate has expired or is not yet valid"), std::string::npos)
      << r.status().message();
}

TEST_F(TlsVerification, ChainOfAnotherCaIsRefusedAsUnknownAuthority) {
  KeyCert ca = makeCert("test-ca", -1, 365, nullptr), other = makeCert("other-ca", -1, 365, nullptr);
  serve(makeCert("apiserver", -1, 365, &ca));
  auto r = healthz(other);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x509: certificate signed by unknown authority"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("GET https://127.0.0.1:"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kcm::client
