// device-taint-eviction-controller (upstream pkg/controller/devicetainteviction's device_taint_eviction_test.go
// cases) over the fake apiserver: when a pod's allocated, reserved claim's devices carry NoExecute taints (in the
// ResourceSlice or from DeviceTaintRules) and when tolerations delay or prevent it; pool generations; eviction with
// the DisruptionTarget condition and a UID-guarded delete; cancellation; the rule's EvictionInProgress condition.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "client/typed_client.h"
#include "controllers/devicetainteviction/device_taint_eviction.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::devicetainteviction {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

constexpr const char* kNs = "default";
constexpr const char* kDriver = "driver.example.com";

class DeviceTaintEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    for (const auto& [res, kind, ns] : {std::tuple{"resourceclaims", "ResourceClaim", true},
                                        std::tuple{"resourceslices", "ResourceSlice", false},
                                        std::tuple{"devicetaintrules", "DeviceTaintRule", false},
                                        std::tuple{"deviceclasses", "DeviceClass", false}})
      server->addResource({"resource.k8s.io", "v1", res, kind, ns,
                           {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  int64_t now() const {
    return std::chrono::duration_cast<std::chrono::seconds>(clock.wallNow().time_since_epoch()).count();
  }
  // A slice of pool "pool" (generation `gen`) with devices dev-0..dev-(n-1); `taint` on dev-0 if given.
  SlicePtr slice(const std::string& name, int64_t gen, int n, std::optional<api::resource::v1::DeviceTaint> taint = {}) {
    auto s = std::make_shared<ResourceSlice>();
    s->metadata.name = name;
    s->spec.driver = kDriver;
    s->spec.pool.name = "pool";
    s->spec.pool.generation = gen;
    for (int i = 0; i < n; ++i) s->spec.devices.emplace_back().name = "dev-" + std::to_string(i);
    if (taint) s->spec.devices[0].taints.push_back(*taint);
    return s;
  }
  api::resource::v1::DeviceTaint noExecute(int64_t added) {
    api::resource::v1::DeviceTaint t;
    t.key = "example.com/taint", t.value = "x", t.effect = "NoExecute", t.timeAdded = api::Time::fromUnix(added);
    return t;
  }
  // Claim `name` allocated dev-0 (with tolerations), reserved for pod `podUID` when given.
  ClaimPtr claim(const std::string& name, const std::string& podName, const std::string& podUID,
                 std::vector<api::resource::v1::DeviceToleration> tolerations = {}) {
    auto c = std::make_shared<ResourceClaim>();
    c->metadata.namespace_ = kNs, c->metadata.name = name, c->metadata.uid = "uid-" + name;
    api::resource::v1::AllocationResult a;
    auto& r = a.devices.results.emplace_back();
    r.driver = kDriver, r.pool = "pool", r.device = "dev-0", r.request = "req";
    r.tolerations = std::move(tolerations);
    c->status.allocation = a;
    if (!podUID.empty()) {
      auto& ref = c->status.reservedFor.emplace_back();
      ref.resource = "pods", ref.name = podName, ref.uid = podUID;
    }
    return c;
  }
  std::shared_ptr<Pod> pod(const std::string& name, const std::string& claimName, const std::string& node = "node-1") {
    auto p = std::make_shared<Pod>();
    p->metadata.namespace_ = kNs, p->metadata.name = name, p->metadata.uid = "uid-" + name;
    p->spec.nodeName = node;
    auto& rc = p->spec.resourceClaims.emplace_back();
    rc.name = "c";
    rc.resourceClaimName = claimName;
    p->spec.containers.emplace_back().name = "c";
    auto stored = server->add(*p);
    factory.forType<Pod>().store().upsert(std::string(kNs) + "/" + name, std::make_shared<const Pod>(stored));
    return std::make_shared<Pod>(stored);
  }
  RulePtr rule(const std::string& name, const std::string& effect, int64_t added) {
    auto r = std::make_shared<DeviceTaintRule>();
    r->metadata.name = name, r->metadata.uid = "uid-" + name, r->metadata.generation = 1;
    r->spec.deviceSelector = api::resource::v1::DeviceTaintSelector{};
    r->spec.deviceSelector->driver = kDriver;
    r->spec.taint.effect = effect, r->spec.taint.key = "rule", r->spec.taint.timeAdded = api::Time::fromUnix(added);
    auto stored = server->add(*r);
    auto ptr = std::make_shared<const DeviceTaintRule>(stored);
    factory.forType<DeviceTaintRule>().store().upsert(name, ptr);
    return ptr;
  }
  static api::resource::v1::DeviceToleration tolerate(std::optional<int64_t> seconds) {
    api::resource::v1::DeviceToleration t;
    t.effect = "NoExecute", t.operator_ = "Exists", t.tolerationSeconds = seconds;
    return t;
  }
  std::string ref(const std::string& podName) { return std::string(kNs) + "/" + podName + "/uid-" + podName; }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  Controller controller{server->client(), nullptr, factory.forType<Pod>(), factory.forType<ResourceClaim>(),
                        factory.forType<ResourceSlice>(), &factory.forType<DeviceTaintRule>(),
                        factory.forType<api::resource::v1::DeviceClass>(), "device-taint-eviction-controller", clock};
};

TEST_F(DeviceTaintEvictionTest, ASliceTaintEvictsTheReservedPodAtOnce) {
  auto p = pod("pod-1", "claim-1");
  controller.handleSliceChange(nullptr, slice("s", 1, 2, noExecute(now() - 5)));
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid));
  auto e = controller.pendingEviction(ref("pod-1"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->when, now() - 5);
  ASSERT_EQ(e->reason.size(), 1u);
  EXPECT_EQ(e->reason[0].toString(), "ResourceSlice s driver.example.com/pool/dev-0 taint #0");

  ASSERT_TRUE(controller.sync("pod/" + ref("pod-1")).status.ok());
  auto patches = server->actionsFor("patch", "pods/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_NE(patches[0].body.find("DeletionByDeviceTaintManager"), std::string::npos) << patches[0].body;
  EXPECT_NE(patches[0].body.find("Device Taint manager: deleting due to NoExecute taint"), std::string::npos);
  auto deletes = server->actionsFor("delete", "pods");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_NE(deletes[0].body.find("uid-pod-1"), std::string::npos) << "UID precondition: " << deletes[0].body;
  EXPECT_FALSE(controller.pendingEviction(ref("pod-1")).has_value());
  // Done: the same work item again does nothing.
  ASSERT_TRUE(controller.sync("pod/" + ref("pod-1")).status.ok());
  EXPECT_EQ(server->actionsFor("delete", "pods").size(), 1u);
}

TEST_F(DeviceTaintEvictionTest, TolerationSecondsDelayAndAForeverTolerationPrevents) {
  auto p = pod("pod-1", "claim-1");
  controller.handleSliceChange(nullptr, slice("s", 1, 1, noExecute(now())));
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid, {tolerate(60), tolerate(30)}));
  auto e = controller.pendingEviction(ref("pod-1"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->when, now() + 30) << "the smallest tolerationSeconds";
  auto r = controller.sync("pod/" + ref("pod-1"));
  ASSERT_TRUE(r.status.ok());
  ASSERT_TRUE(r.requeueAfter.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(*r.requeueAfter).count(), 30);
  EXPECT_TRUE(server->actionsFor("delete", "pods").empty());

  auto forever = claim("claim-1", "pod-1", p->metadata.uid, {tolerate(std::nullopt)});
  controller.handleClaimChange(nullptr, forever);  // seen as new: its eviction recomputed
  EXPECT_FALSE(controller.pendingEviction(ref("pod-1")).has_value()) << "tolerated without seconds: never";
}

TEST_F(DeviceTaintEvictionTest, UnscheduledUnreservedAndOtherEffectsAreNotEvicted) {
  auto unscheduled = pod("pending", "claim-p", "");
  auto unreserved = pod("other", "claim-o");
  api::resource::v1::DeviceTaint noSchedule = noExecute(now());
  noSchedule.effect = "NoSchedule";
  controller.handleSliceChange(nullptr, slice("s", 1, 1, noExecute(now())));
  controller.handleClaimChange(nullptr, claim("claim-p", "pending", unscheduled->metadata.uid));
  controller.handleClaimChange(nullptr, claim("claim-o", "", ""));
  EXPECT_FALSE(controller.pendingEviction(ref("pending")).has_value());
  EXPECT_FALSE(controller.pendingEviction(ref("other")).has_value());

  auto p = pod("pod-1", "claim-1");
  controller.handleSliceChange(slice("s", 1, 1, noExecute(now())), slice("s", 1, 1, noSchedule));
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid));
  EXPECT_FALSE(controller.pendingEviction(ref("pod-1")).has_value()) << "NoSchedule does not evict";
}

