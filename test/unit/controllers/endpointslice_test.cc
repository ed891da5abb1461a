// endpointslice-controller and its reconciler (upstream endpointslice_controller_test.go, k8s.io/endpointslice
// reconciler_test.go) over the fake apiserver and informer stores the test fills; the slice port order against
// golden values from upstream's NewPortMapKey (testdata/endpoints/repack_golden.json).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "base/metrics.h"
#include "controllers/endpointslice/endpointslice_controller.h"
#include "controllers/endpointslice/reconciler.h"
#include "controllers/endpointslice/topology_cache.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::endpointslice {
namespace {

using api::core::v1::Node;
using testing::FakeApiServer;
using json = nlohmann::json;
using namespace std::chrono_literals;

TEST(EndpointSlicePorts, AreOrderedAsUpstreamsNewPortMapKey) {
  std::ifstream f(std::string(KCM_TESTDATA_DIR) + "/controllers/testdata/endpoints/repack_golden.json");
  json golden = json::parse(f);
  int checked = 0;
  for (const auto& c : golden) {
    if (!c.contains("slicePorts")) continue;
    EndpointSlice in, want;
    ASSERT_TRUE(fromJson(json({{"addressType", "IPv4"}, {"ports", c["slicePorts"]}}).dump(), in).ok());
    ASSERT_TRUE(fromJson(json({{"addressType", "IPv4"}, {"ports", c["slicePortsSorted"]}}).dump(), want).ok());
    std::vector<EndpointPort> ports = in.ports;
    newPortMapKey(ports);
    EndpointSlice got;
    got.addressType = "IPv4";
    got.ports = ports;
    EXPECT_EQ(json::parse(toJson(got))["ports"], json::parse(toJson(want))["ports"]) << c["name"];
    std::vector<EndpointPort> reversed(in.ports.rbegin(), in.ports.rend());
    EXPECT_EQ(newPortMapKey(reversed), newPortMapKey(ports));  // the key ignores the input order
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

class SliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true});
    for (int i = 0; i < 3; ++i) {
      Node n;
      n.metadata.name = "node-" + std::to_string(i);
      n.metadata.labels[kLabelTopologyZone] = i == 2 ? "zone-b" : "zone-a";
      factory.forType<Node>().store().upsert(n.metadata.name, std::make_shared<const Node>(n));
    }
  }
  Service service(const std::string& name = "web") {
    Service s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = name;
    s.metadata.uid = "svc-uid-" + name;
    s.metadata.labels["team"] = "a";
    s.spec.clusterIP = "10.96.0.10";
    s.spec.ipFamilies = {"IPv4"};
    s.spec.selector["app"] = "web";
    api::core::v1::ServicePort http;
    http.name = "http";
    http.port = 80;
    http.protocol = "TCP";
    http.targetPort = api::IntOrString::fromString("http");
    s.spec.ports.push_back(http);
    return s;
  }
  std::shared_ptr<const Pod> pod(int i, bool ready = true, const std::string& node = "") {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = "pod-" + std::to_string(i);
    p.metadata.uid = "uid-" + std::to_string(i);
    p.metadata.labels["app"] = "web";
    p.spec.nodeName = node.empty() ? "node-" + std::to_string(i % 3) : node;
    auto& c = p.spec.containers.emplace_back();
    auto& cp = c.ports.emplace_back();
    cp.name = "http";
    cp.containerPort = 8080;
    cp.protocol = "TCP";
    p.status.phase = "Running";
    p.status.podIP = "10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
    p.status.podIPs.emplace_back().ip = p.status.podIP;
    auto& cond = p.status.conditions.emplace_back();
    cond.type = "Ready";
    cond.status = ready ? "True" : "False";
    return std::make_shared<const Pod>(p);
  }
  std::vector<EndpointSlice> slices() { return server->list<EndpointSlice>("ns"); }
  // The stored slices, as the reconciler's input.
  Status reconcileAgain(const Service& s, const std::vector<std::shared_ptr<const Pod>>& pods) {
    stored_ = slices();
    std::vector<const EndpointSlice*> in;
    for (const auto& x : stored_) in.push_back(&x);
    return reconciler.reconcile(s, pods, in, std::nullopt);
  }
  size_t writes(const char* verb) { return server->actionsFor(verb, "endpointslices").size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  EndpointSliceTracker tracker;
  Reconciler reconciler{server->client(), factory.forType<Node>().store(), 100, tracker,
                        broadcaster.newRecorder("endpoint-slice-controller")};
  std::vector<EndpointSlice> stored_;
};

