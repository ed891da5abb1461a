// horizontal-pod-autoscaler-controller: the replica arithmetic (upstream replica_calculator_test.go's cases), the
// rate and range rules (horizontal_test.go's TestConvertDesiredReplicasWithRules and behavior tables), the REST
// metrics client's decoding, and whole reconciles against the fake apiserver with a fake metrics source: the
// /scale write, status, conditions and events.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "api/gen/apps_v1_json.h"
#include "api/gen/autoscaling_v2_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/events.h"
#include "client/typed_client.h"
#include "controllers/podautoscaler/horizontal.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::podautoscaler {
namespace {

using api::autoscaling::v2::HPAScalingPolicy;
using api::autoscaling::v2::HPAScalingRules;
using api::core::v1::Pod;
using testing::Action;
using testing::eventually;
using testing::FakeApiServer;
using Json = nlohmann::json;
using namespace std::chrono_literals;

// Serves values the test sets; an absent resource or metric answers as the REST client does for an empty list.
class FakeMetrics final : public MetricsClient {
 public:
  explicit FakeMetrics(Clock& clock) : clock_(clock) {}
  void setResource(const std::string& resource, std::map<std::string, int64_t> perPod) {
    std::lock_guard l(mu_);
    resources_[resource] = std::move(perPod);
  }
  void setPods(const std::string& metric, std::map<std::string, int64_t> perPod) {
    std::lock_guard l(mu_);
    pods_[metric] = std::move(perPod);
  }
  void setObject(const std::string& metric, int64_t v) {
    std::lock_guard l(mu_);
    objects_[metric] = v;
  }
  void clear() {
    std::lock_guard l(mu_);
    resources_.clear();
    pods_.clear();
    objects_.clear();
  }

  Result<std::pair<PodMetricsInfo, WallTime>> getResourceMetric(const std::string& resource, const std::string&,
                                                                const api::Selector&, const std::string&) override {
    std::lock_guard l(mu_);
    auto it = resources_.find(resource);
    if (it == resources_.end() || it->second.empty())
      return Status(StatusCode::kNotFound, "no metrics returned from resource metrics API");
    return std::make_pair(info(it->second), clock_.wallNow());
  }
  Result<std::pair<PodMetricsInfo, WallTime>> getRawMetric(const std::string& metric, const std::string&,
                                                           const api::Selector&, const api::Selector&) override {
    std::lock_guard l(mu_);
    auto it = pods_.find(metric);
    if (it == pods_.end()) return Status(StatusCode::kNotFound, "no metrics returned from custom metrics API");
    return std::make_pair(info(it->second), clock_.wallNow());
  }
  Result<std::pair<int64_t, WallTime>> getObjectMetric(const std::string& metric, const std::string&,
                                                       const api::autoscaling::v2::CrossVersionObjectReference&,
                                                       const api::Selector&) override {
    std::lock_guard l(mu_);
    auto it = objects_.find(metric);
    if (it == objects_.end()) return Status(StatusCode::kNotFound, "no metrics returned from custom metrics API");
    return std::make_pair(it->second, clock_.wallNow());
  }
  void setExternal(const std::string& metric, std::vector<int64_t> values) {
    std::lock_guard l(mu_);
    external_[metric] = std::move(values);
  }
  std::string lastExternalSelector() {
    std::lock_guard l(mu_);
    return lastExternalSelector_;
  }
  Result<std::pair<std::vector<int64_t>, WallTime>> getExternalMetric(const std::string& metric, const std::string&,
                                                                      const api::Selector& selector) override {
    std::lock_guard l(mu_);
    lastExternalSelector_ = selector.str();
    auto it = external_.find(metric);
    if (it == external_.end()) return Status(StatusCode::kNotFound, "no metrics returned from external metrics API");
    return std::make_pair(it->second, clock_.wallNow());
  }

