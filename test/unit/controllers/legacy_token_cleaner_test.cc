// legacy-serviceaccount-token-cleaner-controller (upstream legacy_serviceaccount_token_cleaner_test.go): which
// legacy token Secrets are labelled invalid, which deleted and which kept, with the clock injected, over the fake
// apiserver and informer stores the test fills.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "client/typed_client.h"
#include "controllers/serviceaccount/legacy_serviceaccount_token_cleaner.h"
#include "controllers/util/pod_secrets.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {
namespace {

using api::core::v1::Pod;
using api::core::v1::Secret;
using api::core::v1::ServiceAccount;
using testing::FakeApiServer;
using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;
using json = nlohmann::json;

constexpr std::chrono::seconds kPeriod = 24h * 365;

class LegacyTokenCleanerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    tracking(clock.wallNow() - kPeriod - 24h * 30);
    ServiceAccount sa;
    sa.metadata.namespace_ = "ns";
    sa.metadata.name = "default";
    sa.metadata.uid = "sa-uid";
    sa.secrets.push_back({});
    sa.secrets.back().name = "token";
    cache(sa);
  }
  void tracking(SysClock::time_point since) {
    api::core::v1::ConfigMap cm;
    cm.metadata.namespace_ = "kube-system";
    cm.metadata.name = kLegacyTokenTrackingConfigMapName;
    cm.data[kLegacyTokenTrackingConfigMapDataKey] = formatDate(since);
    if (auto old = server->get<api::core::v1::ConfigMap>("kube-system", cm.metadata.name)) {
      old->data = cm.data;
      ASSERT_TRUE(client::update(*server->client(), *old).ok());
    } else {
      server->add(cm);
    }
  }
  template <class T>
  void cache(const T& o) {
    factory.forType<T>().store().upsert(o.metadata.namespace_ + "/" + o.metadata.name, std::make_shared<const T>(o));
  }
  Secret token(std::chrono::seconds age, std::map<std::string, std::string> labels = {}) {
    Secret s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = "token";
    s.metadata.creationTimestamp = api::Time::fromUnix(SysClock::to_time_t(clock.wallNow() - age));
    s.metadata.annotations["kubernetes.io/service-account.name"] = "default";
    s.metadata.annotations["kubernetes.io/service-account.uid"] = "sa-uid";
    for (auto& [k, v] : labels) s.metadata.labels[k] = v;
    s.type = "kubernetes.io/service-account-token";
    Secret stored = server->add(s);
    cache(stored);
    return stored;
  }
  std::string daysAgo(int d) { return formatDate(clock.wallNow() - 24h * d); }
  size_t patches() { return server->actionsFor("patch", "secrets").size(); }
  size_t deletes() { return server->actionsFor("delete", "secrets").size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  LegacySATokenCleaner cleaner{server->client(), factory.forType<ServiceAccount>(), factory.forType<Secret>(),
                               factory.forType<Pod>(), kPeriod, LegacySATokenCleaner::kDefaultCleanerSyncInterval,
                               clock};
};

TEST_F(LegacyTokenCleanerTest, AnUnusedOldTokenIsLabelledInvalidSinceToday) {
  Secret s = token(kPeriod + 24h);
  cleaner.evaluateSATokens();
  auto p = server->actionsFor("patch", "secrets");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].patchType, "application/merge-patch+json");
  EXPECT_EQ(json::parse(p[0].body),
            json::parse(R"({"kind":"Secret","apiVersion":"v1","metadata":{"name":"token","namespace":"ns","uid":")" +
                        s.metadata.uid + R"(","labels":{"kubernetes.io/legacy-token-invalid-since":")" +
                        formatDate(clock.wallNow()) + R"("}}})"));
  EXPECT_EQ(server->get<Secret>("ns", "token")->metadata.labels.at(kLegacyTokenInvalidSinceLabelKey),
            formatDate(clock.wallNow()));
  EXPECT_EQ(deletes(), 0u);
}

TEST_F(LegacyTokenCleanerTest, ATokenInvalidForAWholePeriodIsDeletedWithItsResourceVersion) {
  Secret s = token(kPeriod * 2, {{kLegacyTokenInvalidSinceLabelKey, daysAgo(366)}});
  cleaner.evaluateSATokens();
  auto d = server->actionsFor("delete", "secrets");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(json::parse(d[0].body)["preconditions"]["resourceVersion"], s.metadata.resourceVersion.str());
  EXPECT_FALSE(server->get<Secret>("ns", "token").has_value());
}

