// DiscoveryClient against canned discovery documents: aggregated discovery (apidiscovery.k8s.io/v2) with stale
// group-versions, the preferred-version choice, and the legacy per-group-version fallback with a failing
// group-version. Cases follow client-go's discovery/aggregated_discovery_test.go and discovery_client_test.go.
#include "client/discovery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

namespace kcm::client {
namespace {

using nlohmann::json;

const std::vector<std::string> kVerbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update",
                                         "watch"};

// Serves fixed replies by path (404 for anything else) and records the paths asked for.
class CannedTransport : public Transport {
 public:
  void set(const std::string& path, int code, const json& body) {
    std::lock_guard l(mu_);
    replies_[path] = Reply{code, body.dump()};
  }
  Reply roundTrip(const Request& req, const std::string&) override {
    std::lock_guard l(mu_);
    asked_.push_back(req.path);
    auto it = replies_.find(req.path);
    if (it != replies_.end()) return it->second;
    return Reply{404, R"({"kind":"Status","reason":"NotFound","message":"the server could not find the requested resource","code":404})"};
  }
  std::unique_ptr<StreamHandle> openStream(const Request&, const std::string&, OnLine, OnDone) override { return nullptr; }
  std::vector<std::string> asked() {
    std::lock_guard l(mu_);
    return asked_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, Reply> replies_;
  std::vector<std::string> asked_;
};

// ---- aggregated discovery documents

json aggResource(const std::string& name, const std::string& kind, const std::string& group,
                 const std::string& version, bool namespaced = true) {
  json r = {{"resource", name},
            {"singularResource", kind.empty() ? "" : name.substr(0, name.size() - 1)},
            {"scope", namespaced ? "Namespaced" : "Cluster"},
            {"verbs", kVerbs}};
  if (!kind.empty()) r["responseKind"] = {{"group", group}, {"version", version}, {"kind", kind}};
  return r;
}
json aggVersion(const std::string& version, json resources, const std::string& freshness = "Current") {
  return {{"version", version}, {"resources", std::move(resources)}, {"freshness", freshness}};
}
json aggGroup(const std::string& name, json versions) {
  return {{"metadata", {{"name", name}}}, {"versions", std::move(versions)}};
}
json aggList(json items) {
  return {{"kind", "APIGroupDiscoveryList"}, {"apiVersion", "apidiscovery.k8s.io/v2"}, {"items", std::move(items)}};
}

class DiscoveryTest : public ::testing::Test {
 protected:
  std::shared_ptr<CannedTransport> transport = std::make_shared<CannedTransport>();
  std::shared_ptr<RestClient> rest = [this] {
    RestConfig cfg;
    cfg.qps = -1;
    return RestClient::createWithTransport(cfg, transport);
  }();
  DiscoveryClient discovery{rest};