TEST_F(SliceTest, AServiceWithoutPodsGetsOnePlaceholderSliceOnce) {
  ASSERT_TRUE(reconciler.reconcile(service(), {}, {}, std::nullopt).ok());
  auto s = slices();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].endpoints.empty());
  EXPECT_TRUE(s[0].ports.empty());
  EXPECT_EQ(s[0].addressType, "IPv4");
  EXPECT_EQ(s[0].metadata.generateName, "web-");
  EXPECT_EQ(s[0].metadata.labels.at(kLabelServiceName), "web");
  EXPECT_EQ(s[0].metadata.labels.at(kLabelManagedBy), kControllerName);
  EXPECT_EQ(s[0].metadata.labels.at("team"), "a");
  ASSERT_EQ(s[0].metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(s[0].metadata.ownerReferences[0].uid, "svc-uid-web");
  EXPECT_TRUE(s[0].metadata.ownerReferences[0].controller.value_or(false));
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(service(), {}).ok());
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(SliceTest, PodsBecomeEndpointsWithConditionsNodeZoneAndTheTargetedPort) {
  Pod terminating = *pod(2);
  terminating.metadata.deletionTimestamp = api::Time::fromUnix(1767225000);
  ASSERT_TRUE(reconciler.reconcile(service(), {pod(0), pod(1, false), std::make_shared<const Pod>(terminating)}, {},
                                   std::chrono::system_clock::from_time_t(1767225100)).ok());
  auto s = slices();
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].ports.size(), 1u);
  EXPECT_EQ(s[0].ports[0].port.value_or(0), 8080);
  EXPECT_EQ(s[0].ports[0].name.value_or("?"), "http");
  EXPECT_EQ(s[0].metadata.annotations.at(kLastChangeTriggerTime), "2025-12-31T23:51:40Z");
  ASSERT_EQ(s[0].endpoints.size(), 3u);
  std::map<std::string, Endpoint> byPod;
  for (const auto& e : s[0].endpoints) byPod[e.targetRef->name] = e;
  EXPECT_EQ(byPod["pod-0"].addresses, std::vector<std::string>{"10.1.0.1"});
  EXPECT_TRUE(*byPod["pod-0"].conditions.ready);
  EXPECT_FALSE(*byPod["pod-1"].conditions.ready);
  EXPECT_FALSE(*byPod["pod-1"].conditions.serving);
  EXPECT_FALSE(*byPod["pod-2"].conditions.ready);  // terminating
  EXPECT_TRUE(*byPod["pod-2"].conditions.serving);
  EXPECT_TRUE(*byPod["pod-2"].conditions.terminating);
  EXPECT_EQ(byPod["pod-2"].zone.value_or(""), "zone-b");
  EXPECT_EQ(byPod["pod-1"].nodeName.value_or(""), "node-1");
  EXPECT_FALSE(byPod["pod-0"].hints.has_value());
}

TEST_F(SliceTest, EndpointsArePackedUpToTheMaximumAndChangesStayInPlace) {
  std::vector<std::shared_ptr<const Pod>> pods;
  for (int i = 0; i < 250; ++i) pods.push_back(pod(i));
  ASSERT_TRUE(reconciler.reconcile(service(), pods, {}, std::nullopt).ok());
  std::vector<size_t> sizes;
  for (const auto& s : slices()) sizes.push_back(s.endpoints.size());
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<size_t>{50, 100, 100}));
  // One pod gone and one new: the slice that lost one is updated and takes the new one; nothing is created.
  pods.erase(pods.begin());
  pods.push_back(pod(300));
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(service(), pods).ok());
  EXPECT_EQ(writes("create"), 0u);
  EXPECT_EQ(writes("update"), 1u);
  EXPECT_EQ(writes("delete"), 0u);
  size_t total = 0;
  for (const auto& s : slices()) total += s.endpoints.size();
  EXPECT_EQ(total, 250u);
}

