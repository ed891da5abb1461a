// volumeattributesclass-protection-controller (upstream pkg/controller/volume/vacprotection/
// vac_protection_controller_test.go's cases: an event is played on the controller, then its queue is drained)
// over the fake apiserver, plus one run with live informers.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "controllers/volume/vacprotection/vac_protection_controller.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::vacprotection {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

const std::string kFinalizer(kVACProtectionFinalizer);

class VACProtectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<std::string> verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    server->addResource({"", "v1", "persistentvolumes", "PersistentVolume", false, verbs, {"status"}});
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, verbs, {"status"}});
    server->addResource({"storage.k8s.io", "v1", "volumeattributesclasses", "VolumeAttributesClass", false, verbs, {}});
  }

  // A VAC in the server and the cache; `deleting` gives it a deletionTimestamp (only the cache sees it).
  VolumeAttributesClass vac(const std::string& name, bool finalizer, bool deleting) {
    VolumeAttributesClass v;
    v.metadata.name = name;
    v.driverName = "example.csi.k8s.io";
    v.parameters["iops"] = "3000";
    if (finalizer) v.metadata.finalizers = {"example.com/other", kFinalizer};
    VolumeAttributesClass stored = server->add(v);
    if (deleting) stored.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    factory.forType<VolumeAttributesClass>().store().upsert(name, std::make_shared<const VolumeAttributesClass>(stored));
    return stored;
  }
  // A PVC in the cache only (the controller never reads claims from the server).
  static PersistentVolumeClaim makePVC(const std::string& name, const std::string& spec, const std::string& current = "",
                                       const std::string& target = "") {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = "ns";
    c.metadata.name = name;
    if (!spec.empty()) c.spec.volumeAttributesClassName = spec;
    if (!current.empty()) c.status.currentVolumeAttributesClassName = current;
    if (!target.empty()) {
      auto& m = c.status.modifyVolumeStatus.emplace();
      m.status = "InProgress";
      m.targetVolumeAttributesClassName = target;
    }
    return c;
  }
  void cache(const PersistentVolumeClaim& c) {
    factory.forType<PersistentVolumeClaim>().store().upsert("ns/" + c.metadata.name,
                                                           std::make_shared<const PersistentVolumeClaim>(c));
  }
  void uncache(const PersistentVolumeClaim& c) { factory.forType<PersistentVolumeClaim>().store().erase("ns/" + c.metadata.name); }
  static PersistentVolume makePV(const std::string& name, const std::string& vacName) {
    PersistentVolume p;
    p.metadata.name = name;
    if (!vacName.empty()) p.spec.volumeAttributesClassName = vacName;
    return p;
  }
  void cache(const PersistentVolume& p) {
    factory.forType<PersistentVolume>().store().upsert(p.metadata.name, std::make_shared<const PersistentVolume>(p));
  }
  void uncache(const PersistentVolume& p) { factory.forType<PersistentVolume>().store().erase(p.metadata.name); }

  // As upstream's test loop: every ready key synced, until the queue is empty.
  void drain() {
    while (controller.queueLen() > 0) controller.processNextWorkItem();
  }
  std::vector<std::string> finalizersInServer(const std::string& name) {
    auto v = server->get<VolumeAttributesClass>("", name);
    return v ? api::toStdStrings(v->metadata.finalizers) : std::vector<std::string>{"<gone>"};
  }
  size_t updates() { return server->actionsFor("update", "volumeattributesclasses").size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  Controller controller{server->client(), factory.forType<PersistentVolumeClaim>(), factory.forType<PersistentVolume>(),
                        factory.forType<VolumeAttributesClass>(), clock};
};

// ---- VAC events.

TEST_F(VACProtectionTest, AVACWithoutTheFinalizerGetsIt) {
  auto v = vac("vac1", false, false);
  controller.vacAddedUpdated(v);
  EXPECT_EQ(controller.queueLen(), 1u);
  drain();
  EXPECT_EQ(finalizersInServer("vac1"), std::vector<std::string>{kFinalizer});
  EXPECT_EQ(updates(), 1u);
}

TEST_F(VACProtectionTest, AVACWithTheFinalizerIsLeftAlone) {
  auto v = vac("vac1", true, false);
  controller.vacAddedUpdated(v);
  EXPECT_EQ(controller.queueLen(), 0u);
  EXPECT_TRUE(controller.processVAC("vac1").status.ok());
  EXPECT_EQ(updates(), 0u);
}

TEST_F(VACProtectionTest, ADeletedVACNoOneUsesLosesOnlyItsFinalizer) {
  auto v = vac("vac1", true, true);
  controller.vacAddedUpdated(v);
  drain();
  EXPECT_EQ(finalizersInServer("vac1"), std::vector<std::string>{"example.com/other"});
  EXPECT_EQ(updates(), 1u);
}

TEST_F(VACProtectionTest, ADeletedVACWithoutTheFinalizerIsNotTouched) {
  auto v = vac("vac1", false, true);
  controller.vacAddedUpdated(v);
  EXPECT_EQ(controller.queueLen(), 0u);
  EXPECT_TRUE(controller.processVAC("vac1").status.ok());
  EXPECT_EQ(updates(), 0u);
}