 private:
  PodMetricsInfo info(const std::map<std::string, int64_t>& values) const {
    PodMetricsInfo out;
    for (const auto& [pod, v] : values) out[pod] = PodMetric{clock_.wallNow(), 30s, v};
    return out;
  }
  Clock& clock_;
  std::mutex mu_;
  std::map<std::string, std::map<std::string, int64_t>> resources_, pods_;
  std::map<std::string, int64_t> objects_;
  std::map<std::string, std::vector<int64_t>> external_;
  std::string lastExternalSelector_;
};

std::string rfc(WallTime t) {
  return api::Time::fromUnix(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count()).rfc3339();
}

// A pod of app=web with one container requesting cpuMilli, started `age` ago and Ready since 10 s after start.
Json podJson(const std::string& name, int64_t cpuMilli, WallTime now, bool ready = true,
             std::string phase = "Running", std::chrono::seconds age = 600s) {
  const WallTime start = now - age;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", {{"app", "web"}}}}},
          {"spec",
           {{"containers",
             {{{"name", "c"}, {"image", "pause"}, {"resources", {{"requests", {{"cpu", std::to_string(cpuMilli) + "m"}}}}}}}}}},
          {"status",
           {{"phase", phase},
            {"startTime", rfc(start)},
            {"conditions",
             {{{"type", "Ready"}, {"status", ready ? "True" : "False"}, {"lastTransitionTime", rfc(start + 10s)}}}}}}};
}

// ---- the replica calculator ----

class ReplicaCalcTest : public ::testing::Test {
 protected:
  void addPod(Json j) {
    auto p = std::make_shared<Pod>();
    ASSERT_TRUE(fromJson(j.dump(), *p).ok());
    pods.push_back(p);
  }
  void addPods(const std::vector<int64_t>& requests, const std::vector<bool>& ready = {}) {
    for (size_t i = 0; i < requests.size(); ++i)
      addPod(podJson("p" + std::to_string(i), requests[i], clock.wallNow(), ready.empty() || ready[i]));
  }
  std::map<std::string, int64_t> usage(const std::vector<int64_t>& v) {
    std::map<std::string, int64_t> out;
    for (size_t i = 0; i < v.size(); ++i) out["p" + std::to_string(i)] = v[i];
    return out;
  }
  Result<ReplicaProposal> cpu(int32_t current, int32_t target) {
    return calc.GetResourceReplicas(current, target, "cpu", Tolerances{}, "ns", *api::parseSelector("app=web"), "");
  }

  FakeClock clock;
  FakeMetrics metrics{clock};
  std::vector<PodPtr> pods;
  ReplicaCalculator calc{metrics, [this](const std::string&, const api::Selector&) { return pods; }, 5min, 30s, clock};
};

// TestReplicaCalcScaleUp
TEST_F(ReplicaCalcTest, ScaleUp) {
  addPods({1000, 1000, 1000});
  metrics.setResource("cpu", usage({300, 500, 700}));
  auto r = cpu(3, 30);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->replicas, 5);
  EXPECT_EQ(r->utilization, 50);
  EXPECT_EQ(r->usage, 500);
}

// TestReplicaCalcScaleUpUnreadyLessScale: the unready pod counts as 0 when scaling up.
TEST_F(ReplicaCalcTest, UnreadyPodsCountAsZeroOnScaleUp) {
  addPods({1000, 1000, 1000}, {false, true, true});
  metrics.setResource("cpu", usage({300, 500, 700}));
  auto r = cpu(3, 30);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, 4);
  EXPECT_EQ(r->utilization, 60);
  EXPECT_EQ(r->usage, 600);
}

// TestReplicaCalcScaleDown
TEST_F(ReplicaCalcTest, ScaleDown) {
  addPods({1000, 1000, 1000, 1000, 1000});
  metrics.setResource("cpu", usage({100, 300, 500, 250, 250}));
  auto r = cpu(5, 50);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, 3);
  EXPECT_EQ(r->utilization, 28);
}

// TestReplicaCalcTolerance: 102% of a 100% target stays.
TEST_F(ReplicaCalcTest, WithinToleranceKeepsTheCount) {
  addPods({900, 1000, 1100});
  metrics.setResource("cpu", usage({1010, 1030, 1020}));
  auto r = cpu(3, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, 3);
  EXPECT_EQ(r->utilization, 102);
}

// Missing pods are assumed at their whole request (or the target, when above 100%) when scaling down, at 0 when
// scaling up.
TEST_F(ReplicaCalcTest, MissingMetricsAreAssumedConservatively) {
  addPods({1000, 1000, 1000, 1000});
  metrics.setResource("cpu", usage({100, 100, 100}));
  auto down = cpu(4, 50);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->replicas, 3);  // (3*100 + 1000) / 4000 = 32.5% of a 50% target, on 4 pods
  EXPECT_EQ(down->utilization, 10);
  metrics.setResource("cpu", usage({900, 900, 900}));
  auto up = cpu(4, 50);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->replicas, 6);  // 2700 / 4000 = 67.5%
}

