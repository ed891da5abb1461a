// bootstrap-signer-controller and token-cleaner-controller (upstream pkg/controller/bootstrap) over informer
// stores the test fills and the fake apiserver: the cases of upstream's bootstrapsigner_test.go,
// tokencleaner_test.go and util_test.go, and cluster-bootstrap's jws_test.go vectors for the detached signature.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "controllers/bootstrap/bootstrapsigner.h"
#include "controllers/bootstrap/tokencleaner.h"
#include "controllers/bootstrap/util.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::bootstrap {
namespace {

using api::core::v1::ConfigMap;
using api::core::v1::Secret;
using testing::FakeApiServer;
using namespace std::chrono_literals;

Secret tokenSecret(const std::string& id, const std::string& secret) {
  Secret s;
  s.metadata.namespace_ = "kube-system";
  s.metadata.name = std::string(kBootstrapTokenSecretPrefix) + id;
  s.metadata.uid = "uid" + id;
  s.type = kSecretTypeBootstrapToken;
  s.data[kBootstrapTokenIDKey] = id;
  s.data[kBootstrapTokenSecretKey] = secret;
  return s;
}

Secret signingToken(const std::string& id, const std::string& secret) {
  Secret s = tokenSecret(id, secret);
  s.data[kBootstrapTokenUsageSigningKey] = "true";
  return s;
}

// ---- jws.ComputeDetachedSignature (cluster-bootstrap token/jws/jws_test.go)

TEST(DetachedSignature, MatchesClusterBootstrapVectors) {
  const std::string content = "Hello from the other side. I must have called a thousand times.";
  EXPECT_EQ(computeDetachedSignature(content, "joshua", "my voice is my passcode"),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8");
  EXPECT_EQ(computeDetachedSignature("", "joshua", "my voice is my passcode"),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk");
  EXPECT_EQ(computeDetachedSignature(content, "joshua", ""),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8");
}

// ---- util_test.go

TEST(ValidateSecretForSigning, NeedsAMatchingNameTheSecretTheSigningUsageAndNoExpiry) {
  const auto now = std::chrono::system_clock::now();
  auto t = validateSecretForSigning(signingToken("abc123", "tokenSecret"), now);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, "abc123");
  EXPECT_EQ(t->secret, "tokenSecret");

  EXPECT_FALSE(validateSecretForSigning(tokenSecret("abc123", "tokenSecret"), now));  // no signing usage
  Secret usageFalse = signingToken("abc123", "s");
  usageFalse.data[kBootstrapTokenUsageSigningKey] = "false";
  EXPECT_FALSE(validateSecretForSigning(usageFalse, now));
  Secret badName = signingToken("abc123", "s");
  badName.metadata.name = "bad-name";
  EXPECT_FALSE(validateSecretForSigning(badName, now));
  Secret mismatch = signingToken("abc123", "s");
  mismatch.metadata.name = std::string(kBootstrapTokenSecretPrefix) + "def456";
  EXPECT_FALSE(validateSecretForSigning(mismatch, now));
  Secret noSecret = signingToken("abc123", "");
  EXPECT_FALSE(validateSecretForSigning(noSecret, now));
  Secret expired = signingToken("abc123", "s");
  expired.data[kBootstrapTokenExpirationKey] = "1970-01-01T00:00:01Z";
  EXPECT_FALSE(validateSecretForSigning(expired, now));
  Secret future = signingToken("abc123", "s");
  future.data[kBootstrapTokenExpirationKey] = "2999-01-01T00:00:00Z";
  EXPECT_TRUE(validateSecretForSigning(future, now));
}

TEST(ParseName, SixLowercaseAlphanumericsAfterThePrefix) {
  EXPECT_EQ(parseName("bootstrap-token-abc123").value_or(""), "abc123");
  EXPECT_FALSE(parseName("bootstrap-token-abc12"));
  EXPECT_FALSE(parseName("bootstrap-token-abc1234"));
  EXPECT_FALSE(parseName("bootstrap-token-ABC123"));
  EXPECT_FALSE(parseName("other-token-abc123"));
}

TEST(GetExpiration, UnparseableIsExpiredAbsentIsNot) {
  const auto now = std::chrono::system_clock::now();
  Secret s = tokenSecret("abc123", "s");
  EXPECT_FALSE(getExpiration(s, now).expired);
  s.data[kBootstrapTokenExpirationKey] = "not a time";
  EXPECT_TRUE(getExpiration(s, now).expired);
  auto in = std::chrono::duration_cast<std::chrono::seconds>((now + 90min).time_since_epoch()).count();
  s.data[kBootstrapTokenExpirationKey] = api::Time::fromUnix(in).rfc3339();
  Expiration e = getExpiration(s, now);
  EXPECT_FALSE(e.expired);
  EXPECT_GT(e.remaining, 89min);
  EXPECT_LE(e.remaining, 90min);
}

// The fake apiserver and informer stores both controllers' tests run on.
class Fakes : public ::testing::Test {
 protected:
  void SetUp() override { server->addStandardResources(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
};

// ---- bootstrapsigner_test.go

class SignerTest : public Fakes {
 protected:
  void SetUp() override {
    Fakes::SetUp();
    signer = std::make_unique<Signer>(server->client(), factory.forType<Secret>(), factory.forType<ConfigMap>(),
                                      SignerOptions{}, clock);
  }
  void addConfigMap(const std::map<std::string, std::string>& sigs) {
    ConfigMap cm;
    cm.metadata.namespace_ = "kube-public";
    cm.metadata.name = "cluster-info";
    cm.data[kKubeConfigKey] = "payload";
    for (const auto& [id, sig] : sigs) cm.data[std::string(kJWSSignatureKeyPrefix) + id] = sig;
    ConfigMap stored = server->add(cm);
    factory.forType<ConfigMap>().store().upsert("kube-public/cluster-info", std::make_shared<const ConfigMap>(stored));
  }
  void addSecret(const Secret& s) {
    factory.forType<Secret>().store().upsert(s.metadata.namespace_ + "/" + s.metadata.name,
                                             std::make_shared<const Secret>(s));
  }
  ConfigMap stored() { return server->get<ConfigMap>("kube-public", "cluster-info").value(); }
  size_t updates() { return server->actionsFor("update", "configmaps").size(); }

  std::unique_ptr<Signer> signer;
};

TEST_F(SignerTest, NoConfigMapNoWrites) {
  addSecret(signingToken("abc123", "tokenSecret"));
  signer->signConfigMap();
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(SignerTest, SimpleSign) {
  addConfigMap({});
  addSecret(signingToken("abc123", "tokenSecret"));
  server->clearActions();
  signer->signConfigMap();
  ASSERT_EQ(updates(), 1u);
  ConfigMap cm = stored();
  EXPECT_EQ(cm.data.at("jws-kubeconfig-abc123"), computeDetachedSignature("payload", "abc123", "tokenSecret"));
  EXPECT_EQ(cm.data.at("kubeconfig"), "payload");
}

TEST_F(SignerTest, NoSignNeededWhenTheSignatureIsCurrent) {
  addConfigMap({{"abc123", computeDetachedSignature("payload", "abc123", "tokenSecret")}});
  addSecret(signingToken("abc123", "tokenSecret"));
  server->clearActions();
  signer->signConfigMap();
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(SignerTest, UpdateSignature) {
  addConfigMap({{"abc123", "old signature"}});
  addSecret(signingToken("abc123", "tokenSecret"));
  server->clearActions();
  signer->signConfigMap();
  ASSERT_EQ(updates(), 1u);
  EXPECT_EQ(stored().data.at("jws-kubeconfig-abc123"), computeDetachedSignature("payload", "abc123", "tokenSecret"));
}

TEST_F(SignerTest, RemoveSignatureOfATokenThatIsGoneOrCannotSign) {
  addConfigMap({{"abc123", "old signature"}, {"def456", "other"}});
  addSecret(tokenSecret("def456", "noSigningUsage"));
  server->clearActions();
  signer->signConfigMap();
  ASSERT_EQ(updates(), 1u);
  ConfigMap cm = stored();
  EXPECT_FALSE(cm.data.contains("jws-kubeconfig-abc123"));
  EXPECT_FALSE(cm.data.contains("jws-kubeconfig-def456"));
  EXPECT_TRUE(cm.data.contains("kubeconfig"));
}

TEST_F(SignerTest, TokensOutsideKubeSystemAndOtherTypesDoNotSign) {
  addConfigMap({});
  Secret elsewhere = signingToken("abc123", "s");
  elsewhere.metadata.namespace_ = "default";
  addSecret(elsewhere);
  Secret opaque = signingToken("def456", "s");
  opaque.type = "Opaque";
  addSecret(opaque);
  server->clearActions();
  signer->signConfigMap();
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(SignerTest, NoKubeconfigKeyNoWrites) {
  ConfigMap cm;
  cm.metadata.namespace_ = "kube-public";
  cm.metadata.name = "cluster-info";
  cm.data["other"] = "x";
  factory.forType<ConfigMap>().store().upsert("kube-public/cluster-info",
                                              std::make_shared<const ConfigMap>(server->add(cm)));
  addSecret(signingToken("abc123", "s"));
  server->clearActions();
  signer->signConfigMap();
  EXPECT_TRUE(server->writes().empty());
}

// ---- tokencleaner_test.go

class CleanerTest : public Fakes {
 protected:
  void SetUp() override {
    Fakes::SetUp();
    cleaner = std::make_unique<TokenCleaner>(server->client(), factory.forType<Secret>(), clock);
  }
  Secret add(Secret s) {
    Secret stored = server->add(s);
    factory.forType<Secret>().store().upsert("kube-system/" + s.metadata.name, std::make_shared<const Secret>(stored));
    server->clearActions();
    return stored;
  }
  std::string at(std::chrono::seconds fromNow) {
    auto t = std::chrono::duration_cast<std::chrono::seconds>((clock.wallNow() + fromNow).time_since_epoch()).count();
    return api::Time::fromUnix(t).rfc3339();
  }

  std::unique_ptr<TokenCleaner> cleaner;
};

TEST_F(CleanerTest, NoExpirationNothingToDo) {
  add(tokenSecret("abc123", "s"));
  auto r = cleaner->syncFunc("kube-system/bootstrap-token-abc123");
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(CleanerTest, ExpiredIsDeletedWithAUIDPrecondition) {
  Secret s = tokenSecret("abc123", "s");
  s.data[kBootstrapTokenExpirationKey] = at(-3600s);
  Secret stored = add(s);
  cleaner->syncFunc("kube-system/bootstrap-token-abc123");
  auto deletes = server->actionsFor("delete", "secrets");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].name, "bootstrap-token-abc123");
  EXPECT_NE(deletes[0].body.find(stored.metadata.uid), std::string::npos) << deletes[0].body;
  EXPECT_FALSE(server->get<Secret>("kube-system", "bootstrap-token-abc123"));
}

TEST_F(CleanerTest, NotExpiredComesBackAtItsExpiration) {
  Secret s = tokenSecret("abc123", "s");
  s.data[kBootstrapTokenExpirationKey] = at(3600s);
  add(s);
  auto r = cleaner->syncFunc("kube-system/bootstrap-token-abc123");
  EXPECT_TRUE(server->writes().empty());
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_GT(*r.requeueAfter, 3599s);
  EXPECT_LE(*r.requeueAfter, 3600s);
}

TEST_F(CleanerTest, ExpiredAtTheRequeueTime) {
  Secret s = tokenSecret("abc123", "s");
  s.data[kBootstrapTokenExpirationKey] = at(10s);
  add(s);
  EXPECT_TRUE(cleaner->syncFunc("kube-system/bootstrap-token-abc123").requeueAfter);
  clock.advance(11s);
  cleaner->syncFunc("kube-system/bootstrap-token-abc123");
  EXPECT_EQ(server->actionsFor("delete", "secrets").size(), 1u);
}

TEST_F(CleanerTest, UnparseableExpirationIsExpired) {
  Secret s = tokenSecret("abc123", "s");
  s.data[kBootstrapTokenExpirationKey] = "tomorrow";
  add(s);
  cleaner->syncFunc("kube-system/bootstrap-token-abc123");
  EXPECT_EQ(server->actionsFor("delete", "secrets").size(), 1u);
}

TEST_F(CleanerTest, OtherSecretTypesAndDeletedSecretsAreLeftAlone) {
  Secret s = tokenSecret("abc123", "s");
  s.type = "Opaque";
  s.data[kBootstrapTokenExpirationKey] = at(-10s);
  add(s);
  cleaner->syncFunc("kube-system/bootstrap-token-abc123");
  EXPECT_TRUE(cleaner->syncFunc("kube-system/bootstrap-token-gone00").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

}  // namespace
}  // namespace kcm::controllers::bootstrap
