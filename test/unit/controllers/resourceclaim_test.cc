// resourceclaim-controller (upstream pkg/controller/resourceclaim/controller_test.go's TestSyncHandler cases for
// pods, through syncHandler) over the fake apiserver, plus the handlers' keys, the mutation cache and metrics.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "base/metrics.h"
#include "client/events.h"
#include "controllers/resourceclaim/resourceclaim_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::resourceclaim {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

constexpr const char* kNs = "my-namespace";

double creates(const std::string& status, const std::string& adminAccess = "false") {
  return metrics::Registry::global()
      .counter("dynamic_resource_allocation_resourceclaim_creates_total", "",
               {{"admin_access", adminAccess}, {"owner_api_group", ""}, {"owner_api_kind", "Pod"}, {"status", status}})
      .value();
}

class ResourceClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    for (const auto& [res, kind] : {std::pair{"resourceclaims", "ResourceClaim"},
                                    std::pair{"resourceclaimtemplates", "ResourceClaimTemplate"}})
      server->addResource({"resource.k8s.io", "v1", res, kind, true,
                           {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    success0 = creates("success"), failure0 = creates("failure");
  }

  // test-pod with claim "acme-resource" from template "my-template" (or naming claim `claimName`).
  Pod makePod(const std::string& name = "test-pod", const std::string& uid = "uidpod1",
              const std::optional<std::string>& claimName = std::nullopt) {
    Pod p;
    p.metadata.namespace_ = kNs;
    p.metadata.name = name;
    p.metadata.uid = uid;
    auto& c = p.spec.resourceClaims.emplace_back();
    c.name = "acme-resource";
    if (claimName)
      c.resourceClaimName = claimName;
    else
      c.resourceClaimTemplateName = "my-template";
    return p;
  }
  // Stores the pod in the server and the cache (keeping the given UID).
  Pod addPod(Pod p) {
    Pod stored = server->add(p);
    stored.metadata.uid = p.metadata.uid;
    stored.metadata.deletionTimestamp = p.metadata.deletionTimestamp;
    factory.forType<Pod>().store().upsert(std::string(kNs) + "/" + p.metadata.name,
                                          std::make_shared<const Pod>(stored));
    return stored;
  }
  void addTemplate(bool adminAccess = false) {
    ResourceClaimTemplate t;
    t.metadata.namespace_ = kNs;
    t.metadata.name = "my-template";
    t.spec.metadata.labels["app"] = "db";
    t.spec.metadata.annotations["example.com/color"] = "blue";
    auto& r = t.spec.spec.devices.requests.emplace_back();
    r.name = "req-0";
    r.exactly.emplace().deviceClassName = "gpu.example.com";
    if (adminAccess) r.exactly->adminAccess = true;
    factory.forType<ResourceClaimTemplate>().store().upsert(std::string(kNs) + "/my-template",
                                                            std::make_shared<const ResourceClaimTemplate>(server->add(t)));
  }
  // A claim; owned (controller) by the pod with `ownerUID` when given.
  static ResourceClaim makeClaim(const std::string& name, const std::string& ownerUID = "",
                                 const std::string& podClaimAnnotation = "") {
    ResourceClaim c;
    c.metadata.namespace_ = kNs;
    c.metadata.name = name;
    if (!ownerUID.empty()) {
      auto& r = c.metadata.ownerReferences.emplace_back();
      r.apiVersion = "v1", r.kind = "Pod", r.name = "test-pod", r.uid = ownerUID, r.controller = true;
    }
    if (!podClaimAnnotation.empty()) c.metadata.annotations[kPodResourceClaimAnnotation] = podClaimAnnotation;
    auto& req = c.spec.devices.requests.emplace_back();
    req.name = "req-0";
    req.exactly.emplace().deviceClassName = "gpu.example.com";
    return c;
  }
  static ResourceClaim allocated(ResourceClaim c) {
    c.metadata.finalizers.push_back(kFinalizer);
    auto& a = c.status.allocation.emplace();
    auto& res = a.devices.results.emplace_back();
    res.request = "req-0", res.driver = "gpu.example.com", res.pool = "pool", res.device = "dev-0";
    return c;
  }
  static ResourceClaim reserved(ResourceClaim c, const std::string& pod = "test-pod",
                                const std::string& uid = "uidpod1") {
    auto& r = c.status.reservedFor.emplace_back();
    r.resource = "pods", r.name = pod, r.uid = uid;
    return c;
  }
  ResourceClaim addClaim(const ResourceClaim& c, bool inCache = true) {
    ResourceClaim stored = server->add(c);
    if (inCache)
      factory.forType<ResourceClaim>().store().upsert(std::string(kNs) + "/" + c.metadata.name,
                                                      std::make_shared<const ResourceClaim>(stored));
    return stored;
  }
  std::vector<ResourceClaim> claims() { return server->list<ResourceClaim>(kNs); }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }
  size_t count(const std::string& verb, const std::string& res) { return server->actionsFor(verb, res).size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  Features features;
  std::unique_ptr<Controller> controller = make();
  std::unique_ptr<Controller> make() {
    return std::make_unique<Controller>(server->client(), broadcaster.newRecorder("resource_claim"),
                                        factory.forType<Pod>(), factory.forType<ResourceClaim>(),
                                        factory.forType<ResourceClaimTemplate>(), features, clock);
  }
  double success0 = 0, failure0 = 0;
};

// "create": the claim comes from the template, generated name <pod>-<claim>-, controlled by the pod, annotated
// with the pod claim; the pod status names it (server-side apply of pods/status, field manager
// ResourceClaimController).
TEST_F(ResourceClaimTest, APodWithATemplateGetsItsClaimAndItsStatus) {
  addPod(makePod());
  addTemplate();
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  auto all = claims();
  ASSERT_EQ(all.size(), 1u);
  const auto& c = all[0];
  EXPECT_EQ(c.metadata.generateName, "test-pod-acme-resource-");
  EXPECT_EQ(c.metadata.name.rfind("test-pod-acme-resource-", 0), 0u);
  ASSERT_EQ(c.metadata.ownerReferences.size(), 1u);
  const auto& r = c.metadata.ownerReferences[0];
  EXPECT_EQ(r.apiVersion, "v1");
  EXPECT_EQ(r.kind, "Pod");
  EXPECT_EQ(r.name, "test-pod");
  EXPECT_EQ(r.uid, "uidpod1");
  EXPECT_EQ(r.controller, std::optional<bool>(true));
  EXPECT_FALSE(r.blockOwnerDeletion.has_value());
  EXPECT_EQ(c.metadata.annotations.at(kPodResourceClaimAnnotation), "acme-resource");
  EXPECT_EQ(c.metadata.annotations.at("example.com/color"), "blue");
  EXPECT_EQ(c.metadata.labels.at("app"), "db");
  ASSERT_EQ(c.spec.devices.requests.size(), 1u);
  EXPECT_EQ(c.spec.devices.requests[0].exactly->deviceClassName, "gpu.example.com");

  auto patches = server->actionsFor("patch", "pods/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_NE(patches[0].patchType.find("apply-patch"), std::string::npos);
  bool manager = false, force = false;
  for (const auto& [k, v] : patches[0].query) manager |= k == "fieldManager" && v == "ResourceClaimController",
                                               force |= k == "force" && v == "true";
  EXPECT_TRUE(manager && force);
  auto pod = server->get<Pod>(kNs, "test-pod");
  ASSERT_EQ(pod->status.resourceClaimStatuses.size(), 1u);
  EXPECT_EQ(pod->status.resourceClaimStatuses[0].name, "acme-resource");
  EXPECT_EQ(pod->status.resourceClaimStatuses[0].resourceClaimName, c.metadata.name);
  EXPECT_EQ(creates("success") - success0, 1);
  EXPECT_TRUE(events().empty());
}

// A long pod and claim name are both cut in proportion to fit 57 characters (no trailing hyphen then).
TEST_F(ResourceClaimTest, LongNamesAreCutInProportion) {
  Pod p = makePod(std::string(60, 'p'));
  p.spec.resourceClaims[0].name = std::string(20, 'c');
  addPod(p);
  addTemplate();
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/" + std::string(60, 'p')).status.ok());
  auto all = claims();
  ASSERT_EQ(all.size(), 1u);
  // generateName "<60 p>-<20 c>-" is 82 long: 60*57/82 = 41 p, 20*57/82 = 13 c.
  EXPECT_EQ(all[0].metadata.generateName, std::string(41, 'p') + "-" + std::string(13, 'c'));
}

// "nop": the claim recorded in the status exists and is the pod's.
TEST_F(ResourceClaimTest, ARecordedClaimThatExistsIsLeftAlone) {
  Pod p = makePod();
  p.status.resourceClaimStatuses.push_back({"acme-resource", std::string("test-pod-acme-resource-abcde"), {}});
  addPod(p);
  addTemplate();
  addClaim(makeClaim("test-pod-acme-resource-abcde", "uidpod1", "acme-resource"));
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  EXPECT_EQ(count("create", "resourceclaims"), 0u);
  EXPECT_EQ(count("patch", "pods/status"), 0u);
}

// "nop-claim-in-apiserver-only": not cached yet, but the apiserver has it.
TEST_F(ResourceClaimTest, ARecordedClaimOnlyTheApiserverHasCountsAsThere) {
  Pod p = makePod();
  p.status.resourceClaimStatuses.push_back({"acme-resource", std::string("test-pod-acme-resource-abcde"), {}});
  addPod(p);
  addTemplate();
  addClaim(makeClaim("test-pod-acme-resource-abcde", "uidpod1", "acme-resource"), /*inCache=*/false);
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  EXPECT_EQ(count("get", "resourceclaims"), 1u);
  EXPECT_EQ(count("create", "resourceclaims"), 0u);
}

// "recreate": the recorded claim is gone; "recreate-wrong-owner": it is not the pod's any more. Either way a new
// one is made and recorded.
void expectRecreated(ResourceClaimTest& t, FakeApiServer& server, Controller& controller) {
  ASSERT_TRUE(controller.syncHandler("pod:my-namespace/test-pod").status.ok());
  auto pod = server.get<Pod>(kNs, "test-pod");
  ASSERT_EQ(pod->status.resourceClaimStatuses.size(), 1u);
  const std::string made = pod->status.resourceClaimStatuses[0].resourceClaimName.value_or("");
  EXPECT_NE(made, "test-pod-acme-resource-abcde");
  auto c = server.get<ResourceClaim>(kNs, made);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->metadata.ownerReferences.at(0).uid, "uidpod1");
  (void)t;
}
TEST_F(ResourceClaimTest, ARecordedClaimThatIsGoneIsMadeAgain) {
  Pod p = makePod();
  p.status.resourceClaimStatuses.push_back({"acme-resource", std::string("test-pod-acme-resource-abcde"), {}});
  addPod(p);
  addTemplate();
  expectRecreated(*this, *server, *controller);
}
TEST_F(ResourceClaimTest, ARecordedClaimThatIsNotThePodsIsMadeAgain) {
  Pod p = makePod();
  p.status.resourceClaimStatuses.push_back({"acme-resource", std::string("test-pod-acme-resource-abcde"), {}});
  addPod(p);
  addTemplate();
  addClaim(makeClaim("test-pod-acme-resource-abcde", "other-uid", "acme-resource"));
  expectRecreated(*this, *server, *controller);
}

// "missing-template": an error naming the template, and a FailedResourceClaimCreation Warning on the pod.
TEST_F(ResourceClaimTest, AMissingTemplateIsAnErrorAndAWarning) {
  addPod(makePod());
  auto r = controller->syncHandler("pod:my-namespace/test-pod");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.message(),
            "pod my-namespace/test-pod, PodResourceClaim acme-resource: resource claim template \"my-template\": "
            "resourceclaimtemplate.resource.k8s.io \"my-template\" not found");
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Warning FailedResourceClaimCreation PodResourceClaim acme-resource: resource claim "
                          "template \"my-template\": resourceclaimtemplate.resource.k8s.io \"my-template\" not found"});
  EXPECT_EQ(count("create", "resourceclaims"), 0u);
}

