// device-taint-eviction-controller on the real cluster, with the real kube-scheduler allocating devices of a
// ResourceSlice published for a KWOK node (each test its own driver, slice and class). What upstream's DRA e2e
// test "DeviceTaintRule evicts pod" (test/e2e/dra/dra.go) checks: a NoExecute DeviceTaintRule selecting the driver
// makes the pod using an allocated device terminate with DisruptionTarget=True, DeletionByDeviceTaintManager,
// "Device Taint manager: deleting due to NoExecute taint"; and of the controller's own behaviour: the
// DeviceTaintManagerEviction event, the rule's EvictionInProgress condition (Completed, the evicted count; NoEffect
// with what NoExecute would do for effect None), a NoExecute taint in the ResourceSlice honoured after the claim's
// tolerationSeconds, and a toleration without seconds keeping the pod.
#include <nlohmann/json.hpp>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class DeviceTaintEviction : public SoloKcmSuite<DeviceTaintEviction> {
 public:
  static constexpr const char* kControllers = "device-taint-eviction-controller";
  static constexpr const char* kLogName = "kcm-device-taint-eviction";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void SetUp() override {
    SoloKcmSuite::SetUp();
    driver_ = "dte-" + ns().substr(ns().size() - 5) + ".kcm.example.com";  // a driver name has at most 63 bytes
    apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":")" + ns() +
          R"("},"spec":{"selectors":[{"cel":{"expression":"device.driver == \")" + driver_ + R"(\""}}]}})");
    slice("");
  }
  void TearDown() override {
    for (const auto& p : finalized_)
      kubectl({"patch", "pod", p, "-n", ns(), "--type=json", "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"});
    for (const auto& r : rules_) kubectl({"delete", "devicetaintrule", r, "--wait=false"});
    kubectl({"delete", "resourceslice", ns(), "--wait=false"});
    kubectl({"delete", "deviceclass", ns(), "--wait=false"});
    SoloKcmSuite::TearDown();
  }
  // The slice: two devices on kwok-node-1; `taints` (JSON array members) on dev-0.
  void slice(const std::string& taints) {
    apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" + ns() +
          R"("},"spec":{"driver":")" + driver_ + R"(","nodeName":"kwok-node-1","pool":{"name":"p","generation":1,)"
          R"("resourceSliceCount":1},"devices":[{"name":"dev-0","taints":[)" + taints + R"(]},{"name":"dev-1"}]}})");
  }
  // A claim for one device of the class (with these tolerations) and a pod using it, kept by a finalizer.
  void podWithClaim(const std::string& name, const std::string& tolerations = "") {
    apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")" + name +
          R"(","namespace":")" + ns() + R"("},"spec":{"devices":{"requests":[{"name":"dev","exactly":{"deviceClassName":")" +
          ns() + R"(","selectors":[{"cel":{"expression":"device.attributes.size() >= 0"}}],"tolerations":[)" +
          tolerations + R"(]}}]}}})");
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns() +
          R"(","finalizers":["e2e-test/dont-delete-me"]},"spec":{"tolerations":[{"operator":"Exists"}],)"
          R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
          R"({"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["kwok-node-1"]}]}]}}},)"
          R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"claims":[{"name":"dev"}]}}],)"
          R"("resourceClaims":[{"name":"dev","resourceClaimName":")" + name + R"("}]}})");
    finalized_.push_back(name);
  }
  std::string field(const std::string& kind, const std::string& name, const std::string& path, bool namespaced = true) {
    std::vector<std::string> args = {"get", kind, name, "-o", "jsonpath={" + path + "}"};
    if (namespaced) args.insert(args.end(), {"-n", ns()});
    return kubectl(args).out;
  }
  bool running(const std::string& pod) { return field("pod", pod, ".status.phase") == "Running"; }
  bool terminating(const std::string& pod) { return !field("pod", pod, ".metadata.deletionTimestamp").empty(); }
  std::string rule(const std::string& suffix, const std::string& effect) {
    const std::string name = ns() + "-" + suffix;
    apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":")" + name +
          R"("},"spec":{"deviceSelector":{"driver":")" + driver_ + R"("},"taint":{"effect":")" + effect +
          R"(","key":"test.example.com/evict","value":"now"}}})");
    rules_.push_back(name);
    return name;
  }
  std::string condition(const std::string& rule, const std::string& what) {
    return field("devicetaintrule", rule, ".status.conditions[?(@.type==\"EvictionInProgress\")]." + what, false);
  }
  std::string driver_;
  std::vector<std::string> finalized_, rules_;
};

