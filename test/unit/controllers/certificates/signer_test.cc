// certificatesigningrequest-signing-controller and its CA (upstream signer_test.go, authority_test.go,
// policies_test.go) and the kubelet CSR rules (pkg/apis/certificates/helpers_test.go), over the fake apiserver
// and an informer store the test fills; certificates are read back with OpenSSL.
#include <gtest/gtest.h>

#include <openssl/obj_mac.h>

#include <filesystem>
#include <fstream>

#include "api/gen/certificates_v1_json.h"
#include "controllers/certificates/authority.h"
#include "controllers/certificates/csr.h"
#include "controllers/certificates/pki.h"
#include "controllers/certificates/signer.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::certificates {
namespace {

using api::certificates::v1::CertificateSigningRequest;
using testing::FakeApiServer;
namespace pki = testing::pki;
using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;

const pki::Request kKubeletClient{{{"O", "system:nodes"}, {"CN", "system:node:node-1"}}};

CertificateSigningRequest csrFor(const std::string& name, const std::string& pem, const std::string& signer,
                                 std::vector<std::string> usages) {
  CertificateSigningRequest c;
  c.apiVersion = "certificates.k8s.io/v1";
  c.kind = "CertificateSigningRequest";
  c.metadata.name = name;
  c.spec.request = pem;
  c.spec.signerName = signer;
  c.spec.usages.assign(usages.begin(), usages.end());
  return c;
}

void approve(CertificateSigningRequest& c) {
  auto& cond = c.status.conditions.emplace_back();
  cond.type = "Approved";
  cond.status = "True";
  cond.reason = "AutoApproved";
}

class CSRSignerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addResource({"certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status", "approval"}});
    dir = std::filesystem::temp_directory_path() /
          ("kcm-signer-" + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
    writeCA("test-ca", clock.wallNow() - 1h, clock.wallNow() + 24h * 3650);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void writeCA(const std::string& cn, SysClock::time_point nb, SysClock::time_point na) {
    caKey = pki::rsaKey();
    caPEM = pki::selfSignedCA(caKey, cn, nb, na);
    // A new inode each time, as an atomic rename-into-place writer leaves.
    for (auto [name, text] : {std::pair{"ca.crt", caPEM}, std::pair{"ca.key", caKey.privatePEM}}) {
      auto tmp = dir / (std::string(name) + ".tmp");
      std::ofstream(tmp) << text;
      std::filesystem::rename(tmp, dir / name);
    }
  }
  std::shared_ptr<CSRSigningController> signer(const std::string& signerName, std::chrono::seconds ttl = 24h * 365) {
    auto s = CSRSigningController::create("csrsigning-test", signerName, server->client(),
                                          factory.forType<CertificateSigningRequest>(), (dir / "ca.crt").string(),
                                          (dir / "ca.key").string(), ttl, clock);
    EXPECT_TRUE(s.ok()) << s.status().toString();
    return s.ok() ? *s : nullptr;
  }
  CertificateSigningRequest stored(const CertificateSigningRequest& c) {
    server->add(c);
    return server->get<CertificateSigningRequest>("", c.metadata.name).value();
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::filesystem::path dir;
  pki::KeyPair caKey;
  std::string caPEM;
};

// ---- signer.duration (TestDurations)

TEST_F(CSRSignerTest, DurationIsTheRequestedExpirationWithinTenMinutesAndTheClusterSigningDuration) {
  auto s = signer(kKubeAPIServerClientKubeletSignerName, 24h);
  EXPECT_EQ(s->duration(std::nullopt), 24h);
  EXPECT_EQ(s->duration(3600), 1h);
  EXPECT_EQ(s->duration(48 * 3600), 24h);  // above the flag: the flag
  EXPECT_EQ(s->duration(60), 10min);       // below the minimum: the minimum
  EXPECT_EQ(s->duration(600), 10min);
  EXPECT_EQ(s->duration(-1), 10min);
  auto shortFlag = signer(kKubeAPIServerClientKubeletSignerName, 30s);
  EXPECT_EQ(shortFlag->duration(600), 30s);  // the flag wins over the minimum
  EXPECT_EQ(shortFlag->duration(std::nullopt), 30s);
}

// ---- authority.Sign with PermissiveSigningPolicy (authority_test.go, policies_test.go)

TEST_F(CSRSignerTest, SignedCertificateCarriesSubjectSANsUsagesAndBackdatedValidity) {
  auto key = pki::ecKey();
  pki::Request r{{{"CN", "me"}, {"O", "b"}, {"O", "a"}},
                 {"example.com"}, {"10.0.0.1", "::1"}, {"me@example.com"}, {"spiffe://cluster/me"}};
  auto req = parseCSR(pki::csrPEM(key, r));
  ASSERT_TRUE(req.ok()) << req.status().toString();
  EXPECT_EQ(req->organization, (std::vector<std::string>{"b", "a"}));
  auto ca = CertificateAuthority::fromPEM(caPEM, caKey.privatePEM, "ca");
  ASSERT_TRUE(ca.ok()) << ca.status().toString();
  PermissiveSigningPolicy p{24h, {"client auth", "digital signature", "server auth", "key encipherment"}, 5min, 8h,
                            clock.wallNow()};
  auto der = (*ca)->sign(*req, p);
  ASSERT_TRUE(der.ok()) << der.status().toString();
  pki::CertInfo info = pki::inspect(pemCertificate(*der));
  EXPECT_TRUE(info.verifiesWith(caPEM));
  EXPECT_EQ(info.issuer, "CN=test-ca");
  EXPECT_EQ(info.subject, "CN=me,O=b+O=a");  // Go's order (O before CN), one multi-valued RDN for the Os
  EXPECT_EQ(info.sans, (std::vector<std::string>{"DNS:example.com", "email:me@example.com", "IP Address:10.0.0.1",
                                                 "IP Address:0:0:0:0:0:0:0:1", "URI:spiffe://cluster/me"}));
  EXPECT_EQ(info.keyUsages, (std::vector<std::string>{"Digital Signature", "Key Encipherment"}));
  EXPECT_EQ(info.extKeyUsages, (std::vector<std::string>{"TLS Web Server Authentication", "TLS Web Client Authentication"}));
  EXPECT_FALSE(info.isCA);
  EXPECT_TRUE(info.keyUsageCritical);
  EXPECT_TRUE(info.basicConstraintsCritical);
  EXPECT_FALSE(info.authorityKeyId.empty());
  EXPECT_EQ(info.notBefore, std::chrono::time_point_cast<std::chrono::seconds>(clock.wallNow()) - 5min);
  EXPECT_EQ(info.notAfter, std::chrono::time_point_cast<std::chrono::seconds>(clock.wallNow()) + 24h - 5min);
}

TEST_F(CSRSignerTest, ShortLivedCertificatesAreNotShortenedAndNothingOutlivesTheCA) {
  auto req = parseCSR(pki::csrPEM(pki::ecKey(), kKubeletClient));
  ASSERT_TRUE(req.ok());
  const auto now = std::chrono::time_point_cast<std::chrono::seconds>(clock.wallNow());
  auto ca = CertificateAuthority::fromPEM(caPEM, caKey.privatePEM, "ca");
  ASSERT_TRUE(ca.ok());
  auto shortCert = (*ca)->sign(*req, {1h, {"client auth"}, 5min, 8h, now});
  ASSERT_TRUE(shortCert.ok());
  EXPECT_EQ(pki::inspect(pemCertificate(*shortCert)).notAfter, now + 1h);  // below 8 h: no backdate taken off
  auto longCert = (*ca)->sign(*req, {24h * 36500, {"client auth"}, 5min, 8h, now});
  ASSERT_TRUE(longCert.ok());
  EXPECT_EQ(pki::inspect(pemCertificate(*longCert)).notAfter, (*ca)->notAfter());
}

TEST_F(CSRSignerTest, ECDSAAndEd25519CAsSignToo) {
  auto req = parseCSR(pki::csrPEM(pki::rsaKey(), kKubeletClient));
  ASSERT_TRUE(req.ok());
  for (const auto& key : {pki::ecKey(), pki::ed25519Key()}) {
    const std::string caCert = pki::selfSignedCA(key, "other-ca", clock.wallNow() - 1h, clock.wallNow() + 24h);
    auto ca = CertificateAuthority::fromPEM(caCert, key.privatePEM, "ca");
    ASSERT_TRUE(ca.ok()) << ca.status().toString();
    auto der = (*ca)->sign(*req, {1h, {"client auth"}, 5min, 8h, clock.wallNow()});
    ASSERT_TRUE(der.ok()) << der.status().toString();
    pki::CertInfo info = pki::inspect(pemCertificate(*der));
    EXPECT_TRUE(info.verifiesWith(caCert));
    EXPECT_EQ(info.issuer, "CN=other-ca");
  }
}

TEST_F(CSRSignerTest, AnExpiredSignerRefusesToSign) {
  writeCA("old-ca", clock.wallNow() - 48h, clock.wallNow() - 1h);
  auto req = parseCSR(pki::csrPEM(pki::ecKey(), kKubeletClient));
  auto ca = CertificateAuthority::fromPEM(caPEM, caKey.privatePEM, "ca");
  ASSERT_TRUE(ca.ok());
  auto r = (*ca)->sign(*req, {1h, {"client auth"}, 5min, 8h, clock.wallNow()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("the signer has expired: NotAfter=", 0), 0u) << r.status().message();
  // Expiring within the backdate window: not yet expired at NotBefore, but now is past it.
  writeCA("ending-ca", clock.wallNow() - 48h, clock.wallNow() - 1min);
  ca = CertificateAuthority::fromPEM(caPEM, caKey.privatePEM, "ca");
  r = (*ca)->sign(*req, {1h, {"client auth"}, 5min, 8h, clock.wallNow()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("refusing to sign a certificate that expired in the past: NotAfter=", 0), 0u);
}

TEST(KeyUsages, UnknownUsagesAreNamedAndExtendedOnesComeInGoOrder) {
  auto bad = keyUsagesFromStrings({"client auth", "fancy", "also fancy"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "unrecognized usage values: [\"fancy\" \"also fancy\"]");
  auto ku = keyUsagesFromStrings({"ocsp signing", "client auth", "any", "server auth", "s/mime", "email protection"});
  ASSERT_TRUE(ku.ok());
  EXPECT_EQ(ku->extKeyUsageNids, (std::vector<int>{NID_anyExtendedKeyUsage, NID_server_auth, NID_client_auth,
                                                   NID_email_protect, NID_OCSP_sign}));
  EXPECT_EQ(keyUsagesFromStrings({"signing", "digital signature"})->keyUsage, 1u);
}

TEST_F(CSRSignerTest, CAFilesThatDoNotLoadAreNamedInTheError) {
  std::ofstream(dir / "two.crt") << caPEM << caPEM;
  auto two = CSRSigningController::create("x", kLegacyUnknownSignerName, server->client(),
                                          factory.forType<CertificateSigningRequest>(), (dir / "two.crt").string(),
                                          (dir / "ca.key").string(), 1h, clock);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("expected 1 certificate, found 2"), std::string::npos);
  EXPECT_NE(two.status().message().find("two.crt"), std::string::npos);
  std::ofstream(dir / "other.key") << pki::rsaKey().privatePEM;
  auto mismatch = CSRSigningController::create("x", kLegacyUnknownSignerName, server->client(),
                                               factory.forType<CertificateSigningRequest>(), (dir / "ca.crt").string(),
                                               (dir / "other.key").string(), 1h, clock);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("private key does not match public key"), std::string::npos);
  auto missing = CSRSigningController::create("x", kLegacyUnknownSignerName, server->client(),
                                              factory.forType<CertificateSigningRequest>(),
                                              (dir / "nope.crt").string(), (dir / "ca.key").string(), 1h, clock);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.crt"), std::string::npos);
  auto unknown = CSRSigningController::create("x", "example.com/mine", server->client(),
                                              factory.forType<CertificateSigningRequest>(), (dir / "ca.crt").string(),
                                              (dir / "ca.key").string(), 1h, clock);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "unrecognized signerName: \"example.com/mine\"");
}

// ---- signer.handle (TestHandle)

TEST_F(CSRSignerTest, OnlyApprovedNotFailedRequestsForItsOwnSignerAreSigned) {
  auto s = signer(kKubeAPIServerClientKubeletSignerName);
  const std::string pem = pki::csrPEM(pki::ecKey(), kKubeletClient);
  const std::vector<std::string> usages{"digital signature", "client auth"};
  auto pending = stored(csrFor("pending", pem, kKubeAPIServerClientKubeletSignerName, usages));
  EXPECT_TRUE(s->handle(pending).status.ok());
  auto denied = csrFor("denied", pem, kKubeAPIServerClientKubeletSignerName, usages);
  approve(denied);
  denied.status.conditions.push_back({});
  denied.status.conditions.back().type = "Denied";
  EXPECT_TRUE(s->handle(stored(denied)).status.ok());
  auto failed = csrFor("failed", pem, kKubeAPIServerClientKubeletSignerName, usages);
  approve(failed);
  failed.status.conditions.push_back({});
  failed.status.conditions.back().type = "Failed";
  failed.status.conditions.back().status = "True";
  EXPECT_TRUE(s->handle(stored(failed)).status.ok());
  auto other = csrFor("other", pem, kKubeletServingSignerName, usages);
  approve(other);
  EXPECT_TRUE(s->handle(stored(other)).status.ok());
  EXPECT_TRUE(server->actionsFor("update", "certificatesigningrequests").empty());

  auto ok = csrFor("ok", pem, kKubeAPIServerClientKubeletSignerName, usages);
  ok.spec.expirationSeconds = 7200;
  approve(ok);
  ASSERT_TRUE(s->handle(stored(ok)).status.ok());
  auto updates = server->actionsFor("update", "certificatesigningrequests");
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].subresource, "status");
  auto signedCSR = server->get<CertificateSigningRequest>("", "ok").value();
  pki::CertInfo info = pki::inspect(signedCSR.status.certificate);
  EXPECT_TRUE(info.verifiesWith(caPEM));
  EXPECT_EQ(info.subject, "CN=system:node:node-1,O=system:nodes");  // RFC 2253 prints the last RDN first
  EXPECT_EQ(info.notAfter - info.notBefore, 2h + 5min);  // 2 h asked (short: not shortened), backdated 5 min
}

