// podgroup-protection-controller: upstream podgroup_protection_controller_test.go's cases (an event is played on
// the controller, then its queue is drained) over the fake apiserver.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/scheduling_v1beta1_json.h"
#include "controllers/scheduling/podgroupprotection/podgroup_protection_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::scheduling::podgroupprotection {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

const std::string kFinalizer(kPodGroupProtectionFinalizer);

class PodGroupProtectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<std::string> verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    server->addResource({"", "v1", "pods", "Pod", true, verbs, {"status"}});
    server->addResource({"scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", true, verbs, {"status"}});
  }
  // A PodGroup in the server and the cache; `deleting` gives it a deletionTimestamp (only the cache sees it).
  PodGroup podGroup(const std::string& name, bool finalizer, bool deleting) {
    PodGroup g;
    g.metadata.namespace_ = "ns";
    g.metadata.name = name;
    if (finalizer) g.metadata.finalizers = {"example.com/other", kFinalizer};
    PodGroup stored = server->add(g);
    if (deleting) stored.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    factory.forType<PodGroup>().store().upsert("ns/" + name, std::make_shared<const PodGroup>(stored));
    return stored;
  }
  static Pod makePod(const std::string& name, const std::string& group, const std::string& phase = "Running",
                     const std::string& uid = "uid-1") {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.uid = uid;
    if (!group.empty()) p.spec.schedulingGroup.emplace().podGroupName = group;
    p.status.phase = phase;
    return p;
  }
  void cache(const Pod& p) { factory.forType<Pod>().store().upsert("ns/" + p.metadata.name, std::make_shared<const Pod>(p)); }
  void uncache(const Pod& p) { factory.forType<Pod>().store().erase("ns/" + p.metadata.name); }
  void drain() {
    while (controller.queueLen() > 0) controller.processNextWorkItem();
  }
  std::vector<std::string> finalizersInServer(const std::string& name) {
    auto g = server->get<PodGroup>("ns", name);
    return g ? api::toStdStrings(g->metadata.finalizers) : std::vector<std::string>{"<gone>"};
  }
  size_t updates() { return server->actionsFor("update", "podgroups").size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  Controller controller{server->client(), factory.forType<PodGroup>(), factory.forType<Pod>(), clock};
};

TEST_F(PodGroupProtectionTest, PodGroupsNotBeingDeletedAreLeftToTheAdmissionPlugin) {
  cache(makePod("p1", "pg1"));
  controller.handlePodGroupUpdate(podGroup("pg1", false, false));  // no finalizer: admission adds it, not us
  controller.handlePodGroupUpdate(podGroup("pg2", true, false));
  EXPECT_EQ(controller.queueLen(), 0u);
  EXPECT_TRUE(controller.processPodGroup("ns/pg1").status.ok());
  EXPECT_TRUE(controller.processPodGroup("ns/pg2").status.ok());
  EXPECT_EQ(updates(), 0u);
  EXPECT_TRUE(finalizersInServer("pg1").empty());
}

TEST_F(PodGroupProtectionTest, ADeletedPodGroupWithoutActivePodsLosesOnlyItsFinalizer) {
  cache(makePod("done", "pg1", "Succeeded"));
  cache(makePod("failed", "pg1", "Failed", "uid-2"));
  cache(makePod("other", "pg2", "Running", "uid-3"));
  controller.handlePodGroupUpdate(podGroup("pg1", true, true));
  EXPECT_EQ(controller.queueLen(), 1u);
  drain();
  EXPECT_EQ(finalizersInServer("pg1"), std::vector<std::string>{"example.com/other"});
  EXPECT_EQ(updates(), 1u);
}

TEST_F(PodGroupProtectionTest, AnActivePodKeepsTheFinalizer) {
  for (std::string phase : {"Running", "Pending", ""}) {
    SCOPED_TRACE(phase);
    const std::string pg = "pg-" + (phase.empty() ? std::string("none") : phase);
    cache(makePod("active-" + pg, pg, phase));
    cache(makePod("done-" + pg, pg, "Succeeded", "uid-2"));
    controller.handlePodGroupUpdate(podGroup(pg, true, true));
    drain();
    EXPECT_EQ(updates(), 0u);
    EXPECT_EQ(finalizersInServer(pg).size(), 2u);
  }
}