TEST_F(SliceTest, WhenTheLastPodGoesTheSliceBecomesThePlaceholder) {
  ASSERT_TRUE(reconciler.reconcile(service(), {pod(0)}, {}, std::nullopt).ok());
  const std::string name = slices().at(0).metadata.name;
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(service(), {}).ok());
  EXPECT_EQ(writes("create"), 0u);  // the emptied slice is reused (finalize), not deleted and recreated
  EXPECT_EQ(writes("delete"), 0u);
  ASSERT_EQ(slices().size(), 1u);
  EXPECT_EQ(slices()[0].metadata.name, name);
  EXPECT_TRUE(slices()[0].endpoints.empty());
}

TEST_F(SliceTest, ForeignOrWrongFamilySlicesAreDeleted) {
  ASSERT_TRUE(reconciler.reconcile(service(), {pod(0)}, {}, std::nullopt).ok());
  EndpointSlice foreign = slices().at(0);
  foreign.metadata.name = "foreign";
  foreign.metadata.ownerReferences[0].uid = "someone-else";
  server->add(foreign);
  EndpointSlice v6 = slices().at(0);
  v6.metadata.name = "v6";
  v6.addressType = "IPv6";
  server->add(v6);
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(service(), {pod(0)}).ok());
  std::set<std::string> deleted;
  for (const auto& a : server->actionsFor("delete", "endpointslices")) deleted.insert(a.name);
  EXPECT_EQ(deleted, (std::set<std::string>{"foreign", "v6"}));
}

TEST_F(SliceTest, APodOnAnUnknownNodeIsSkippedWithAnErrorUnlessNotReadyAddressesArePublished) {
  Status st = reconciler.reconcile(service(), {pod(0), pod(1, true, "nowhere")}, {}, std::nullopt);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "skipping Pod pod-1 for Service ns/web: Node nowhere Not Found");
  ASSERT_EQ(slices().size(), 1u);
  EXPECT_EQ(slices()[0].endpoints.size(), 1u);
  Service publish = service();
  publish.spec.publishNotReadyAddresses = true;
  EXPECT_TRUE(reconcileAgain(publish, {pod(0), pod(1, true, "nowhere")}).ok());
  EXPECT_EQ(slices()[0].endpoints.size(), 2u);
}

TEST_F(SliceTest, TrafficDistributionSetsZoneHintsAndTheirRemovalClearsThem) {
  Service close = service();
  close.spec.trafficDistribution = "PreferClose";
  ASSERT_TRUE(reconciler.reconcile(close, {pod(0), pod(2), pod(1, false)}, {}, std::nullopt).ok());
  const EndpointSlice first = slices().at(0);
  for (const auto& e : first.endpoints) {
    if (!*e.conditions.ready) {
      EXPECT_FALSE(e.hints.has_value());
      continue;
    }
    ASSERT_TRUE(e.hints.has_value());
    ASSERT_EQ(e.hints->forZones.size(), 1u);
    EXPECT_EQ(e.hints->forZones[0].name, *e.zone);
    EXPECT_TRUE(e.hints->forNodes.empty());
  }
  Service sameNode = service();
  sameNode.spec.trafficDistribution = "PreferSameNode";
  ASSERT_TRUE(reconcileAgain(sameNode, {pod(0), pod(2), pod(1, false)}).ok());
  const EndpointSlice second = slices().at(0);
  for (const auto& e : second.endpoints)
    if (*e.conditions.ready) EXPECT_EQ(e.hints->forNodes.at(0).name, *e.nodeName);
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(service(), {pod(0), pod(2), pod(1, false)}).ok());
  EXPECT_EQ(writes("update"), 1u);
  const EndpointSlice third = slices().at(0);
  for (const auto& e : third.endpoints) EXPECT_FALSE(e.hints.has_value());
}

