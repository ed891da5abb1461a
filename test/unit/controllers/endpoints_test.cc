// endpoints-controller (upstream pkg/controller/endpoint/endpoints_controller_test.go) over the fake apiserver and
// informer stores the test fills, and RepackSubsets against golden values from upstream's own function
// (testdata/endpoints, hack/update-pod-template-hash.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "controllers/endpoint/endpoints_controller.h"
#include "controllers/endpoint/endpoints_util.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::endpoint {
namespace {

using api::core::v1::Endpoints;
using api::core::v1::Pod;
using api::core::v1::Service;
using testing::FakeApiServer;
using json = nlohmann::json;
using namespace std::chrono_literals;

TEST(RepackSubsets, MatchesUpstreamOnTheGoldenCases) {
  std::ifstream f(std::string(KCM_TESTDATA_DIR) + "/controllers/testdata/endpoints/repack_golden.json");
  ASSERT_TRUE(f.good());
  json golden = json::parse(f);
  ASSERT_GE(golden.size(), 5u);
  for (const auto& c : golden) {
    Endpoints in;
    ASSERT_TRUE(fromJson(json({{"subsets", c["subsets"]}}).dump(), in).ok()) << c["name"];
    Endpoints out;
    out.subsets = repackSubsets(in.subsets);
    json got = json::parse(toJson(out));
    json want = c["repacked"].is_null() || c["repacked"].empty() ? json() : c["repacked"];
    EXPECT_EQ(got.value("subsets", json()), want) << c["name"].get<std::string>();
  }
}

class EndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"", "v1", "endpoints", "Endpoints", true});
  }
  Service service(const std::string& name, std::vector<api::core::v1::ServicePort> ports,
                  std::map<std::string, std::string> selector = {{"app", "web"}}) {
    Service s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = name;
    s.metadata.labels["team"] = "a";
    s.metadata.creationTimestamp = api::Time::fromUnix(1767225000);
    s.spec.clusterIP = "10.96.0.10";
    s.spec.ipFamilies = {"IPv4"};
    for (auto& [k, v] : selector) s.spec.selector[k] = v;
    s.spec.ports = std::move(ports);
    factory.forType<Service>().store().upsert("ns/" + name, std::make_shared<const Service>(s));
    return s;
  }
  static api::core::v1::ServicePort port(const std::string& name, int32_t p, api::IntOrString target,
                                         const std::string& proto = "TCP") {
    api::core::v1::ServicePort sp;
    sp.name = name;
    sp.port = p;
    sp.protocol = proto;
    sp.targetPort = target;
    return sp;
  }
  Pod pod(const std::string& name, const std::string& ip, bool ready = true) {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.uid = "uid-" + name;
    p.metadata.resourceVersion = "1";
    p.metadata.labels["app"] = "web";
    p.spec.nodeName = "node-1";
    auto& c = p.spec.containers.emplace_back();
    c.name = "c";
    auto& cp = c.ports.emplace_back();
    cp.name = "http";
    cp.containerPort = 8080;
    cp.protocol = "TCP";
    p.status.phase = "Running";
    p.status.podIP = ip;
    p.status.podIPs.emplace_back().ip = ip;
    auto& cond = p.status.conditions.emplace_back();
    cond.type = "Ready";
    cond.status = ready ? "True" : "False";
    cond.lastTransitionTime = api::Time::fromUnix(1767225100);
    return p;
  }
  void cache(const Pod& p) { factory.forType<Pod>().store().upsert("ns/" + p.metadata.name, std::make_shared<const Pod>(p)); }
  std::optional<Endpoints> stored(const std::string& name) { return server->get<Endpoints>("ns", name); }
  // What the informer would see after a write.
  void syncCache(const std::string& name) {
    if (auto e = stored(name)) factory.forType<Endpoints>().store().upsert("ns/" + name, std::make_shared<const Endpoints>(*e));
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  EndpointsController controller{server->client(), factory.forType<Pod>(), factory.forType<Service>(),
                                 factory.forType<Endpoints>(), broadcaster.newRecorder(kControllerName), 0s, clock};
};