TEST_F(CSRSignerTest, ARequestBreakingTheSignersRulesGetsAFailedCondition) {
  auto s = signer(kKubeAPIServerClientKubeletSignerName);
  auto bad = csrFor("bad", pki::csrPEM(pki::ecKey(), {{{"O", "not-nodes"}, {"CN", "system:node:node-1"}}}),
                    kKubeAPIServerClientKubeletSignerName, {"digital signature", "client auth"});
  approve(bad);
  ASSERT_TRUE(s->handle(stored(bad)).status.ok());
  auto got = server->get<CertificateSigningRequest>("", "bad").value();
  ASSERT_EQ(got.status.conditions.size(), 2u);
  const auto& c = got.status.conditions[1];
  EXPECT_EQ(c.type, "Failed");
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "SignerValidationFailure");
  EXPECT_EQ(c.message, "subject organization is not system:nodes");
  EXPECT_EQ(c.lastUpdateTime.unixSeconds, SysClock::to_time_t(clock.wallNow()));
  EXPECT_TRUE(got.status.certificate.empty());

  auto client = signer(kKubeAPIServerClientSignerName);
  auto serverUsage = csrFor("server-usage", pki::csrPEM(pki::ecKey(), {{{"CN", "someone"}}}),
                            kKubeAPIServerClientSignerName, {"server auth"});
  approve(serverUsage);
  ASSERT_TRUE(client->handle(stored(serverUsage)).status.ok());
  EXPECT_EQ(server->get<CertificateSigningRequest>("", "server-usage")->status.conditions.back().message,
            "invalid usage for client certificate: server auth");
}

