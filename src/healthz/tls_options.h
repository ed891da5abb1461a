#pragma once
// The serving TLS options upstream's SecureServingOptions takes beyond a certificate: --tls-cipher-suites (Go's
// IANA names mapped to OpenSSL's; TLS 1.3 suites are not configurable in Go either and are left as they are) and
// --tls-sni-cert-key (extra certificate/key pairs chosen by the SNI name the client asks for).
#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::healthz {

// OpenSSL cipher list for the TLS <= 1.2 suites named; "" when none are (OpenSSL's default then). An unknown
// name is an error naming it, as upstream's TLSCipherSuites.
Result<std::string> openSslCipherList(const std::vector<std::string>& goNames);

struct SniCertificate {
  std::shared_ptr<X509> cert;
  std::shared_ptr<EVP_PKEY> key;
  std::vector<std::string> names;  // "foo.com", "*.foo.com", IPs; from the flag, else from the certificate
};

// Parses "cert,key" or "cert,key:name1,name2" per entry and loads the pairs; errors name the entry.
Result<std::vector<SniCertificate>> loadSniCertificates(const std::vector<std::string>& specs);

// The certificate for a requested server name: an exact name first (explicit names win over ones taken from
// certificates, i.e. earlier entries), then a wildcard one level up; null when none matches.
const SniCertificate* selectSniCertificate(const std::vector<SniCertificate>& certs, const std::string& serverName);

// Installs the SNI selection on ctx; `certs` must outlive it.
void installSni(SSL_CTX& ctx, const std::vector<SniCertificate>* certs);

}  // namespace kcm::healthz