// Failed and deleted pods are ignored; pending ones count as unready; no usable metric at all is an error.
TEST_F(ReplicaCalcTest, GroupPods) {
  const auto now = clock.wallNow();
  addPod(podJson("running", 1000, now));
  addPod(podJson("failed", 1000, now, false, "Failed"));
  addPod(podJson("pending", 1000, now, false, "Pending"));
  addPod(podJson("fresh", 1000, now, true, "Running", 60s));  // started 1 min ago, ready 10 s later
  addPod(podJson("nometric", 1000, now));
  PodMetricsInfo m;
  for (const char* n : {"running", "failed", "pending", "fresh"}) m[n] = PodMetric{now, 30s, 100};
  auto g = calc.groupPods(pods, m, "cpu");
  EXPECT_EQ(g.readyPodCount, 2);
  EXPECT_EQ(g.ignored, (std::set<std::string>{"failed"}));
  EXPECT_EQ(g.unready, (std::set<std::string>{"pending"}));
  EXPECT_EQ(g.missing, (std::set<std::string>{"nometric"}));
  // Within the CPU initialisation period, a sample must come a window after readiness.
  m["fresh"].timestamp = now - 55s;  // ready at now-50s, window 30s
  EXPECT_EQ(calc.groupPods(pods, m, "cpu").unready, (std::set<std::string>{"fresh", "pending"}));
  EXPECT_EQ(calc.groupPods(pods, m, "memory").unready, (std::set<std::string>{"pending"}));

  pods.clear();
  addPods({1000}, {false});
  metrics.setResource("cpu", usage({500}));
  auto r = cpu(1, 50);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "did not receive metrics for targeted pods (pods might be unready)");
}

// TestReplicaCalcScaleUpCM and TestReplicaCalcScaleUpCMObject
TEST_F(ReplicaCalcTest, CustomAndObjectMetrics) {
  addPods({1000, 1000, 1000});
  metrics.setPods("qps", usage({20000, 10000, 30000}));
  auto r = calc.GetMetricReplicas(3, 15000, "qps", Tolerances{}, "ns", *api::parseSelector("app=web"),
                                  api::Selector::everything());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->replicas, 4);
  EXPECT_EQ(r->usage, 20000);
  metrics.setObject("hits", 20000);
  api::autoscaling::v2::CrossVersionObjectReference ref;
  ref.kind = "Service";
  ref.name = "svc";
  auto o = calc.GetObjectMetricReplicas(3, 15000, "hits", Tolerances{}, "ns", ref, *api::parseSelector("app=web"),
                                        api::Selector::everything());
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->replicas, 4);
  EXPECT_EQ(o->usage, 20000);
}

// GetExternalPerPodMetricReplicas: the count is the total over the per-pod target; the average divides by the
// scale's status.replicas, which is 0 for a target that has no pods yet: Go's int64(+Inf) on amd64, MinInt64.
TEST_F(ReplicaCalcTest, ExternalPerPodOverNoReplicas) {
  metrics.setExternal("queue", {20000, 10000});
  api::meta::v1::LabelSelector sel;
  auto r = calc.GetExternalPerPodMetricReplicas(2, 10000, "queue", Tolerances{}, "ns", &sel);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->replicas, 3);
  EXPECT_EQ(r->usage, 15000);
  auto zero = calc.GetExternalPerPodMetricReplicas(0, 10000, "queue", Tolerances{}, "ns", &sel);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->replicas, 3);
  EXPECT_EQ(zero->usage, std::numeric_limits<int64_t>::min());
}

TEST(Tolerances, BoundsAndText) {
  Tolerances t{0.05, 0.2};
  EXPECT_TRUE(t.isWithin(0.96));
  EXPECT_FALSE(t.isWithin(0.94));
  EXPECT_TRUE(t.isWithin(1.2));
  EXPECT_FALSE(t.isWithin(1.21));
  EXPECT_EQ(t.str(), "[down:5.0%, up:20.0%]");
}