  // /api with pods (v1).
  void serveAggregatedCore() {
    transport->set("/api", 200,
                   aggList({aggGroup("", {aggVersion("v1", {aggResource("pods", "Pod", "", "v1")})})}));
  }
};

// "group/version resource" of each result.
std::set<std::string> names(const std::vector<APIResourceInfo>& rs) {
  std::set<std::string> out;
  for (const auto& r : rs) out.insert(r.groupVersion() + " " + r.resource);
  return out;
}

// client-go convertAPIGroup: a group-version marked stale is no part of the groups or resources.
TEST_F(DiscoveryTest, AggregatedStaleGroupVersionsAreLeftOut) {
  serveAggregatedCore();
  transport->set(
      "/apis", 200,
      aggList({aggGroup("apps", {aggVersion("v1", {aggResource("deployments", "Deployment", "apps", "v1")})}),
               aggGroup("metrics.k8s.io",
                        {aggVersion("v1beta1", {aggResource("pods", "PodMetrics", "metrics.k8s.io", "v1beta1")},
                                    "Stale")})}));
  auto all = discovery.serverResources();
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(names(*all), (std::set<std::string>{"v1 pods", "apps/v1 deployments"}));
  auto preferred = discovery.serverPreferredResources();
  ASSERT_TRUE(preferred.ok()) << preferred.status().toString();
  EXPECT_EQ(names(*preferred), (std::set<std::string>{"v1 pods", "apps/v1 deployments"}));
  EXPECT_EQ(discovery.resourceFor("metrics.k8s.io", "v1beta1", "PodMetrics").status().code(), StatusCode::kNotFound);
}

// client-go: "PreferredVersion is first non-stale Version".
TEST_F(DiscoveryTest, AggregatedPreferredVersionIsTheFirstVersionThatIsNotStale) {
  serveAggregatedCore();
  transport->set("/apis", 200,
                 aggList({aggGroup("acme.io", {aggVersion("v2", {aggResource("widgets", "Widget", "acme.io", "v2")},
                                                          "Stale"),
                                               aggVersion("v1", {aggResource("widgets", "Widget", "acme.io", "v1"),
                                                                 aggResource("gizmos", "Gizmo", "acme.io", "v1")})})}));
  auto preferred = discovery.serverPreferredResources();
  ASSERT_TRUE(preferred.ok()) << preferred.status().toString();
  EXPECT_EQ(names(*preferred), (std::set<std::string>{"v1 pods", "acme.io/v1 widgets", "acme.io/v1 gizmos"}));
  auto mapped = discovery.resourceFor("acme.io", "", "Widget");
  ASSERT_TRUE(mapped.ok()) << mapped.status().toString();
  EXPECT_EQ(mapped->version, "v1");
}

// client-go ServerPreferredResources: every group-resource is listed once, at the preferred version when served
// there, otherwise at the first version that serves it.
TEST_F(DiscoveryTest, PreferredResourcesKeepResourcesServedOnlyAtAnotherVersion) {
  serveAggregatedCore();
  transport->set("/apis", 200,
                 aggList({aggGroup("batch.io",
                                   {aggVersion("v1", {aggResource("jobs", "Job", "batch.io", "v1")}),
                                    aggVersion("v1beta1", {aggResource("jobs", "Job", "batch.io", "v1beta1"),
                                                           aggResource("cronjobs", "CronJob", "batch.io", "v1beta1")})})}));
  auto preferred = discovery.serverPreferredResources();
  ASSERT_TRUE(preferred.ok()) << preferred.status().toString();
  EXPECT_EQ(names(*preferred), (std::set<std::string>{"v1 pods", "batch.io/v1 jobs", "batch.io/v1beta1 cronjobs"}));
}

// client-go convertAPIResource: a resource without a responseKind is not returned.
TEST_F(DiscoveryTest, AggregatedResourcesWithoutAKindAreLeftOut) {
  serveAggregatedCore();
  transport->set("/apis", 200,
                 aggList({aggGroup("acme.io", {aggVersion("v1", {aggResource("widgets", "Widget", "acme.io", "v1"),
                                                                 aggResource("kindless", "", "acme.io", "v1")})})}));
  auto all = discovery.serverResources();
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(names(*all), (std::set<std::string>{"v1 pods", "acme.io/v1 widgets"}));
}

// ---- legacy discovery (/api, /apis, then one document per group-version)

void serveLegacy(CannedTransport& t) {
  t.set("/api", 200, {{"kind", "APIVersions"}, {"versions", {"v1"}}});
  t.set("/api/v1", 200,
        {{"kind", "APIResourceList"},
         {"groupVersion", "v1"},
         {"resources",
          {{{"name", "pods"}, {"singularName", "pod"}, {"namespaced", true}, {"kind", "Pod"}, {"verbs", kVerbs}},
           {{"name", "pods/status"}, {"namespaced", true}, {"kind", "Pod"}, {"verbs", {"get"}}}}}});
  json groups = json::array();
  for (const auto& [name, versions, preferred] :
       std::vector<std::tuple<std::string, std::vector<std::string>, std::string>>{
           {"apps", {"v1"}, "v1"}, {"broken.io", {"v1"}, "v1"}, {"batch.io", {"v1beta1", "v1"}, "v1"}}) {
    json vs = json::array();
    for (const auto& v : versions) vs.push_back({{"groupVersion", name + "/" + v}, {"version", v}});
    groups.push_back({{"name", name},
                      {"versions", vs},
                      {"preferredVersion", {{"groupVersion", name + "/" + preferred}, {"version", preferred}}}});
  }
  t.set("/apis", 200, {{"kind", "APIGroupList"}, {"groups", groups}});
  auto list = [](const std::string& gv, const std::vector<std::pair<std::string, std::string>>& rs) {
    json out = json::array();
    for (const auto& [name, kind] : rs)
      out.push_back({{"name", name}, {"namespaced", true}, {"kind", kind}, {"verbs", kVerbs}});
    return json{{"kind", "APIResourceList"}, {"groupVersion", gv}, {"resources", out}};
  };
  t.set("/apis/apps/v1", 200, list("apps/v1", {{"deployments", "Deployment"}}));
  t.set("/apis/batch.io/v1beta1", 200, list("batch.io/v1beta1", {{"jobs", "Job"}}));
  t.set("/apis/batch.io/v1", 200, list("batch.io/v1", {{"jobs", "Job"}}));
  t.set("/apis/broken.io/v1", 503,
        {{"kind", "Status"}, {"reason", "ServiceUnavailable"}, {"message", "the server is currently unable to handle the request"},
         {"code", 503}});
}

// client-go fetchGroupVersionResources: a group-version that fails to load is a failed group; the others are
// returned.
TEST_F(DiscoveryTest, LegacyFailingGroupVersionLeavesTheOthers) {
  serveLegacy(*transport);
  auto preferred = discovery.serverPreferredResources();
  ASSERT_TRUE(preferred.ok()) << preferred.status().toString();
  EXPECT_FALSE(discovery.usedAggregatedDiscovery());
  EXPECT_EQ(names(*preferred), (std::set<std::string>{"v1 pods", "apps/v1 deployments", "batch.io/v1 jobs"}));
}

// Legacy groups name their preferred version; it wins over a version listed before it.
TEST_F(DiscoveryTest, LegacyPreferredVersionIsTheOneTheGroupNames) {
  serveLegacy(*transport);
  auto mapped = discovery.resourceFor("batch.io", "", "Job");
  ASSERT_TRUE(mapped.ok()) << mapped.status().toString();
  EXPECT_EQ(mapped->version, "v1");
  auto all = discovery.serverResources();
  ASSERT_TRUE(all.ok());
  for (const auto& r : *all) {
    if (r.resource == "pods") {
      EXPECT_EQ(r.subresources, std::vector<std::string>{"status"});
    }
  }
}

// client-go ErrGroupDiscoveryFailed: each failed group-version with why, sorted; the core group prints as "v1".
TEST_F(DiscoveryTest, FailedGroupVersionsAreReportedLikeErrGroupDiscoveryFailed) {
  transport->set("/api", 200,
                 aggList({aggGroup("", {aggVersion("v1", {aggResource("pods", "Pod", "", "v1")}, "Stale")})}));
  transport->set(
      "/apis", 200,
      aggList({aggGroup("apps", {aggVersion("v1", {aggResource("deployments", "Deployment", "apps", "v1")})}),
               aggGroup("metrics.k8s.io",
                        {aggVersion("v1beta1", {aggResource("pods", "PodMetrics", "metrics.k8s.io", "v1beta1")},
                                    "Stale")})}));
  auto all = discovery.serverGroupsAndResources();
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(names(all->resources), (std::set<std::string>{"apps/v1 deployments"}));
  EXPECT_EQ(all->failedGroupVersions,
            (std::map<std::string, std::string>{{"metrics.k8s.io/v1beta1",
                                                 "stale GroupVersion discovery: metrics.k8s.io/v1beta1"},
                                                {"v1", "stale GroupVersion discovery: v1"}}));
  EXPECT_EQ(all->groupDiscoveryError().message(),
            "unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion "
            "discovery: metrics.k8s.io/v1beta1, v1: stale GroupVersion discovery: v1");
  auto preferred = discovery.serverPreferredResourcesWithFailures();
  ASSERT_TRUE(preferred.ok());
  EXPECT_EQ(preferred->failedGroupVersions.size(), 2u);
  // client-go withRetries: a discovery with failed groups is tried twice.
  auto asked = transport->asked();
  EXPECT_EQ(std::count(asked.begin(), asked.end(), "/apis"), 2);
}

TEST_F(DiscoveryTest, CompleteDiscoveryHasNoError) {
  serveAggregatedCore();
  transport->set("/apis", 200, aggList(json::array()));
  auto all = discovery.serverGroupsAndResources();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->failedGroupVersions.empty());
  EXPECT_TRUE(all->groupDiscoveryError().ok());
  auto asked = transport->asked();
  EXPECT_EQ(std::count(asked.begin(), asked.end(), "/apis"), 1);
}

TEST_F(DiscoveryTest, LegacyFailingGroupVersionIsReported) {
  serveLegacy(*transport);
  auto all = discovery.serverPreferredResourcesWithFailures();
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(all->failedGroupVersions,
            (std::map<std::string, std::string>{{"broken.io/v1", "the server is currently unable to handle the request"}}));
}

// The group lists themselves failing is an error, not a partial result.
TEST_F(DiscoveryTest, UnreadableGroupListIsAnError) {
  transport->set("/api", 503, {{"kind", "Status"}, {"reason", "ServiceUnavailable"}, {"message", "down"}, {"code", 503}});
  auto all = discovery.serverGroupsAndResources();
  EXPECT_FALSE(all.ok());
}

// client-go ServerPreferredNamespacedResources: the preferred resources that are namespaced.
TEST_F(DiscoveryTest, PreferredNamespacedResourcesLeaveClusterScopedOnesOut) {
  transport->set("/api", 200,
                 aggList({aggGroup("", {aggVersion("v1", {aggResource("pods", "Pod", "", "v1"),
                                                          aggResource("nodes", "Node", "", "v1", false)})})}));
  transport->set("/apis", 200, aggList(json::array()));
  auto ns = discovery.serverPreferredNamespacedResources();
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(names(ns->resources), std::set<std::string>{"v1 pods"});
}

}  // namespace
}  // namespace kcm::client