// "find-existing-claim-by-label": a claim the pod controls, annotated with this pod claim, is taken, not a new one.
TEST_F(ResourceClaimTest, AnOrphanTheControllerMadeBeforeIsRecordedInsteadOfANewOne) {
  addPod(makePod());
  addTemplate();
  addClaim(makeClaim("test-pod-acme-resource-xyzab", "uidpod1", "acme-resource"));
  addClaim(makeClaim("test-pod-other", "uidpod1", "other-claim"));  // another pod claim's: not this one
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  EXPECT_EQ(count("create", "resourceclaims"), 0u);
  auto pod = server->get<Pod>(kNs, "test-pod");
  ASSERT_EQ(pod->status.resourceClaimStatuses.size(), 1u);
  EXPECT_EQ(pod->status.resourceClaimStatuses[0].resourceClaimName, "test-pod-acme-resource-xyzab");
}

// "find-created-claim-in-cache": after a create whose status update failed, the retry finds the claim in the
// mutation cache before the informer has it, and does not create a second one.
TEST_F(ResourceClaimTest, AClaimJustCreatedIsFoundAgainBeforeTheInformerHasIt) {
  addPod(makePod());
  addTemplate();
  int failures = 1;
  server->prependReactor("patch", "pods/status", [&](const testing::Action&) {
    return failures-- > 0 ? std::optional(FakeApiServer::errorReply(500, "InternalError", "fake status failure"))
                          : std::nullopt;
  });
  auto r = controller->syncHandler("pod:my-namespace/test-pod");
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("update pod my-namespace/test-pod ResourceClaimStatuses: "), std::string::npos);
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  EXPECT_EQ(count("create", "resourceclaims"), 1u);
  EXPECT_EQ(claims().size(), 1u);
  auto pod = server->get<Pod>(kNs, "test-pod");
  ASSERT_EQ(pod->status.resourceClaimStatuses.size(), 1u);
  EXPECT_EQ(pod->status.resourceClaimStatuses[0].resourceClaimName, claims()[0].metadata.name);
}

