// persistentvolume-protection-controller (upstream pkg/controller/volume/pvprotection/pv_protection_controller_test.go's
// cases, through processPV) over the fake apiserver.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "controllers/volume/protectionutil/protectionutil.h"
#include "controllers/volume/pvprotection/pv_protection_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::pvprotection {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

class PVProtectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addResource({"", "v1", "persistentvolumes", "PersistentVolume", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  // A PV in the server and the cache; `deleting` gives it a deletionTimestamp (only the cache sees it).
  PersistentVolume pv(const std::string& name, const std::string& phase, bool finalizer, bool deleting) {
    PersistentVolume p;
    p.metadata.name = name;
    p.status.phase = phase;
    if (finalizer) p.metadata.finalizers = {"example.com/other", std::string(protectionutil::kPVProtectionFinalizer)};
    PersistentVolume stored = server->add(p);
    if (deleting) stored.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    factory.forType<PersistentVolume>().store().upsert(name, std::make_shared<const PersistentVolume>(stored));
    return stored;
  }
  std::vector<std::string> finalizersInServer(const std::string& name) {
    auto p = server->get<PersistentVolume>("", name);
    return p ? api::toStdStrings(p->metadata.finalizers) : std::vector<std::string>{"<gone>"};
  }
  size_t updates() { return server->actionsFor("update", "persistentvolumes").size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  Controller controller{server->client(), factory.forType<PersistentVolume>(), clock};
};

TEST_F(PVProtectionTest, APVWithoutTheFinalizerGetsIt) {
  pv("pv1", "Available", false, false);
  EXPECT_TRUE(controller.processPV("pv1").status.ok());
  EXPECT_EQ(finalizersInServer("pv1"), std::vector<std::string>{"kubernetes.io/pv-protection"});
  EXPECT_EQ(updates(), 1u);
}

TEST_F(PVProtectionTest, APVThatHasTheFinalizerIsLeftAlone) {
  pv("pv1", "Bound", true, false);
  EXPECT_TRUE(controller.processPV("pv1").status.ok());
  EXPECT_EQ(updates(), 0u);
}

TEST_F(PVProtectionTest, ADeletedPVThatIsNotBoundLosesOnlyItsFinalizer) {
  for (const char* phase : {"Available", "Released", "Failed", "Pending", ""}) {
    const std::string name = std::string("pv-") + (*phase ? phase : "none");
    pv(name, phase, true, true);
    EXPECT_TRUE(controller.processPV(name).status.ok()) << phase;
    EXPECT_EQ(finalizersInServer(name), std::vector<std::string>{"example.com/other"}) << phase;
  }
  EXPECT_EQ(updates(), 5u);
}

TEST_F(PVProtectionTest, ADeletedPVThatIsBoundKeepsItsFinalizer) {
  pv("pv1", "Bound", true, true);
  EXPECT_TRUE(controller.processPV("pv1").status.ok());
  EXPECT_EQ(updates(), 0u);
  EXPECT_EQ(finalizersInServer("pv1").size(), 2u);
}

TEST_F(PVProtectionTest, ADeletedPVWithoutTheFinalizerIsNotTouched) {
  pv("pv1", "Available", false, true);
  EXPECT_TRUE(controller.processPV("pv1").status.ok());
  EXPECT_EQ(updates(), 0u);
}

TEST_F(PVProtectionTest, APVNotInTheCacheIsIgnored) {
  EXPECT_TRUE(controller.processPV("missing").status.ok());
  EXPECT_EQ(server->actions().size(), 0u);
}

TEST_F(PVProtectionTest, AFailedUpdateIsReturnedForARetry) {
  pv("pv1", "Available", false, false);
  server->prependReactor("update", "persistentvolumes", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(500, "InternalError", "etcd is down"));
  });
  auto r = controller.processPV("pv1");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_NE(r.status.message().find("PV pv1 failed with : "), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("etcd is down"), std::string::npos) << r.status.message();
}

TEST(ProtectionUtil, PredicatesAndRemoval) {
  api::meta::v1::ObjectMeta m;
  EXPECT_TRUE(protectionutil::NeedToAddFinalizer(m, protectionutil::kPVCProtectionFinalizer));
  EXPECT_FALSE(protectionutil::IsDeletionCandidate(m, protectionutil::kPVCProtectionFinalizer));
  m.finalizers = {"a", "kubernetes.io/pvc-protection", "b", "kubernetes.io/pvc-protection"};
  EXPECT_FALSE(protectionutil::NeedToAddFinalizer(m, protectionutil::kPVCProtectionFinalizer));
  m.deletionTimestamp = api::Time::fromUnix(1);
  EXPECT_TRUE(protectionutil::IsDeletionCandidate(m, protectionutil::kPVCProtectionFinalizer));
  EXPECT_FALSE(protectionutil::IsDeletionCandidate(m, protectionutil::kPVProtectionFinalizer));
  EXPECT_FALSE(protectionutil::NeedToAddFinalizer(m, protectionutil::kPVProtectionFinalizer));
  protectionutil::removeFinalizer(m, protectionutil::kPVCProtectionFinalizer);
  EXPECT_EQ(m.finalizers, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace kcm::controllers::volume::pvprotection
