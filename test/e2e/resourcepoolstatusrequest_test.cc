// resourcepoolstatusrequest-controller on the real cluster (the apiserver serves resource.k8s.io/v1alpha3 with
// DRAResourcePoolStatus and DRAPartitionableDevicesType on; ours runs with the gate on). What upstream's DRA e2e
// tests "control plane" and "control plane views" (test/e2e/dra/dra.go) check, each test with its own driver: a
// network pool of 10 devices (counts, no nodeName); a device allocated to a scheduled pod's claim counted as
// allocated; a partitionable pool (counter slice plus device slice) with its partitionSummary, none without a
// partition type attribute; a shareable pool's shareableSummary. And of the controller's own behaviour: a pool
// still missing slices is not written (retried, then dropped until the request changes), the status is written once.
#include <nlohmann/json.hpp>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class ResourcePoolStatusRequest : public SoloKcmSuite<ResourcePoolStatusRequest> {
 public:
  static constexpr const char* kControllers = "resourcepoolstatusrequest-controller";
  static constexpr const char* kLogName = "kcm-resourcepoolstatusrequest";
  static std::vector<std::string> extraFlags() { return {"--feature-gates=DRAResourcePoolStatus=true"}; }

 protected:
  void SetUp() override {
    SoloKcmSuite::SetUp();
    driver_ = "rpsr-" + ns().substr(ns().size() - 5) + ".kcm.example.com";
  }
  void TearDown() override {
    for (const auto& s : slices_) kubectl({"delete", "resourceslice", s, "--wait=false"});
    for (const auto& r : requests_) kubectl({"delete", "resourcepoolstatusrequest", r, "--wait=false"});
    if (classCreated_) kubectl({"delete", "deviceclass", ns(), "--wait=false"});
    SoloKcmSuite::TearDown();
  }
  // A slice of the test's driver; `spec` holds the members after driver (JSON, without braces).
  void slice(const std::string& suffix, const std::string& spec) {
    const std::string name = ns() + "-" + suffix;
    apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" + name +
          R"("},"spec":{"driver":")" + driver_ + "\"," + spec + "}}");
    slices_.push_back(name);
  }
  std::string request(const std::string& suffix, const std::string& extraSpec = "") {
    const std::string name = ns() + "-" + suffix;
    // The slices just written reach the controller's cache first (upstream's e2e retries a request instead).
    std::this_thread::sleep_for(1s);
    apply(R"({"apiVersion":"resource.k8s.io/v1alpha3","kind":"ResourcePoolStatusRequest","metadata":{"name":")" + name +
          R"("},"spec":{"driver":")" + driver_ + "\"" + extraSpec + "}}");
    requests_.push_back(name);
    return name;
  }
  nlohmann::json status(const std::string& name) {
    auto r = kubectl({"get", "resourcepoolstatusrequest", name, "-o", "json"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded() || !j.contains("status")) return nullptr;
    return j["status"];
  }
  nlohmann::json waitStatus(const std::string& name) {
    nlohmann::json st;
    waitFor([&] { return !(st = status(name)).is_null(); }, 30s);
    return st;
  }
  static std::string hostSelector() {
    return R"("nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["kwok-node-1"]}]}]})";
  }
  std::string driver_;
  std::vector<std::string> slices_, requests_;
  bool classCreated_ = false;
};