// ---- the REST metrics client's decoding ----

TEST(RestMetricsClient, PodMetricsAreSummedOverContainersOrOneContainer) {
  auto server = std::make_shared<FakeApiServer>();
  server->prependReactor("list", "pods", [](const Action& a) -> std::optional<client::Transport::Reply> {
    if (a.group != "metrics.k8s.io") return std::nullopt;
    Json list = {{"kind", "PodMetricsList"}, {"apiVersion", "metrics.k8s.io/v1beta1"}, {"items", Json::array()}};
    auto pm = [](const std::string& name, Json containers) {
      return Json{{"metadata", {{"name", name}, {"namespace", "ns"}}},
                  {"timestamp", "2026-01-01T00:00:00Z"},
                  {"window", "30s"},
                  {"containers", containers}};
    };
    list["items"].push_back(pm("a", {{{"name", "c"}, {"usage", {{"cpu", "250m"}, {"memory", "64Mi"}}}},
                                     {{"name", "side"}, {"usage", {{"cpu", "50m"}}}}}));
    list["items"].push_back(pm("b", {{{"name", "c"}, {"usage", {{"cpu", "1"}}}}}));
    return client::Transport::Reply{200, list.dump()};
  });
  auto mc = newRESTMetricsClient(server->client(), std::make_shared<client::DiscoveryClient>(server->client()));
  auto sel = *api::parseSelector("app=web");
  auto cpu = mc->getResourceMetric("cpu", "ns", sel, "");
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(cpu->first.at("a").value, 300);
  EXPECT_EQ(cpu->first.at("b").value, 1000);
  EXPECT_EQ(cpu->first.at("a").window, 30s);
  auto mem = mc->getResourceMetric("memory", "ns", sel, "");  // a container without memory: the pod is left out
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE(mem->first.empty());
  auto one = mc->getResourceMetric("cpu", "ns", sel, "side");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->first.size(), 1u);
  EXPECT_EQ(one->first.at("a").value, 50);
  auto lists = server->actionsFor("list", "pods");
  ASSERT_FALSE(lists.empty());
  EXPECT_EQ(lists[0].group, "metrics.k8s.io");
  ASSERT_EQ(lists[0].query.size(), 1u);
  EXPECT_EQ(lists[0].query[0], (std::pair<std::string, std::string>{"labelSelector", "app=web"}));
}

// ---- the range and rate rules ----

TEST(HorizontalRules, ConvertDesiredReplicasWithRules) {
  struct Case {
    int32_t current, desired, min, max, want;
    const char* reason;
  } cases[] = {
      {3, 10, 1, 20, 6, "ScaleUpLimit"},  // at most twice the current count
      {1, 10, 1, 20, 4, "ScaleUpLimit"},  // or 4
      {3, 10, 1, 5, 5, "TooManyReplicas"},
      {3, 0, 2, 5, 2, "TooFewReplicas"},
      {1, 4, 1, 10, 4, "DesiredWithinRange"},
  };
  for (const auto& c : cases) {
    auto r = HorizontalController::convertDesiredReplicasWithRules(c.current, c.desired, c.min, c.max);
    EXPECT_EQ(r.replicas, c.want) << c.current << "->" << c.desired;
    EXPECT_EQ(r.reason, c.reason) << c.current << "->" << c.desired;
  }
}

// ---- the controller over the fake apiserver ----

class HorizontalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"apps", "v1", "deployments", "Deployment", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"scale", "status"}});
    server->addResource({"autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    // The fake keeps no /scale: it is read from and written to the deployment, as the apiserver does.
    server->prependReactor("get", "deployments/scale", [this](const Action& a) -> std::optional<client::Transport::Reply> {
      auto d = server->getJson("/apis/apps/v1/namespaces/" + a.ns + "/deployments/" + a.name);
      if (!d) return FakeApiServer::errorReply(404, "NotFound", "deployments.apps \"" + a.name + "\" not found");
      return client::Transport::Reply{200, scaleOf(*d).dump()};
    });
    server->prependReactor("update", "deployments/scale", [this](const Action& a) -> std::optional<client::Transport::Reply> {
      auto d = server->get<api::apps::v1::Deployment>(a.ns, a.name);
      if (!d) return FakeApiServer::errorReply(404, "NotFound", "deployments.apps \"" + a.name + "\" not found");
      d->spec.replicas = Json::parse(a.body)["spec"].value("replicas", 0);
      if (auto s = client::update(*server->client(), *d); !s.ok())
        return FakeApiServer::errorReply(500, "InternalError", s.status().message());
      return client::Transport::Reply{200, scaleOf(*server->getJson("/apis/apps/v1/namespaces/" + a.ns + "/deployments/" + a.name)).dump()};
    });
    auto m = std::make_unique<FakeMetrics>(clock);
    metrics = m.get();
    HorizontalControllerOptions o;
    o.staleConsistency = false;
    controller = std::make_unique<HorizontalController>(
        server->client(), broadcaster.newRecorder("horizontal-pod-autoscaler"),
        std::make_shared<client::DiscoveryClient>(server->client()), std::move(m),
        factory.forType<HorizontalPodAutoscaler>(), factory.forType<Pod>(), o, clock);
    factory.start(stop.get_token());
  }
  void TearDown() override {
    stop.request_stop();
    factory.shutdown();
    controller.reset();
  }
  static Json scaleOf(const Json& d) {
    return {{"kind", "Scale"},
            {"apiVersion", "autoscaling/v1"},
            {"metadata",
             {{"name", d["metadata"]["name"]},
              {"namespace", d["metadata"]["namespace"]},
              {"resourceVersion", d["metadata"].value("resourceVersion", "")}}},
            {"spec", {{"replicas", d["spec"].value("replicas", 1)}}},
            {"status", {{"replicas", d["spec"].value("replicas", 1)}, {"selector", "app=web"}}}};
  }
  void deployment(int32_t replicas) {
    server->add("/apis/apps/v1/namespaces/ns/deployments",
                {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "web"}, {"namespace", "ns"}}},
                 {"spec", {{"replicas", replicas}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}});
  }
  int32_t replicas() {
    return server->getJson("/apis/apps/v1/namespaces/ns/deployments/web").value()["spec"].value("replicas", -1);
  }
  void pods(int n, int64_t cpuMilli = 1000) {
    for (int i = 0; i < n; ++i)
      server->add("/api/v1/namespaces/ns/pods", podJson("p" + std::to_string(i), cpuMilli, clock.wallNow()));
    ASSERT_TRUE(eventually([&] { return factory.forType<Pod>().store().list().size() == static_cast<size_t>(n); }));
  }
  void cpuUsage(int n, int64_t milli) {
    std::map<std::string, int64_t> u;
    for (int i = 0; i < n; ++i) u["p" + std::to_string(i)] = milli;
    metrics->setResource("cpu", u);
  }
  // An HPA on deployment web with a 50% CPU target unless metrics are given.
  void hpa(int32_t min, int32_t max, Json metricsSpec = Json(), Json behavior = Json()) {
    if (metricsSpec.is_null())
      metricsSpec = Json::array({{{"type", "Resource"},
                                  {"resource", {{"name", "cpu"}, {"target", {{"type", "Utilization"}, {"averageUtilization", 50}}}}}}});
    Json spec = {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "web"}}},
                 {"minReplicas", min},
                 {"maxReplicas", max},
                 {"metrics", metricsSpec}};
    if (!behavior.is_null()) spec["behavior"] = behavior;
    server->add("/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers",
                {{"apiVersion", "autoscaling/v2"},
                 {"kind", "HorizontalPodAutoscaler"},
                 {"metadata", {{"name", "web"}, {"namespace", "ns"}, {"generation", 1}}},
                 {"spec", spec}});
    ASSERT_TRUE(eventually([&] {
      return factory.forType<HorizontalPodAutoscaler>().store().get("ns", "web") != nullptr &&
             controller->trackedHPAs() == 1;
    }));
  }
  Status reconcile() {
    auto h = factory.forType<HorizontalPodAutoscaler>().store().get("ns", "web");
    if (!h) return Status(StatusCode::kNotFound, "no hpa in the cache");
    Status s = controller->reconcileAutoscaler(*h, "ns/web");
    // The next reconcile must see this one's status write, as the informer would deliver it.
    const std::string rv = server->getJson(kHpaPath).value()["metadata"].value("resourceVersion", "");
    EXPECT_TRUE(eventually([&] {
      auto c = factory.forType<HorizontalPodAutoscaler>().store().get("ns", "web");
      return c && c->metadata.resourceVersion == rv;
    }));
    return s;
  }
  Json hpaJson() { return server->getJson(kHpaPath).value(); }
  Json condition(const std::string& type) {
    for (const auto& c : hpaJson()["status"].value("conditions", Json::array()))
      if (c.value("type", "") == type) return c;
    return Json();
  }
  std::string conditionText(const std::string& type) {
    Json c = condition(type);
    return c.is_null() ? "none" : c.value("status", "") + " " + c.value("reason", "");
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }
  bool hasEvent(const std::string& prefix) {
    for (const auto& e : events())
      if (e.rfind(prefix, 0) == 0) return true;
    return false;
  }

  static constexpr const char* kHpaPath = "/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/web";
  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  std::stop_source stop;
  FakeMetrics* metrics = nullptr;
  std::unique_ptr<HorizontalController> controller;
};

