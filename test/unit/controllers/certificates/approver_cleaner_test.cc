// certificatesigningrequest-approving-controller (upstream sarapprove_test.go), the CSR and
// PodCertificateRequest cleaners (cleaner_test.go, pcrcleaner_test.go) with an injected clock, and the
// kube-apiserver-serving ClusterTrustBundle publisher (publisher_test.go), over the fake apiserver.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/certificates_v1_json.h"
#include "controllers/certificates/approver.h"
#include "controllers/certificates/authority.h"
#include "controllers/certificates/cleaner.h"
#include "controllers/certificates/ctb_publisher.h"
#include "controllers/certificates/pki.h"
#include "controllers/certificates/signer.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::certificates {
namespace {

using api::certificates::v1::CertificateSigningRequest;
using api::certificates::v1::ClusterTrustBundle;
using api::certificates::v1::PodCertificateRequest;
using testing::FakeApiServer;
namespace pki = testing::pki;
using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;
using json = nlohmann::json;

class CertFakes : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addResource({"certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status", "approval"}});
    server->addResource({"certificates.k8s.io", "v1", "clustertrustbundles", "ClusterTrustBundle", false});
    server->addResource({"certificates.k8s.io", "v1", "podcertificaterequests", "PodCertificateRequest", true});
  }
  // Writes other than SubjectAccessReview creates.
  size_t objectWrites() const {
    size_t n = 0;
    for (const auto& a : server->writes()) n += a.resource != "subjectaccessreviews";
    return n;
  }
  template <class T>
  void cache(const T& o) {
    const auto& m = o.metadata;
    factory.forType<T>().store().upsert(m.namespace_.empty() ? m.name.str() : m.namespace_ + "/" + m.name,
                                        std::make_shared<const T>(o));
  }
  api::Time ago(std::chrono::seconds d) { return api::Time::fromUnix(SysClock::to_time_t(clock.wallNow() - d)); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
};

CertificateSigningRequest nodeClientCSR(const std::string& name, const std::string& cn, const std::string& username) {
  CertificateSigningRequest c;
  c.metadata.name = name;
  c.spec.request = pki::csrPEM(pki::ecKey(), {{{"O", "system:nodes"}, {"CN", cn}}});
  c.spec.signerName = kKubeAPIServerClientKubeletSignerName;
  c.spec.usages = {"digital signature", "key encipherment", "client auth"};
  c.spec.username = username;
  c.spec.uid = "uid-1";
  c.spec.groups = {"system:bootstrappers", "system:authenticated"};
  c.spec.extra["scopes"] = {"a", "b"};
  return c;
}

// ---- sarapprove_test.go

class ApproverTest : public CertFakes {
 protected:
  void SetUp() override {
    CertFakes::SetUp();
    server->prependReactor("create", "subjectaccessreviews", [this](const testing::Action& a) {
      json sar = json::parse(a.body);
      reviews.push_back(sar);
      std::string sub = sar["spec"]["resourceAttributes"].value("subresource", "");
      sar["status"]["allowed"] = allowed.count(sub) > 0;
      return std::optional<client::Transport::Reply>(client::Transport::Reply{201, sar.dump()});
    });
  }
  CSRApprovingController approver{server->client(), factory.forType<CertificateSigningRequest>(), clock};
  std::set<std::string> allowed;
  std::vector<json> reviews;
};

TEST_F(ApproverTest, RecognizersTellSelfNodeClientsFromNodeClients) {
  auto self = nodeClientCSR("a", "system:node:n1", "system:node:n1");
  auto req = parseCSR(self.spec.request);
  EXPECT_TRUE(isSelfNodeClientCert(self, *req));
  EXPECT_TRUE(isNodeClientCert(self, *req));
  auto bootstrap = nodeClientCSR("b", "system:node:n1", "system:bootstrap:abcdef");
  EXPECT_FALSE(isSelfNodeClientCert(bootstrap, *parseCSR(bootstrap.spec.request)));
  EXPECT_TRUE(isNodeClientCert(bootstrap, *parseCSR(bootstrap.spec.request)));
  auto otherSigner = bootstrap;
  otherSigner.spec.signerName = kKubeAPIServerClientSignerName;
  EXPECT_FALSE(isNodeClientCert(otherSigner, *parseCSR(otherSigner.spec.request)));
  auto serverUsage = bootstrap;
  serverUsage.spec.usages = {"digital signature", "server auth"};
  EXPECT_FALSE(isNodeClientCert(serverUsage, *parseCSR(serverUsage.spec.request)));
}