TEST_F(EndpointsTest, ReadyAndNotReadyPodsBecomeAddressesWithTheTargetedPort) {
  service("web", {port("http", 80, api::IntOrString::fromString("http"))});
  cache(pod("a", "10.0.0.2"));
  cache(pod("b", "10.0.0.1"));
  cache(pod("c", "10.0.0.3", false));
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());
  auto e = stored("web");
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->subsets.size(), 1u);
  const auto& s = e->subsets[0];
  ASSERT_EQ(s.addresses.size(), 2u);
  EXPECT_EQ(s.addresses[0].ip, "10.0.0.1");  // ordered by IP
  EXPECT_EQ(s.addresses[0].nodeName.value_or(""), "node-1");
  EXPECT_EQ(s.addresses[0].targetRef->kind, "Pod");
  EXPECT_EQ(s.addresses[0].targetRef->name, "b");
  EXPECT_EQ(s.addresses[0].targetRef->uid, "uid-b");
  ASSERT_EQ(s.notReadyAddresses.size(), 1u);
  EXPECT_EQ(s.notReadyAddresses[0].ip, "10.0.0.3");
  ASSERT_EQ(s.ports.size(), 1u);
  EXPECT_EQ(s.ports[0].name, "http");
  EXPECT_EQ(s.ports[0].port, 8080);
  EXPECT_EQ(s.ports[0].protocol, "TCP");
  EXPECT_EQ(e->metadata.labels.at(kLabelManagedBy), kControllerName);
  EXPECT_EQ(e->metadata.labels.at("team"), "a");
  EXPECT_EQ(e->metadata.labels.count(kIsHeadlessService), 0u);
  // First sight of the Service: its creation is the trigger time.
  EXPECT_EQ(e->metadata.annotations.at(kEndpointsLastChangeTriggerTime), api::Time::fromUnix(1767225000).rfc3339());

  // Nothing changed: no write.
  syncCache("web");
  server->clearActions();
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());
  EXPECT_TRUE(server->writes().empty());
}

TEST_F(EndpointsTest, PublishNotReadyAddressesAndTerminatingPods) {
  Service s = service("web", {port("http", 80, api::IntOrString::fromInt(9090))});
  Pod terminating = pod("t", "10.0.0.9");
  terminating.metadata.deletionTimestamp = api::Time::fromUnix(1767225200);
  cache(terminating);
  cache(pod("n", "10.0.0.8", false));
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());
  auto e = stored("web");
  ASSERT_EQ(e->subsets.size(), 1u);
  EXPECT_TRUE(e->subsets[0].addresses.empty());
  ASSERT_EQ(e->subsets[0].notReadyAddresses.size(), 1u);  // the terminating one is left out
  EXPECT_EQ(e->subsets[0].ports[0].port, 9090);
  s.spec.publishNotReadyAddresses = true;
  factory.forType<Service>().store().upsert("ns/web", std::make_shared<const Service>(s));
  syncCache("web");
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());
  e = stored("web");
  ASSERT_EQ(e->subsets.size(), 1u);
  EXPECT_EQ(e->subsets[0].addresses.size(), 2u);  // both, as ready
  EXPECT_TRUE(e->subsets[0].notReadyAddresses.empty());
}

TEST_F(EndpointsTest, HeadlessServiceWithoutPortsPublishesHostnames) {
  Service s = service("db", {});
  s.spec.clusterIP = "None";
  factory.forType<Service>().store().upsert("ns/db", std::make_shared<const Service>(s));
  Pod p = pod("db-0", "10.0.0.5");
  p.spec.hostname = "db-0";
  p.spec.subdomain = "db";
  cache(p);
  ASSERT_TRUE(controller.syncService("ns/db").status.ok());
  auto e = stored("db");
  ASSERT_EQ(e->subsets.size(), 1u);
  EXPECT_TRUE(e->subsets[0].ports.empty());
  EXPECT_EQ(e->subsets[0].addresses.at(0).hostname, "db-0");
  EXPECT_EQ(e->metadata.labels.at(kIsHeadlessService), "");
  // A ClusterIP Service without ports gets no subsets.
  service("plain", {});
  ASSERT_TRUE(controller.syncService("ns/plain").status.ok());
  EXPECT_TRUE(stored("plain")->subsets.empty());
}