// TestScaleUp: 90% of a 50% target on 3 pods asks for 6; /scale is written, status and conditions follow.
TEST_F(HorizontalTest, ScaleUpWritesScaleStatusAndEvent) {
  deployment(3);
  pods(3);
  cpuUsage(3, 900);
  hpa(1, 10);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 6);
  const Json st = hpaJson()["status"];
  EXPECT_EQ(st["currentReplicas"], 3);
  EXPECT_EQ(st["desiredReplicas"], 6);
  EXPECT_EQ(st["observedGeneration"], 1);
  EXPECT_TRUE(st.contains("lastScaleTime"));
  ASSERT_EQ(st["currentMetrics"].size(), 1u);
  EXPECT_EQ(st["currentMetrics"][0]["resource"]["current"]["averageUtilization"], 90);
  EXPECT_EQ(st["currentMetrics"][0]["resource"]["current"]["averageValue"], "900m");
  EXPECT_EQ(conditionText("AbleToScale"), "True SucceededRescale");
  EXPECT_EQ(conditionText("ScalingActive"), "True ValidMetricFound");
  EXPECT_EQ(conditionText("ScalingLimited"), "False DesiredWithinRange");
  EXPECT_TRUE(hasEvent("Normal SuccessfulRescale New size: 6; reason: cpu resource utilization (percentage of request) "
                       "above target"));
  ASSERT_EQ(server->actionsFor("update", "deployments/scale").size(), 1u);
}

// TestMaxReplicas / TestScaleUpLimit: the count is capped and ScalingLimited says why.
TEST_F(HorizontalTest, MaxReplicasAndTheScaleUpLimitCap) {
  deployment(3);
  pods(3);
  cpuUsage(3, 2000);  // 200%: 12 wanted
  hpa(1, 5);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 5);
  EXPECT_EQ(conditionText("ScalingLimited"), "True TooManyReplicas");
  EXPECT_EQ(condition("ScalingLimited")["message"], "the desired replica count is more than the maximum replica count");
}

TEST_F(HorizontalTest, ScaleUpLimitWithoutBehavior) {
  deployment(3);
  pods(3);
  cpuUsage(3, 2000);
  hpa(1, 20);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 6);
  EXPECT_EQ(conditionText("ScalingLimited"), "True ScaleUpLimit");
}

// TestMissingMetrics: no metrics is a FailedGetResourceMetric warning and ScalingActive False; nothing scales.
TEST_F(HorizontalTest, MissingMetricsLeaveTheScaleAlone) {
  deployment(3);
  pods(3);
  hpa(1, 10);
  EXPECT_FALSE(reconcile().ok());
  EXPECT_EQ(replicas(), 3);
  EXPECT_EQ(conditionText("ScalingActive"), "False FailedGetResourceMetric");
  EXPECT_EQ(conditionText("AbleToScale"), "True SucceededGetScale");
  EXPECT_TRUE(hasEvent("Warning FailedGetResourceMetric")) << ::testing::PrintToString(events());
  EXPECT_TRUE(server->actionsFor("update", "deployments/scale").empty());
}

// A target that does not exist: FailedGetScale, AbleToScale False.
TEST_F(HorizontalTest, MissingTargetIsFailedGetScale) {
  hpa(1, 10);
  EXPECT_FALSE(reconcile().ok());
  EXPECT_EQ(conditionText("AbleToScale"), "False FailedGetScale");
  EXPECT_TRUE(hasEvent("Warning FailedGetScale")) << ::testing::PrintToString(events());
}