TEST_F(ApproverTest, ASelfNodeClientRequestAllowedBySARIsApprovedThroughTheApprovalSubresource) {
  allowed = {"selfnodeclient"};
  auto c = nodeClientCSR("self", "system:node:n1", "system:node:n1");
  server->add(c);
  ASSERT_TRUE(approver.handle(*server->get<CertificateSigningRequest>("", "self")).status.ok());
  ASSERT_EQ(reviews.size(), 1u);
  const json& spec = reviews[0]["spec"];
  EXPECT_EQ(spec["user"], "system:node:n1");
  EXPECT_EQ(spec["uid"], "uid-1");
  EXPECT_EQ(spec["groups"], json({"system:bootstrappers", "system:authenticated"}));
  EXPECT_EQ(spec["extra"]["scopes"], json({"a", "b"}));
  EXPECT_EQ(spec["resourceAttributes"], json({{"group", "certificates.k8s.io"}, {"resource", "certificatesigningrequests"},
                                              {"verb", "create"}, {"subresource", "selfnodeclient"}, {"version", "*"}}));
  auto updates = server->actionsFor("update", "certificatesigningrequests");
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].subresource, "approval");
  auto got = server->get<CertificateSigningRequest>("", "self").value();
  ASSERT_EQ(got.status.conditions.size(), 1u);
  EXPECT_EQ(got.status.conditions[0].type, "Approved");
  EXPECT_EQ(got.status.conditions[0].status, "True");
  EXPECT_EQ(got.status.conditions[0].reason, "AutoApproved");
  EXPECT_EQ(got.status.conditions[0].message, "Auto approving self kubelet client certificate after SubjectAccessReview.");
}

TEST_F(ApproverTest, ABootstrapRequestAllowedForNodeClientIsApprovedAfterTheSelfCheckFails) {
  allowed = {"nodeclient"};
  auto c = nodeClientCSR("boot", "system:node:n1", "system:node:n1");  // recognized as both
  server->add(c);
  ASSERT_TRUE(approver.handle(*server->get<CertificateSigningRequest>("", "boot")).status.ok());
  ASSERT_EQ(reviews.size(), 2u);
  EXPECT_EQ(reviews[0]["spec"]["resourceAttributes"]["subresource"], "selfnodeclient");
  EXPECT_EQ(reviews[1]["spec"]["resourceAttributes"]["subresource"], "nodeclient");
  EXPECT_EQ(server->get<CertificateSigningRequest>("", "boot")->status.conditions.at(0).message,
            "Auto approving kubelet client certificate after SubjectAccessReview.");
}

TEST_F(ApproverTest, ARecognizedRequestTheSARDeniesIsRetriedQuietlyWithoutAWrite) {
  auto c = nodeClientCSR("denied", "system:node:n1", "system:node:n1");
  server->add(c);
  auto r = approver.handle(*server->get<CertificateSigningRequest>("", "denied"));
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_TRUE(r.quiet);
  EXPECT_EQ(r.status.message(),
            "recognized csr \"denied\" as [selfnodeclient nodeclient] but subject access review was not approved");
  EXPECT_EQ(objectWrites(), 0u);
}

TEST_F(ApproverTest, DecidedSignedOrUnrecognizedRequestsAreLeftAlone) {
  allowed = {"selfnodeclient", "nodeclient"};
  auto approved = nodeClientCSR("approved", "system:node:n1", "system:node:n1");
  approved.status.conditions.push_back({});
  approved.status.conditions.back().type = "Approved";
  EXPECT_TRUE(approver.handle(approved).status.ok());
  auto denied = nodeClientCSR("denied", "system:node:n1", "system:node:n1");
  denied.status.conditions.push_back({});
  denied.status.conditions.back().type = "Denied";
  EXPECT_TRUE(approver.handle(denied).status.ok());
  auto issued = nodeClientCSR("issued", "system:node:n1", "system:node:n1");
  issued.status.certificate = "x";
  EXPECT_TRUE(approver.handle(issued).status.ok());
  auto serving = nodeClientCSR("serving", "system:node:n1", "system:node:n1");
  serving.spec.signerName = kKubeletServingSignerName;
  EXPECT_TRUE(approver.handle(serving).status.ok());
  EXPECT_TRUE(reviews.empty());
  EXPECT_TRUE(server->writes().empty());
  auto garbage = nodeClientCSR("garbage", "system:node:n1", "system:node:n1");
  garbage.spec.request = "junk";
  EXPECT_EQ(approver.handle(garbage).status.message(),
            "unable to parse csr \"garbage\": PEM block type must be CERTIFICATE REQUEST");
}