TEST_F(PodGroupProtectionTest, AnActivePodOfAnotherNamespaceDoesNotHoldIt) {
  Pod elsewhere = makePod("p", "pg1");
  elsewhere.metadata.namespace_ = "other";
  factory.forType<Pod>().store().upsert("other/p", std::make_shared<const Pod>(elsewhere));
  controller.handlePodGroupUpdate(podGroup("pg1", true, true));
  drain();
  EXPECT_EQ(finalizersInServer("pg1"), std::vector<std::string>{"example.com/other"});
}

TEST_F(PodGroupProtectionTest, ADeletedPodGroupWithoutTheFinalizerIsNotTouched) {
  cache(makePod("p1", "pg1"));
  controller.handlePodGroupUpdate(podGroup("pg1", false, true));
  EXPECT_EQ(controller.queueLen(), 0u);
  EXPECT_TRUE(controller.processPodGroup("ns/pg1").status.ok());
  EXPECT_EQ(updates(), 0u);
  EXPECT_TRUE(finalizersInServer("pg1").empty()) << "never added to an object being deleted";
}

TEST_F(PodGroupProtectionTest, TheLastActivePodDeletedOrTerminatedReleasesThePodGroup) {
  struct Case {
    const char* what;
    std::function<void(const Pod&)> play;
  };
  const std::vector<Case> cases = {
      {"deleted",
       [&](const Pod& p) {
         uncache(p);
         controller.handlePodChange(&p, nullptr);
       }},
      {"succeeded",
       [&](const Pod& p) {
         Pod done = p;
         done.status.phase = "Succeeded";
         cache(done);
         controller.handlePodChange(&p, &done);
       }},
      {"failed",
       [&](const Pod& p) {
         Pod failed = p;
         failed.status.phase = "Failed";
         cache(failed);
         controller.handlePodChange(&p, &failed);
       }},
      {"replaced by a pod with another UID that names no PodGroup",
       [&](const Pod& p) {
         Pod next = makePod(p.metadata.name, "", "Running", "uid-new");
         cache(next);
         controller.handlePodChange(&p, &next);
       }},
  };
  int i = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string pg = "pg" + std::to_string(++i);
    Pod p = makePod("p" + std::to_string(i), pg);
    cache(p);
    podGroup(pg, true, true);
    c.play(p);
    EXPECT_EQ(controller.queueLen(), 1u);
    drain();
    EXPECT_EQ(finalizersInServer(pg), std::vector<std::string>{"example.com/other"});
  }
}

TEST_F(PodGroupProtectionTest, PodEventsThatCannotReleaseAPodGroupQueueNothing) {
  Pod p = makePod("p1", "pg1");
  controller.handlePodChange(nullptr, &p);  // a new active pod
  Pod running = p;
  running.metadata.labels["x"] = "y";
  controller.handlePodChange(&p, &running);  // same UID, still active
  Pod plain = makePod("p2", "");
  controller.handlePodChange(&plain, nullptr);  // names no PodGroup
  Pod donePlain = makePod("p3", "", "Succeeded");
  controller.handlePodChange(nullptr, &donePlain);
  EXPECT_EQ(controller.queueLen(), 0u);
}

TEST_F(PodGroupProtectionTest, ATerminatedPodOfAMissingPodGroupIsHandled) {
  Pod done = makePod("p1", "ghost", "Succeeded");
  controller.handlePodChange(nullptr, &done);
  EXPECT_EQ(controller.queueLen(), 1u);
  drain();
  EXPECT_TRUE(server->actions().empty());
}

TEST_F(PodGroupProtectionTest, AFailedUpdateIsReturnedForARetry) {
  podGroup("pg1", true, true);
  server->prependReactor("update", "podgroups", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(409, "Conflict", "the object has been modified"));
  });
  auto r = controller.processPodGroup("ns/pg1");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_NE(r.status.message().find("PodGroup ns/pg1 failed with: "), std::string::npos) << r.status.message();
}

TEST(PodGroupProtectionIndex, OnlyActivePodsNamingAPodGroupAreIndexed) {
  Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.name = "p";
  EXPECT_TRUE(activePodSchedulingGroupKeys(p).empty());
  p.spec.schedulingGroup.emplace();
  EXPECT_TRUE(activePodSchedulingGroupKeys(p).empty());
  p.spec.schedulingGroup->podGroupName = "pg";
  EXPECT_EQ(activePodSchedulingGroupKeys(p), std::vector<std::string>{"ns/pg"});
  p.status.phase = "Failed";
  EXPECT_TRUE(activePodSchedulingGroupKeys(p).empty());
}

}  // namespace
}  // namespace kcm::controllers::scheduling::podgroupprotection