// TestScaleDown with the stabilization window: the highest recent recommendation holds until it ages out.
TEST_F(HorizontalTest, ScaleDownWaitsForTheStabilizationWindow) {
  deployment(6);
  pods(6);
  cpuUsage(6, 100);  // 20% of a 50% target: 2 wanted
  hpa(1, 10);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 6);
  EXPECT_EQ(conditionText("AbleToScale"), "True ScaleDownStabilized");
  EXPECT_EQ(hpaJson()["status"]["desiredReplicas"], 6);
  clock.advance(6min);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 2);
  EXPECT_TRUE(hasEvent("Normal SuccessfulRescale New size: 2; reason: All metrics below target"))
      << ::testing::PrintToString(events());
}

// spec.behavior: one pod per minute up; a second step waits until the first leaves the period.
TEST_F(HorizontalTest, BehaviorPoliciesRateLimitScaleUp) {
  deployment(3);
  pods(3);
  cpuUsage(3, 900);
  hpa(1, 10, Json(),
      {{"scaleUp", {{"stabilizationWindowSeconds", 0}, {"selectPolicy", "Max"},
                    {"policies", {{{"type", "Pods"}, {"value", 1}, {"periodSeconds", 60}}}}}}});
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 4);
  EXPECT_EQ(conditionText("ScalingLimited"), "True ScaleUpLimit");
  clock.advance(15s);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 4);
  clock.advance(50s);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 5);
}

// Pods and Object metrics (TestScaleUpCM, TestScaleUpCMObject): the largest proposal wins.
TEST_F(HorizontalTest, PodsAndObjectMetricsTheLargestWins) {
  deployment(3);
  pods(3);
  metrics->setPods("qps", {{"p0", 20000}, {"p1", 10000}, {"p2", 30000}});  // avg 20 of 15: 4
  metrics->setObject("hits", 40000);                                         // 40 of 15 on 3 ready pods: 8
  hpa(1, 10,
      Json::array({{{"type", "Pods"},
                    {"pods", {{"metric", {{"name", "qps"}}}, {"target", {{"type", "AverageValue"}, {"averageValue", "15"}}}}}},
                   {{"type", "Object"},
                    {"object",
                     {{"describedObject", {{"apiVersion", "v1"}, {"kind", "Service"}, {"name", "svc"}}},
                      {"metric", {{"name", "hits"}}},
                      {"target", {{"type", "Value"}, {"value", "15"}}}}}}}));
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 6);  // 8, capped at twice the current count
  const Json cm = hpaJson()["status"]["currentMetrics"];
  ASSERT_EQ(cm.size(), 2u);
  EXPECT_EQ(cm[0]["pods"]["current"]["averageValue"], "20");
  EXPECT_EQ(cm[1]["object"]["current"]["value"], "40");
  EXPECT_TRUE(hasEvent("Normal SuccessfulRescale New size: 6; reason: Service metric hits above target"))
      << ::testing::PrintToString(events());
}

// An External metric with an AverageValue target: 30 over a target of 10 per pod is 3 pods whatever the current
// count. The metric's selector goes to the metrics API as a label selector and into the metric's name as Go's
// %+v prints a *metav1.LabelSelector.
TEST_F(HorizontalTest, ExternalMetricPerPodTarget) {
  deployment(1);
  pods(1);
  metrics->setExternal("queue_messages", {20000, 10000});
  hpa(1, 10,
      Json::array({{{"type", "External"},
                    {"external",
                     {{"metric",
                       {{"name", "queue_messages"},
                        {"selector",
                         {{"matchLabels", {{"queue", "jobs"}}},
                          {"matchExpressions", {{{"key", "env"}, {"operator", "In"}, {"values", {"a", "b"}}}}}}}}},
                      {"target", {{"type", "AverageValue"}, {"averageValue", "10"}}}}}}}));
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 3);
  EXPECT_EQ(metrics->lastExternalSelector(), "env in (a,b),queue=jobs");
  // The per-pod average is over the scale's status.replicas: 1, then 3.
  EXPECT_EQ(hpaJson()["status"]["currentMetrics"][0]["external"]["current"]["averageValue"], "30");
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(hpaJson()["status"]["currentMetrics"][0]["external"]["current"]["averageValue"], "10");
  EXPECT_EQ(replicas(), 3);
  const std::string name =
      "external metric queue_messages(&LabelSelector{MatchLabels:map[string]string{queue: jobs,},MatchExpressions:"
      "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[a b],},},})";
  EXPECT_TRUE(hasEvent("Normal SuccessfulRescale New size: 3; reason: " + name + " above target"))
      << ::testing::PrintToString(events());
  EXPECT_EQ(condition("ScalingActive")["message"], "the HPA was able to successfully calculate a replica count from " + name);
}