// "create-conflict": a failed create is an error and counts as a failure.
TEST_F(ResourceClaimTest, AFailedCreateIsCountedAndRetried) {
  addPod(makePod());
  addTemplate();
  server->prependReactor("create", "resourceclaims", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(409, "AlreadyExists", "fake name collision"));
  });
  auto r = controller->syncHandler("pod:my-namespace/test-pod");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.message(),
            "pod my-namespace/test-pod, PodResourceClaim acme-resource: create ResourceClaim : fake name collision");
  EXPECT_EQ(creates("failure") - failure0, 1);
  EXPECT_EQ(creates("success") - success0, 0);
}

// "create-adminaccess-feature-disabled": a template asking for admin access is refused with the gate off.
TEST_F(ResourceClaimTest, AdminAccessIsRefusedWithTheGateOff) {
  features.adminAccess = false;
  controller = make();
  addPod(makePod());
  addTemplate(/*adminAccess=*/true);
  auto r = controller->syncHandler("pod:my-namespace/test-pod");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "pod my-namespace/test-pod, PodResourceClaim acme-resource: admin access is "
                                "requested, but the feature is disabled");
  EXPECT_EQ(count("create", "resourceclaims"), 0u);
  features.adminAccess = true;
  controller = make();
  const double admin0 = creates("success", "true");
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  EXPECT_EQ(creates("success", "true") - admin0, 1);
}

