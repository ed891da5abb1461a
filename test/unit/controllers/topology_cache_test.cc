// The topology-aware hints cache (upstream k8s.io/endpointslice/topologycache topologycache_test.go and
// utils_test.go cases) and the reconciler giving hints to a topology-mode: Auto Service over the fake apiserver.
#include <gtest/gtest.h>

#include "controllers/endpointslice/topology_cache.h"

namespace kcm::controllers::endpointslice {
namespace {

using api::core::v1::Node;
using api::discovery::v1::Endpoint;
using api::discovery::v1::EndpointSlice;

std::shared_ptr<const Node> node(const std::string& zone, const std::string& cpu, bool ready = true,
                                 const std::string& extraLabel = "") {
  Node n;
  static int i = 0;
  n.metadata.name = "n" + std::to_string(i++);
  if (!zone.empty()) n.metadata.labels["topology.kubernetes.io/zone"] = zone;
  if (!extraLabel.empty()) n.metadata.labels[extraLabel] = "";
  if (!cpu.empty()) n.status.allocatable["cpu"] = *api::Quantity::parse(cpu);
  auto& c = n.status.conditions.emplace_back();
  c.type = "Ready";
  c.status = ready ? "True" : "False";
  return std::make_shared<const Node>(n);
}

Endpoint ep(const std::string& ip, const std::string& zone, bool ready = true) {
  Endpoint e;
  e.addresses = {ip};
  if (!zone.empty()) e.zone = zone;
  e.conditions.ready = ready;
  return e;
}

EndpointSlice slice(std::vector<Endpoint> eps, const std::string& name = "") {
  EndpointSlice s;
  s.metadata.name = name;
  s.addressType = "IPv4";
  s.endpoints = std::move(eps);
  return s;
}

std::string hint(const Endpoint& e) {
  if (!e.hints) return "-";
  std::string s;
  for (const auto& z : e.hints->forZones) s += (s.empty() ? "" : ",") + z.name;
  return s;
}

std::vector<std::string> hints(const std::vector<EndpointSlice>& slices) {
  std::vector<std::string> out;
  for (const auto& s : slices)
    for (const auto& e : s.endpoints) out.push_back(hint(e));
  return out;
}

using Ratios = std::vector<std::pair<std::string, std::string>>;  // zone, cpu
void nodes(TopologyCache& c, const Ratios& zones) {
  std::vector<std::shared_ptr<const Node>> ns;
  for (const auto& [z, cpu] : zones) ns.push_back(node(z, cpu));
  c.setNodes(ns);
}

TEST(TopologyCache, NoZoneRatiosMeansNoHintsAndAnInsufficientNodeInfoEvent) {
  TopologyCache c;
  SliceInfo si{"ns/svc", "IPv4", {slice({ep("10.1.2.3", "zone-a")})}, {}, {}};
  auto events = c.addHints(si);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "Warning");
  EXPECT_EQ(events[0].reason, "TopologyAwareHintsDisabled");
  EXPECT_EQ(events[0].message, std::string(kInsufficientNodeInfo) + ", addressType: IPv4");
  EXPECT_EQ(hints(si.toCreate), (std::vector<std::string>{"-"}));
  EXPECT_FALSE(c.hasPopulatedHints("ns/svc"));
}

TEST(TopologyCache, TwoEndpointsForThreeZonesAreTooFew) {
  TopologyCache c;
  nodes(c, {{"zone-a", "1"}, {"zone-b", "1"}, {"zone-c", "1"}});
  SliceInfo si{"ns/svc", "IPv4", {slice({ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")})}, {}, {}};
  auto events = c.addHints(si);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message, "Insufficient number of endpoints (2 endpoints, 3 zones), addressType: IPv4");
  EXPECT_EQ(hints(si.toCreate), (std::vector<std::string>{"-", "-"}));
}

TEST(TopologyCache, TwoEndpointsForTwoZonesGetTheirOwnZones) {
  TopologyCache c;
  nodes(c, {{"zone-a", "1"}, {"zone-b", "1"}});
  SliceInfo si{"ns/svc", "IPv4",
               {slice({ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b"), ep("10.1.2.5", "zone-a", false)})}, {}, {}};
  auto events = c.addHints(si);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "Normal");
  EXPECT_EQ(events[0].reason, "TopologyAwareHintsEnabled");
  EXPECT_EQ(events[0].message, "Topology Aware Hints has been enabled, addressType: IPv4");
  EXPECT_EQ(hints(si.toCreate), (std::vector<std::string>{"zone-a", "zone-b", "-"}));  // not ready: no hint
  EXPECT_TRUE(c.hasPopulatedHints("ns/svc"));
  // Enabled already: no second event.
  SliceInfo again{"ns/svc", "IPv4", {slice({ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")})}, {}, {}};
  EXPECT_TRUE(c.addHints(again).empty());
}

// upstream "slices to create and update within 3 zone threshold": zone-a holds 5 of 10 endpoints for a 35 % share,
// so its first endpoint serves zone-b.
TEST(TopologyCache, AnOverfullZoneGivesEndpointsToAnUnderfullOne) {
  TopologyCache c;
  nodes(c, {{"zone-a", "3500m"}, {"zone-b", "3500m"}, {"zone-c", "3"}});
  SliceInfo si{"ns/svc", "IPv4",
               {slice({ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")}),
                slice({ep("10.1.3.3", "zone-c"), ep("10.1.3.4", "zone-c"), ep("10.1.3.4", "zone-a")})},
               {slice({ep("10.2.2.3", "zone-a"), ep("10.2.2.4", "zone-a")}),
                slice({ep("10.2.3.3", "zone-b"), ep("10.2.3.4", "zone-c"), ep("10.2.3.4", "zone-a")})},
               {}};
  auto events = c.addHints(si);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "TopologyAwareHintsEnabled");
  EXPECT_EQ(hints(si.toCreate), (std::vector<std::string>{"zone-b", "zone-b", "zone-c", "zone-c", "zone-a"}));
  EXPECT_EQ(hints(si.toUpdate), (std::vector<std::string>{"zone-a", "zone-a", "zone-b", "zone-c", "zone-a"}));
  // The cache now holds 4/3/3: losing zone-c's CPU share to zone-a does not overload it, losing all of zone-b does.
  EXPECT_TRUE(c.getOverloadedServices().empty());
  nodes(c, {{"zone-a", "1"}, {"zone-c", "1"}});
  EXPECT_EQ(c.getOverloadedServices(), (std::vector<std::string>{"ns/svc"}));
}

TEST(TopologyCache, AnEndpointWithoutZoneRemovesEveryHint) {
  TopologyCache c;
  nodes(c, {{"zone-a", "1"}, {"zone-b", "1"}});
  EndpointSlice hinted = slice({ep("10.0.0.1", "zone-a")}, "old");
  hinted.endpoints[0].hints = api::discovery::v1::EndpointHints{};
  hinted.endpoints[0].hints->forZones.push_back({"zone-a", {}});
  SliceInfo si{"ns/svc", "IPv4", {slice({ep("10.1.2.3", "zone-a"), ep("10.1.2.4", ""), ep("10.1.2.5", "zone-b")})},
               {}, {&hinted}};
  auto events = c.addHints(si);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message, "One or more endpoints do not have a zone specified, addressType: IPv4");
  EXPECT_EQ(hints(si.toCreate), (std::vector<std::string>{"-", "-", "-"}));
  // The unchanged slice's hints are removed too: it is written again.
  ASSERT_EQ(si.toUpdate.size(), 1u);
  EXPECT_EQ(si.toUpdate[0].metadata.name, "old");
  EXPECT_EQ(hints(si.toUpdate), (std::vector<std::string>{"-"}));
  EXPECT_TRUE(si.unchanged.empty());
}

TEST(TopologyCache, UnchangedSlicesWithFittingHintsStayUnchanged) {
  TopologyCache c;
  nodes(c, {{"zone-a", "1"}, {"zone-b", "1"}});
  auto hintedSlice = [](const std::string& name, const std::string& ip, const std::string& zone,
                        const std::string& forZone) {
    EndpointSlice s = slice({ep(ip, zone)}, name);
    s.endpoints[0].hints = api::discovery::v1::EndpointHints{};
    s.endpoints[0].hints->forZones.push_back({forZone, {}});
    return s;
  };
  EndpointSlice a = hintedSlice("a", "10.0.0.1", "zone-a", "zone-a");
  EndpointSlice b = hintedSlice("b", "10.0.0.2", "zone-b", "zone-b");
  EndpointSlice stale = hintedSlice("c", "10.0.0.3", "zone-a", "zone-gone");  // a zone with no allocation
  SliceInfo si{"ns/svc", "IPv4", {}, {slice({ep("10.0.0.4", "zone-b")}, "d")}, {&a, &b, &stale}};
  c.addHints(si);
  ASSERT_EQ(si.unchanged.size(), 2u);
  ASSERT_EQ(si.toUpdate.size(), 2u);
  EXPECT_EQ(si.toUpdate[1].metadata.name, "c");
  EXPECT_EQ(hints(si.toUpdate), (std::vector<std::string>{"zone-b", "zone-a"}));
}

TEST(TopologyCache, SetNodesSkipsControlPlaneAndUnreadyNodesAndNeedsTwoZones) {
  TopologyCache c;
  std::optional<HintEvent> why;
  c.setNodes({node("zone-a", "1"), node("zone-b", "1", false), node("zone-b", "1", true,
                                                                      "node-role.kubernetes.io/control-plane")});
  c.getAllocations(10, why);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, kInsufficientNodeInfo);  // one zone: the ratios are dropped
  why.reset();
  c.setNodes({node("zone-a", "1"), node("zone-b", "")});  // no CPU: not enough information
  c.getAllocations(10, why);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, kInsufficientNodeInfo);
  why.reset();
  c.setNodes({node("zone-a", "1000m"), node("zone-a", "1000m"), node("zone-a", "1000m"), node("zone-a", "2000m"),
              node("zone-b", "3000m"), node("zone-b", "1500m"), node("zone-c", "500m")});
  auto a = c.getAllocations(20, why);
  ASSERT_FALSE(why);
  // Ratios 0.5 / 0.45 / 0.05: desired 10 / 9 / 1, minimum ceil(desired / 1.2).
  EXPECT_EQ(a.at("zone-a").minimum, 9);
  EXPECT_EQ(a.at("zone-b").minimum, 8);
  EXPECT_EQ(a.at("zone-c").minimum, 1);
  EXPECT_EQ(a.at("zone-a").maximum, 11);
  EXPECT_DOUBLE_EQ(a.at("zone-b").desired, 9);
  c.getAllocations(2, why);  // zones 3 > 2 endpoints
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, "Insufficient number of endpoints (2 endpoints, 3 zones)");
}

TEST(TopologyCache, MinimumsBeyondTheEndpointsDisableHints) {
  TopologyCache c;
  nodes(c, {{"zone-a", "1"}, {"zone-b", "1"}, {"zone-c", "1"}});
  std::optional<HintEvent> why;
  c.getAllocations(4, why);  // ceil(4/3/1.2) = 2 each: 6 > 4
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, std::string(kMinAllocationExceedsOverloadThreshold) + " (4 endpoints, 3 zones)");
}

// utils_test.go Test_getGivingAndReceivingZones
TEST(TopologyCache, GivingAndReceivingZones) {
  using Counts = std::map<std::string, int>;
  struct Case {
    const char* name;
    std::vector<double> desired;  // zone-a, zone-b, zone-c
    Counts allocated, giving, receiving;
  };
  const std::vector<Case> cases = {
      {"no rebalancing", {1.2, 1.1, 1.0}, {{"zone-a", 1}, {"zone-b", 1}, {"zone-c", 1}}, {}, {}},
      {"same zone preferred", {5.1, 5.1, 5.8}, {{"zone-a", 16}}, {{"zone-a", 10}}, {{"zone-b", 5}, {"zone-c", 5}}},
      {"the zone needing most gets the extra", {5.0, 5.6, 5.4}, {{"zone-a", 16}}, {{"zone-a", 11}},
       {{"zone-b", 6}, {"zone-c", 5}}},
      {"the zone with most extra gives", {5.0, 5.6, 5.4}, {{"zone-b", 8}, {"zone-c", 8}},
       {{"zone-b", 2}, {"zone-c", 3}}, {{"zone-a", 5}}},
      {"more allocated than allocations", {5, 5, 5}, {{"zone-a", 6}, {"zone-b", 6}, {"zone-c", 6}}, {}, {}},
      {"negative allocations", {-5, -5, -5}, {{"zone-a", 6}, {"zone-b", 6}, {"zone-c", 6}}, {}, {}},
      {"negative allocated", {5, 5, 5}, {{"zone-a", -4}, {"zone-b", -3}, {"zone-c", -2}}, {}, {}},
      {"negative for one zone", {5, 5, 5}, {{"zone-a", -40}, {"zone-b", 20}, {"zone-c", 20}},
       {{"zone-b", 15}, {"zone-c", 15}}, {{"zone-a", 30}}},
  };
  for (const auto& c : cases) {
    std::map<std::string, TopologyCache::Allocation> alloc = {
        {"zone-a", {0, 0, c.desired[0]}}, {"zone-b", {0, 0, c.desired[1]}}, {"zone-c", {0, 0, c.desired[2]}}};
    auto [giving, receiving] = getGivingAndReceivingZones(alloc, c.allocated);
    EXPECT_EQ(giving, c.giving) << c.name;
    EXPECT_EQ(receiving, c.receiving) << c.name;
  }
  EXPECT_EQ(getGivingAndReceivingZones({}, {}).first.size(), 0u);
}

TEST(TopologyCache, ServiceOverloaded) {
  EXPECT_FALSE(serviceOverloaded({}, {{"zone-a", 1}}));
  EXPECT_TRUE(serviceOverloaded({{"zone-a", 1}}, {}));
  EXPECT_FALSE(serviceOverloaded({{"zone-a", 5}, {"zone-b", 5}}, {{"zone-a", .5}, {"zone-b", .5}}));
  EXPECT_TRUE(serviceOverloaded({{"zone-a", 5}}, {{"zone-a", .5}, {"zone-b", .5}}));
  EXPECT_TRUE(serviceOverloaded({{"zone-a", 7}, {"zone-b", 3}}, {{"zone-a", .5}, {"zone-b", .5}}));  // 3 < ceil(4.17)
}

}  // namespace
}  // namespace kcm::controllers::endpointslice