// "should report pool status with correct device counts"
TEST_F(ResourcePoolStatusRequest, ReportsPoolStatusWithDeviceCounts) {
  std::string devices;
  for (int i = 0; i < 10; ++i) devices += std::string(i ? "," : "") + R"({"name":"device-)" + std::to_string(i) + "\"}";
  slice("network", hostSelector() + R"(,"pool":{"name":"network","generation":1,"resourceSliceCount":1},"devices":[)" +
                       devices + "]");
  const std::string r = request("counts");
  const auto st = waitStatus(r);
  ASSERT_FALSE(st.is_null());
  EXPECT_EQ(st.value("poolCount", -1), 1);
  ASSERT_EQ(st["pools"].size(), 1u) << st.dump();
  const auto& p = st["pools"][0];
  EXPECT_EQ(p.value("driver", ""), driver_);
  EXPECT_EQ(p.value("poolName", ""), "network");
  EXPECT_EQ(p.value("generation", -1), 1);
  EXPECT_EQ(p.value("resourceSliceCount", -1), 1);
  EXPECT_EQ(p.value("totalDevices", -1), 10);
  EXPECT_EQ(p.value("allocatedDevices", -1), 0);
  EXPECT_EQ(p.value("availableDevices", -1), 10);
  EXPECT_EQ(p.value("unavailableDevices", -1), 0);
  EXPECT_FALSE(p.contains("nodeName")) << "a node selector, not a node";
  EXPECT_FALSE(p.contains("validationError"));
  EXPECT_FALSE(p.contains("partitionSummary"));
  EXPECT_FALSE(p.contains("shareableSummary"));
  ASSERT_EQ(st["conditions"].size(), 1u);
  EXPECT_EQ(st["conditions"][0].value("type", ""), "Complete");
  EXPECT_EQ(st["conditions"][0].value("status", ""), "True");
  EXPECT_EQ(st["conditions"][0].value("reason", ""), "CalculationComplete");
  EXPECT_EQ(st["conditions"][0].value("message", ""), "Calculated status for 1 pools");
  // Written through the status subresource with a plain update: the apiserver names the manager after the user
  // agent's first segment, as for upstream's UpdateStatus.
  EXPECT_EQ(kubectl({"get", "resourcepoolstatusrequest", r, "-o",
                     "jsonpath={.metadata.managedFields[?(@.subresource==\"status\")].operation}/"
                     "{.metadata.managedFields[?(@.subresource==\"status\")].manager}"}).out,
            "Update/kube-controller-manager");
}

// "should reflect allocated devices after pod is scheduled" (the real scheduler allocates), and taints.
TEST_F(ResourcePoolStatusRequest, ReflectsAllocatedAndTaintedDevices) {
  apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":")" + ns() +
        R"("},"spec":{"selectors":[{"cel":{"expression":"device.driver == \")" + driver_ + R"(\""}}]}})");
  classCreated_ = true;
  slice("node", R"("nodeName":"kwok-node-1","pool":{"name":"node","generation":1,"resourceSliceCount":1},"devices":[)"
                R"({"name":"d0"},{"name":"d1"},{"name":"d2","taints":[{"key":"example.com/taint","value":"tainted",)"
                R"("effect":"NoSchedule"}]}])");
  apply(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":")" + ns() +
        R"("},"spec":{"devices":{"requests":[{"name":"dev","exactly":{"deviceClassName":")" + ns() + R"("}}]}}})");
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":")" + ns() +
        R"("},"spec":{"tolerations":[{"operator":"Exists"}],"nodeSelector":{"kubernetes.io/hostname":"kwok-node-1"},)"
        R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"claims":[{"name":"dev"}]}}],)"
        R"("resourceClaims":[{"name":"dev","resourceClaimName":"c"}]}})");
  ASSERT_TRUE(waitFor([&] {
    return !kubectl({"get", "resourceclaim", "c", "-n", ns(), "-o", "jsonpath={.status.allocation}"}).out.empty();
  }, 60s));
  const auto st = waitStatus(request("allocated"));
  ASSERT_EQ(st["pools"].size(), 1u) << st.dump();
  const auto& p = st["pools"][0];
  EXPECT_EQ(p.value("nodeName", ""), "kwok-node-1");
  EXPECT_EQ(p.value("totalDevices", -1), 3);
  EXPECT_EQ(p.value("allocatedDevices", -1), 1);
  EXPECT_EQ(p.value("unavailableDevices", -1), 1);
  EXPECT_EQ(p.value("availableDevices", -1), 1);
  kubectl({"delete", "pod", "p", "-n", ns(), "--wait=false"});
}