// "no-such-pod", "pod-deleted", "no-volumes"; a pod in a PodGroup is refused for good (GenericWorkload is off).
TEST_F(ResourceClaimTest, NothingHappensForPodsGoneDeletingOrWithoutClaims) {
  addTemplate();
  EXPECT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  Pod deleting = makePod();
  deleting.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  addPod(deleting);
  EXPECT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  Pod none = makePod("plain", "uid2");
  none.spec.resourceClaims.clear();
  addPod(none);
  EXPECT_TRUE(controller->syncHandler("pod:my-namespace/plain").status.ok());
  EXPECT_EQ(count("create", "resourceclaims"), 0u);
  Pod grouped = makePod("grouped", "uid3");
  grouped.spec.schedulingGroup.emplace().podGroupName = "pg";
  addPod(grouped);
  auto r = controller->syncHandler("pod:my-namespace/grouped");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.retry);
  EXPECT_EQ(r.status.message(), "get PodGroup for Pod my-namespace/grouped: Pod is a member of PodGroup pg but "
                                "GenericWorkload feature is disabled");
  EXPECT_FALSE(controller->syncHandler("bogus").status.ok());
}

// "add-reserved": a scheduled pod's allocated claim gets the pod in reservedFor.
TEST_F(ResourceClaimTest, AScheduledPodReservesItsAllocatedClaim) {
  Pod p = makePod();
  p.spec.nodeName = "worker";
  p.status.resourceClaimStatuses.push_back({"acme-resource", std::string("test-pod-acme-resource-abcde"), {}});
  addPod(p);
  addTemplate();
  addClaim(allocated(makeClaim("test-pod-acme-resource-abcde", "uidpod1", "acme-resource")));
  ASSERT_TRUE(controller->syncHandler("pod:my-namespace/test-pod").status.ok());
  auto c = server->get<ResourceClaim>(kNs, "test-pod-acme-resource-abcde");
  ASSERT_EQ(c->status.reservedFor.size(), 1u);
  EXPECT_EQ(c->status.reservedFor[0].apiGroup, "");
  EXPECT_EQ(c->status.reservedFor[0].resource, "pods");
  EXPECT_EQ(c->status.reservedFor[0].name, "test-pod");
  EXPECT_EQ(c->status.reservedFor[0].uid, "uidpod1");
  EXPECT_EQ(count("update", "resourceclaims/status"), 1u);
}

