// Certificate paths: PKCS#10 requests as the CSR controllers read them (parse, the kubelet signers' checks, and
// signing with a CA), CA cert/key pairs as --cluster-signing-*-file load them, and bootstrap-token Secrets as
// the bootstrap signer and token cleaner read them (name, expiration, JWS signing).
//
// Input: a first line naming the path, then its bytes: "r\n<CSR PEM>", "c\n<cert PEM>\0<key PEM>",
// "b\n<Secret JSON>". Properties: no crash or sanitizer report; a certificate we sign parses back and is
// signed by the CA; a CA pair that loads signs a known-good request.
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <string>
#include <string_view>

#include "api/gen/core_v1_json.h"
#include "controllers/bootstrap/util.h"
#include "controllers/certificates/authority.h"
#include "controllers/certificates/csr.h"
#include "fuzz_common.h"

namespace {

namespace certs = kcm::controllers::certificates;
namespace bootstrap = kcm::controllers::bootstrap;

// A P-256 CA valid until 2126, made for this target only (no other use).
constexpr const char* kCACert = R"(
-----BEGIN CERTIFICATE-----
MIIBhDCCASmgAwIBAgIUIX3GuYtvpdWGH0OAbTTpbPwpMfswCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLa2NtLWZ1enotY2EwIBcNMjYxMjA2MjAxMjUwWhgPMjEyNjEx
MTIyMDEyNTBaMBYxFDASBgNVBAMMC2tjbS1mdXp6LWNhMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAELgFz3+3EACh8hlAyOVZloGIDxOUde547UfWlejVPGDHafiKo
ULYvWB1DUk3MbOQV0245A64OZpmCVbJipC523qNTMFEwHQYDVR0OBBYEFImsJFGi
zWPxNKh8emogVfFcXTH7MB8GA1UdIwQYMBaAFImsJFGizWPxNKh8emogVfFcXTH7
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAPokNuW4gsrKyB4o
xUfY/kRqtGtL9w4aBQHPvHNsdTKoAiEA8hzSLUVezBwuTsypM+RO51d7NiIdq3BK
IGtQmK7jB5M=
-----END CERTIFICATE-----
)";
constexpr const char* kCAKey = R"(
-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIJrqY18uIpRFuKxJrtPFn06JXRJBSx0JysHKHONYTHb4oAoGCCqGSM49
AwEHoUQDQgAELgFz3+3EACh8hlAyOVZloGIDxOUde547UfWlejVPGDHafiKoULYv
WB1DUk3MbOQV0245A64OZpmCVbJipC523g==
-----END EC PRIVATE KEY-----
)";
// A kubelet client request (O=system:nodes, CN=system:node:kwok-1) signed by its own key.
constexpr const char* kNodeCSR = R"(
-----BEGIN CERTIFICATE REQUEST-----
MIIBGTCBwAIBADA0MRUwEwYDVQQKDAxzeXN0ZW06bm9kZXMxGzAZBgNVBAMMEnN5
c3RlbTpub2RlOmt3b2stMTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABOFdFxQo
eAzpUG7+uhp5NqSjdtO5dolDRhEK5AsqmRgXdpyQziSp5rH6MRc3q8QBoLGq/tUJ
QCA1+OsKWVLWuGmgKjAoBgkqhkiG9w0BCQ4xGzAZMBcGA1UdEQQQMA6CBmt3b2st
MYcECgAABTAKBggqhkjOPQQDAgNIADBFAiEArtDLw9rR7ZdLBoJAVgeUDKefFR2+
owF58TRWjHumL4UCIH9HeAvpC+3sF6E+dC3QxhnUGyMzEuCrPwpGOA5xj3M2
-----END CERTIFICATE REQUEST-----
)";

const certs::CertificateAuthority& ca() {
  static const auto a = [] {
    auto r = certs::CertificateAuthority::fromPEM(kCACert, kCAKey, "fuzz CA");
    if (!r.ok()) kcm::fuzz::fail("the built-in CA does not load: " + r.status().message());
    return *r;
  }();
  return *a;
}

certs::PermissiveSigningPolicy policy() {
  certs::PermissiveSigningPolicy p;
  p.ttl = std::chrono::hours(24);
  p.usages = {"digital signature", "key encipherment", "client auth"};
  p.backdate = std::chrono::minutes(5);
  p.shortTTL = std::chrono::hours(1);
  return p;
}

void checkIssued(const std::string& der, const certs::CertificateAuthority& by) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  X509* cert = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
  if (!cert) kcm::fuzz::fail("a certificate we signed does not parse", der);
  BIO* bio = BIO_new_mem_buf(by.rawCert().data(), static_cast<int>(by.rawCert().size()));
  X509* issuer = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!issuer) kcm::fuzz::fail("the CA's certificate does not parse back");
  EVP_PKEY* key = X509_get0_pubkey(issuer);
  const bool verified = X509_verify(cert, key) == 1;
  X509_free(issuer);
  X509_free(cert);
  if (!verified) kcm::fuzz::fail("a certificate we signed does not verify with the CA's key");
}

void request(const std::string& pem) {
  auto req = certs::parseCSR(pem);
  if (!req.ok()) return;
  const auto usages = certs::usagesToSet(policy().usages);
  (void)certs::validateKubeletServingCSR(*req, usages);
  (void)certs::validateKubeletClientCSR(*req, usages);
  auto der = ca().sign(*req, policy());
  if (der.ok()) checkIssued(*der, ca());
}

void caPair(std::string_view in) {
  const size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return;
  auto loaded = certs::CertificateAuthority::fromPEM(std::string(in.substr(0, nul)), std::string(in.substr(nul + 1)),
                                                     "fuzzed CA");
  if (!loaded.ok()) return;
  static const auto known = certs::parseCSR(kNodeCSR);
  if (!known.ok()) kcm::fuzz::fail("the built-in request does not parse: " + known.status().message());
  auto der = (*loaded)->sign(*known, policy());
  if (der.ok()) checkIssued(*der, **loaded);  // an expired or non-CA pair may refuse, with a reason
}

void bootstrapSecret(std::string_view json) {
  kcm::api::core::v1::Secret s;
  if (!kcm::api::core::v1::fromJson(json, s).ok()) return;
  const auto now = std::chrono::system_clock::now();
  (void)bootstrap::parseName(s.metadata.name);
  (void)bootstrap::getExpiration(s, now);
  if (auto token = bootstrap::validateSecretForSigning(s, now)) {
    const std::string sig = bootstrap::computeDetachedSignature(bootstrap::getData(s, "kubeconfig"), token->id,
                                                                token->secret);
    if (sig.find("..") == std::string::npos) kcm::fuzz::fail("a detached JWS without its empty payload", sig);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcm::fuzz::quietLogs();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.size() < 2 || in[1] != '\n') return 0;
  const std::string_view body = in.substr(2);
  switch (in[0]) {
    case 'r': request(std::string(body)); break;
    case 'c': caPair(body); break;
    case 'b': bootstrapSecret(body); break;
    default: break;
  }
  return 0;
}
