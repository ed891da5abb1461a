#pragma once
// The signing CA (upstream pkg/controller/certificates/authority and signer/ca_provider.go): a CA certificate and
// private key (RSA, ECDSA or Ed25519) loaded from --cluster-signing-*-file and reloaded when the files change,
// and Sign(), which issues an X.509 v3 certificate for a PKCS#10 request as Go's x509.CreateCertificate does
// for upstream's template: random 128-bit serial, the request's subject re-encoded in pkix.Name order, its
// DNS/email/IP/URI subjectAltNames, key usages from the CSR's usages, CA:FALSE, the CA's key id as authority key
// id, every other requested extension dropped, validity by PermissiveSigningPolicy.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "controllers/certificates/csr.h"

typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

namespace kcm::controllers::certificates {

using SysTime = std::chrono::system_clock::time_point;

// PermissiveSigningPolicy: NotBefore = now - backdate; NotAfter = now + ttl (ttl below `shortTTL`) or
// now + ttl - backdate, never past the CA's NotAfter.
struct PermissiveSigningPolicy {
  std::chrono::seconds ttl{0};
  std::vector<std::string> usages;
  std::chrono::seconds backdate{0};
  std::chrono::seconds shortTTL{0};
  SysTime now{};  // zero: the system clock
};

// keyUsagesFromStrings: the keyUsage bits (X509v3_KU_*) and extended key usage NIDs (in Go's ExtKeyUsage order)
// for CSR usages; an unknown usage is an error naming them all.
struct KeyUsages {
  unsigned keyUsage = 0;
  std::vector<int> extKeyUsageNids;
};
Result<KeyUsages> keyUsagesFromStrings(const std::vector<std::string>& usages);

class CertificateAuthority {
 public:
  // From PEM text: exactly one certificate and a private key that matches it. `name` goes into errors.
  static Result<std::shared_ptr<CertificateAuthority>> fromPEM(const std::string& certPEM, const std::string& keyPEM,
                                                               const std::string& name);
  // The certificate (DER) for `req`, or why not (bad request signature, expired signer, unknown usage).
  Result<std::string> sign(const ParsedCSR& req, const PermissiveSigningPolicy& policy) const;
  SysTime notAfter() const { return notAfter_; }
  const std::string& rawCert() const { return rawCert_; }
  const std::string& rawKey() const { return rawKey_; }

 private:
  std::shared_ptr<X509> cert_;
  std::shared_ptr<EVP_PKEY> key_;
  std::string rawCert_, rawKey_;
  SysTime notAfter_{};
};

// caProvider: the CA of a cert/key file pair, re-read when either file's size, mtime or inode changed since the
// last look (upstream watches them and compares content); a pair that does not load keeps the previous CA and
// makes currentCA() report the error.
class CAProvider {
 public:
  static Result<std::shared_ptr<CAProvider>> create(const std::string& certFile, const std::string& keyFile);
  Result<std::shared_ptr<const CertificateAuthority>> currentCA();

 private:
  struct Stamp {
    long long size = -1, mtimeNs = -1, ino = -1;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp stampOf(const std::string& path);
  Status load();
  std::string certFile_, keyFile_;
  std::mutex mu_;
  Stamp certStamp_, keyStamp_;
  std::shared_ptr<const CertificateAuthority> ca_;
};

// Go's time.Time.String() in UTC: "2006-01-02 15:04:05 +0000 UTC" (error texts).
std::string goTimeString(SysTime t);

}  // namespace kcm::controllers::certificates
