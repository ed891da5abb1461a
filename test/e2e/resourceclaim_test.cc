// resourceclaim-controller on the real cluster, with the real kube-scheduler allocating devices of a ResourceSlice
// published for a KWOK node (no kubelet plugin: KWOK runs the pods). What upstream's DRA e2e tests
// (test/e2e/dra/dra.go) check of the controller: a pod's claim template becomes a ResourceClaim owned by the pod
// and recorded in its status, which the scheduler then allocates and reserves; "removes reservation from claim
// when pod is done", "deletes generated claims when pod is done", "must deallocate after use" (a user's claim is
// released and deallocated, and kept, when its pod goes); a missing template is a FailedResourceClaimCreation
// Warning until it appears. The garbage collector runs too, as in any cluster, to remove claims of deleted pods.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

constexpr const char* kDriver = "rc.e2e.kcm.example.com";
constexpr const char* kClass = "rc-e2e-gpu";

class ResourceClaimE2E : public SoloKcmSuite<ResourceClaimE2E> {
 public:
  static constexpr const char* kControllers = "resourceclaim-controller,garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-resourceclaim";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void SetUp() override {
    SoloKcmSuite::SetUp();
    // A class of this suite's driver's devices, and 8 of them on kwok-node-2.
    apply(std::string(R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":")") + kClass +
          R"("},"spec":{"selectors":[{"cel":{"expression":"device.driver == \")" + kDriver + R"(\""}}]}})");
    std::string devices;
    for (int i = 0; i < 8; ++i) devices += std::string(i ? "," : "") + R"({"name":"gpu-)" + std::to_string(i) + R"("})";
    apply(std::string(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"rc-e2e-kwok-node-2"},)") +
          R"("spec":{"driver":")" + kDriver + R"(","nodeName":"kwok-node-2",)" +
          R"("pool":{"name":"kwok-node-2","generation":1,"resourceSliceCount":1},"devices":[)" + devices + "]}}");
  }
  void claimTemplate(const std::string& name) {
    apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":")" + name +
          R"(","namespace":")" + ns() + R"("},"spec":{"metadata":{"labels":{"app":"inference"}},"spec":{"devices":)" +
          R"({"requests":[{"name":"gpu","exactly":{"deviceClassName":")" + kClass + R"("}}]}}}})");
  }
  // A pod with claim "gpu" from template `tmpl` (or naming claim `claim`), scheduled by the scheduler (tolerating
  // whatever taints other suites left on the KWOK nodes).
  void pod(const std::string& name, const std::string& source, const std::string& behavior = "run") {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns() +
          R"(","annotations":{"kwok.kcm.test/behavior":")" + behavior + R"("}},"spec":{"tolerations":[{"operator":"Exists"}],)" +
          R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"claims":[{"name":"gpu"}]}}],)" +
          R"("resourceClaims":[{"name":"gpu",)" + source + "}]}}");
  }
  std::string field(const std::string& kind, const std::string& name, const std::string& path) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "jsonpath={" + path + "}"}).out;
  }
  bool exists(const std::string& kind, const std::string& name) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "name"}).ok();
  }
  // The claim recorded in the pod's status for its "gpu" claim.
  std::string recordedClaim(const std::string& podName) {
    return field("pod", podName, ".status.resourceClaimStatuses[?(@.name==\"gpu\")].resourceClaimName");
  }
};

TEST_F(ResourceClaimE2E, ATemplatesClaimIsOwnedByThePodAllocatedReservedAndGoesWithThePod) {
  claimTemplate("gpu-template");
  pod("trainer", R"("resourceClaimTemplateName":"gpu-template")");
  std::string claim;
  ASSERT_TRUE(waitFor([&] { return !(claim = recordedClaim("trainer")).empty(); }, 30s))
      << field("pod", "trainer", ".status");
  EXPECT_EQ(claim.rfind("trainer-gpu-", 0), 0u) << claim;
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.generateName"), "trainer-gpu-");
  const std::string podUID = field("pod", "trainer", ".metadata.uid");
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.ownerReferences[0].uid"), podUID);
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.ownerReferences[0].kind"), "Pod");
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.ownerReferences[0].controller"), "true");
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.annotations.resource\\.kubernetes\\.io/pod-claim-name"), "gpu");
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.labels.app"), "inference");
  const std::string managers = field("pod", "trainer", ".metadata.managedFields[*].manager");
  EXPECT_NE(managers.find("ResourceClaimController"), std::string::npos) << managers;

  // The scheduler allocates a device of the slice and reserves the claim for the pod; the pod lands on the node.
  ASSERT_TRUE(waitFor([&] { return field("pod", "trainer", ".spec.nodeName") == "kwok-node-2"; }, 60s))
      << field("pod", "trainer", ".status.conditions");
  EXPECT_EQ(field("resourceclaim", claim, ".status.allocation.devices.results[0].driver"), kDriver);
  EXPECT_EQ(field("resourceclaim", claim, ".status.reservedFor[0].uid"), podUID);
  EXPECT_EQ(field("resourceclaim", claim, ".metadata.finalizers[0]"), "resource.kubernetes.io/delete-protection");

  // The pod goes: its reservation is removed, the claim deallocated and released, and the collector removes it.
  ExecResult r = kubectl({"delete", "pod", "trainer", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return !exists("resourceclaim", claim); }, 60s)) << field("resourceclaim", claim, "");
}

