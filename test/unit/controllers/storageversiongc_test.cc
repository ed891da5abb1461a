// storageversion-garbage-collector-controller (upstream pkg/controller/storageversiongc/gc_controller_test.go's
// cases) over the fake apiserver: entries of apiservers whose identity Lease is gone are removed, a StorageVersion
// left empty is deleted, the common encoding version and its condition follow.
#include <gtest/gtest.h>

#include "api/gen/apiserverinternal_v1alpha1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "controllers/storageversiongc/gc_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::storageversiongc {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

ServerStorageVersion entry(const std::string& id, const std::string& encoding = "v1") {
  ServerStorageVersion e;
  e.apiServerID = id, e.encodingVersion = encoding, e.decodableVersions = {encoding}, e.servedVersions = {encoding};
  return e;
}

class StorageVersionGCTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"internal.apiserver.k8s.io", "v1alpha1", "storageversions", "StorageVersion", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  // An identity Lease in kube-system (a kube-apiserver's unless `component` says otherwise).
  void lease(const std::string& name, const std::string& component = "kube-apiserver") {
    Lease l;
    l.metadata.namespace_ = "kube-system";
    l.metadata.name = name;
    l.metadata.labels["apiserver.kubernetes.io/identity"] = component;
    factory.forType<Lease>().store().upsert("kube-system/" + name, std::make_shared<const Lease>(server->add(l)));
  }
  StorageVersion storageVersion(const std::string& name, std::vector<ServerStorageVersion> entries) {
    StorageVersion sv;
    sv.metadata.name = name;
    sv.status.storageVersions = std::move(entries);
    return server->add(sv);
  }
  std::optional<StorageVersion> get(const std::string& name) { return server->get<StorageVersion>("", name); }
  std::vector<std::string> ids(const std::string& name) {
    std::vector<std::string> out;
    if (auto sv = get(name))
      for (const auto& e : sv->status.storageVersions) out.push_back(e.apiServerID);
    return out;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  Controller controller{server->client(), factory.forType<Lease>(), factory.forType<StorageVersion>(), clock};
};

// "the lease of one apiserver is deleted": its entries go, the others stay, and the common version is recomputed.
TEST_F(StorageVersionGCTest, ADeletedLeasesEntriesAreRemoved) {
  lease("kube-apiserver-1");
  storageVersion("k8s.test.resources", {entry("kube-apiserver-1", "v1"), entry("kube-apiserver-2", "v2")});
  storageVersion("k8s.test.other", {entry("kube-apiserver-2", "v2")});
  ASSERT_TRUE(controller.processDeletedLease("kube-apiserver-2").status.ok());
  EXPECT_EQ(ids("k8s.test.resources"), std::vector<std::string>{"kube-apiserver-1"});
  auto sv = get("k8s.test.resources");
  EXPECT_EQ(sv->status.commonEncodingVersion, std::optional<std::string>("v1"));
  ASSERT_EQ(sv->status.conditions.size(), 1u);
  EXPECT_EQ(sv->status.conditions[0].type, "AllEncodingVersionsEqual");
  EXPECT_EQ(sv->status.conditions[0].status, "True");
  EXPECT_EQ(sv->status.conditions[0].reason, "CommonEncodingVersionSet");
  EXPECT_FALSE(get("k8s.test.other").has_value()) << "left without entries: deleted";
  EXPECT_EQ(server->actionsFor("update", "storageversions/status").size(), 1u);
  EXPECT_EQ(server->actionsFor("delete", "storageversions").size(), 1u);
}

// A Lease that still exists on the apiserver (a delete event seen late) changes nothing.
TEST_F(StorageVersionGCTest, ALeaseThatStillExistsChangesNothing) {
  lease("kube-apiserver-1");
  storageVersion("k8s.test.resources", {entry("kube-apiserver-1")});
  ASSERT_TRUE(controller.processDeletedLease("kube-apiserver-1").status.ok());
  EXPECT_EQ(ids("k8s.test.resources"), std::vector<std::string>{"kube-apiserver-1"});
  EXPECT_TRUE(server->writes().empty());
}

