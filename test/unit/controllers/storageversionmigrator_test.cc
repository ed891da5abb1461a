// storage-version-migrator-controller's three loops (upstream pkg/controller/storageversionmigrator's
// storageversionmigrator_test.go, resourceversion_test.go, migrationrunner_test.go cases) over the fake apiserver,
// plus the condition and resourceVersion helpers.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/meta_v1_json.h"
#include "api/gen/storagemigration_v1_json.h"
#include "controllers/storageversionmigrator/migrationrunner.h"
#include "controllers/storageversionmigrator/resourceversion.h"
#include "controllers/storageversionmigrator/storageversionmigrator.h"
#include "controllers/storageversionmigrator/svm_util.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::storageversionmigrator {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

TEST(SVMUtil, ConditionsMessagesAndResourceVersions) {
  std::vector<Condition> conds;
  const api::Time t1 = api::Time::fromUnix(100), t2 = api::Time::fromUnix(200);
  Condition c;
  c.type = "Running", c.status = "True", c.reason = "MigrationRunning", c.message = "a";
  EXPECT_TRUE(SetStatusCondition(conds, c, t1));
  EXPECT_EQ(conds[0].lastTransitionTime.unixSeconds, 100);
  EXPECT_FALSE(SetStatusCondition(conds, c, t2));  // nothing changed
  c.message = "b";
  EXPECT_TRUE(SetStatusCondition(conds, c, t2));
  EXPECT_EQ(conds[0].lastTransitionTime.unixSeconds, 100) << "the status did not change: no transition";
  c.status = "False";
  EXPECT_TRUE(SetStatusCondition(conds, c, t2));
  EXPECT_EQ(conds[0].lastTransitionTime.unixSeconds, 200);
  EXPECT_TRUE(IsStatusConditionFalse(conds, "Running"));

  StorageVersionMigration svm;
  setStatusConditions(svm, "Failed", "R", "m1", t1);
  setStatusConditions(svm, "Failed", "R", "m2", t2);  // already there: kept
  ASSERT_EQ(svm.status.conditions.size(), 1u);
  EXPECT_EQ(svm.status.conditions[0].message, "m1");

  int toPatch = 2, total = 5, none = 0, zero = 0;
  Status transient(StatusCode::kInternal, "boom");
  EXPECT_EQ(migrationRunningMessage(nullptr, nullptr, nullptr), "The migration is running");
  EXPECT_EQ(migrationRunningMessage(&toPatch, &total, nullptr), "The migration is running, 2/5 objects not yet migrated");
  EXPECT_EQ(migrationRunningMessage(&none, &total, nullptr), "The migration is running, 5 objects verified migrated");
  EXPECT_EQ(migrationRunningMessage(&none, &zero, &transient), "The migration is running; transient error: boom");

  EXPECT_EQ(*CompareResourceVersion("9", "10"), -1);
  EXPECT_EQ(*CompareResourceVersion("11", "10"), 1);
  EXPECT_EQ(*CompareResourceVersion("10", "10"), 0);
  EXPECT_EQ(CompareResourceVersion("010", "10").status().message(), "resource version is not well formed: 010");
  EXPECT_EQ(CompareResourceVersion("10", "").status().message(), "resource version is not well formed: ");
  EXPECT_EQ(gvrString({"", "v1", "secrets"}), "/v1, Resource=secrets");
}

class SVMTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"storagemigration.k8s.io", "v1", "storageversionmigrations", "StorageVersionMigration", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    // Served, but without "patch": cannot be migrated.
    server->addResource({"readonly.example.com", "v1", "gauges", "Gauge", true, {"get", "list", "update", "watch"}, {}});
  }
  void TearDown() override { stop.request_stop(); }
  api::Time now() {
    return api::Time::fromUnix(
        std::chrono::duration_cast<std::chrono::seconds>(clock.wallNow().time_since_epoch()).count());
  }
  // An SVM for group/resource, created `age` ago, in the server and the cache.
  StorageVersionMigration addSVM(const std::string& name, const std::string& group, const std::string& resource,
                                 std::chrono::seconds age = 0s, const std::vector<std::string>& trueConditions = {},
                                 const std::string& rv = "") {
    StorageVersionMigration s;
    s.metadata.name = name;
    s.spec.resource.group = group;
    s.spec.resource.resource = resource;
    s.status.resourceVersion = rv;
    for (const auto& t : trueConditions) {
      Condition c;
      c.type = t, c.status = "True", c.reason = "r", c.message = "m", c.lastTransitionTime = now();
      s.status.conditions.push_back(c);
    }
    StorageVersionMigration stored = server->add(s);
    stored.metadata.creationTimestamp = api::Time::fromUnix(now().unixSeconds - age.count());
    factory.forType<StorageVersionMigration>().store().upsert(name, std::make_shared<const StorageVersionMigration>(stored));
    return stored;
  }
  StorageVersionMigration svm(const std::string& name) {
    return server->get<StorageVersionMigration>("", name).value_or(StorageVersionMigration{});
  }
  std::string cond(const std::string& name, const std::string& type, api::String Condition::*field) {
    auto s = svm(name);
    const Condition* c = FindStatusCondition(s.status.conditions, type);
    return c ? (*c).*field : "";
  }
  void addSecret(const std::string& name) {
    api::core::v1::Secret s;
    s.metadata.namespace_ = "ns1";
    s.metadata.name = name;
    server->add(s);
  }

  FakeClock clock{std::chrono::system_clock::now()};
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::shared_ptr<client::DiscoveryClient> discovery = std::make_shared<client::DiscoveryClient>(server->client());
  std::stop_source stop;
};

