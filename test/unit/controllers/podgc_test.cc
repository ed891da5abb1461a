// pod-garbage-collector-controller against the in-memory apiserver with hand-filled informer stores: the status
// patch that marks a pod Failed before its force deletion (upstream pkg/controller/podgc/gc_controller.go
// markFailedAndDeletePodWithCondition, pkg/util/pod PatchPodStatus) and the parallel deletions of terminated and
// out-of-service terminating pods (gcTerminated, gcTerminating). Issue 13 item 9.
#include "controllers/podgc/gc_controller.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {
namespace {

using api::core::v1::Node;
using api::core::v1::Pod;
using nlohmann::json;
using testing::Action;
using testing::FakeApiServer;
using namespace std::chrono_literals;

Pod makePod(const std::string& name, const std::string& node, const std::string& phase, int64_t generation = 1) {
  Pod p;
  p.metadata.namespace_ = "default";
  p.metadata.name = name;
  p.metadata.uid = "uid-" + name;
  p.metadata.generation = generation;
  p.spec.nodeName = node;
  p.status.phase = phase;
  return p;
}

Node makeNode(const std::string& name, bool ready, bool outOfService) {
  Node n;
  n.metadata.name = name;
  api::core::v1::NodeCondition c;
  c.type = "Ready";
  c.status = ready ? "True" : "False";
  n.status.conditions.push_back(c);
  if (outOfService) {
    api::core::v1::Taint t;
    t.key = "node.kubernetes.io/out-of-service";
    t.effect = "NoExecute";
    n.spec.taints.push_back(t);
  }
  return n;
}

class Harness {
 public:
  explicit Harness(int threshold = 0) {
    server->addStandardResources();
    // quarantine 0: a node missing from the cache is checked live on the first pass
    gc = std::make_unique<PodGCController>(server->client(), factory.forType<Pod>(), factory.forType<Node>(),
                                           threshold, 20s, 0s);
  }
  void addPod(const Pod& p) {
    auto stored = std::make_shared<const Pod>(server->add(p));
    factory.forType<Pod>().store().upsert("default/" + p.metadata.name, stored);
  }
  void addNode(const Node& n) {
    auto stored = std::make_shared<const Node>(server->add(n));
    factory.forType<Node>().store().upsert(n.metadata.name, stored);
  }
  std::vector<Action> statusPatches() const { return server->actionsFor("patch", "pods/status"); }

  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::unique_ptr<PodGCController> gc;
};

// An orphaned Running pod (its node is gone) is patched Failed with DisruptionTarget before it goes. As
// PatchPodStatus does, the patch carries the pod's UID as a precondition; PodObservedGenerationTracking is GA
// (locked on) in v1.37, so status.observedGeneration and the condition's observedGeneration are the pod's
// generation.
TEST(PodGCStatusPatch, OrphanedPodCarriesTheUIDAndObservedGenerations) {
  Harness h;
  h.addPod(makePod("orphan", "gone-node", "Running", 3));
  h.gc->gc();
  auto patches = h.statusPatches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_NE(patches[0].patchType.find("strategic-merge-patch"), std::string::npos);
  json body = json::parse(patches[0].body);
  EXPECT_EQ(body["metadata"].value("uid", ""), "uid-orphan") << body.dump();
  EXPECT_EQ(body["status"].value("phase", ""), "Failed") << body.dump();
  EXPECT_EQ(body["status"].value("observedGeneration", int64_t{0}), 3) << body.dump();
  ASSERT_TRUE(body["status"].contains("conditions")) << body.dump();
  ASSERT_EQ(body["status"]["conditions"].size(), 1u) << body.dump();
  const json& c = body["status"]["conditions"][0];
  EXPECT_EQ(c.value("type", ""), "DisruptionTarget");
  EXPECT_EQ(c.value("status", ""), "True");
  EXPECT_EQ(c.value("reason", ""), "DeletionByPodGC");
  EXPECT_EQ(c.value("message", ""), "PodGC: node no longer exists");
  EXPECT_EQ(c.value("observedGeneration", int64_t{0}), 3) << body.dump();
  EXPECT_TRUE(c.contains("lastTransitionTime"));
  EXPECT_EQ(h.server->actionsFor("delete", "pods").size(), 1u);
  EXPECT_FALSE(h.server->get<Pod>("default", "orphan"));
}

// An unscheduled terminating Pending pod: Failed with the observed generation, no condition, UID precondition.
TEST(PodGCStatusPatch, UnscheduledTerminatingPodHasNoCondition) {
  Harness h;
  Pod p = makePod("unscheduled", "", "Pending", 2);
  p.metadata.finalizers.push_back("example.com/keep");
  h.addPod(p);
  auto cached = h.server->get<Pod>("default", "unscheduled");
  ASSERT_TRUE(cached);
  cached->metadata.deletionTimestamp = api::Time::fromUnix(1'767'225'600);
  h.factory.forType<Pod>().store().upsert("default/unscheduled", std::make_shared<const Pod>(*cached));
  h.gc->gc();
  auto patches = h.statusPatches();
  ASSERT_EQ(patches.size(), 1u);
  json body = json::parse(patches[0].body);
  EXPECT_EQ(body["metadata"].value("uid", ""), "uid-unscheduled") << body.dump();
  EXPECT_EQ(body["status"].value("phase", ""), "Failed");
  EXPECT_EQ(body["status"].value("observedGeneration", int64_t{0}), 2) << body.dump();
  EXPECT_FALSE(body["status"].contains("conditions")) << body.dump();
}

// Pods already Succeeded/Failed are deleted without a status patch.
TEST(PodGCStatusPatch, TerminalPodsAreNotPatched) {
  Harness h(1);
  h.addNode(makeNode("n", true, false));
  h.addPod(makePod("a", "n", "Succeeded"));
  h.addPod(makePod("b", "n", "Failed"));
  h.gc->gc();
  EXPECT_TRUE(h.statusPatches().empty());
  EXPECT_EQ(h.server->actionsFor("delete", "pods").size(), 1u);
}

// Counts deletions in flight: each delete waits (bounded) until `want` are in flight at once, so a serial loop
// shows 1 and a parallel one reaches `want` without waiting.
class InFlightProbe {
 public:
  explicit InFlightProbe(int want) : want_(want) {}
  void install(FakeApiServer& s) {
    s.prependReactor("delete", "pods", [this](const Action&) -> std::optional<client::Transport::Reply> {
      std::unique_lock l(mu_);
      max_ = std::max(max_, ++now_);
      cv_.notify_all();
      cv_.wait_for(l, 1s, [&] { return max_ >= want_; });
      --now_;
      return std::nullopt;  // then the store deletes
    });
  }
  int max() {
    std::lock_guard l(mu_);
    return max_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int want_, now_ = 0, max_ = 0;
};

// upstream gcTerminated starts one goroutine per pod to delete and waits for all.
TEST(PodGCParallel, TerminatedPodsAreDeletedConcurrently) {
  Harness h(1);
  h.addNode(makeNode("n", true, false));
  for (const char* name : {"a", "b", "c", "d"}) h.addPod(makePod(name, "n", "Succeeded"));
  InFlightProbe probe(3);
  probe.install(*h.server);
  h.gc->gc();
  EXPECT_EQ(h.server->actionsFor("delete", "pods").size(), 3u);
  EXPECT_EQ(probe.max(), 3);
  EXPECT_EQ(h.server->list<Pod>("default").size(), 1u);
}

// upstream gcTerminating: likewise for terminating pods on a NotReady node tainted out-of-service.
TEST(PodGCParallel, OutOfServiceTerminatingPodsAreDeletedConcurrently) {
  Harness h;
  h.addNode(makeNode("n", false, true));
  for (const char* name : {"a", "b", "c"}) {
    Pod p = makePod(name, "n", "Running");
    p.metadata.deletionTimestamp = api::Time::fromUnix(1'767'225'600);
    auto stored = std::make_shared<const Pod>(p);
    (void)h.server->add(makePod(name, "n", "Running"));
    h.factory.forType<Pod>().store().upsert("default/" + p.metadata.name, stored);
  }
  InFlightProbe probe(3);
  probe.install(*h.server);
  h.gc->gc();
  EXPECT_EQ(h.server->actionsFor("delete", "pods").size(), 3u);
  EXPECT_EQ(h.statusPatches().size(), 3u);
  EXPECT_EQ(probe.max(), 3);
}

}  // namespace
}  // namespace kcm::controllers