// "stay-reserved-seen" and "stay-reserved-not-seen": a reservation of a pod that exists (cached, or only on the
// apiserver) stays.
TEST_F(ResourceClaimTest, AReservationOfALivePodStays) {
  for (bool cached : {true, false}) {
    SCOPED_TRACE(cached ? "seen" : "not seen");
    Pod p = makePod();
    if (cached) addPod(p);
    else server->add(p);
    addClaim(reserved(allocated(makeClaim("test-pod-acme-resource-abcde", "uidpod1", "acme-resource"))));
    ASSERT_TRUE(controller->syncHandler("claim:my-namespace/test-pod-acme-resource-abcde").status.ok());
    EXPECT_EQ(count("update", "resourceclaims/status"), 0u);
    EXPECT_EQ(count("delete", "resourceclaims"), 0u);
    factory.forType<Pod>().store().erase("my-namespace/test-pod");
  }
}

// "clear-reserved-structured": the pod is gone: the reservation goes, and with the finalizer the allocation and
// then the finalizer.
TEST_F(ResourceClaimTest, TheReservationOfAGonePodIsRemovedAndTheClaimDeallocated) {
  addClaim(reserved(allocated(makeClaim("test-pod-acme-resource-abcde", "uidpod1", "acme-resource"))));
  ASSERT_TRUE(controller->syncHandler("claim:my-namespace/test-pod-acme-resource-abcde").status.ok());
  auto c = server->get<ResourceClaim>(kNs, "test-pod-acme-resource-abcde");
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->status.reservedFor.empty());
  EXPECT_FALSE(c->status.allocation.has_value());
  EXPECT_TRUE(c->metadata.finalizers.empty());
  EXPECT_EQ(count("get", "pods"), 1u);  // not cached: asked the apiserver
  EXPECT_EQ(count("update", "resourceclaims/status"), 1u);
  EXPECT_EQ(count("update", "resourceclaims"), 2u);  // the status, then the finalizer
}