TEST_F(VACProtectionTest, AVACNotInTheCacheIsIgnored) {
  EXPECT_TRUE(controller.processVAC("missing").status.ok());
  EXPECT_EQ(server->actions().size(), 0u);
}

TEST_F(VACProtectionTest, ADeletedVACAnyOfItsUsersNamesKeepsTheFinalizer) {
  struct Case {
    const char* what;
    std::function<void()> setUp;
  };
  const std::vector<Case> cases = {
      {"a PV", [&] { cache(makePV("pv1", "vac1")); }},
      {"a PVC's spec", [&] { cache(makePVC("pvc1", "vac1")); }},
      {"a PVC's current status", [&] { cache(makePVC("pvc1", "vac2", "vac1")); }},
      {"a PVC's modification target", [&] { cache(makePVC("pvc1", "vac2", "", "vac1")); }},
  };
  for (const auto& c : cases) {
    factory.forType<PersistentVolume>().store().erase("pv1");
    factory.forType<PersistentVolumeClaim>().store().erase("ns/pvc1");
    c.setUp();
    auto v = vac("vac1", true, true);
    controller.vacAddedUpdated(v);
    drain();
    EXPECT_EQ(updates(), 0u) << c.what;
    EXPECT_EQ(finalizersInServer("vac1").size(), 2u) << c.what;
  }
}

TEST_F(VACProtectionTest, SavingTheFinalizerFailsAndIsRetried) {
  for (bool deleting : {false, true}) {
    SCOPED_TRACE(deleting ? "removal" : "addition");
    server->clearActions();
    auto v = vac(deleting ? "vac-del" : "vac-new", deleting, deleting);
    auto failures = std::make_shared<int>(2);
    server->prependReactor("update", "volumeattributesclasses", [failures](const testing::Action&) {
      if (*failures == 0) return std::optional<FakeApiServer::Reply>();
      --*failures;
      return std::optional(FakeApiServer::errorReply(403, "Forbidden", "Mock error"));
    });
    controller.vacAddedUpdated(v);
    for (int i = 0; i < 100 && updates() < 3; ++i) {
      drain();
      clock.advance(1s);  // the rate-limited retry becomes ready
    }
    drain();
    EXPECT_EQ(updates(), 3u) << "two failures, then success";
    EXPECT_EQ(finalizersInServer(v.metadata.name),
              deleting ? std::vector<std::string>{"example.com/other"} : std::vector<std::string>{kFinalizer});
  }
}

TEST_F(VACProtectionTest, AFailedUpdateIsReturnedForARetry) {
  vac("vac1", false, false);
  server->prependReactor("update", "volumeattributesclasses", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(500, "InternalError", "etcd is down"));
  });
  auto r = controller.processVAC("vac1");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_NE(r.status.message().find("VAC vac1 failed with : "), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("etcd is down"), std::string::npos) << r.status.message();
}

// ---- PV events.

TEST_F(VACProtectionTest, APVThatMovesToAnotherVACReleasesIt) {
  vac("vac1", true, true);
  auto updated = makePV("pv1", "vac2");
  cache(updated);
  controller.pvUpdated(makePV("pv1", "vac1"), updated);
  EXPECT_EQ(controller.queueLen(), 1u);
  drain();
  EXPECT_EQ(finalizersInServer("vac1"), std::vector<std::string>{"example.com/other"});
}

TEST_F(VACProtectionTest, APVUpdateThatKeepsTheVACQueuesNothing) {
  vac("vac1", true, true);
  auto pv = makePV("pv1", "vac1");
  cache(pv);
  controller.pvUpdated(pv, pv);
  EXPECT_EQ(controller.queueLen(), 0u);
}

TEST_F(VACProtectionTest, ADeletedPVReleasesItsVAC) {
  vac("vac1", true, true);
  controller.pvDeleted(makePV("pv1", "vac1"));
  drain();
  EXPECT_EQ(finalizersInServer("vac1"), std::vector<std::string>{"example.com/other"});
}

TEST_F(VACProtectionTest, ADeletedPVDoesNotReleaseAVACAnotherUserHolds) {
  vac("vac1", true, true);
  cache(makePV("pv2", "vac1"));
  controller.pvDeleted(makePV("pv1", "vac1"));
  drain();
  EXPECT_EQ(updates(), 0u) << "another PV";
  uncache(makePV("pv2", "vac1"));
  cache(makePVC("pvc1", "vac1"));
  controller.pvDeleted(makePV("pv1", "vac1"));
  drain();
  EXPECT_EQ(updates(), 0u) << "a PVC";
}

// ---- PVC events.

TEST_F(VACProtectionTest, APVCThatMovesToAnotherVACReleasesIt) {
  vac("vac1", true, true);
  auto updated = makePVC("pvc1", "vac2");
  cache(updated);
  controller.pvcUpdated(makePVC("pvc1", "vac1"), updated);
  EXPECT_EQ(controller.queueLen(), 1u);
  drain();
  EXPECT_EQ(finalizersInServer("vac1"), std::vector<std::string>{"example.com/other"});
}