// "storage version with invalid id": entries without a kube-apiserver Lease (none, or another component's) go.
TEST_F(StorageVersionGCTest, EntriesWithoutAKubeAPIServerLeaseAreRemoved) {
  lease("kube-apiserver-1");
  lease("not-an-apiserver", "kube-scheduler");
  storageVersion("k8s.test.resources",
                 {entry("kube-apiserver-1", "v1"), entry("gone", "v2"), entry("not-an-apiserver", "v2")});
  ASSERT_TRUE(controller.syncStorageVersion("k8s.test.resources").status.ok());
  EXPECT_EQ(ids("k8s.test.resources"), std::vector<std::string>{"kube-apiserver-1"});
  storageVersion("k8s.test.orphan", {entry("gone")});
  ASSERT_TRUE(controller.syncStorageVersion("k8s.test.orphan").status.ok());
  EXPECT_FALSE(get("k8s.test.orphan").has_value());
  EXPECT_TRUE(controller.syncStorageVersion("no-such").status.ok());
}

// Only kube-apiserver identity Leases in kube-system queue work; a StorageVersion is queued when an entry's Lease
// is missing from the cache.
TEST_F(StorageVersionGCTest, HandlersQueueOnlyWhatNeedsWork) {
  Lease other;
  other.metadata.namespace_ = "default", other.metadata.name = "x";
  other.metadata.labels["apiserver.kubernetes.io/identity"] = "kube-apiserver";
  controller.onDeleteLease(other);  // not in kube-system
  Lease scheduler;
  scheduler.metadata.namespace_ = "kube-system", scheduler.metadata.name = "s";
  scheduler.metadata.labels["apiserver.kubernetes.io/identity"] = "kube-scheduler";
  controller.onDeleteLease(scheduler);  // not a kube-apiserver's
  EXPECT_EQ(controller.leaseQueue().len(), 0u);
  Lease apiserver = scheduler;
  apiserver.metadata.name = "kube-apiserver-9";
  apiserver.metadata.labels["apiserver.kubernetes.io/identity"] = "kube-apiserver";
  controller.onDeleteLease(apiserver);
  EXPECT_EQ(controller.leaseQueue().tryGet(), std::optional<std::string>("kube-apiserver-9"));

  lease("kube-apiserver-1");
  StorageVersion sv;
  sv.metadata.name = "fine";
  sv.status.storageVersions = {entry("kube-apiserver-1")};
  controller.enqueueStorageVersion(sv);
  EXPECT_EQ(controller.storageVersionQueue().len(), 0u);
  sv.metadata.name = "stale";
  sv.status.storageVersions.push_back(entry("kube-apiserver-gone"));
  controller.enqueueStorageVersion(sv);
  EXPECT_EQ(controller.storageVersionQueue().tryGet(), std::optional<std::string>("stale"));
}

TEST(SetCommonEncodingVersion, DisagreementUnsetsItAndAChangeMovesTheTransition) {
  StorageVersion sv;
  sv.metadata.generation = 3;
  sv.status.storageVersions = {entry("a", "v1"), entry("b", "v2")};
  SetCommonEncodingVersion(sv, api::Time::fromUnix(100));
  EXPECT_FALSE(sv.status.commonEncodingVersion.has_value());
  ASSERT_EQ(sv.status.conditions.size(), 1u);
  EXPECT_EQ(sv.status.conditions[0].status, "False");
  EXPECT_EQ(sv.status.conditions[0].reason, "CommonEncodingVersionUnset");
  EXPECT_EQ(sv.status.conditions[0].message, "Common encoding version unset");
  EXPECT_EQ(sv.status.conditions[0].observedGeneration, 3);
  sv.status.storageVersions = {entry("a", "v1")};
  SetCommonEncodingVersion(sv, api::Time::fromUnix(200));
  EXPECT_EQ(sv.status.commonEncodingVersion, std::optional<std::string>("v1"));
  EXPECT_EQ(sv.status.conditions[0].status, "True");
  EXPECT_EQ(sv.status.conditions[0].lastTransitionTime.unixSeconds, 200);
  SetCommonEncodingVersion(sv, api::Time::fromUnix(300));  // same version: no transition
  EXPECT_EQ(sv.status.conditions[0].lastTransitionTime.unixSeconds, 200);
  sv.status.storageVersions = {entry("a", "v2")};
  SetCommonEncodingVersion(sv, api::Time::fromUnix(400));  // another common version: a forced transition
  EXPECT_EQ(sv.status.commonEncodingVersion, std::optional<std::string>("v2"));
  EXPECT_EQ(sv.status.conditions[0].lastTransitionTime.unixSeconds, 400);
}

}  // namespace
}  // namespace kcm::controllers::storageversiongc