TEST_F(CSRSignerTest, AnUnparsableRequestIsRetriedAndNamed) {
  auto s = signer(kLegacyUnknownSignerName);
  auto c = csrFor("garbage", "not a pem", kLegacyUnknownSignerName, {"client auth"});
  approve(c);
  auto r = s->handle(stored(c));
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.message(), "unable to parse csr \"garbage\": PEM block type must be CERTIFICATE REQUEST");
  auto cert = csrFor("cert-block", caPEM, kLegacyUnknownSignerName, {"client auth"});
  approve(cert);
  EXPECT_EQ(s->handle(stored(cert)).status.message(),
            "unable to parse csr \"cert-block\": PEM block type must be CERTIFICATE REQUEST");
}

TEST_F(CSRSignerTest, NewCAFilesAreUsedForTheNextSignature) {
  auto s = signer(kLegacyUnknownSignerName);
  const std::string pem = pki::csrPEM(pki::ecKey(), {{{"CN", "x"}}});
  auto first = csrFor("first", pem, kLegacyUnknownSignerName, {"client auth"});
  approve(first);
  ASSERT_TRUE(s->handle(stored(first)).status.ok());
  EXPECT_EQ(pki::inspect(server->get<CertificateSigningRequest>("", "first")->status.certificate).issuer, "CN=test-ca");
  writeCA("rotated-ca", clock.wallNow() - 1h, clock.wallNow() + 24h * 365);
  auto second = csrFor("second", pem, kLegacyUnknownSignerName, {"client auth"});
  approve(second);
  ASSERT_TRUE(s->handle(stored(second)).status.ok());
  pki::CertInfo info = pki::inspect(server->get<CertificateSigningRequest>("", "second")->status.certificate);
  EXPECT_EQ(info.issuer, "CN=rotated-ca");
  EXPECT_TRUE(info.verifiesWith(caPEM));
  // A pair that does not load is not taken: the rotated CA keeps signing.
  std::ofstream(dir / "ca.key") << "garbage";
  auto third = csrFor("third", pem, kLegacyUnknownSignerName, {"client auth"});
  approve(third);
  ASSERT_TRUE(s->handle(stored(third)).status.ok());
  EXPECT_EQ(pki::inspect(server->get<CertificateSigningRequest>("", "third")->status.certificate).issuer,
            "CN=rotated-ca");
}