// "dont-clear-reserved-structured": another live pod keeps its reservation and the allocation stays.
TEST_F(ResourceClaimTest, OnlyTheGonePodsReservationIsRemoved) {
  addPod(makePod("other", "uidother"));
  addClaim(reserved(reserved(allocated(makeClaim("shared")), "test-pod", "uidpod1"), "other", "uidother"));
  controller->enqueuePod(makePod(), /*deleted=*/true);  // seen deleted: no lookup needed
  ASSERT_TRUE(controller->syncHandler("claim:my-namespace/shared").status.ok());
  auto c = server->get<ResourceClaim>(kNs, "shared");
  ASSERT_EQ(c->status.reservedFor.size(), 1u);
  EXPECT_EQ(c->status.reservedFor[0].name, "other");
  EXPECT_TRUE(c->status.allocation.has_value());
  EXPECT_EQ(c->metadata.finalizers, std::vector<std::string>{kFinalizer});
  EXPECT_EQ(count("get", "pods"), 0u);
}

// "structured-deleted": a claim being deleted, allocated but reserved for nobody, is deallocated and released.
TEST_F(ResourceClaimTest, ADeletedUnreservedClaimIsDeallocatedAndReleased) {
  ResourceClaim c = allocated(makeClaim("gone-claim"));
  c.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  addClaim(c);
  ASSERT_TRUE(controller->syncHandler("claim:my-namespace/gone-claim").status.ok());
  auto updates = server->actionsFor("update", "resourceclaims");
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].subresource, "status");
  EXPECT_EQ(updates[0].body.find("\"allocation\""), std::string::npos);
  EXPECT_EQ(updates[1].subresource, "");
  EXPECT_EQ(updates[1].body.find(kFinalizer), std::string::npos);
}

// "clear-reserved-when-done": a pod that succeeded loses its reservation; without the finalizer (not allocated
// by the scheduler) the allocation stays. "delete-claim-when-done": a generated claim of a done pod is deleted.
TEST_F(ResourceClaimTest, ADonePodReleasesItsClaimAndItsGeneratedClaimGoes) {
  Pod p = makePod();
  p.status.phase = "Succeeded";
  addPod(p);
  ResourceClaim user = reserved(makeClaim("user-claim"));
  user.status.allocation.emplace();
  addClaim(user);
  ASSERT_TRUE(controller->syncHandler("claim:my-namespace/user-claim").status.ok());
  auto c = server->get<ResourceClaim>(kNs, "user-claim");
  EXPECT_TRUE(c->status.reservedFor.empty());
  EXPECT_TRUE(c->status.allocation.has_value());
  EXPECT_EQ(count("delete", "resourceclaims"), 0u);

  addClaim(reserved(makeClaim("test-pod-acme-resource-abcde", "uidpod1", "acme-resource")));
  ASSERT_TRUE(controller->syncHandler("claim:my-namespace/test-pod-acme-resource-abcde").status.ok());
  auto deletes = server->actionsFor("delete", "resourceclaims");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].name, "test-pod-acme-resource-abcde");
  EXPECT_FALSE(server->get<ResourceClaim>(kNs, "test-pod-acme-resource-abcde").has_value());
}