TEST_F(EndpointsTest, ServicesWithoutSelectorOrExternalNameAreLeftAloneAndDeletedServicesLoseTheirEndpoints) {
  service("manual", {port("p", 80, api::IntOrString::fromInt(80))}, {});
  Service ext = service("ext", {});
  ext.spec.type = "ExternalName";
  factory.forType<Service>().store().upsert("ns/ext", std::make_shared<const Service>(ext));
  cache(pod("a", "10.0.0.2"));
  ASSERT_TRUE(controller.syncService("ns/manual").status.ok());
  ASSERT_TRUE(controller.syncService("ns/ext").status.ok());
  EXPECT_TRUE(server->writes().empty());
  Endpoints old;
  old.metadata.namespace_ = "ns";
  old.metadata.name = "gone";
  server->add(old);
  ASSERT_TRUE(controller.syncService("ns/gone").status.ok());
  EXPECT_FALSE(stored("gone").has_value());
  ASSERT_TRUE(controller.syncService("ns/never-existed").status.ok());  // NotFound is fine
}

TEST_F(EndpointsTest, NamedPortsMissingOnAPodLeaveThatPodOutAndIPv6ServicesTakeIPv6Addresses) {
  service("web", {port("metrics", 9100, api::IntOrString::fromString("metrics"))});
  cache(pod("a", "10.0.0.2"));
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());
  EXPECT_TRUE(stored("web")->subsets.empty());

  Service v6 = service("v6", {port("http", 80, api::IntOrString::fromString("http"))});
  v6.spec.ipFamilies = {"IPv6"};
  v6.spec.clusterIP = "fd00::10";
  factory.forType<Service>().store().upsert("ns/v6", std::make_shared<const Service>(v6));
  Pod dual = pod("dual", "10.0.0.7");
  dual.status.podIPs.emplace_back().ip = "fd00:0:0::7";
  cache(dual);
  ASSERT_TRUE(controller.syncService("ns/v6").status.ok());
  auto e = stored("v6");
  ASSERT_EQ(e->subsets.size(), 1u);
  EXPECT_EQ(e->subsets[0].addresses.at(0).ip, "fd00::7");  // canonical form
}

TEST_F(EndpointsTest, OverAThousandAddressesAreTruncatedAndAnnotated) {
  service("big", {port("http", 80, api::IntOrString::fromInt(80))});
  for (int i = 0; i < 1001; ++i) cache(pod("p" + std::to_string(i), "10.1." + std::to_string(i / 250) + "." +
                                                                     std::to_string(i % 250 + 1)));
  ASSERT_TRUE(controller.syncService("ns/big").status.ok());
  auto e = stored("big");
  ASSERT_EQ(e->subsets.size(), 1u);
  EXPECT_EQ(e->subsets[0].addresses.size(), 1000u);
  EXPECT_EQ(e->metadata.annotations.at(kEndpointsOverCapacity), "truncated");
}

TEST(TruncateEndpoints, NotReadyAddressesGoFirstAndEachSubsetGivesItsShare) {
  Endpoints e;
  auto addrs = [](int n) {
    std::vector<api::core::v1::EndpointAddress> v(n);
    for (int i = 0; i < n; ++i) v[i].ip = "10.0.0." + std::to_string(i);
    return v;
  };
  e.subsets.resize(2);
  e.subsets[0].addresses = addrs(400);
  e.subsets[0].notReadyAddresses = addrs(300);
  e.subsets[1].addresses = addrs(400);
  e.subsets[1].notReadyAddresses = addrs(100);
  ASSERT_TRUE(truncateEndpoints(e));
  EXPECT_EQ(e.subsets[0].addresses.size(), 400u);
  EXPECT_EQ(e.subsets[1].addresses.size(), 400u);
  EXPECT_EQ(e.subsets[0].notReadyAddresses.size(), 150u);  // ceil(300/400 * 200)
  EXPECT_EQ(e.subsets[1].notReadyAddresses.size(), 50u);
  Endpoints small;
  small.subsets.resize(1);
  small.subsets[0].addresses = addrs(1000);
  EXPECT_FALSE(truncateEndpoints(small));
}