// reconciler_test.go TestReconcileTopology, in short: topology-mode Auto hints per zone share, their events, and
// their removal with the annotation.
TEST_F(SliceTest, TopologyModeAutoSharesEndpointsByZoneCPUAndRemovingItClearsTheHints) {
  TopologyCache cache;
  auto zoned = [](const std::string& zone) {
    Node n;
    n.metadata.name = "cpu-" + zone;
    n.metadata.labels[kLabelTopologyZone] = zone;
    n.status.allocatable["cpu"] = *api::Quantity::parse("4");
    auto& c = n.status.conditions.emplace_back();
    c.type = "Ready";
    c.status = "True";
    return std::make_shared<const Node>(n);
  };
  cache.setNodes({zoned("zone-a"), zoned("zone-b")});
  Reconciler topo{server->client(), factory.forType<Node>().store(), 100, tracker,
                  broadcaster.newRecorder("endpoint-slice-controller"), &cache};
  Service autoSvc = service();
  autoSvc.metadata.annotations["service.kubernetes.io/topology-mode"] = "Auto";
  auto events = [&] {
    broadcaster.flush();
    return server->createdEvents();
  };
  // node-0 and node-1 are in zone-a, node-2 in zone-b: three endpoints in zone-a, one in zone-b, for equal shares.
  const std::vector<std::shared_ptr<const Pod>> pods = {pod(0), pod(1), pod(2), pod(3)};
  ASSERT_TRUE(topo.reconcile(autoSvc, pods, {}, std::nullopt).ok());
  std::map<std::string, int> byHint;
  const EndpointSlice hinted = slices().at(0);
  for (const auto& e : hinted.endpoints) byHint[e.hints.value().forZones.at(0).name]++;
  EXPECT_EQ(byHint, (std::map<std::string, int>{{"zone-a", 2}, {"zone-b", 2}}));
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal TopologyAwareHintsEnabled Topology Aware Hints has been "
                                                "enabled, addressType: IPv4"}));
  EXPECT_TRUE(cache.hasPopulatedHints("ns/web"));
  // Synced again unchanged: nothing written.
  server->clearActions();
  stored_ = slices();
  std::vector<const EndpointSlice*> in;
  for (const auto& x : stored_) in.push_back(&x);
  ASSERT_TRUE(topo.reconcile(autoSvc, pods, in, std::nullopt).ok());
  EXPECT_EQ(writes("update"), 0u);
  // The annotation goes: hints go, with a Disabled event.
  server->clearActions();
  in.clear();
  for (const auto& x : stored_) in.push_back(&x);
  ASSERT_TRUE(topo.reconcile(service(), pods, in, std::nullopt).ok());
  EXPECT_EQ(writes("update"), 1u);
  const EndpointSlice cleared = slices().at(0);
  for (const auto& e : cleared.endpoints) EXPECT_FALSE(e.hints.has_value());
  EXPECT_EQ(events(), (std::vector<std::string>{"Warning TopologyAwareHintsDisabled Topology Aware Hints has been "
                                                "disabled, addressType: IPv4"}));
  EXPECT_FALSE(cache.hasPopulatedHints("ns/web"));
}

// metrics/cache_test.go: the efficiency gauges follow each Service's endpoints and slices, a placeholder counting as
// one slice; a deleted Service's share goes. Our own Reconciler: the gauges are the last cache's totals.
TEST_F(SliceTest, EfficiencyGaugesFollowEndpointsAndSlicesPerService) {
  Reconciler r{server->client(), factory.forType<Node>().store(), 3, tracker,
               broadcaster.newRecorder("endpoint-slice-controller")};
  auto gauge = [](const char* name) {
    return metrics::Registry::global().gauge(std::string("endpoint_slice_controller_") + name, "").value();
  };
  ASSERT_TRUE(r.reconcile(service("web"), {pod(0), pod(1), pod(2), pod(3)}, {}, std::nullopt).ok());
  EXPECT_EQ(gauge("endpoints_desired"), 4);
  EXPECT_EQ(gauge("num_endpoint_slices"), 2);      // 3 + 1
  EXPECT_EQ(gauge("desired_endpoint_slices"), 2);  // ceil(4 / 3)
  Service close = service("empty");
  close.spec.selector["app"] = "nobody";
  close.spec.trafficDistribution = "PreferClose";
  ASSERT_TRUE(r.reconcile(close, {}, {}, std::nullopt).ok());
  EXPECT_EQ(gauge("endpoints_desired"), 4);
  EXPECT_EQ(gauge("num_endpoint_slices"), 3);
  EXPECT_EQ(gauge("desired_endpoint_slices"), 3);
  auto byTD = [] {
    return metrics::Registry::global()
        .gauge("endpoint_slice_controller_services_count_by_traffic_distribution", "",
               {{"traffic_distribution", "PreferClose"}})
        .value();
  };
  EXPECT_EQ(byTD(), 1);
  r.deleteService("ns", "web");
  EXPECT_EQ(gauge("endpoints_desired"), 0);
  EXPECT_EQ(gauge("num_endpoint_slices"), 1);
  r.deleteService("ns", "empty");
  EXPECT_EQ(byTD(), 0);  // kept, at 0, as upstream's reset-and-set
  const std::string text = metrics::Registry::global().render();
  EXPECT_NE(text.find("endpoint_slice_controller_endpointslices_changed_per_sync_count{topology=\"Disabled\","
                      "traffic_distribution=\"PreferClose\"}"),
            std::string::npos);
  EXPECT_NE(text.find("endpoint_slice_controller_endpoints_added_per_sync_bucket{le=\"2\"}"), std::string::npos);
}