// A status that did not change is not written again.
TEST_F(HorizontalTest, UnchangedStatusIsNotRewritten) {
  deployment(3);
  pods(3);
  cpuUsage(3, 500);  // at target
  hpa(1, 10);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(replicas(), 3);
  EXPECT_EQ(server->actionsFor("update", "horizontalpodautoscalers/status").size(), 1u);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(server->actionsFor("update", "horizontalpodautoscalers/status").size(), 1u);
  EXPECT_TRUE(server->actionsFor("update", "deployments/scale").empty());
}

// upstream TestScalingWithRules' rate cases, through convertDesiredReplicasWithBehaviorRate.
TEST_F(HorizontalTest, BehaviorRateTables) {
  auto rules = [](std::vector<HPAScalingPolicy> p, std::string select = "Max") {
    HPAScalingRules r;
    r.policies = std::move(p);
    r.selectPolicy = select;
    return r;
  };
  const HPAScalingRules up = rules({{.periodSeconds = 60, .value = 4, .type = "Pods"}, {.periodSeconds = 60, .value = 100, .type = "Percent"}});
  const HPAScalingRules upMin = rules({{.periodSeconds = 60, .value = 4, .type = "Pods"}, {.periodSeconds = 60, .value = 100, .type = "Percent"}}, "Min");
  const HPAScalingRules disabled = rules({{.periodSeconds = 60, .value = 4, .type = "Pods"}}, "Disabled");
  const HPAScalingRules down = rules({{.periodSeconds = 60, .value = 50, .type = "Percent"}});
  struct Case {
    const HPAScalingRules *up, *down;
    int32_t min, max, current, desired, want;
    const char* reason;
  } cases[] = {
      {&up, &down, 1, 30, 2, 20, 6, "ScaleUpLimit"},      // +4 beats +100%
      {&up, &down, 1, 30, 10, 40, 20, "ScaleUpLimit"},    // +100% beats +4
      {&upMin, &down, 1, 30, 2, 20, 4, "ScaleUpLimit"},   // the smaller change
      {&up, &down, 1, 5, 2, 20, 5, "TooManyReplicas"},    // the max below the rate limit
      {&disabled, &down, 1, 30, 3, 6, 3, "ScaleUpLimit"}, // no scale up at all
      {&up, &down, 1, 30, 10, 1, 5, "ScaleDownLimit"},    // -50%
      {&up, &down, 8, 30, 10, 1, 8, "TooFewReplicas"},
      {&up, &down, 1, 30, 10, 7, 7, "DesiredWithinRange"},
  };
  int i = 0;
  for (const auto& c : cases) {
    HorizontalController::NormalizationArg a{"ns/case" + std::to_string(i++), c.up, c.down, c.min, c.max,
                                             c.current, c.desired};
    auto r = controller->convertDesiredReplicasWithBehaviorRate(a);
    EXPECT_EQ(r.replicas, c.want) << a.key;
    EXPECT_EQ(r.reason, c.reason) << a.key;
  }
  // A recorded scale-up of 4 within the period leaves the next step's start at 2.
  api::autoscaling::v2::HorizontalPodAutoscalerBehavior b;
  b.scaleUp = up;
  controller->storeScaleEvent(&b, "ns/events", 2, 6);
  HorizontalController::NormalizationArg a{"ns/events", &up, &down, 1, 30, 6, 20};
  EXPECT_EQ(controller->convertDesiredReplicasWithBehaviorRate(a).replicas, 6);
  clock.advance(61s);
  EXPECT_EQ(controller->convertDesiredReplicasWithBehaviorRate(a).replicas, 12);
}

}  // namespace
}  // namespace kcm::controllers::podautoscaler