// "removes reservation from claim when pod is done", "deletes generated claims when pod is done": the pod fails
// (and stays): the controller itself releases and deletes its generated claim.
TEST_F(ResourceClaimE2E, ADonePodsGeneratedClaimIsReleasedAndDeleted) {
  claimTemplate("gpu-template");
  pod("once", R"("resourceClaimTemplateName":"gpu-template")", "fail");
  std::string claim;
  ASSERT_TRUE(waitFor([&] { return !(claim = recordedClaim("once")).empty(); }, 30s));
  ASSERT_TRUE(waitFor([&] { return field("pod", "once", ".status.phase") == "Failed"; }, 60s))
      << field("pod", "once", ".status");
  EXPECT_TRUE(waitFor([&] { return !exists("resourceclaim", claim); }, 30s)) << field("resourceclaim", claim, "");
  EXPECT_TRUE(exists("pod", "once"));
}

// "must deallocate after use": a claim the user made is reserved while its pod runs, then released and
// deallocated (finalizer gone) when the pod is deleted, and kept.
TEST_F(ResourceClaimE2E, AUsersClaimIsReleasedAndDeallocatedAndKeptWhenItsPodGoes) {
  apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"shared-gpu","namespace":")" +
        ns() + R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":")" + kClass +
        R"("}}]}}})");
  pod("user", R"("resourceClaimName":"shared-gpu")");
  ASSERT_TRUE(waitFor([&] { return !field("resourceclaim", "shared-gpu", ".status.reservedFor[0].uid").empty(); }, 60s))
      << field("resourceclaim", "shared-gpu", ".status");
  EXPECT_FALSE(field("resourceclaim", "shared-gpu", ".status.allocation").empty());
  EXPECT_EQ(field("pod", "user", ".status.resourceClaimStatuses"), "");  // nothing generated, nothing recorded
  ExecResult r = kubectl({"delete", "pod", "user", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] {
    return field("resourceclaim", "shared-gpu", ".status.allocation").empty() &&
           field("resourceclaim", "shared-gpu", ".status.reservedFor").empty() &&
           field("resourceclaim", "shared-gpu", ".metadata.finalizers").empty();
  }, 60s)) << field("resourceclaim", "shared-gpu", "");
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(exists("resourceclaim", "shared-gpu"));
}

// A template that does not exist yet: a Warning on the pod naming it, then the claim once it is created.
TEST_F(ResourceClaimE2E, AMissingTemplateIsAWarningUntilItAppears) {
  pod("early", R"("resourceClaimTemplateName":"later-template")");
  const std::string want = "PodResourceClaim gpu: resource claim template \"later-template\": "
                           "resourceclaimtemplate.resource.k8s.io \"later-template\" not found";
  std::vector<Json> events;
  EXPECT_TRUE(waitFor([&] { return !(events = eventsWithReason(ns(), "FailedResourceClaimCreation")).empty(); }, 30s));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["message"], want);
  EXPECT_EQ(events[0]["involvedObject"]["name"], "early");
  EXPECT_EQ(events[0]["source"]["component"], "resource_claim");
  claimTemplate("later-template");
  std::string claim;
  EXPECT_TRUE(waitFor([&] { return !(claim = recordedClaim("early")).empty(); }, 30s));
  EXPECT_TRUE(exists("resourceclaim", claim));
}

}  // namespace
}  // namespace kcm::e2e