// ---- cleaner_test.go: every age rule, with the clock injected

class CSRCleanerTest : public CertFakes {
 protected:
  CertificateSigningRequest csr(const std::string& name, std::chrono::seconds age) {
    CertificateSigningRequest c;
    c.metadata.name = name;
    c.metadata.creationTimestamp = ago(age);
    return c;
  }
  void condition(CertificateSigningRequest& c, const std::string& type, std::chrono::seconds age) {
    auto& cond = c.status.conditions.emplace_back();
    cond.type = type;
    cond.status = "True";
    cond.lastUpdateTime = ago(age);
  }
  std::string certificateValidFor(std::chrono::seconds fromNow) {
    auto caKey = pki::rsaKey();
    auto ca = CertificateAuthority::fromPEM(pki::selfSignedCA(caKey, "ca", clock.wallNow() - 48h, clock.wallNow() + 48h),
                                            caKey.privatePEM, "ca");
    auto req = parseCSR(pki::csrPEM(pki::ecKey(), {{{"CN", "x"}}}));
    // Signed 2 h ago (short TTL: NotAfter = then + ttl).
    const auto then = clock.wallNow() - 2h;
    auto der = (*ca)->sign(*req, {std::chrono::duration_cast<std::chrono::seconds>(2h + fromNow), {"client auth"}, 5min,
                                  8h, then});
    return pemCertificate(*der);
  }
  CSRCleanerController cleaner{server->client(), factory.forType<CertificateSigningRequest>(), clock};
};

TEST_F(CSRCleanerTest, EveryAgeRuleDeletesPastItsDeadlineAndKeepsBeforeIt) {
  struct Case {
    std::string name;
    CertificateSigningRequest c;
    bool deleted;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& name, CertificateSigningRequest c, bool deleted) {
    cases.push_back({name, c, deleted});
  };
  {
    auto c = csr("approved-issued-old", 90min);
    condition(c, "Approved", 61min);
    c.status.certificate = certificateValidFor(24h);
    add("approved and issued over an hour ago", c, true);
    auto young = csr("approved-issued-young", 90min);
    condition(young, "Approved", 59min);
    young.status.certificate = certificateValidFor(24h);
    add("approved and issued under an hour ago", young, false);
  }
  for (const char* type : {"Denied", "Failed"}) {  // both measured against deniedExpiration
    const std::string t = type;
    auto c = csr(t + "-old", 90min);
    condition(c, t, 61min);
    add(type, c, true);
    auto young = csr(t + "-young", 90min);
    condition(young, t, 59min);
    add(type, young, false);
  }
  add("pending for over 24 h", csr("pending-old", 25h), true);
  add("pending for under 24 h", csr("pending-young", 23h), false);
  {
    auto c = csr("approved-unissued-old", 26h);
    condition(c, "Approved", 25h);
    add("approved but unissued for over 24 h", c, true);
    auto young = csr("approved-unissued-young", 26h);
    condition(young, "Approved", 23h);
    add("approved but unissued for under 24 h", young, false);
  }
  {
    auto c = csr("issued-expired", 10min);
    condition(c, "Approved", 5min);
    c.status.certificate = certificateValidFor(-1min);
    add("issued, certificate expired", c, true);
    auto valid = csr("issued-valid", 10min);
    condition(valid, "Approved", 5min);
    valid.status.certificate = certificateValidFor(1min);
    add("issued, certificate still valid", valid, false);
  }
  for (const auto& k : cases) {
    EXPECT_EQ(cleaner.shouldDelete(k.c), k.deleted) << k.name;
    server->add(k.c);
    cache(k.c);
  }
  cleaner.worker();
  for (const auto& k : cases)
    EXPECT_EQ(!server->get<CertificateSigningRequest>("", k.c.metadata.name).has_value(), k.deleted) << k.name;
  EXPECT_EQ(server->actionsFor("delete", "certificatesigningrequests").size(), 6u);
}