TEST_F(DeviceTaintEvictionTest, OnlyThePoolsNewestGenerationCountsAndAnUntaintCancels) {
  auto p = pod("pod-1", "claim-1");
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid));
  auto old = slice("old", 1, 1, noExecute(now()));
  controller.handleSliceChange(nullptr, old);
  EXPECT_TRUE(controller.pendingEviction(ref("pod-1")).has_value());
  controller.handleSliceChange(nullptr, slice("new", 2, 1));  // a newer generation without the taint
  EXPECT_FALSE(controller.pendingEviction(ref("pod-1")).has_value());
  controller.handleSliceChange(old, nullptr);
  EXPECT_FALSE(controller.pendingEviction(ref("pod-1")).has_value());
}

TEST_F(DeviceTaintEvictionTest, ANoExecuteRuleEvictsAndItsConditionFollows) {
  auto p = pod("pod-1", "claim-1");
  controller.handleSliceChange(nullptr, slice("s", 1, 2));
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid));
  auto r = rule("evict", "NoExecute", now() + 100);
  controller.handleRuleChange(nullptr, r);
  auto e = controller.pendingEviction(ref("pod-1"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->reason[0].toString(), "DeviceTaintRule evict");

  ASSERT_TRUE(controller.sync("rule/evict/uid-evict").status.ok());
  auto applies = server->actionsFor("patch", "devicetaintrules/status");
  ASSERT_EQ(applies.size(), 1u);
  auto body = nlohmann::json::parse(applies[0].body);
  const auto& c = body["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "EvictionInProgress");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "PodsPendingEviction");
  EXPECT_EQ(c["message"], "1 pod needs to be evicted in 1 namespace.");
  EXPECT_EQ(body["metadata"]["uid"], "uid-evict");

  // The status as stored: within 10 s of its transition the condition is left alone (checked again later).
  auto stored = server->get<DeviceTaintRule>("", "evict");
  ASSERT_TRUE(stored.has_value());
  factory.forType<DeviceTaintRule>().store().upsert("evict", std::make_shared<const DeviceTaintRule>(*stored));
  auto again = controller.sync("rule/evict/uid-evict");
  ASSERT_TRUE(again.requeueAfter.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(*again.requeueAfter).count(), 10);

  clock.advance(101s);
  ASSERT_TRUE(controller.sync("pod/" + ref("pod-1")).status.ok());
  EXPECT_EQ(server->actionsFor("delete", "pods").size(), 1u);
  factory.forType<Pod>().store().erase(std::string(kNs) + "/pod-1");
  clock.advance(11s);
  ASSERT_TRUE(controller.sync("rule/evict/uid-evict").status.ok());
  applies = server->actionsFor("patch", "devicetaintrules/status");
  ASSERT_EQ(applies.size(), 2u);
  body = nlohmann::json::parse(applies[1].body);
  EXPECT_EQ(body["status"]["conditions"][0]["reason"], "Completed");
  EXPECT_EQ(body["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ(body["status"]["conditions"][0]["message"], "1 pod evicted since starting the controller.");
}

TEST_F(DeviceTaintEvictionTest, NoneAndOtherEffectsReportWithoutEvicting) {
  auto p = pod("pod-1", "claim-1");
  controller.handleSliceChange(nullptr, slice("s", 1, 3));
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid));
  auto none = rule("none", "None", now());
  controller.handleRuleChange(nullptr, none);
  EXPECT_FALSE(controller.pendingEviction(ref("pod-1")).has_value());
  ASSERT_TRUE(controller.sync("rule/none/uid-none").status.ok());
  auto body = nlohmann::json::parse(server->actionsFor("patch", "devicetaintrules/status")[0].body);
  EXPECT_EQ(body["status"]["conditions"][0]["reason"], "NoEffect");
  EXPECT_EQ(body["status"]["conditions"][0]["message"],
            "3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the "
            "effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to "
            "trigger an update.");
  auto other = rule("other", "NoSchedule", now());
  controller.handleRuleChange(nullptr, other);
  ASSERT_TRUE(controller.sync("rule/other/uid-other").status.ok());
  body = nlohmann::json::parse(server->actionsFor("patch", "devicetaintrules/status")[1].body);
  EXPECT_EQ(body["status"]["conditions"][0]["reason"], "OtherEffect");
  EXPECT_EQ(body["status"]["conditions"][0]["message"], "Eviction only happens for the NoExecute effect.");
  EXPECT_TRUE(controller.sync("rule/gone/uid-gone").status.ok()) << "a deleted rule is nothing to do";
}

TEST_F(DeviceTaintEvictionTest, APodReplacedOrDeletedIsNotDeleted) {
  auto p = pod("pod-1", "claim-1");
  controller.handleSliceChange(nullptr, slice("s", 1, 1, noExecute(now())));
  controller.handleClaimChange(nullptr, claim("claim-1", "pod-1", p->metadata.uid));
  ASSERT_TRUE(controller.pendingEviction(ref("pod-1")).has_value());
  // The apiserver's pod has another UID now: not found, nothing deleted, the item done.
  ASSERT_TRUE(client::remove<Pod>(*server->client(), kNs, "pod-1").ok());
  auto replacement = *p;
  replacement.metadata.uid = "uid-other";
  replacement.metadata.resourceVersion.clear();
  server->add(replacement);
  ASSERT_TRUE(controller.sync("pod/" + ref("pod-1")).status.ok());
  EXPECT_EQ(server->actionsFor("delete", "pods").size(), 1u) << "only the test's own delete";
  EXPECT_TRUE(server->actionsFor("patch", "pods/status").empty());
  // A pod deleted from the cache cancels its pending eviction.
  auto q = pod("pod-2", "claim-2");
  controller.handleClaimChange(nullptr, claim("claim-2", "pod-2", q->metadata.uid));
  ASSERT_TRUE(controller.pendingEviction(ref("pod-2")).has_value());
  controller.handlePodChange(q, nullptr);
  EXPECT_FALSE(controller.pendingEviction(ref("pod-2")).has_value());
}

TEST(DeviceTaintEvictionHelpers, TolerationsAndRuleSelectors) {
  api::resource::v1::DeviceTaint taint;
  taint.key = "k", taint.value = "v", taint.effect = "NoExecute";
  api::resource::v1::DeviceToleration t;
  t.key = "k", t.value = "v";
  EXPECT_TRUE(toleratesTaint(t, taint)) << "Equal by default";
  t.value = "w";
  EXPECT_FALSE(toleratesTaint(t, taint));
  t.operator_ = "Exists";
  EXPECT_TRUE(toleratesTaint(t, taint));
  t.effect = "NoSchedule";
  EXPECT_FALSE(toleratesTaint(t, taint));
  t.effect.clear(), t.key = "other";
  EXPECT_FALSE(toleratesTaint(t, taint));
  t.operator_ = "Gt";
  t.key.clear();
  EXPECT_FALSE(toleratesTaint(t, taint)) << "an unknown operator tolerates nothing";

  DeviceTaintRule r;
  EXPECT_FALSE(ruleMatchesDevice(r, "d", "p", "x")) << "no selector: nothing";
  r.spec.deviceSelector = api::resource::v1::DeviceTaintSelector{};
  EXPECT_TRUE(ruleMatchesDevice(r, "d", "p", "x")) << "an empty selector: everything";
  r.spec.deviceSelector->pool = "p";
  r.spec.deviceSelector->device = "x";
  EXPECT_TRUE(ruleMatchesDevice(r, "d", "p", "x"));
  EXPECT_FALSE(ruleMatchesDevice(r, "d", "p", "y"));
  EXPECT_FALSE(ruleMatchesDevice(r, "d", "q", "x"));

  UIDCache cache(2);
  cache.add("a"), cache.add("b"), cache.add("c");
  EXPECT_FALSE(cache.has("a"));
  EXPECT_TRUE(cache.has("b") && cache.has("c"));
}

}  // namespace
}  // namespace kcm::controllers::devicetainteviction
