// horizontal-pod-autoscaler-controller on the real cluster, as upstream test/e2e/autoscaling/
// horizontal_pod_autoscaling.go and _behavior.go check it, with deployment-controller and replicaset-controller
// making the pods (node-lifecycle-controller lets the scheduler use the new KWOK nodes). The metrics come through
// the apiserver's aggregator from the test cluster's metrics-api (hack/cluster.sh METRICS_API=1), whose values file
// ($METRICS_VALUES) a feeder thread keeps current for the namespace's live pods: a total CPU usage and a total
// custom metric shared evenly among them (upstream's resource consumer), object and external metrics. Scale up and
// down by CPU utilization (the stabilization window holding the downscale), maxReplicas capping with ScalingLimited
// TooManyReplicas, Pods, Object and External metrics, a missing metric and a missing metrics API
// (FailedGetResourceMetric), a missing target (FailedGetScale), and a behavior policy limiting the scale-up rate.
#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class HorizontalPodAutoscalers : public SoloKcmSuite<HorizontalPodAutoscalers> {
 public:
  static constexpr const char* kControllers =
      "deployment-controller,replicaset-controller,horizontal-pod-autoscaler-controller,node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-hpa";
  static std::vector<std::string> extraFlags() {
    return {"--horizontal-pod-autoscaler-sync-period=1s", "--horizontal-pod-autoscaler-downscale-stabilization=5s",
            "--horizontal-pod-autoscaler-cpu-initialization-period=1s"};
  }

 protected:
  void SetUp() override {
    SoloKcmSuite::SetUp();
    const char* v = std::getenv("METRICS_VALUES");
    ASSERT_NE(v, nullptr) << "the e2e cluster runs with METRICS_API=1 (test/e2e/run.sh)";
    valuesFile_ = v;
    feeder_ = std::jthread([this](std::stop_token st) {
      while (!st.stop_requested()) {
        writeValues();
        std::this_thread::sleep_for(500ms);
      }
    });
  }
  void TearDown() override {
    feeder_ = {};
    writeFile("{}");
    kubectl({"delete", "hpa", "--all", "-n", ns()});
    scaleAllToZero("deployment,rs");
    E2ETest::TearDown();
  }
  void writeFile(const std::string& text) {
    const std::string tmp = valuesFile_ + ".hpa";
    std::ofstream(tmp) << text;
    std::rename(tmp.c_str(), valuesFile_.c_str());  // the server never reads half a file
  }
  // The live pods of the namespace share the current totals evenly, as upstream's resource consumer spreads its
  // load: scaling out lowers the per-pod value. Objects keyed "<resource>/<name>".
  void writeValues() {
    int64_t cpu, podTotal;
    std::string podMetric;
    std::map<std::string, std::map<std::string, std::string>> objects;
    Json external;
    {
      std::lock_guard l(mu_);
      external = external_;
      cpu = cpuMilli_;
      podMetric = podMetric_;
      podTotal = podTotal_;
      objects = objects_;
    }
    ExecResult r = kubectl({"get", "pods", "-n", ns(), "-o", "json"});
    if (!r.ok()) return;
    std::vector<std::string> live;
    for (const Json& p : Json::parse(r.out).value("items", Json::array()))
      if (!p["metadata"].contains("deletionTimestamp")) live.push_back(ns() + "/" + p["metadata"].value("name", ""));
    Json v = {{"pods", Json::object()}, {"custom", Json::object()}, {"objects", Json::object()}};
    const auto n = static_cast<int64_t>(std::max<size_t>(live.size(), 1));
    for (const auto& key : live) {
      if (cpu > 0) v["pods"][key] = {{"c", {{"cpu", std::to_string(cpu / n) + "m"}, {"memory", "10Mi"}}}};
      if (!podMetric.empty()) v["custom"][key] = {{podMetric, std::to_string(podTotal * 1000 / n) + "m"}};
    }
    for (const auto& [obj, metrics] : objects) v["objects"][ns() + "/" + obj] = metrics;
    v["external"] = Json::object();
    for (const auto& [metric, values] : external.items()) v["external"][ns() + "/" + metric] = values;
    writeFile(v.dump());
  }
  void setCpuTotal(int64_t milli) {
    std::lock_guard l(mu_);
    cpuMilli_ = milli;
  }
  void setPodMetricTotal(const std::string& name, int64_t total) {
    std::lock_guard l(mu_);
    podMetric_ = name;
    podTotal_ = total;
  }
  void setObjectMetric(const std::string& object, const std::string& metric, const std::string& value) {
    std::lock_guard l(mu_);
    objects_[object][metric] = value;
  }
  // values: [{"labels": {...}, "value": "10"}, ...]
  void setExternalMetric(const std::string& metric, Json values) {
    std::lock_guard l(mu_);
    external_[metric] = std::move(values);
  }

  // A Deployment "web" of pause pods requesting 100m CPU.
  void deployment(int replicas) {
    apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":)" +
          std::to_string(replicas) +
          R"(,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{)"
          R"("terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",)"
          R"("resources":{"requests":{"cpu":"100m"}}}]}}}})");
  }
  // An HPA "web" on deployment web; metrics default to 50% CPU utilization.
  void hpa(int min, int max, const std::string& metrics = "", const std::string& behavior = "") {
    const std::string m = metrics.empty()
                              ? R"([{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}])"
                              : metrics;
    apply(R"({"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},"spec":{)"
          R"("scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":)" +
          std::to_string(min) + R"(,"maxReplicas":)" + std::to_string(max) + R"(,"metrics":)" + m +
          (behavior.empty() ? "" : R"(,"behavior":)" + behavior) + "}}");
  }
  Json get(const std::string& what, const std::string& name) {
    ExecResult r = kubectl({"get", what, name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  int specReplicas() {
    Json d = get("deployment", "web");
    return d.is_object() ? d["spec"].value("replicas", -1) : -1;
  }
  // The deployment asks for n and has n available pods.
  bool runningAt(int n) {
    Json d = get("deployment", "web");
    return d.is_object() && d["spec"].value("replicas", -1) == n && d["status"].value("availableReplicas", 0) == n;
  }
  Json hpaCondition(const std::string& type) {
    Json h = get("hpa", "web");
    if (!h.is_object()) return Json();
    for (const Json& c : h["status"].value("conditions", Json::array()))
      if (c.value("type", "") == type) return c;
    return Json();
  }
  bool conditionIs(const std::string& type, const std::string& status, const std::string& reason) {
    Json c = hpaCondition(type);
    return c.is_object() && c.value("status", "") == status && c.value("reason", "") == reason;
  }
  std::vector<std::string> rescaleMessages() {
    std::vector<std::string> out;
    for (const Json& e : eventsWithReason(ns(), "SuccessfulRescale")) out.push_back(e.value("message", ""));
    std::sort(out.begin(), out.end());
    return out;
  }
  // The SuccessfulRescale event, given up to 10 s: the event broadcaster writes it after the scale itself.
  bool hasRescale(const std::string& message) {
    return waitFor([&] {
      auto m = rescaleMessages();
      return std::find(m.begin(), m.end(), message) != m.end();
    }, 10s);
  }
  std::string describe() { return get("hpa", "web").dump() + "\nevents: " + ::testing::PrintToString(rescaleMessages()); }

  std::string valuesFile_;
  std::mutex mu_;
  int64_t cpuMilli_ = 0, podTotal_ = 0;
  std::string podMetric_;
  std::map<std::string, std::map<std::string, std::string>> objects_;
  Json external_ = Json::object();
  std::jthread feeder_;
};

// "Should scale from 1 pod to 3 pods and from 3 to 1 using Average Utilization": 150m of CPU on one pod requesting
// 100m, against a 50% target, asks for 3 (where it stays, at 50% each); 30m over three pods asks for 1 once the
// (5 s) downscale stabilization window has passed.
TEST_F(HorizontalPodAutoscalers, CpuUtilizationScalesUpThenDown) {
  deployment(1);
  ASSERT_TRUE(waitFor([&] { return runningAt(1); }, 60s)) << get("deployment", "web").dump();
  setCpuTotal(150);  // 150% on one pod, 50% on three
  hpa(1, 5);
  ASSERT_TRUE(waitFor([&] { return runningAt(3); }, 90s)) << describe();
  EXPECT_TRUE(hasRescale("New size: 3; reason: cpu resource utilization (percentage of request) above target"))
      << describe();
  EXPECT_TRUE(conditionIs("AbleToScale", "True", "SucceededRescale") ||
              conditionIs("AbleToScale", "True", "ReadyForNewScale"))
      << describe();
  EXPECT_TRUE(conditionIs("ScalingActive", "True", "ValidMetricFound")) << describe();

  setCpuTotal(30);  // 10% on three pods
  Json h;
  ASSERT_TRUE(waitFor([&] {
    h = get("hpa", "web");
    const Json cm = h.is_object() ? h["status"].value("currentMetrics", Json::array()) : Json::array();
    return !cm.empty() && cm[0]["resource"]["current"].value("averageUtilization", -1) == 10;
  }, 60s)) << h.dump();
  EXPECT_EQ(h["status"]["currentMetrics"][0]["resource"]["current"]["averageValue"], "10m");
  EXPECT_EQ(h["status"]["currentMetrics"][0]["resource"]["name"], "cpu");
  ASSERT_TRUE(waitFor([&] { return runningAt(1); }, 90s)) << describe();
  EXPECT_TRUE(hasRescale("New size: 1; reason: All metrics below target")) << describe();
  Json st;
  EXPECT_TRUE(waitFor([&] {
    st = get("hpa", "web")["status"];
    return st.value("currentReplicas", -1) == 1 && st.value("desiredReplicas", -1) == 1;
  }, 30s)) << st.dump();
  EXPECT_TRUE(st.contains("lastScaleTime")) << st.dump();
}

// maxReplicas caps the count, and ScalingLimited says so.
TEST_F(HorizontalPodAutoscalers, MaxReplicasCapsWithTooManyReplicas) {
  deployment(1);
  setCpuTotal(1000);  // 1000% on one pod: 20 wanted
  hpa(1, 2);
  ASSERT_TRUE(waitFor([&] { return runningAt(2); }, 90s)) << describe();
  ASSERT_TRUE(waitFor([&] { return conditionIs("ScalingLimited", "True", "TooManyReplicas"); }, 30s)) << describe();
  EXPECT_EQ(hpaCondition("ScalingLimited").value("message", ""),
            "the desired replica count is more than the maximum replica count");
  EXPECT_EQ(specReplicas(), 2);
}

// A Pods metric (custom.metrics.k8s.io) with an AverageValue target: 30 on one pod against 10 asks for 3.
TEST_F(HorizontalPodAutoscalers, PodsMetricAverageValue) {
  deployment(1);
  setPodMetricTotal("requests_per_second", 30);
  hpa(1, 5,
      R"([{"type":"Pods","pods":{"metric":{"name":"requests_per_second"},"target":{"type":"AverageValue","averageValue":"10"}}}])");
  ASSERT_TRUE(waitFor([&] { return runningAt(3); }, 90s)) << describe();
  EXPECT_TRUE(hasRescale("New size: 3; reason: pods metric requests_per_second above target")) << describe();
  Json h = get("hpa", "web");
  ASSERT_FALSE(h["status"].value("currentMetrics", Json::array()).empty()) << h.dump();
  EXPECT_EQ(h["status"]["currentMetrics"][0]["type"], "Pods");
  EXPECT_EQ(h["status"]["currentMetrics"][0]["pods"]["metric"]["name"], "requests_per_second");
}

// An Object metric with a Value target: 20 against 10 on one ready pod asks for 2 (then 4, capped at maxReplicas).
TEST_F(HorizontalPodAutoscalers, ObjectMetricValue) {
  deployment(1);
  ASSERT_TRUE(waitFor([&] { return runningAt(1); }, 60s));
  setObjectMetric("services/front", "queue_length", "20");
  hpa(1, 2,
      R"([{"type":"Object","object":{"describedObject":{"apiVersion":"v1","kind":"Service","name":"front"},)"
      R"("metric":{"name":"queue_length"},"target":{"type":"Value","value":"10"}}}])");
  ASSERT_TRUE(waitFor([&] { return runningAt(2); }, 90s)) << describe();
  EXPECT_TRUE(hasRescale("New size: 2; reason: Service metric queue_length above target")) << describe();
  Json h = get("hpa", "web");
  ASSERT_FALSE(h["status"].value("currentMetrics", Json::array()).empty()) << h.dump();
  EXPECT_EQ(h["status"]["currentMetrics"][0]["object"]["current"]["value"], "20");
}

// An External metric (external.metrics.k8s.io) with an AverageValue target: the selector picks the "jobs" queue's
// 30 (not the other queue's 1000), against 10 a pod: 3 pods. The metric's name in the event carries the selector
// as upstream prints it.
TEST_F(HorizontalPodAutoscalers, ExternalMetricSelectedByLabels) {
  deployment(1);
  setExternalMetric("queue_messages", Json::array({{{"labels", {{"queue", "jobs"}}}, {"value", "30"}},
                                                   {{"labels", {{"queue", "other"}}}, {"value", "1000"}}}));
  hpa(1, 5,
      R"([{"type":"External","external":{"metric":{"name":"queue_messages","selector":{"matchLabels":{"queue":"jobs"}}},)"
      R"("target":{"type":"AverageValue","averageValue":"10"}}}])");
  ASSERT_TRUE(waitFor([&] { return runningAt(3); }, 90s)) << describe();
  EXPECT_TRUE(hasRescale("New size: 3; reason: external metric queue_messages(&LabelSelector{MatchLabels:"
                         "map[string]string{queue: jobs,},MatchExpressions:[]LabelSelectorRequirement{},}) above target"))
      << describe();
  Json h;
  EXPECT_TRUE(waitFor([&] {
    h = get("hpa", "web");
    const Json cm = h.is_object() ? h["status"].value("currentMetrics", Json::array()) : Json::array();
    return !cm.empty() && cm[0]["external"]["current"].value("averageValue", "") == "10";
  }, 30s)) << h.dump();
  EXPECT_EQ(specReplicas(), 3);
}

// The resource metrics API gone (its APIService deleted): ScalingActive False with upstream's
// FailedGetResourceMetric, nothing scales; the APIService is put back afterwards.
TEST_F(HorizontalPodAutoscalers, MissingMetricsAPIIsFailedGetResourceMetric) {
  Json svc = kubectlJson({"get", "apiservice", "v1beta1.metrics.k8s.io"});
  ASSERT_TRUE(svc.is_object());
  for (const char* k : {"resourceVersion", "uid", "creationTimestamp", "managedFields", "annotations"})
    svc["metadata"].erase(k);
  svc.erase("status");
  struct Restore {
    std::string manifest;
    ~Restore() {
      kubectl({"apply", "-f", "-"}, manifest);
      kubectl({"wait", "--for=condition=Available", "--timeout=60s", "apiservice/v1beta1.metrics.k8s.io"}, "", 70s);
    }
  } restore{svc.dump()};
  ASSERT_TRUE(kubectl({"delete", "apiservice", "v1beta1.metrics.k8s.io"}).ok());
  deployment(2);
  ASSERT_TRUE(waitFor([&] { return runningAt(2); }, 60s));
  setCpuTotal(1000);  // would be 20 pods, were it served
  hpa(1, 5);
  ASSERT_TRUE(waitFor([&] { return conditionIs("ScalingActive", "False", "FailedGetResourceMetric"); }, 60s))
      << describe();
  auto events = eventsWithReason(ns(), "FailedGetResourceMetric");
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events[0].value("message", "").find("unable to get metrics for resource cpu"), std::string::npos)
      << events[0].dump();
  EXPECT_EQ(specReplicas(), 2);
  EXPECT_TRUE(rescaleMessages().empty()) << describe();
}

// No metrics for the pods: a FailedGetResourceMetric warning, ScalingActive False, the scale left alone.
TEST_F(HorizontalPodAutoscalers, MissingMetricsAreReportedAndNothingScales) {
  deployment(2);
  ASSERT_TRUE(waitFor([&] { return runningAt(2); }, 60s));
  hpa(1, 5);
  ASSERT_TRUE(waitFor([&] { return conditionIs("ScalingActive", "False", "FailedGetResourceMetric"); }, 60s))
      << describe();
  EXPECT_FALSE(eventsWithReason(ns(), "FailedGetResourceMetric").empty());
  EXPECT_TRUE(conditionIs("AbleToScale", "True", "SucceededGetScale")) << describe();
  EXPECT_EQ(specReplicas(), 2);
  EXPECT_TRUE(rescaleMessages().empty()) << describe();
}

// A target that does not exist: FailedGetScale, AbleToScale False.
TEST_F(HorizontalPodAutoscalers, MissingTargetIsFailedGetScale) {
  hpa(1, 5);
  ASSERT_TRUE(waitFor([&] { return conditionIs("AbleToScale", "False", "FailedGetScale"); }, 60s)) << describe();
  bool notFound = false;
  for (const Json& e : eventsWithReason(ns(), "FailedGetScale"))
    notFound |= e.value("message", "").find("deployments.apps \"web\" not found") != std::string::npos;
  EXPECT_TRUE(notFound) << ::testing::PrintToString(eventsWithReason(ns(), "FailedGetScale"));
}

// _behavior.go "scale up ... limited by number of Pods rate": one pod per 10 s, however high the usage (500m
// over the pods). Each step
// is an event; consecutive steps are at least the policy's period apart (event timestamps, second precision).
TEST_F(HorizontalPodAutoscalers, BehaviorLimitsTheScaleUpRate) {
  deployment(1);
  setCpuTotal(500);
  hpa(1, 3, "",
      R"({"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":1,"periodSeconds":10}]}})");
  ASSERT_TRUE(waitFor([&] { return specReplicas() == 2; }, 60s)) << describe();
  ASSERT_TRUE(waitFor([&] { return conditionIs("ScalingLimited", "True", "ScaleUpLimit"); }, 30s)) << describe();
  ASSERT_TRUE(waitFor([&] { return specReplicas() == 3; }, 60s)) << describe();
  std::map<std::string, int64_t> at;  // message -> first time
  for (const Json& e : eventsWithReason(ns(), "SuccessfulRescale")) {
    std::string t;
    for (const char* f : {"eventTime", "firstTimestamp", "lastTimestamp"})
      if (t.empty() && e.contains(f) && e[f].is_string()) t = e[f].get<std::string>();
    auto parsed = [](const std::string& s) {
      std::tm tm{};
      strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
      return static_cast<int64_t>(timegm(&tm));
    };
    at[e.value("message", "")] = parsed(t);
  }
  const std::string two = "New size: 2; reason: cpu resource utilization (percentage of request) above target";
  const std::string three = "New size: 3; reason: cpu resource utilization (percentage of request) above target";
  ASSERT_TRUE(at.count(two) && at.count(three)) << describe();
  EXPECT_GE(at[three] - at[two], 9) << describe();
}

}  // namespace
}  // namespace kcm::e2e