TEST_F(LegacyTokenCleanerTest, RecentlyInvalidatedOrRecentlyUsedTokensAreKept) {
  token(kPeriod * 2, {{kLegacyTokenInvalidSinceLabelKey, daysAgo(364)}});
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);
  server->clearActions();
  token(kPeriod * 2, {{kLegacyTokenLastUsedLabelKey, daysAgo(300)}});
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);
  // Used, but not within the period: labelled.
  token(kPeriod * 2, {{kLegacyTokenLastUsedLabelKey, daysAgo(400)}});
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches(), 1u);
}

TEST_F(LegacyTokenCleanerTest, YoungUnreferencedMountedOrForeignTokensAreKept) {
  token(kPeriod - 24h);  // created within the period
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);

  Secret s = token(kPeriod + 24h);
  Pod pod;
  pod.metadata.namespace_ = "ns";
  pod.metadata.name = "p";
  auto& v = pod.spec.volumes.emplace_back();
  v.name = "t";
  v.secret = api::core::v1::SecretVolumeSource{};
  v.secret->secretName = "token";
  cache(pod);
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);
  factory.forType<Pod>().store().erase("ns/p");

  ServiceAccount sa = *factory.forType<ServiceAccount>().store().get("ns/default");
  sa.secrets.clear();  // no longer referenced by its ServiceAccount
  cache(sa);
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);
  sa.secrets.push_back({});
  sa.secrets.back().name = "token";
  sa.metadata.uid = "another-uid";  // a ServiceAccount of the same name, recreated
  cache(sa);
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);
  sa.metadata.uid = "sa-uid";
  cache(sa);
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches(), 1u);
}

TEST_F(LegacyTokenCleanerTest, NothingHappensUntilTrackingHasRunForAPeriodAndADay) {
  token(kPeriod + 24h * 100);
  tracking(clock.wallNow() - kPeriod);  // the day after `since` + the period is still ahead
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches() + deletes(), 0u);
  tracking(clock.wallNow() - kPeriod - 48h);
  cleaner.evaluateSATokens();
  EXPECT_EQ(patches(), 1u);
}

TEST(PodSecretNames, EveryReferenceKindIsFound) {
  Pod pod;
  pod.spec.imagePullSecrets.push_back({});
  pod.spec.imagePullSecrets.back().name = "pull";
  auto& c = pod.spec.containers.emplace_back();
  c.envFrom.emplace_back().secretRef = api::core::v1::SecretEnvSource{};
  c.envFrom.back().secretRef->name = "env-from";
  auto& e = c.env.emplace_back();
  e.valueFrom = api::core::v1::EnvVarSource{};
  e.valueFrom->secretKeyRef = api::core::v1::SecretKeySelector{};
  e.valueFrom->secretKeyRef->name = "env";
  auto& init = pod.spec.initContainers.emplace_back();
  init.envFrom.emplace_back().secretRef = api::core::v1::SecretEnvSource{};
  init.envFrom.back().secretRef->name = "init";
  auto& projected = pod.spec.volumes.emplace_back();
  projected.projected = api::core::v1::ProjectedVolumeSource{};
  projected.projected->sources.emplace_back().secret = api::core::v1::SecretProjection{};
  projected.projected->sources.back().secret->name = "projected";
  auto& csi = pod.spec.volumes.emplace_back();
  csi.csi = api::core::v1::CSIVolumeSource{};
  csi.csi->nodePublishSecretRef = api::core::v1::LocalObjectReference{};
  csi.csi->nodePublishSecretRef->name = "csi";
  std::set<std::string> names;
  insertPodSecretNames(pod, names);
  EXPECT_EQ(names, (std::set<std::string>{"pull", "env-from", "env", "init", "projected", "csi"}));
}

TEST(LegacyTokenDates, StrictDayParsing) {
  EXPECT_TRUE(parseDate("2026-02-28"));
  EXPECT_FALSE(parseDate("2026-02-30"));
  EXPECT_FALSE(parseDate("2026-2-28"));
  EXPECT_FALSE(parseDate("2026-02-28T00:00:00Z"));
  EXPECT_EQ(formatDate(*parseDate("2024-02-29")), "2024-02-29");
}

}  // namespace
}  // namespace kcm::controllers