TEST_F(VACProtectionTest, APVCWhoseStatusStillNamesTheVACHoldsIt) {
  vac("vac1", true, true);
  for (auto updated : {makePVC("pvc1", "vac2", "vac1"), makePVC("pvc1", "vac2", "", "vac1")}) {
    cache(updated);
    controller.pvcUpdated(makePVC("pvc1", "vac1"), updated);
    EXPECT_EQ(controller.queueLen(), 0u) << "vac1 is still named";
    EXPECT_TRUE(controller.processVAC("vac1").status.ok());
    EXPECT_EQ(updates(), 0u);
  }
  // The modification done: the status moves on to vac2 and vac1 goes.
  auto done = makePVC("pvc1", "vac2", "vac2");
  auto before = makePVC("pvc1", "vac2", "", "vac1");
  cache(done);
  controller.pvcUpdated(before, done);
  drain();
  EXPECT_EQ(finalizersInServer("vac1"), std::vector<std::string>{"example.com/other"});
}

TEST_F(VACProtectionTest, ADeletedPVCReleasesItsVACsUnlessAnotherUserHoldsThem) {
  vac("vac1", true, true);
  vac("vac2", true, true);
  cache(makePVC("pvc2", "vac1"));
  auto gone = makePVC("pvc1", "vac1", "vac2");
  controller.pvcDeleted(gone);  // names both: both queued
  EXPECT_EQ(controller.queueLen(), 2u);
  drain();
  EXPECT_EQ(finalizersInServer("vac1").size(), 2u) << "pvc2 still uses vac1";
  EXPECT_EQ(finalizersInServer("vac2"), std::vector<std::string>{"example.com/other"});
  uncache(makePVC("pvc2", "vac1"));
  cache(makePV("pv1", "vac1"));
  controller.pvcDeleted(makePVC("pvc2", "vac1"));
  drain();
  EXPECT_EQ(finalizersInServer("vac1").size(), 2u) << "pv1 still uses vac1";
}

TEST(VACReferences, NamesAreDistinctAndNonEmpty) {
  EXPECT_TRUE(getPVCReferencedVACNames(PersistentVolumeClaim{}).empty());
  PersistentVolumeClaim c;
  c.spec.volumeAttributesClassName = "a";
  c.status.currentVolumeAttributesClassName = "a";
  c.status.modifyVolumeStatus.emplace().targetVolumeAttributesClassName = "b";
  EXPECT_EQ(getPVCReferencedVACNames(c), (std::vector<std::string>{"a", "b"}));
  c.spec.volumeAttributesClassName = "";
  c.status.currentVolumeAttributesClassName.reset();
  EXPECT_EQ(getPVCReferencedVACNames(c), std::vector<std::string>{"b"});
  PersistentVolume p;
  EXPECT_TRUE(getPVReferencedVACNames(p).empty());
  p.spec.volumeAttributesClassName = "";
  EXPECT_TRUE(getPVReferencedVACNames(p).empty());
  p.spec.volumeAttributesClassName = "c";
  EXPECT_EQ(getPVReferencedVACNames(p), std::vector<std::string>{"c"});
}

// The whole loop with live informers: the handlers, the indexes and the apiserver's finalizer semantics together.
TEST_F(VACProtectionTest, WithLiveInformersAVACGoesOnceItsLastClaimIsDeleted) {
  std::stop_source stop;
  factory.start(stop.get_token());
  controller.run(1, stop.get_token());
  VolumeAttributesClass v;
  v.metadata.name = "gold";
  v.driverName = "example.csi.k8s.io";
  ASSERT_TRUE(client::create(*server->client(), "", v).ok());
  ASSERT_TRUE(testing::eventually([&] { return finalizersInServer("gold") == std::vector<std::string>{kFinalizer}; }))
      << "finalizer not added";
  auto claim = makePVC("data", "gold");
  ASSERT_TRUE(client::create(*server->client(), "ns", claim).ok());
  ASSERT_TRUE(testing::eventually([&] {
    return !factory.forType<PersistentVolumeClaim>().store().byIndex(kVACNameKeyIndex, "gold").empty();
  }));
  ASSERT_TRUE(client::remove<VolumeAttributesClass>(*server->client(), "", "gold").ok());
  ASSERT_TRUE(testing::eventually([&] {
    auto cached = factory.forType<VolumeAttributesClass>().store().get("gold");
    return cached && cached->metadata.deletionTimestamp.has_value();
  }));
  std::this_thread::sleep_for(200ms);  // time for a wrong removal to happen
  EXPECT_EQ(finalizersInServer("gold"), std::vector<std::string>{kFinalizer}) << "a used VAC lost its finalizer";
  ASSERT_TRUE(client::remove<PersistentVolumeClaim>(*server->client(), "ns", "data").ok());
  EXPECT_TRUE(testing::eventually([&] { return !server->get<VolumeAttributesClass>("", "gold").has_value(); }))
      << "the VAC was not released";
  stop.request_stop();
}

}  // namespace
}  // namespace kcm::controllers::volume::vacprotection