TEST_F(CSRCleanerTest, TheFirstPassWaitsForTheCacheThenRunsHourly) {
  auto c = csr("pending-old", 25h);
  server->add(c);
  std::stop_source stop;
  factory.start(stop.get_token());
  cleaner.run(stop.get_token());
  EXPECT_TRUE(testing::eventually([&] { return !server->get<CertificateSigningRequest>("", "pending-old"); }));
  auto later = csr("pending-later", 23h + 30min);
  server->add(later);
  EXPECT_TRUE(testing::eventually([&] { return factory.forType<CertificateSigningRequest>().store().size() == 1; }));
  clock.advance(59min);
  EXPECT_TRUE(server->get<CertificateSigningRequest>("", "pending-later").has_value());
  clock.advance(2min);  // the next pass, at +1 h: 24 h 30 min old by then
  EXPECT_TRUE(testing::eventually([&] { return !server->get<CertificateSigningRequest>("", "pending-later"); }));
  stop.request_stop();
}

// ---- pcrcleaner_test.go

TEST_F(CertFakes, PodCertificateRequestsOlderThanFifteenMinutesAreDeletedWithTheirUID) {
  auto pcr = [&](const std::string& name, std::chrono::seconds age) {
    PodCertificateRequest p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.creationTimestamp = ago(age);
    auto stored = server->add(p);
    cache(stored);
    return stored;
  };
  auto old = pcr("old", 16min);
  pcr("young", 14min);
  PCRCleanerController cleaner(server->client(), factory.forType<PodCertificateRequest>(), clock);
  cleaner.worker();
  auto deletes = server->actionsFor("delete", "podcertificaterequests");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].name, "old");
  EXPECT_EQ(json::parse(deletes[0].body)["preconditions"]["uid"], old.metadata.uid.str());
  EXPECT_TRUE(server->get<PodCertificateRequest>("ns", "young").has_value());
  // Gone already: not an error, nothing else deleted.
  cleaner.worker();
  EXPECT_EQ(server->actionsFor("delete", "podcertificaterequests").size(), 2u);
}

// ---- clustertrustbundlepublisher/publisher_test.go

TEST(ConstructBundleName, SignerWithColonsThenTwelveBytesOfTheSHA256) {
  // sha256("") = e3b0c44298fc1c149afbf4c8996fb924...
  EXPECT_EQ(constructBundleName("kubernetes.io/kube-apiserver-serving", ""),
            "kubernetes.io:kube-apiserver-serving:e3b0c44298fc1c149afbf4c8");
}

TEST_F(CertFakes, TheTrustBundleIsCreatedRestoredAndTheSignersOthersDeleted) {
  const std::string signer = "kubernetes.io/kube-apiserver-serving";
  const std::string ca = pki::selfSignedCA(pki::ecKey(), "ca", clock.wallNow() - 1h, clock.wallNow() + 24h);
  ClusterTrustBundlePublisher p(signer, ca, server->client(), clock);
  auto bundle = [&](const std::string& name, const std::string& content) {
    ClusterTrustBundle b;
    b.metadata.name = name;
    b.spec.signerName = signer;
    b.spec.trustBundle = content;
    auto stored = server->add(b);
    p.informer().store().upsert(name, std::make_shared<const ClusterTrustBundle>(stored));
  };
  const std::string name = constructBundleName(signer, ca);
  auto first = p.syncClusterTrustBundle();
  ASSERT_TRUE(first.status.ok()) << first.status.toString();
  auto created = server->get<ClusterTrustBundle>("", name);
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(created->spec.signerName, signer);
  EXPECT_EQ(created->spec.trustBundle, ca);

  bundle(name, "edited");
  bundle("kubernetes.io:kube-apiserver-serving:old", "old");
  server->clearActions();
  ASSERT_TRUE(p.syncClusterTrustBundle().status.ok());
  EXPECT_EQ(server->get<ClusterTrustBundle>("", name)->spec.trustBundle, ca);
  EXPECT_FALSE(server->get<ClusterTrustBundle>("", "kubernetes.io:kube-apiserver-serving:old").has_value());
  EXPECT_EQ(server->actionsFor("update", "clustertrustbundles").size(), 1u);
  EXPECT_EQ(server->actionsFor("delete", "clustertrustbundles").size(), 1u);
}

}  // namespace
}  // namespace kcm::controllers::certificates