// "should report partitionSummary for a partitionable pool" / "... no partition summary when no partition type".
TEST_F(ResourcePoolStatusRequest, ReportsThePartitionSummary) {
  auto device = [](const std::string& name, const std::string& profile, const std::string& memory) {
    return R"({"name":")" + name + R"(","attributes":{"dra.e2e.example.com/profile":{"string":")" + profile +
           R"("}},"consumesCounters":[{"counterSet":"gpu-0","counters":{"memory":{"value":")" + memory + R"("}}}]})";
  };
  const std::string devices = device("full", "Full", "8") + "," + device("half-a", "Half", "4") + "," +
                              device("half-b", "Half", "4");
  for (const std::string pool : {"typed", "untyped"}) {
    slice(pool + "-counters", hostSelector() + R"(,"pool":{"name":")" + pool +
                                  R"(","generation":1,"resourceSliceCount":2},"sharedCounters":[{"name":"gpu-0",)"
                                  R"("counters":{"memory":{"value":"8"}}}])");
    slice(pool + "-devices", hostSelector() + R"(,"pool":{"name":")" + pool +
                                 R"(","generation":1,"resourceSliceCount":2},)" +
                                 (pool == "typed" ? R"("partitionTypeAttribute":"dra.e2e.example.com/profile",)" : "") +
                                 R"("devices":[)" + devices + "]");
  }
  ASSERT_EQ(kubectl({"get", "resourceslice", ns() + "-typed-devices", "-o", "jsonpath={.spec.partitionTypeAttribute}"}).out,
            "dra.e2e.example.com/profile") << "the apiserver keeps the field (DRAPartitionableDevicesType)";
  const auto st = waitStatus(request("views"));
  ASSERT_EQ(st["pools"].size(), 2u) << st.dump();
  const auto& typed = st["pools"][0];
  EXPECT_EQ(typed.value("poolName", ""), "typed");
  EXPECT_FALSE(typed.contains("validationError")) << typed.dump();
  EXPECT_EQ(typed["partitionSummary"],
            nlohmann::json::parse(R"([{"attribute":"dra.e2e.example.com/profile","type":"Full","total":1,"allocatable":1},)"
                                  R"({"attribute":"dra.e2e.example.com/profile","type":"Half","total":2,"allocatable":2}])"));
  EXPECT_EQ(typed.value("totalDevices", -1), 3);
  EXPECT_EQ(typed.value("resourceSliceCount", -1), 2);
  const auto& untyped = st["pools"][1];
  EXPECT_EQ(untyped.value("poolName", ""), "untyped");
  EXPECT_FALSE(untyped.contains("validationError"));
  EXPECT_FALSE(untyped.contains("partitionSummary"));

  // The request's default attribute stands in for a driver that does not declare one.
  const auto dflt = waitStatus(request("default", R"(,"poolName":"untyped","defaultPartitionTypeAttribute":"dra.e2e.example.com/profile")"));
  ASSERT_EQ(dflt["pools"].size(), 1u) << dflt.dump();
  EXPECT_EQ(dflt["pools"][0]["partitionSummary"].size(), 2u) << dflt.dump();
}

// "should report shareableSummary for a pool with shareable devices"
TEST_F(ResourcePoolStatusRequest, ReportsTheShareableSummary) {
  slice("shareable", hostSelector() + R"(,"pool":{"name":"shareable","generation":1,"resourceSliceCount":1},"devices":[)"
                                      R"({"name":"shared-0","allowMultipleAllocations":true,"capacity":{"memory":{"value":"16"}}},)"
                                      R"({"name":"shared-1","allowMultipleAllocations":true,"capacity":{"memory":{"value":"16"}}}])");
  const auto st = waitStatus(request("shareable"));
  ASSERT_EQ(st["pools"].size(), 1u) << st.dump();
  EXPECT_EQ(st["pools"][0]["shareableSummary"],
            nlohmann::json::parse(R"({"fullyAvailableDevices":2,"partiallyAvailableDevices":0,)"
                                  R"("capacity":[{"name":"memory","total":"32","consumed":"0","available":"32"}]})"));
}

// A pool missing slices of its generation is not written: retried a few times, then left until the request changes.
TEST_F(ResourcePoolStatusRequest, AnIncompletePoolWaitsForItsSlices) {
  slice("a", R"("nodeName":"kwok-node-1","pool":{"name":"split","generation":1,"resourceSliceCount":2},"devices":[{"name":"a"}])");
  const std::string r = request("incomplete");
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(status(r).is_null()) << status(r).dump();
  slice("b", R"("nodeName":"kwok-node-1","pool":{"name":"split","generation":1,"resourceSliceCount":2},"devices":[{"name":"b"}])");
  kubectl({"label", "resourcepoolstatusrequest", r, "touched=yes"});  // an update queues it again
  const auto st = waitStatus(r);
  ASSERT_EQ(st["pools"].size(), 1u) << st.dump();
  EXPECT_EQ(st["pools"][0].value("totalDevices", -1), 2);
  EXPECT_EQ(st["pools"][0].value("resourceSliceCount", -1), 2);
}

}  // namespace
}  // namespace kcm::e2e