// --- MigrationRunnerController

TEST_F(SVMTest, TheRunnerPromotesTheOldestPendingMigrationOfAResourceOnly) {
  MigrationRunnerController runner(server->client(), factory.forType<StorageVersionMigration>(), clock);
  addSVM("newer", "", "secrets", 10s);
  addSVM("older", "", "secrets", 20s);
  addSVM("other", "", "configmaps", 30s);
  ASSERT_TRUE(runner.sync("/secrets").status.ok());
  EXPECT_EQ(cond("older", "Running", &Condition::status), "True");
  EXPECT_EQ(cond("older", "Running", &Condition::reason), "MigrationRunning");
  EXPECT_EQ(cond("older", "Running", &Condition::message), "The migration is running");
  EXPECT_EQ(cond("newer", "Running", &Condition::status), "");
  EXPECT_EQ(cond("other", "Running", &Condition::status), "");
  EXPECT_EQ(server->actionsFor("get", "customresourcedefinitions").size(), 1u);  // secrets. is no CRD

  // While one runs, none is promoted.
  addSVM("older", "", "secrets", 20s, {"Running"});
  server->clearActions();
  ASSERT_TRUE(runner.sync("/secrets").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(SVMTest, TheRunnerTakesAFinishedMigrationOutOfRunning) {
  MigrationRunnerController runner(server->client(), factory.forType<StorageVersionMigration>(), clock);
  addSVM("done", "", "secrets", 20s, {"Running", "Succeeded"});
  addSVM("next", "", "secrets", 10s);
  ASSERT_TRUE(runner.sync("/secrets").status.ok());
  EXPECT_EQ(cond("done", "Running", &Condition::status), "False");
  EXPECT_EQ(cond("done", "Running", &Condition::reason), "MigrationCompleted");
  EXPECT_EQ(cond("done", "Running", &Condition::message), "Migration completed");
  EXPECT_EQ(cond("next", "Running", &Condition::status), "True");  // the next one starts
}

TEST_F(SVMTest, TheRunnerMarksACRDMigratingAndThenUpdatesItsStoredVersions) {
  server->addResource({"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false,
                       {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  server->add("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
              nlohmann::json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
                "metadata":{"name":"widgets.example.com","generation":2},
                "spec":{"group":"example.com","versions":[{"name":"v1","storage":false},{"name":"v2","storage":true}]},
                "status":{"storedVersions":["v1","v2"]}})"));
  MigrationRunnerController runner(server->client(), factory.forType<StorageVersionMigration>(), clock);
  addSVM("widgets", "example.com", "widgets", 10s);
  ASSERT_TRUE(runner.sync("example.com/widgets").status.ok());
  auto patches = server->actionsFor("patch", "customresourcedefinitions/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_NE(patches[0].patchType.find("apply-patch"), std::string::npos);
  auto body = nlohmann::json::parse(patches[0].body);
  EXPECT_EQ(body["status"]["conditions"][0]["type"], "StorageMigrating");
  EXPECT_EQ(body["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(body["status"]["conditions"][0]["message"], "Migration widgets is running");
  EXPECT_EQ(body["status"]["conditions"][0]["observedGeneration"], 2);
  bool manager = false;
  for (const auto& [k, v] : patches[0].query) manager |= k == "fieldManager" && v == "migration-runner-controller";
  EXPECT_TRUE(manager);

  addSVM("widgets", "example.com", "widgets", 10s, {"Running", "Succeeded"});
  server->clearActions();
  ASSERT_TRUE(runner.sync("example.com/widgets").status.ok());
  patches = server->actionsFor("patch", "customresourcedefinitions/status");
  ASSERT_EQ(patches.size(), 1u);
  body = nlohmann::json::parse(patches[0].body);
  EXPECT_EQ(body["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ(body["status"]["conditions"][0]["reason"], "MigrationSucceeded");
  EXPECT_EQ(body["status"]["conditions"][0]["message"],
            "The migration has succeeded and the stored versions have been updated");
  EXPECT_EQ(body["status"]["storedVersions"], nlohmann::json::array({"v2"}));
}

// --- ResourceVersionController

TEST_F(SVMTest, TheResourceVersionIsRecordedOnceRunning) {
  ResourceVersionController rv(server->client(), discovery, factory.forType<StorageVersionMigration>(), clock);
  addSVM("pending", "", "secrets");
  ASSERT_TRUE(rv.sync("pending").status.ok());
  EXPECT_EQ(svm("pending").status.resourceVersion, "");  // not Running yet
  addSVM("running", "", "secrets", 0s, {"Running"});
  ASSERT_TRUE(rv.sync("running").status.ok());
  EXPECT_FALSE(svm("running").status.resourceVersion.empty());
  auto lists = server->actionsFor("list", "secrets");
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].ns, "@fake:svm_ns!");
}

TEST_F(SVMTest, AnUnservedOrUnpatchableResourceFailsTheMigration) {
  ResourceVersionController rv(server->client(), discovery, factory.forType<StorageVersionMigration>(), clock);
  addSVM("young", "nothere.example.com", "gadgets", 10s, {"Running"});
  auto r = rv.sync("young");
  EXPECT_FALSE(r.status.ok());  // retried within its first minute
  EXPECT_EQ(cond("young", "Failed", &Condition::status), "");
  addSVM("old", "nothere.example.com", "gadgets", 61s, {"Running"});
  ASSERT_TRUE(rv.sync("old").status.ok());
  EXPECT_EQ(cond("old", "Failed", &Condition::status), "True");
  EXPECT_EQ(cond("old", "Failed", &Condition::reason), "StorageVersionMigrationFailed");
  EXPECT_EQ(cond("old", "Failed", &Condition::message), "resource does not exist in discovery");
  addSVM("gauges", "readonly.example.com", "gauges", 0s, {"Running"});
  ASSERT_TRUE(rv.sync("gauges").status.ok());
  EXPECT_EQ(cond("gauges", "Failed", &Condition::message),
            "resource \"readonly.example.com/v1, Resource=gauges\" does not support discovery operations: "
            "[update patch list]");
}

// --- SVMController

class SVMMigrationTest : public SVMTest {
 protected:
  void SetUp() override {
    SVMTest::SetUp();
    addSecret("a");
    addSecret("b");
    addSecret("c");
  }
  // Starts the metadata informer of secrets (the collector's monitor) and waits for its list.
  informers::SharedInformer<api::meta::v1::PartialObjectMetadata>& monitor() {
    auto& inf = factory.forMetadata({"", "v1", "secrets"});
    factory.start(stop.get_token());
    EXPECT_TRUE(testing::eventually([&] { return inf.hasSynced(); }));
    return inf;
  }
  std::unique_ptr<SVMController> make(informers::SharedInformer<api::meta::v1::PartialObjectMetadata>* mon) {
    return std::make_unique<SVMController>(
        "storage-version-migrator-controller", server->client(), discovery, factory.forType<StorageVersionMigration>(),
        [mon](const client::GroupVersionResource&) { return MonitorView{mon}; }, clock);
  }
  size_t secretPatches() { return server->actionsFor("patch", "secrets").size(); }
};

TEST_F(SVMMigrationTest, EveryObjectIsPatchedAndTheMigrationSucceeds) {
  auto& mon = monitor();
  auto c = make(&mon);
  addSVM("m", "", "secrets", 0s, {"Running"}, mon.lastSyncResourceVersion());
  ASSERT_TRUE(c->sync("m").status.ok());
  auto patches = server->actionsFor("patch", "secrets");
  ASSERT_EQ(patches.size(), 3u);
  EXPECT_NE(patches[0].patchType.find("merge-patch"), std::string::npos);
  auto body = nlohmann::json::parse(patches[0].body);
  EXPECT_EQ(body["kind"], "Secret");
  EXPECT_EQ(body["apiVersion"], "v1");
  EXPECT_FALSE(body["metadata"]["resourceVersion"].get<std::string>().empty());
  bool manager = false;
  for (const auto& [k, v] : patches[0].query) manager |= k == "fieldManager" && v == "storage-version-migrator-controller";
  EXPECT_TRUE(manager);
  EXPECT_EQ(cond("m", "Succeeded", &Condition::status), "True");
  EXPECT_EQ(cond("m", "Succeeded", &Condition::reason), "StorageVersionMigrationSucceeded");
  EXPECT_EQ(cond("m", "Running", &Condition::message), "The migration is running, 3 objects verified migrated");
}

TEST_F(SVMMigrationTest, NothingHappensWithoutAResourceVersionOrWhenFinished) {
  auto& mon = monitor();
  auto c = make(&mon);
  addSVM("norv", "", "secrets", 0s, {"Running"});
  addSVM("done", "", "secrets", 0s, {"Running", "Succeeded"}, mon.lastSyncResourceVersion());
  EXPECT_TRUE(c->sync("norv").status.ok());
  EXPECT_TRUE(c->sync("done").status.ok());
  EXPECT_TRUE(c->sync("gone").status.ok());
  EXPECT_EQ(secretPatches(), 0u);
}

TEST_F(SVMMigrationTest, ObjectsNewerThanTheRecordedVersionAreSkippedAndTheMonitorMustCatchUp) {
  auto& mon = monitor();
  auto c = make(&mon);
  const std::string rv = mon.lastSyncResourceVersion();
  // A recorded version ahead of the monitor: not yet.
  addSVM("ahead", "", "secrets", 0s, {"Running"}, std::to_string(std::stoll(rv) + 100));
  auto r = c->sync("ahead");
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("GC cache is not up to date, requeuing to attempt again. gcListResourceVersion: " +
                                    rv),
            std::string::npos);
  // A recorded version before every object: nothing to patch, and still a success.
  addSVM("behind", "", "secrets", 0s, {"Running"}, "1");
  ASSERT_TRUE(c->sync("behind").status.ok());
  EXPECT_EQ(secretPatches(), 0u);
  EXPECT_EQ(cond("behind", "Succeeded", &Condition::status), "True");
  // (upstream counts every object of the resource as verified, newer ones included)
  EXPECT_EQ(cond("behind", "Running", &Condition::message), "The migration is running, 3 objects verified migrated");
}

TEST_F(SVMMigrationTest, NoMonitorIsRetriedAndAGarbledVersionFails) {
  auto c = make(nullptr);
  addSVM("m", "", "secrets", 0s, {"Running"}, "5");
  auto r = c->sync("m");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "no monitor found for resource /v1, Resource=secrets");
  auto& mon = monitor();
  auto c2 = make(&mon);
  addSVM("bad", "", "secrets", 0s, {"Running"}, "0x5");
  ASSERT_TRUE(c2->sync("bad").status.ok());
  EXPECT_EQ(cond("bad", "Failed", &Condition::message),
            "migration encountered unhandled error: error comparing resource versions between GC and SVM resource: "
            "resource version is not well formed: 0x5");
}

TEST_F(SVMMigrationTest, ConflictsCountAsDoneTransientErrorsRetryOthersFail) {
  auto& mon = monitor();
  int calls = 0;
  server->prependReactor("patch", "secrets", [&](const testing::Action&) {
    ++calls;
    return calls == 1 ? std::optional(FakeApiServer::errorReply(409, "Conflict", "changed meanwhile"))
                      : std::optional(FakeApiServer::errorReply(500, "InternalError", "etcd hiccup"));
  });
  auto c = make(&mon);
  addSVM("m", "", "secrets", 0s, {"Running"}, mon.lastSyncResourceVersion());
  auto r = c->sync("m");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(cond("m", "Running", &Condition::message),
            "The migration is running, 2/3 objects not yet migrated; transient error: etcd hiccup");
  EXPECT_EQ(cond("m", "Failed", &Condition::status), "");

}

TEST_F(SVMMigrationTest, AnUnexpectedErrorFailsTheMigration) {
  auto& mon = monitor();
  server->prependReactor("patch", "secrets", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(403, "Forbidden", "not allowed"));
  });
  auto c = make(&mon);
  addSVM("f", "", "secrets", 0s, {"Running"}, mon.lastSyncResourceVersion());
  ASSERT_TRUE(c->sync("f").status.ok());  // failed: not retried
  EXPECT_EQ(secretPatches(), 1u);
  EXPECT_EQ(cond("f", "Failed", &Condition::status), "True");
  EXPECT_EQ(cond("f", "Failed", &Condition::reason), "StorageVersionMigrationFailed");
  EXPECT_EQ(cond("f", "Failed", &Condition::message),
            "3/3 not yet migrated. migration encountered unhandled error: not allowed");
  EXPECT_EQ(cond("f", "Running", &Condition::message), "The migration is running, 3/3 objects not yet migrated");
}

}  // namespace
}  // namespace kcm::controllers::storageversionmigrator