TEST_F(EndpointsTest, AnUpdateTheCacheHasNotSeenIsNotRepeatedOnStaleData) {
  service("web", {port("http", 80, api::IntOrString::fromString("http"))});
  cache(pod("a", "10.0.0.2"));
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());
  syncCache("web");
  cache(pod("b", "10.0.0.3"));
  ASSERT_TRUE(controller.syncService("ns/web").status.ok());  // updates; the cache still has the old version
  auto r = controller.syncService("ns/web");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("endpoints informer cache is out of date"), std::string::npos);
  syncCache("web");
  EXPECT_TRUE(controller.syncService("ns/web").status.ok());
}

TEST_F(EndpointsTest, EndpointsLeftFromDeletedServicesAreRemovedAtStart) {
  // checkLeftoverEndpoints: queued once the caches synced (this once deadlocked: it queued from the sync poll).
  Endpoints orphan;
  orphan.metadata.namespace_ = "ns";
  orphan.metadata.name = "orphan";
  server->add(orphan);
  Endpoints leader;
  leader.metadata.namespace_ = "ns";
  leader.metadata.name = "lock";
  leader.metadata.annotations[kLeaderElectionRecordAnnotationKey] = "{}";
  server->add(leader);
  std::stop_source stop;
  factory.start(stop.get_token());
  controller.run(1, stop.get_token());
  EXPECT_TRUE(testing::eventually([&] { return !stored("orphan").has_value(); })) << "leftover Endpoints not removed";
  EXPECT_TRUE(stored("lock").has_value());  // leader-election records are not Service endpoints
  stop.request_stop();
}

TEST(PodProjection, WhichPodEventsReachWhichServices) {
  informers::Store<Service> services;
  auto svc = [&](const std::string& name, const std::string& app) {
    Service s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = name;
    s.spec.selector["app"] = app;
    services.upsert("ns/" + name, std::make_shared<const Service>(s));
  };
  svc("a", "one");
  svc("b", "two");
  Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.resourceVersion = "1";
  p.metadata.labels["app"] = "one";
  auto added = endpointsliceutil::getPodUpdateProjectionKey(nullptr, &p);
  ASSERT_TRUE(added);
  EXPECT_EQ(endpointsliceutil::getServicesToUpdate(services, *added), (std::set<std::string>{"ns/a"}));
  Pod same = p;
  EXPECT_FALSE(endpointsliceutil::getPodUpdateProjectionKey(&p, &same));  // same resourceVersion
  same.metadata.resourceVersion = "2";
  EXPECT_FALSE(endpointsliceutil::getPodUpdateProjectionKey(&p, &same));  // nothing relevant changed
  Pod relabelled = same;
  relabelled.metadata.labels["app"] = "two";
  auto moved = endpointsliceutil::getPodUpdateProjectionKey(&p, &relabelled);
  ASSERT_TRUE(moved);
  EXPECT_EQ(endpointsliceutil::getServicesToUpdate(services, *moved), (std::set<std::string>{"ns/a", "ns/b"}));
  Pod ready = same;
  ready.status.conditions.emplace_back().type = "Ready";
  ready.status.conditions.back().status = "True";
  auto readyKey = endpointsliceutil::getPodUpdateProjectionKey(&p, &ready);
  ASSERT_TRUE(readyKey);
  EXPECT_EQ(endpointsliceutil::getServicesToUpdate(services, *readyKey), (std::set<std::string>{"ns/a"}));
}

}  // namespace
}  // namespace kcm::controllers::endpoint