TEST_F(DeviceTaintEviction, DeviceTaintRuleEvictsPod) {
  podWithClaim("victim");
  ASSERT_TRUE(waitFor([&] { return running("victim"); }, 60s)) << field("pod", "victim", ".status");
  const std::string r = rule("evict", "NoExecute");
  EXPECT_FALSE(field("devicetaintrule", r, ".spec.taint.timeAdded", false).empty()) << "defaulted by the apiserver";
  ASSERT_TRUE(waitFor([&] { return terminating("victim"); }, 60s));
  const std::string c = ".status.conditions[?(@.type==\"DisruptionTarget\")].";
  EXPECT_EQ(field("pod", "victim", c + "status"), "True");
  EXPECT_EQ(field("pod", "victim", c + "reason"), "DeletionByDeviceTaintManager");
  EXPECT_EQ(field("pod", "victim", c + "message"), "Device Taint manager: deleting due to NoExecute taint");
  ExecResult ev = kubectl({"get", "events", "-n", ns(), "--field-selector", "involvedObject.name=victim,reason=DeviceTaintManagerEviction",
                           "-o", "jsonpath={.items[*].message}/{.items[*].source.component}/{.items[*].type}"});
  EXPECT_EQ(ev.out, "Marking for deletion/device-taint-eviction-controller/Normal");
  // The rule's condition: Completed once the pod is gone from the pending ones, counting it.
  EXPECT_TRUE(waitFor([&] { return condition(r, "reason") == "Completed"; }, 60s)) << condition(r, "message");
  EXPECT_EQ(condition(r, "status"), "False");
  EXPECT_EQ(condition(r, "message"), "1 pod evicted since starting the controller.");
  EXPECT_EQ(field("devicetaintrule", r, ".metadata.managedFields[?(@.subresource==\"status\")].manager", false),
            "device-taint-eviction-controller");
}

TEST_F(DeviceTaintEviction, RuleWithEffectNoneReportsWhatNoExecuteWouldDo) {
  podWithClaim("kept");
  ASSERT_TRUE(waitFor([&] { return running("kept"); }, 60s)) << field("pod", "kept", ".status");
  const std::string r = rule("none", "None");
  ASSERT_TRUE(waitFor([&] { return condition(r, "reason") == "NoEffect"; }, 30s)) << field("devicetaintrule", r, ".status", false);
  EXPECT_EQ(condition(r, "message"),
            "2 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the "
            "effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to "
            "trigger an update.");
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(terminating("kept"));
}

TEST_F(DeviceTaintEviction, SliceTaintEvictsAfterTolerationSecondsAndATolerationWithoutSecondsKeeps) {
  podWithClaim("tolerant", R"({"effect":"NoExecute","operator":"Exists"})");
  podWithClaim("patient", R"({"effect":"NoExecute","operator":"Exists","tolerationSeconds":4})");
  ASSERT_TRUE(waitFor([&] { return running("tolerant") && running("patient"); }, 60s));
  // Both devices tainted in the slice itself (a new pool generation).
  const std::string taint = R"({"key":"example.com/broken","value":"yes","effect":"NoExecute"})";
  apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" + ns() +
        R"("},"spec":{"driver":")" + driver_ + R"(","nodeName":"kwok-node-1","pool":{"name":"p","generation":2,)"
        R"("resourceSliceCount":1},"devices":[{"name":"dev-0","taints":[)" + taint + R"(]},{"name":"dev-1","taints":[)" +
        taint + "]}]}}");
  const auto tainted = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return terminating("patient"); }, 60s));
  EXPECT_GE(std::chrono::steady_clock::now() - tainted, 2s) << "not before its tolerationSeconds (4 s from timeAdded)";
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(terminating("tolerant"));
}

}  // namespace
}  // namespace kcm::e2e