TEST_F(CSRSignerTest, SyncSkipsDeletedAndAlreadySignedRequests) {
  auto s = signer(kLegacyUnknownSignerName);
  EXPECT_TRUE(s->controller().syncFunc("gone").status.ok());
  auto c = csrFor("done", pki::csrPEM(pki::ecKey(), {{{"CN", "x"}}}), kLegacyUnknownSignerName, {"client auth"});
  approve(c);
  c.status.certificate = "already";
  factory.forType<CertificateSigningRequest>().store().upsert("done", std::make_shared<const CertificateSigningRequest>(c));
  EXPECT_TRUE(s->controller().syncFunc("done").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

// ---- ValidateKubeletClientCSR / ValidateKubeletServingCSR (helpers_test.go)

TEST(KubeletCSRRules, ClientRequestsNeedNodesOrgNodeNameNoSANsAndClientUsages) {
  auto check = [](const pki::Request& r, std::set<std::string> usages) {
    auto req = parseCSR(pki::csrPEM(pki::ecKey(), r));
    return validateKubeletClientCSR(*req, usages).message();
  };
  const std::set<std::string> usages{"digital signature", "key encipherment", "client auth"};
  EXPECT_EQ(check(kKubeletClient, usages), "");
  EXPECT_EQ(check(kKubeletClient, {"digital signature", "client auth"}), "");
  EXPECT_EQ(check(kKubeletClient, {"client auth"}),
            "usages did not match [client auth digital signature key encipherment]");
  EXPECT_EQ(check({{{"O", "system:nodes"}, {"O", "extra"}, {"CN", "system:node:a"}}}, usages),
            "subject organization is not system:nodes");
  EXPECT_EQ(check({{{"O", "system:nodes"}, {"CN", "node:a"}}}, usages),
            "subject common name does not begin with system:node:");
  pki::Request dns = kKubeletClient;
  dns.dnsNames = {"a"};
  EXPECT_EQ(check(dns, usages), "DNS subjectAltNames are not allowed");
  pki::Request ip = kKubeletClient;
  ip.ipAddresses = {"1.2.3.4"};
  EXPECT_EQ(check(ip, usages), "IP subjectAltNames are not allowed");
  pki::Request email = kKubeletClient;
  email.emails = {"a@b.c"};
  EXPECT_EQ(check(email, usages), "Email subjectAltNames are not allowed");
  pki::Request uri = kKubeletClient;
  uri.uris = {"https://a"};
  EXPECT_EQ(check(uri, usages), "URI subjectAltNames are not allowed");
}

TEST(KubeletCSRRules, ServingRequestsNeedADNSOrIPNameAndServerUsages) {
  auto check = [](const pki::Request& r, std::set<std::string> usages) {
    auto req = parseCSR(pki::csrPEM(pki::ecKey(), r));
    return validateKubeletServingCSR(*req, usages).message();
  };
  const std::set<std::string> usages{"digital signature", "key encipherment", "server auth"};
  pki::Request r = kKubeletClient;
  EXPECT_EQ(check(r, usages), "DNS or IP subjectAltName is required");
  r.ipAddresses = {"10.0.0.1"};
  EXPECT_EQ(check(r, usages), "");
  EXPECT_EQ(check(r, {"digital signature", "server auth"}), "");
  EXPECT_EQ(check(r, {"server auth", "client auth"}),
            "usages did not match [digital signature key encipherment server auth]");
  r.uris = {"https://a"};
  EXPECT_EQ(check(r, usages), "URI subjectAltNames are not allowed");
}

}  // namespace
}  // namespace kcm::controllers::certificates