// Handlers: a pod needing a claim is queued as pod:, a deleted pod's claims as claim:, a template or claim change
// reaches the pods using it.
TEST_F(ResourceClaimTest, HandlersQueuePodsAndClaims) {
  auto drain = [&] {
    std::vector<std::string> keys;
    while (auto k = controller->queue().tryGet()) {
      keys.push_back(*k);
      controller->queue().done(*k);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  Pod p = makePod();
  addPod(p);
  controller->enqueuePod(p, false);
  EXPECT_EQ(drain(), std::vector<std::string>{"pod:my-namespace/test-pod"});  // must create from template
  ResourceClaimTemplate t;
  t.metadata.namespace_ = kNs, t.metadata.name = "my-template";
  controller->enqueueResourceClaimTemplate(t);
  EXPECT_EQ(drain(), std::vector<std::string>{"pod:my-namespace/test-pod"});

  Pod recorded = makePod();
  recorded.status.resourceClaimStatuses.push_back({"acme-resource", std::string("the-claim"), {}});
  addPod(recorded);
  ResourceClaim c = makeClaim("the-claim", "uidpod1", "acme-resource");
  addClaim(c);
  controller->enqueuePod(recorded, false);
  EXPECT_TRUE(drain().empty());  // nothing to do: the claim exists and the pod is not scheduled
  controller->enqueuePod(recorded, true);
  EXPECT_EQ(drain(), std::vector<std::string>{"claim:my-namespace/the-claim"});
  controller->enqueueResourceClaim(nullptr, &c);
  EXPECT_EQ(drain(), std::vector<std::string>{"claim:my-namespace/the-claim"});
  recorded.spec.nodeName = "worker";
  addPod(recorded);
  addClaim(allocated(c));
  controller->enqueueResourceClaim(&c, &c);
  EXPECT_EQ(drain(), (std::vector<std::string>{"claim:my-namespace/the-claim", "pod:my-namespace/test-pod"}));
  controller->enqueueResourceClaim(&c, nullptr);  // deleted: the pod only
  EXPECT_EQ(drain(), std::vector<std::string>{"pod:my-namespace/test-pod"});
}

// The claims gauge, read from the cache at scrape time.
TEST_F(ResourceClaimTest, TheClaimsGaugeCountsByAllocationAdminAccessAndSource) {
  addClaim(makeClaim("user"));
  addClaim(allocated(makeClaim("gen-1", "uidpod1", "acme-resource")));
  addClaim(allocated(makeClaim("gen-2", "uidpod1", "acme-resource")));
  const std::string text = metrics::Registry::global().render();
  EXPECT_NE(text.find("dynamic_resource_allocation_resource_claims{admin_access=\"false\",allocated=\"false\","
                      "source=\"\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("dynamic_resource_allocation_resource_claims{admin_access=\"false\",allocated=\"true\","
                      "source=\"resource_claim_template\"} 2"),
            std::string::npos);
}

// The mutation cache: a written copy answers until the informer's copy is as new, and only by the index it maps to.
TEST(MutationCacheTest, WrittenCopiesAnswerUntilTheInformerCatchesUp) {
  FakeClock clock;
  informers::Store<ResourceClaim> store;
  informers::MutationCache<ResourceClaim> cache(store, std::chrono::hours(1), true, 2, clock);
  auto idx = [](const ResourceClaim& c) { return std::vector<std::string>{c.metadata.labels.count("k") ? "v" : ""}; };
  ResourceClaim a;
  a.metadata.namespace_ = "ns", a.metadata.name = "a", a.metadata.resourceVersion = "5", a.metadata.labels["k"] = "v";
  cache.mutation(a);
  ASSERT_TRUE(cache.get("ns/a"));
  EXPECT_EQ(cache.byIndex("x", "v", idx).size(), 1u);
  EXPECT_TRUE(cache.byIndex("x", "other", idx).empty());
  ResourceClaim older = a;
  older.metadata.resourceVersion = "4";
  store.upsert("ns/a", std::make_shared<const ResourceClaim>(older));
  EXPECT_EQ(cache.get("ns/a")->metadata.resourceVersion, "5");  // written copy is newer
  ResourceClaim caught = a;
  caught.metadata.resourceVersion = "6";
  store.upsert("ns/a", std::make_shared<const ResourceClaim>(caught));
  EXPECT_EQ(cache.get("ns/a")->metadata.resourceVersion, "6");
  store.erase("ns/a");
  EXPECT_FALSE(cache.get("ns/a"));  // the written copy was dropped when the informer caught up
  ResourceClaim b = a, c = a, d = a;
  b.metadata.name = "b", c.metadata.name = "c", d.metadata.name = "d";
  cache.mutation(b), cache.mutation(c), cache.mutation(d);  // at most 2: b is evicted
  EXPECT_FALSE(cache.get("ns/b"));
  EXPECT_TRUE(cache.get("ns/d"));
  clock.advance(std::chrono::hours(2));
  EXPECT_FALSE(cache.get("ns/d"));  // expired
}

}  // namespace
}  // namespace kcm::controllers::resourceclaim
