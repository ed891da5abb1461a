#pragma once
// Test PKI made with OpenSSL: keys, a self-signed CA (with a subject key id), PKCS#10 requests with chosen subject,
// SANs and key type, and the fields of an issued certificate the tests check.
#include <chrono>
#include <string>
#include <vector>

namespace kcm::testing::pki {

struct KeyPair {
  std::string privatePEM;
};
KeyPair rsaKey(int bits = 2048);
KeyPair ecKey();
KeyPair ed25519Key();

// A CA certificate valid from notBefore to notAfter, CN=`cn`.
std::string selfSignedCA(const KeyPair& key, const std::string& cn, std::chrono::system_clock::time_point notBefore,
                         std::chrono::system_clock::time_point notAfter);

struct Request {
  std::vector<std::pair<std::string, std::string>> subject;  // ("O", "system:nodes"), ("CN", ...)
  std::vector<std::string> dnsNames, ipAddresses, emails, uris;
};
std::string csrPEM(const KeyPair& key, const Request& r);

struct CertInfo {
  std::string subject, issuer;  // RFC 2253-ish one-line, e.g. "CN=system:node:a,O=system:nodes"
  std::chrono::system_clock::time_point notBefore, notAfter;
  std::vector<std::string> keyUsages;  // OpenSSL's names, "Digital Signature"
  std::vector<std::string> extKeyUsages;  // "TLS Web Client Authentication"
  std::vector<std::string> sans;  // "DNS:x", "IP Address:1.2.3.4", "email:..", "URI:.."
  bool isCA = true, keyUsageCritical = false, basicConstraintsCritical = false;
  std::string authorityKeyId, serialHex;
  bool verifiesWith(const std::string& caPEM) const;
  std::string pem;
};
CertInfo inspect(const std::string& pem);

}  // namespace kcm::testing::pki