TEST_F(SliceTest, ServiceLabelChangesReachTheSlices) {
  ASSERT_TRUE(reconciler.reconcile(service(), {pod(0)}, {}, std::nullopt).ok());
  Service relabelled = service();
  relabelled.metadata.labels["team"] = "b";
  relabelled.metadata.labels[kLabelManagedBy] = "someone";  // reserved: ignored
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(relabelled, {pod(0)}).ok());
  EXPECT_EQ(writes("update"), 1u);
  auto s = slices().at(0);
  EXPECT_EQ(s.metadata.labels.at("team"), "b");
  EXPECT_EQ(s.metadata.labels.at(kLabelManagedBy), kControllerName);
  // Reserved labels alone (service.kubernetes.io/headless follows the cluster IP, which cannot change) do not make
  // an update, as upstream's setEndpointSliceLabels compares the others only.
  Service headless = relabelled;
  headless.spec.clusterIP = "None";
  server->clearActions();
  ASSERT_TRUE(reconcileAgain(headless, {pod(0)}).ok());
  EXPECT_EQ(writes("update"), 0u);
}

TEST(AddressTypes, FromFamiliesElseTheClusterIPElseBoth) {
  Service s;
  s.spec.ipFamilies = {"IPv6", "IPv4"};
  EXPECT_EQ(getAddressTypesForService(s), (std::vector<std::string>{"IPv4", "IPv6"}));
  s.spec.ipFamilies.clear();
  s.spec.clusterIP = "fd00::1";
  EXPECT_EQ(getAddressTypesForService(s), (std::vector<std::string>{"IPv6"}));
  s.spec.clusterIP = "None";
  EXPECT_EQ(getAddressTypesForService(s), (std::vector<std::string>{"IPv4", "IPv6"}));
}

TEST(SliceTracker, StaleCachesAndOwnDeletions) {
  EndpointSliceTracker t;
  EndpointSlice s;
  s.metadata.namespace_ = "ns";
  s.metadata.name = "web-abc";
  s.metadata.uid = "u1";
  s.metadata.generation = 2;
  s.metadata.labels[kLabelServiceName] = "web";
  EXPECT_TRUE(t.shouldSync(s));
  t.update(s);
  EXPECT_FALSE(t.shouldSync(s));
  EXPECT_TRUE(t.staleSlices("ns", "web", {}));  // written but missing from the cache
  EndpointSlice older = s;
  older.metadata.generation = 1;
  EXPECT_TRUE(t.staleSlices("ns", "web", {&older}));
  EXPECT_FALSE(t.staleSlices("ns", "web", {&s}));
  s.metadata.generation = 3;
  EXPECT_TRUE(t.shouldSync(s));  // someone else changed it
  t.expectDeletion(s);
  EXPECT_TRUE(t.staleSlices("ns", "web", {&s}));  // deleted by us, still cached
  EXPECT_FALSE(t.staleSlices("ns", "web", {}));
  EXPECT_TRUE(t.handleDeletion(s));  // our own deletion: nothing to do
  t.update(s);
  EXPECT_FALSE(t.handleDeletion(s));  // someone else's: resync
}

}  // namespace
}  // namespace kcm::controllers::endpointslice
