// The node-lifecycle controller against the in-memory apiserver with hand-filled informer stores and a fake
// clock: node health from Ready heartbeats and leases, zone states and their eviction rates, NoExecute and
// NoSchedule taints, pods marked not Ready, label reconciliation. Cases follow upstream's
// node_lifecycle_controller_test.go.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/events.h"
#include "controllers/nodelifecycle/node_lifecycle_controller.h"
#include "controllers/util/node_util.h"
#include "controllers/util/taints.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {

using api::coordination::v1::Lease;
using api::core::v1::Node;
using api::core::v1::NodeCondition;
using api::core::v1::NodeStatus;
using api::core::v1::Pod;
using api::core::v1::Taint;

// Reaches the controller's private state the way upstream's in-package tests do.
class NodeLifecycleTestPeer {
 public:
  explicit NodeLifecycleTestPeer(NodeLifecycleController& c) : c_(c) {}
  std::map<std::string, ZoneState> zoneStates() const { return c_.zoneStates_; }
  // The zone's NoExecute tainting rate; -1 when the zone has no queue.
  double zoneQps(const std::string& zone) {
    std::lock_guard l(c_.evictorMu_);
    auto it = c_.zoneNoExecuteTainter_.find(zone);
    return it == c_.zoneNoExecuteTainter_.end() ? -1 : it->second->qps();
  }
  // A health record as if the node's status had last been seen at `probe`.
  void setHealth(const Node& n, api::Time probe) {
    NodeLifecycleController::NodeHealth h;
    h.probeTimestamp = c_.fromWall(probe);
    h.readyTransitionTimestamp = h.probeTimestamp;
    h.hasStatus = true;
    if (const NodeCondition* r = getNodeCondition(n.status, "Ready")) h.ready = *r;
    c_.setHealth(n.metadata.name, h);
  }
  std::optional<NodeCondition> savedReady(const std::string& name) const {
    auto h = c_.health(name);
    return h ? h->ready : std::nullopt;
  }
  std::pair<Status, std::optional<NodeCondition>> tryUpdateNodeHealth(Node& n) {
    auto r = c_.tryUpdateNodeHealth(n);
    return {r.status, r.currentReady};
  }
  runtime::SyncResult processPod(const std::string& key) { return c_.processPod(key); }

 private:
  NodeLifecycleController& c_;
};

namespace {

using kcm::testing::Action;
using kcm::testing::FakeApiServer;
using namespace std::chrono_literals;

api::Time at(const char* rfc3339) { return *api::Time::parse(rfc3339); }
api::Time plus(api::Time t, Clock::Duration d) {
  return api::Time::fromUnix(t.unixSeconds + std::chrono::duration_cast<std::chrono::seconds>(d).count());
}
api::MicroTime micro(api::Time t) { return api::MicroTime::fromUnixMicros(t.unixSeconds * 1000000); }

const api::Time kNow2015 = at("2015-01-01T12:00:00Z");
const api::Time kNow2017 = at("2017-01-01T12:00:00Z");
const api::Time kCreated2012 = at("2012-01-01T00:00:00Z");

std::string zoneId(const std::string& region, const std::string& zone) {
  return region + std::string(":\0:", 3) + zone;
}

NodeCondition cond(const std::string& type, const std::string& status, api::Time heartbeat, api::Time transition) {
  NodeCondition c;
  c.type = type;
  c.status = status;
  c.lastHeartbeatTime = heartbeat;
  c.lastTransitionTime = transition;
  return c;
}
NodeCondition ready(const std::string& status, api::Time heartbeat, api::Time transition) {
  return cond("Ready", status, heartbeat, transition);
}
NodeStatus statusOf(std::vector<NodeCondition> conditions) {
  NodeStatus s;
  s.conditions = std::move(conditions);
  return s;
}

Node makeNode(const std::string& name, api::Time created, std::vector<NodeCondition> conditions,
              const std::string& region = "", const std::string& zone = "") {
  Node n;
  n.metadata.name = name;
  n.metadata.creationTimestamp = created;
  if (!region.empty()) {
    n.metadata.labels["topology.kubernetes.io/region"] = region;
    n.metadata.labels["failure-domain.beta.kubernetes.io/region"] = region;
  }
  if (!zone.empty()) {
    n.metadata.labels["topology.kubernetes.io/zone"] = zone;
    n.metadata.labels["failure-domain.beta.kubernetes.io/zone"] = zone;
  }
  n.status.conditions = std::move(conditions);
  return n;
}

Taint noExecute(const char* key) { return Taint{.effect = kTaintEffectNoExecute, .key = key}; }
Taint noSchedule(const char* key) { return Taint{.effect = kTaintEffectNoSchedule, .key = key}; }

NodeLifecycleOptions testOptions() {
  NodeLifecycleOptions o;
  o.nodeMonitorPeriod = 5s;
  o.nodeStartupGracePeriod = 60s;
  o.nodeMonitorGracePeriod = 50s;
  o.evictionLimiterQPS = 100000;
  o.secondaryEvictionLimiterQPS = 100000;
  o.largeClusterThreshold = 20;
  o.unhealthyZoneThreshold = 0.55;
  return o;
}

struct ExpectedCondition {
  std::string type, status, reason, message;
  api::Time heartbeat, transition;
};

ExpectedCondition neverUpdated(const std::string& type, api::Time created, api::Time transition) {
  return {type, "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.", created, transition};
}

class NodeLifecycleControllerTest : public ::testing::Test {
 protected:
  // The controller at wall time `now`, its informer stores empty.
  void start(api::Time now, NodeLifecycleOptions o = testOptions()) {
    clock = std::make_unique<FakeClock>(std::chrono::system_clock::from_time_t(now.unixSeconds));
    s = std::make_shared<FakeApiServer>(*clock);
    c = s->client();
    factory = std::make_unique<informers::SharedInformerFactory>(c, 0s, *clock);
    events = std::make_unique<client::EventBroadcaster>(c, "test-host", *clock);
    ctrl = std::make_unique<NodeLifecycleController>(c, events->newRecorder("node-controller"),
                                                     factory->forType<Lease>(), factory->forType<Pod>(),
                                                     factory->forType<Node>(), o, *clock);
    peer = std::make_unique<NodeLifecycleTestPeer>(*ctrl);
  }

  Node putNode(const Node& n) { return s->add(n); }
  void setStatus(const std::string& name, NodeStatus st) {
    auto n = s->get<Node>("", name);
    ASSERT_TRUE(n) << name;
    n->status = std::move(st);
    s->add(*n);
  }
  // The node cache becomes what the apiserver holds (upstream's syncNodeStore).
  void syncNodes() {
    auto& st = factory->forType<Node>().store();
    for (const auto& k : st.keys()) st.erase(k);
    for (const auto& n : s->list<Node>()) st.upsert(n.metadata.name, std::make_shared<const Node>(n));
  }
  Node node(const std::string& name) {
    auto n = s->get<Node>("", name);
    EXPECT_TRUE(n) << name;
    return n ? *n : Node{};
  }
  // A pod bound to `nodeName`, Ready, in the apiserver and the pod cache.
  void addPod(const std::string& name, const std::string& nodeName) {
    Pod p;
    p.metadata.namespace_ = "default";
    p.metadata.name = name;
    p.spec.nodeName = nodeName;
    api::core::v1::PodCondition r;
    r.type = "Ready";
    r.status = "True";
    p.status.conditions = {r};
    Pod stored = s->add(p);
    factory->forType<Pod>().store().upsert("default/" + name, std::make_shared<const Pod>(stored));
  }
  Lease lease(const std::string& nodeName, api::Time renew, const std::string& rv = "") {
    Lease l;
    l.metadata.namespace_ = "kube-node-lease";
    l.metadata.name = nodeName;
    l.metadata.resourceVersion = rv;
    l.spec.holderIdentity = nodeName;
    l.spec.renewTime = micro(renew);
    return l;
  }
  void cacheLease(const Lease& l) {
    factory->forType<Lease>().store().upsert(l.metadata.namespace_ + "/" + l.metadata.name,
                                             std::make_shared<const Lease>(l));
  }
  void monitor() { EXPECT_TRUE(ctrl->monitorNodeHealth().ok()); }
  // NoExecute tainting passes, with a little time between them for the zone's token bucket (burst 1) to refill.
  void taintPasses(int n = 5) {
    for (int i = 0; i < n; ++i) {
      clock->advance(10ms);
      ctrl->doNoExecuteTaintingPass();
    }
  }
  size_t nodeStatusWrites() { return s->actionsFor("update", "nodes/status").size(); }
  size_t podStatusWrites() { return s->actionsFor("update", "pods/status").size(); }
  void expectConditions(const Node& n, const std::vector<ExpectedCondition>& want) {
    ASSERT_EQ(n.status.conditions.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const auto& got = n.status.conditions[i];
      EXPECT_EQ(got.type, want[i].type) << i;
      EXPECT_EQ(got.status, want[i].status) << got.type;
      EXPECT_EQ(got.reason, want[i].reason) << got.type;
      EXPECT_EQ(got.message, want[i].message) << got.type;
      EXPECT_EQ(got.lastHeartbeatTime, want[i].heartbeat) << got.type;
      EXPECT_EQ(got.lastTransitionTime, want[i].transition) << got.type;
    }
  }

  std::unique_ptr<FakeClock> clock;
  std::shared_ptr<FakeApiServer> s;
  std::shared_ptr<client::RestClient> c;
  std::unique_ptr<informers::SharedInformerFactory> factory;
  std::unique_ptr<client::EventBroadcaster> events;
  std::unique_ptr<NodeLifecycleController> ctrl;
  std::unique_ptr<NodeLifecycleTestPeer> peer;
};

// ---- upstream TestMonitorNodeHealth: zone states before and after an hour of new node statuses.

enum class Next { kHealthy, kUnhealthy, kNoConditions };

struct ZoneNode {
  std::string name, region, zone;
  std::optional<std::string> ready;  // the Ready status posted at the start; none: no conditions at all
  bool excluded = false;             // node.kubernetes.io/exclude-disruption
};

struct ZoneCase {
  std::string name;
  std::vector<ZoneNode> nodes;
  std::vector<Next> next;  // per node, the status posted before the second pass
  std::map<std::string, ZoneState> initial, following;
};
void PrintTo(const ZoneCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleZoneStates : public NodeLifecycleControllerTest, public ::testing::WithParamInterface<ZoneCase> {};

TEST_P(NodeLifecycleZoneStates, FollowNodeHealth) {
  const ZoneCase& tc = GetParam();
  const Clock::Duration timeToPass = 60min;
  start(kNow2015);
  for (const auto& zn : tc.nodes) {
    std::vector<NodeCondition> conds;
    if (zn.ready) conds.push_back(ready(*zn.ready, kNow2015, kNow2015));
    Node n = makeNode(zn.name, kNow2015, conds, zn.region, zn.zone);
    if (zn.excluded) n.metadata.labels["node.kubernetes.io/exclude-disruption"] = "";
    putNode(n);
  }
  syncNodes();
  monitor();
  EXPECT_EQ(peer->zoneStates(), tc.initial);

  clock->advance(timeToPass);
  for (size_t i = 0; i < tc.next.size(); ++i) {
    switch (tc.next[i]) {
      case Next::kHealthy:
        setStatus(tc.nodes[i].name, statusOf({ready("True", plus(kNow2015, timeToPass), kNow2015)}));
        break;
      case Next::kUnhealthy:
        setStatus(tc.nodes[i].name, statusOf({ready("Unknown", kNow2015, kNow2015)}));
        break;
      case Next::kNoConditions:
        setStatus(tc.nodes[i].name, statusOf({}));
        break;
    }
  }
  syncNodes();
  monitor();
  EXPECT_EQ(peer->zoneStates(), tc.following);
}

const std::string kZ1 = zoneId("region1", "zone1");
const std::string kZ2 = zoneId("region1", "zone2");
const std::string kR2Z2 = zoneId("region2", "zone2");

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleZoneStates,
    ::testing::Values(
        ZoneCase{"NoDisruptionWithoutZoneLabels",
                 {{"node0", "", "", "True"}},
                 {Next::kHealthy},
                 {{"", ZoneState::kNormal}},
                 {{"", ZoneState::kNormal}}},
        ZoneCase{"BothZonesDownThenOneComesBack",
                 {{"node0", "region1", "zone1", "Unknown"}, {"node1", "region1", "zone2", "Unknown"}},
                 {Next::kUnhealthy, Next::kHealthy},
                 {{kZ1, ZoneState::kFullDisruption}, {kZ2, ZoneState::kFullDisruption}},
                 {{kZ1, ZoneState::kFullDisruption}, {kZ2, ZoneState::kNormal}}},
        ZoneCase{"PartialDisruptionNodesWithoutStatus",
                 {{"node0", "region1", "zone1", std::nullopt},
                  {"node1", "region1", "zone1", std::nullopt},
                  {"node2", "region1", "zone1", std::nullopt},
                  {"node3", "region1", "zone1", std::nullopt}},
                 {Next::kUnhealthy, Next::kUnhealthy, Next::kUnhealthy, Next::kHealthy},
                 {{kZ1, ZoneState::kFullDisruption}},
                 {{kZ1, ZoneState::kPartialDisruption}}},
        ZoneCase{"PartialDisruptionUnhealthyShareExceedsThreshold",
                 {{"node0", "region1", "zone1", "Unknown"},
                  {"node1", "region1", "zone1", "Unknown"},
                  {"node2", "region1", "zone1", "True"},
                  {"node3", "region1", "zone1", "True"},
                  {"node4", "region1", "zone1", "True"}},
                 {Next::kUnhealthy, Next::kUnhealthy, Next::kUnhealthy, Next::kHealthy, Next::kHealthy},
                 {{kZ1, ZoneState::kNormal}},
                 {{kZ1, ZoneState::kPartialDisruption}}},
        ZoneCase{"FullDisruptionLastHealthyNodeFailed",
                 {{"node0", "region1", "zone1", "Unknown"},
                  {"node1", "region1", "zone1", "Unknown"},
                  {"node2", "region1", "zone1", "True"}},
                 {Next::kUnhealthy, Next::kUnhealthy, Next::kUnhealthy},
                 {{kZ1, ZoneState::kNormal}},
                 {{kZ1, ZoneState::kFullDisruption}}},
        ZoneCase{"FullDisruptionOfOneZone",
                 {{"node0", "region1", "zone1", "Unknown"}, {"node1", "region1", "zone2", "True"}},
                 {Next::kUnhealthy, Next::kHealthy},
                 {{kZ1, ZoneState::kFullDisruption}, {kZ2, ZoneState::kNormal}},
                 {{kZ1, ZoneState::kFullDisruption}, {kZ2, ZoneState::kNormal}}},
        ZoneCase{"FullDisruptionOfBothZones",
                 {{"node0", "region1", "zone1", "Unknown"}, {"node1", "region2", "zone2", "Unknown"}},
                 {Next::kUnhealthy, Next::kUnhealthy},
                 {{kZ1, ZoneState::kFullDisruption}, {kR2Z2, ZoneState::kFullDisruption}},
                 {{kZ1, ZoneState::kFullDisruption}, {kR2Z2, ZoneState::kFullDisruption}}},
        ZoneCase{"FullDisruptionReadyConditionRemoved",
                 {{"node0", "region1", "zone1", "True"}},
                 {Next::kNoConditions},
                 {{kZ1, ZoneState::kNormal}},
                 {{kZ1, ZoneState::kFullDisruption}}},
        ZoneCase{"FullDisruptionOnlyHealthyNodeIsExcluded",
                 {{"node0", "region1", "zone1", "Unknown"}, {"node-master", "region1", "zone1", "True", true}},
                 {Next::kUnhealthy, Next::kHealthy},
                 {{kZ1, ZoneState::kFullDisruption}},
                 {{kZ1, ZoneState::kFullDisruption}}}),
    [](const auto& info) { return info.param.name; });

// ---- eviction (NoExecute tainting) rate per zone state: setLimiterInZone, ReducedQPSFunc, HealthyQPSFunc.

struct RateCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> nodes;  // zone, Ready status
  int largeClusterThreshold;
  std::map<std::string, ZoneState> states;
  std::map<std::string, double> qps;
};
void PrintTo(const RateCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleEvictionRate : public NodeLifecycleControllerTest, public ::testing::WithParamInterface<RateCase> {};

TEST_P(NodeLifecycleEvictionRate, FollowsZoneState) {
  const RateCase& tc = GetParam();
  NodeLifecycleOptions o = testOptions();
  o.evictionLimiterQPS = 10;
  o.secondaryEvictionLimiterQPS = 1;
  o.largeClusterThreshold = tc.largeClusterThreshold;
  start(kNow2015, o);
  int i = 0;
  for (const auto& [zone, st] : tc.nodes)
    putNode(makeNode("node" + std::to_string(i++), kNow2015, {ready(st, kNow2015, kNow2015)}, "region1", zone));
  syncNodes();
  monitor();
  EXPECT_EQ(peer->zoneStates(), tc.states);
  for (const auto& [zone, qps] : tc.qps) EXPECT_EQ(peer->zoneQps(zone), qps) << zone.substr(zone.rfind(':') + 1);
}

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleEvictionRate,
    ::testing::Values(
        RateCase{"NormalZoneUsesThePrimaryRate",
                 {{"zone1", "True"}, {"zone1", "True"}, {"zone1", "Unknown"}},
                 20,
                 {{kZ1, ZoneState::kNormal}},
                 {{kZ1, 10}}},
        RateCase{"PartialDisruptionOfASmallZoneStopsTainting",
                 {{"zone1", "Unknown"}, {"zone1", "False"}, {"zone1", "Unknown"}, {"zone1", "True"}},
                 20,
                 {{kZ1, ZoneState::kPartialDisruption}},
                 {{kZ1, 0}}},
        RateCase{"PartialDisruptionOfALargeZoneUsesTheSecondaryRate",
                 {{"zone1", "Unknown"}, {"zone1", "False"}, {"zone1", "Unknown"}, {"zone1", "True"}},
                 3,
                 {{kZ1, ZoneState::kPartialDisruption}},
                 {{kZ1, 1}}},
        RateCase{"OneFullyDisruptedZoneKeepsThePrimaryRate",
                 {{"zone1", "Unknown"}, {"zone2", "True"}},
                 20,
                 {{kZ1, ZoneState::kFullDisruption}, {kZ2, ZoneState::kNormal}},
                 {{kZ1, 10}, {kZ2, 10}}},
        RateCase{"AllZonesFullyDisruptedStopsTainting",
                 {{"zone1", "Unknown"}, {"zone2", "False"}},
                 20,
                 {{kZ1, ZoneState::kFullDisruption}, {kZ2, ZoneState::kFullDisruption}},
                 {{kZ1, 0}, {kZ2, 0}}}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestMonitorNodeHealthUpdateStatus: what the controller posts for silent nodes.

struct UpdateStatusCase {
  std::string name;
  api::Time created;
  std::vector<NodeCondition> initial;
  Clock::Duration timeToPass;  // zero: a single pass
  std::vector<NodeCondition> next;
  size_t expectedStatusWrites;
  std::vector<ExpectedCondition> expected;  // the node's conditions afterwards, when written
  bool expectPodStatusUpdate;
};
void PrintTo(const UpdateStatusCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleUpdateStatus : public NodeLifecycleControllerTest,
                                  public ::testing::WithParamInterface<UpdateStatusCase> {};

TEST_P(NodeLifecycleUpdateStatus, PostsUnknownForSilentNodes) {
  const UpdateStatusCase& tc = GetParam();
  start(kNow2015);
  putNode(makeNode("node0", tc.created, tc.initial));
  addPod("pod0", "node0");
  syncNodes();
  monitor();
  if (tc.timeToPass > Clock::Duration::zero()) {
    clock->advance(tc.timeToPass);
    setStatus("node0", statusOf(tc.next));
    syncNodes();
    monitor();
  }
  EXPECT_EQ(nodeStatusWrites(), tc.expectedStatusWrites);
  if (!tc.expected.empty()) expectConditions(node("node0"), tc.expected);
  EXPECT_EQ(podStatusWrites() > 0, tc.expectPodStatusUpdate);
}

const Clock::Duration kHour = 1h;

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleUpdateStatus,
    ::testing::Values(
        UpdateStatusCase{"CreatedLongAgoWithoutStatus", kCreated2012, {}, {}, {}, 1,
                         {neverUpdated("Ready", kCreated2012, kNow2015),
                          neverUpdated("MemoryPressure", kCreated2012, kNow2015),
                          neverUpdated("DiskPressure", kCreated2012, kNow2015),
                          neverUpdated("PIDPressure", kCreated2012, kNow2015)},
                         false},
        UpdateStatusCase{"CreatedRecentlyWithoutStatus", kNow2015, {}, {}, {}, 0, {}, false},
        UpdateStatusCase{"StatusNotUpdatedBeyondGracePeriod", kCreated2012,
                         {ready("True", kNow2015, kNow2015)}, kHour, {ready("True", kNow2015, kNow2015)}, 1,
                         {{"Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", kNow2015,
                           plus(kNow2015, kHour)},
                          neverUpdated("MemoryPressure", kCreated2012, plus(kNow2015, kHour)),
                          neverUpdated("DiskPressure", kCreated2012, plus(kNow2015, kHour)),
                          neverUpdated("PIDPressure", kCreated2012, plus(kNow2015, kHour))},
                         true},
        UpdateStatusCase{"StatusUpdatedRecently", kCreated2012, {ready("True", kNow2015, kNow2015)}, {}, {}, 0, {},
                         false}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestMonitorNodeHealthUpdateNodeAndPodStatusWithLease (NodeControllerLeaseCircuitBreaker on).

struct LeaseCase {
  std::string name;
  api::Time created;
  std::vector<NodeCondition> initial;
  std::optional<api::Time> cacheLease;  // renewTime of the node's Lease in the informer cache
  std::string cacheLeaseRv;
  std::optional<api::Time> serverLease;  // renewTime of the Lease the apiserver holds
  Clock::Duration timeToPass;
  std::vector<NodeCondition> next;
  std::optional<api::Time> nextCacheLease;
  std::string nextCacheLeaseRv;
  std::optional<api::Time> nextServerLease;
  size_t expectedStatusWrites;
  std::vector<ExpectedCondition> expected;  // the node's conditions at the end
  bool expectPodStatusUpdate;
};
void PrintTo(const LeaseCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleLease : public NodeLifecycleControllerTest, public ::testing::WithParamInterface<LeaseCase> {};

TEST_P(NodeLifecycleLease, LeaseRenewalKeepsNodesHealthy) {
  const LeaseCase& tc = GetParam();
  start(kNow2015);
  putNode(makeNode("node0", tc.created, tc.initial));
  addPod("pod0", "node0");
  syncNodes();
  if (tc.cacheLease) cacheLease(lease("node0", *tc.cacheLease, tc.cacheLeaseRv));
  if (tc.serverLease) s->add(lease("node0", *tc.serverLease));
  monitor();
  if (tc.timeToPass > Clock::Duration::zero()) {
    clock->advance(tc.timeToPass);
    setStatus("node0", statusOf(tc.next));
    syncNodes();
    if (tc.nextCacheLease) cacheLease(lease("node0", *tc.nextCacheLease, tc.nextCacheLeaseRv));
    if (tc.nextServerLease) s->add(lease("node0", *tc.nextServerLease));
    monitor();
  }
  EXPECT_EQ(nodeStatusWrites(), tc.expectedStatusWrites);
  expectConditions(node("node0"), tc.expected);
  EXPECT_EQ(podStatusWrites() > 0, tc.expectPodStatusUpdate);
}

const std::vector<NodeCondition> kReadyAndDisk2015 = {ready("True", kNow2015, kNow2015),
                                                      cond("DiskPressure", "False", kNow2015, kNow2015)};
const std::vector<ExpectedCondition> kReadyAndDisk2015Expected = {
    {"Ready", "True", "", "", kNow2015, kNow2015}, {"DiskPressure", "False", "", "", kNow2015, kNow2015}};
const std::vector<ExpectedCondition> kReady2015Expected = {{"Ready", "True", "", "", kNow2015, kNow2015}};
const api::Time kNow2015PlusHour = plus(kNow2015, 1h);

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleLease,
    ::testing::Values(
        LeaseCase{"CreatedRecentlyWithoutStatusLeaseMissing", kNow2015, {}, std::nullopt, "", std::nullopt, {}, {},
                  std::nullopt, "", std::nullopt, 0, {}, false},
        LeaseCase{"CreatedRecentlyWithoutStatusLeaseRenewed", kNow2015, {}, kNow2015, "", std::nullopt, {}, {},
                  std::nullopt, "", std::nullopt, 0, {}, false},
        LeaseCase{"CreatedLongAgoWithoutStatusLeaseMissing", kCreated2012, {}, std::nullopt, "", std::nullopt, {}, {},
                  std::nullopt, "", std::nullopt, 1,
                  {neverUpdated("Ready", kCreated2012, kNow2015),
                   neverUpdated("MemoryPressure", kCreated2012, kNow2015),
                   neverUpdated("DiskPressure", kCreated2012, kNow2015),
                   neverUpdated("PIDPressure", kCreated2012, kNow2015)},
                  false},
        LeaseCase{"CreatedLongAgoWithoutStatusLeaseRenewed", kCreated2012, {}, kNow2015, "", std::nullopt, 1h, {},
                  kNow2015PlusHour, "", std::nullopt, 0, {}, false},
        LeaseCase{"CreatedLongAgoWithoutStatusLeaseExpired", kCreated2012, {}, kNow2015, "", std::nullopt, 1h, {},
                  kNow2015, "", std::nullopt, 1,
                  {neverUpdated("Ready", kCreated2012, kNow2015PlusHour),
                   neverUpdated("MemoryPressure", kCreated2012, kNow2015PlusHour),
                   neverUpdated("DiskPressure", kCreated2012, kNow2015PlusHour),
                   neverUpdated("PIDPressure", kCreated2012, kNow2015PlusHour)},
                  false},
        LeaseCase{"StatusStaleLeaseRenewed", kCreated2012, kReadyAndDisk2015, kNow2015, "", std::nullopt, 1h,
                  kReadyAndDisk2015, kNow2015PlusHour, "", std::nullopt, 0, kReadyAndDisk2015Expected, false},
        LeaseCase{"StatusRecentLeaseExpired", kCreated2012, kReadyAndDisk2015, kNow2015, "", std::nullopt, 1h,
                  {ready("True", kNow2015PlusHour, kNow2015), cond("DiskPressure", "False", kNow2015PlusHour,
                                                                   kNow2015)},
                  kNow2015, "", std::nullopt, 0,
                  {{"Ready", "True", "", "", kNow2015PlusHour, kNow2015},
                   {"DiskPressure", "False", "", "", kNow2015PlusHour, kNow2015}},
                  false},
        LeaseCase{"StatusStaleAndLeaseExpired", kCreated2012, {ready("True", kNow2015, kNow2015)}, kNow2015, "",
                  std::nullopt, 1h, {ready("True", kNow2015, kNow2015)}, kNow2015, "", std::nullopt, 1,
                  {{"Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", kNow2015,
                    kNow2015PlusHour},
                   neverUpdated("MemoryPressure", kCreated2012, kNow2015PlusHour),
                   neverUpdated("DiskPressure", kCreated2012, kNow2015PlusHour),
                   neverUpdated("PIDPressure", kCreated2012, kNow2015PlusHour)},
                  true},
        // The cached lease looks expired but the apiserver's was renewed: the live look stops the pass.
        LeaseCase{"LeaseStaleInCacheButFreshInApiServer", kCreated2012, {ready("True", kNow2015, kNow2015)}, kNow2015,
                  "", kNow2015, 1h, {ready("True", kNow2015, kNow2015)}, kNow2015, "50", kNow2015PlusHour, 0,
                  kReady2015Expected, false},
        LeaseCase{"StaleLeaseCacheSkipsLaterPasses", kCreated2012, {ready("True", kNow2015, kNow2015)},
                  plus(kNow2015, -60s), "50", kNow2015, 1s, {ready("True", kNow2015, kNow2015)},
                  plus(kNow2015, -60s), "50", kNow2015, 0, kReady2015Expected, false}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestMonitorNodeHealthMarkPodsNotReady.

struct MarkPodsCase {
  std::string name;
  api::Time created;
  std::vector<NodeCondition> initial;
  Clock::Duration timeToPass;
  bool expectPodStatusUpdate;
};
void PrintTo(const MarkPodsCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleMarkPodsNotReady : public NodeLifecycleControllerTest,
                                      public ::testing::WithParamInterface<MarkPodsCase> {};

TEST_P(NodeLifecycleMarkPodsNotReady, WhenTheNodeStopsReporting) {
  const MarkPodsCase& tc = GetParam();
  start(kNow2015);
  putNode(makeNode("node0", tc.created, tc.initial));
  addPod("pod0", "node0");
  syncNodes();
  monitor();
  if (tc.timeToPass > Clock::Duration::zero()) {
    clock->advance(tc.timeToPass);
    setStatus("node0", statusOf(tc.initial));
    syncNodes();
    monitor();
  }
  EXPECT_EQ(podStatusWrites() > 0, tc.expectPodStatusUpdate);
  auto pod = s->get<Pod>("default", "pod0");
  ASSERT_TRUE(pod);
  ASSERT_EQ(pod->status.conditions.size(), 1u);
  EXPECT_EQ(pod->status.conditions[0].status, tc.expectPodStatusUpdate ? "False" : "True");
  if (tc.expectPodStatusUpdate) {
    EXPECT_EQ(pod->status.conditions[0].lastTransitionTime, api::timeNow(*clock));
  }
}

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleMarkPodsNotReady,
    ::testing::Values(MarkPodsCase{"CreatedRecentlyWithoutStatus", kNow2015, {}, {}, false},
                      MarkPodsCase{"StatusUpdatedRecently", kCreated2012, {ready("True", kNow2015, kNow2015)}, {},
                                   false},
                      MarkPodsCase{"StatusNotUpdatedBeyondGracePeriod", kCreated2012,
                                   {ready("True", kNow2015, kNow2015)}, 1min, true}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestMonitorNodeHealthMarkPodsNotReadyRetry (its failing pod-list case has no counterpart: our
// pods come from the informer index, which cannot fail).

struct RetryCase {
  std::string name;
  bool failFirstPodUpdate;
  size_t expectedPodStatusUpdates;
};
void PrintTo(const RetryCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleMarkPodsNotReadyRetry : public NodeLifecycleControllerTest,
                                           public ::testing::WithParamInterface<RetryCase> {};

TEST_P(NodeLifecycleMarkPodsNotReadyRetry, RetriesOnTheNextPass) {
  const RetryCase& tc = GetParam();
  start(kNow2015);
  if (tc.failFirstPodUpdate) {
    auto calls = std::make_shared<int>(0);
    s->prependReactor("update", "pods/status", [calls](const Action&) -> std::optional<client::Transport::Reply> {
      if (++*calls > 1) return std::nullopt;
      return FakeApiServer::errorReply(500, "InternalError", "fake error");
    });
  }
  addPod("pod0", "node0");
  const api::Time plusTwoSeconds = plus(kNow2015, 2s);
  struct Iteration {
    Clock::Duration at;
    NodeCondition ready;
  };
  const Iteration iterations[] = {{0s, ready("True", kNow2015, kNow2015)},
                                  {1min, ready("True", kNow2015, kNow2015)},
                                  {1min, ready("False", plusTwoSeconds, plusTwoSeconds)}};
  Clock::Duration elapsed{};
  for (const auto& it : iterations) {
    clock->advance(it.at - elapsed);
    elapsed = it.at;
    putNode(makeNode("node0", kNow2015, {it.ready}));  // the kubelet's view replaces the node
    syncNodes();
    monitor();
  }
  EXPECT_EQ(podStatusWrites(), tc.expectedPodStatusUpdates);
  EXPECT_EQ(s->get<Pod>("default", "pod0")->status.conditions[0].status, "False");
}

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleMarkPodsNotReadyRetry,
                         ::testing::Values(RetryCase{"SuccessfulUpdateNeedsNoRetry", false, 1},
                                           RetryCase{"FailedUpdateIsRetried", true, 2}),
                         [](const auto& info) { return info.param.name; });

// ---- NoExecute taints (upstream TestApplyNoExecuteTaints and friends).

TEST_F(NodeLifecycleControllerTest, ApplyNoExecuteTaints) {
  start(kNow2017);
  const api::Time hb2015 = kNow2015;
  putNode(makeNode("node0", kCreated2012, {ready("Unknown", hb2015, hb2015)}, "region1", "zone1"));
  putNode(makeNode("node1", kCreated2012, {ready("True", kNow2017, kNow2017)}, "region1", "zone1"));
  putNode(makeNode("node2", kCreated2012, {ready("False", hb2015, hb2015)}, "region1", "zone1"));
  putNode(makeNode("node3", kCreated2012, {ready("True", at("2016-01-01T12:00:00Z"), at("2016-01-01T12:00:00Z"))},
                   "region1", "zone1"));
  addPod("pod0", "node0");
  syncNodes();
  monitor();
  taintPasses();
  Node node0 = node("node0");
  EXPECT_TRUE(taintExists(node0.spec.taints, noExecute(kTaintNodeUnreachable)));
  ASSERT_EQ(node0.spec.taints.size(), 1u);
  ASSERT_TRUE(node0.spec.taints[0].timeAdded);
  EXPECT_EQ(*node0.spec.taints[0].timeAdded, kNow2017);  // the fake clock's wall time
  EXPECT_TRUE(taintExists(node("node2").spec.taints, noExecute(kTaintNodeNotReady)));
  EXPECT_TRUE(node("node1").spec.taints.empty());

  // node2 is healthy again: its taint goes.
  const api::Time hb = at("2017-01-01T12:10:00Z");
  setStatus("node2", statusOf({ready("True", hb, kNow2017)}));
  syncNodes();
  monitor();
  taintPasses();
  EXPECT_TRUE(node("node2").spec.taints.empty());

  // node3 turns NotReady, but its Ready condition is gone before the tainter gets to it: no taint.
  setStatus("node3", statusOf({ready("False", hb, kNow2017)}));
  syncNodes();
  monitor();
  setStatus("node3", statusOf({cond("MemoryPressure", "Unknown", hb, kNow2017)}));
  syncNodes();
  taintPasses();
  EXPECT_TRUE(node("node3").spec.taints.empty());
}

TEST_F(NodeLifecycleControllerTest, ApplyNoExecuteTaintsToUnreachableNode) {
  const api::Time time1 = kNow2017;
  const api::Time time2 = plus(time1, 51s);  // the monitor grace period and a second
  start(time1);
  putNode(makeNode("node0", kCreated2012, {ready("True", time1, time1)}, "region1", "zone1"));
  putNode(makeNode("node1", kCreated2012, {ready("True", time1, time1)}, "region1", "zone1"));
  addPod("pod0", "node0");
  syncNodes();
  monitor();
  taintPasses();
  EXPECT_TRUE(node("node0").spec.taints.empty());
  EXPECT_TRUE(node("node1").spec.taints.empty());

  clock->advance(51s);
  setStatus("node1", statusOf({ready("True", time2, time1)}));
  syncNodes();
  monitor();
  syncNodes();
  taintPasses();
  EXPECT_TRUE(taintExists(node("node0").spec.taints, noExecute(kTaintNodeUnreachable)));
  EXPECT_EQ(getNodeCondition(node("node0").status, "Ready")->status, "Unknown");
  EXPECT_TRUE(node("node1").spec.taints.empty());

  // node0 reports again: the taint is removed.
  setStatus("node0", statusOf({ready("True", time2, time2)}));
  syncNodes();
  monitor();
  taintPasses();
  EXPECT_TRUE(node("node0").spec.taints.empty());
}

TEST_F(NodeLifecycleControllerTest, ApplyNoExecuteTaintsToNodesEnqueuedTwice) {
  start(kNow2017);
  putNode(makeNode("node0", kCreated2012, {ready("Unknown", kNow2015, kNow2015)}, "region1", "zone1"));
  putNode(makeNode("node1", kCreated2012, {ready("True", kNow2017, kNow2017)}, "region1", "zone1"));
  putNode(makeNode("node2", kCreated2012, {ready("False", kNow2015, kNow2015)}, "region1", "zone1"));
  addPod("pod0", "node0");
  syncNodes();
  monitor();
  monitor();
  setStatus("node0", statusOf({ready("True", at("2017-01-01T12:10:00Z"), kNow2017)}));
  putNode(makeNode("node3", kCreated2012, {ready("Unknown", kNow2015, kNow2015)}, "region1", "zone1"));
  putNode(makeNode("node4", kCreated2012, {ready("True", kNow2017, kNow2017)}, "region1", "zone1"));
  putNode(makeNode("node5", kCreated2012, {ready("False", kNow2015, kNow2015)}, "region1", "zone1"));
  syncNodes();
  monitor();
  taintPasses();
  EXPECT_TRUE(taintExists(node("node3").spec.taints, noExecute(kTaintNodeUnreachable)));
  EXPECT_TRUE(taintExists(node("node5").spec.taints, noExecute(kTaintNodeNotReady)));
  EXPECT_TRUE(node("node0").spec.taints.empty());
}

TEST_F(NodeLifecycleControllerTest, SwapUnreachableAndNotReadyTaints) {
  start(kNow2017);
  putNode(makeNode("node0", kCreated2012, {ready("Unknown", kNow2015, kNow2015)}, "region1", "zone1"));
  putNode(makeNode("node1", kCreated2012, {ready("True", kNow2017, kNow2017)}, "region1", "zone1"));
  addPod("pod0", "node0");
  syncNodes();
  monitor();
  taintPasses();
  EXPECT_TRUE(taintExists(node("node0").spec.taints, noExecute(kTaintNodeUnreachable)));

  setStatus("node0", statusOf({ready("False", at("2017-01-01T12:09:00Z"), kNow2017)}));
  setStatus("node1", statusOf({ready("True", at("2017-01-01T12:10:00Z"), kNow2017)}));
  syncNodes();
  monitor();
  taintPasses();
  auto taints = node("node0").spec.taints;
  EXPECT_TRUE(taintExists(taints, noExecute(kTaintNodeNotReady)));
  EXPECT_FALSE(taintExists(taints, noExecute(kTaintNodeUnreachable)));
}

// ---- NoSchedule taints from conditions (upstream TestTaintsNodeByCondition, plus unschedulable and a stale
// condition taint).

struct NoScheduleCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> conditions;  // type, status
  bool unschedulable;
  std::vector<Taint> existing;
  std::vector<std::string> expectedKeys;  // NoSchedule taints afterwards, in any order
};
void PrintTo(const NoScheduleCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleNoScheduleTaints : public NodeLifecycleControllerTest,
                                      public ::testing::WithParamInterface<NoScheduleCase> {};

TEST_P(NodeLifecycleNoScheduleTaints, FollowConditions) {
  const NoScheduleCase& tc = GetParam();
  start(kNow2017);
  std::vector<NodeCondition> conds;
  for (const auto& [type, st] : tc.conditions) conds.push_back(cond(type, st, kNow2015, kNow2015));
  Node n = makeNode("node0", kCreated2012, conds, "region1", "zone1");
  n.spec.unschedulable = tc.unschedulable;
  n.spec.taints = tc.existing;
  putNode(n);
  syncNodes();
  ASSERT_TRUE(ctrl->doNoScheduleTaintingPass("node0").ok());
  auto taints = node("node0").spec.taints;
  std::multiset<std::string> got, want(tc.expectedKeys.begin(), tc.expectedKeys.end());
  for (const auto& t : taints) {
    EXPECT_EQ(t.effect, kTaintEffectNoSchedule) << t.key;
    got.insert(t.key);
  }
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleNoScheduleTaints,
    ::testing::Values(
        NoScheduleCase{"NetworkUnavailableIsTrue",
                       {{"Ready", "True"}, {"NetworkUnavailable", "True"}},
                       false,
                       {},
                       {kTaintNodeNetworkUnavailable}},
        NoScheduleCase{"ReadyIsFalse", {{"Ready", "False"}}, false, {}, {kTaintNodeNotReady}},
        NoScheduleCase{"ReadyIsUnknown", {{"Ready", "Unknown"}}, false, {}, {kTaintNodeUnreachable}},
        NoScheduleCase{"PressureAndUnschedulable",
                       {{"Ready", "True"}, {"MemoryPressure", "True"}, {"DiskPressure", "False"},
                        {"PIDPressure", "True"}},
                       true,
                       {},
                       {kTaintNodeMemoryPressure, kTaintNodePIDPressure, kTaintNodeUnschedulable}},
        NoScheduleCase{"StaleConditionTaintIsRemovedOthersKept",
                       {{"Ready", "True"}},
                       false,
                       {noSchedule(kTaintNodeNotReady), noSchedule("example.com/dedicated")},
                       {"example.com/dedicated"}}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestReconcileNodeLabels.

struct LabelsCase {
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> expected;
  bool expectPatch;
};
void PrintTo(const LabelsCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleReconcileLabels : public NodeLifecycleControllerTest,
                                     public ::testing::WithParamInterface<LabelsCase> {};

TEST_P(NodeLifecycleReconcileLabels, BetaLabelsFollowStableOnes) {
  const LabelsCase& tc = GetParam();
  start(kNow2017);
  Node n = makeNode("node0", kCreated2012, {});
  for (const auto& [k, v] : tc.labels) n.metadata.labels[k] = v;
  putNode(n);
  syncNodes();
  ASSERT_TRUE(ctrl->reconcileNodeLabels("node0").ok());
  std::map<std::string, std::string> got;
  for (const auto& [k, v] : node("node0").metadata.labels) got[k] = v;
  EXPECT_EQ(got, tc.expected);
  EXPECT_EQ(s->actionsFor("patch", "nodes").size(), tc.expectPatch ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleReconcileLabels,
    ::testing::Values(
        LabelsCase{"NoLabels", {}, {}, false},
        LabelsCase{"NoTargetLabels",
                   {{"topology.kubernetes.io/region", "region1"}},
                   {{"topology.kubernetes.io/region", "region1"}},
                   false},
        LabelsCase{"CreateBetaLabels",
                   {{"kubernetes.io/os", "linux"}, {"kubernetes.io/arch", "amd64"}},
                   {{"kubernetes.io/os", "linux"},
                    {"kubernetes.io/arch", "amd64"},
                    {"beta.kubernetes.io/os", "linux"},
                    {"beta.kubernetes.io/arch", "amd64"}},
                   true},
        LabelsCase{"ReconcileBetaLabels",
                   {{"kubernetes.io/os", "linux"},
                    {"kubernetes.io/arch", "amd64"},
                    {"beta.kubernetes.io/os", "windows"},
                    {"beta.kubernetes.io/arch", "arm"}},
                   {{"kubernetes.io/os", "linux"},
                    {"kubernetes.io/arch", "amd64"},
                    {"beta.kubernetes.io/os", "linux"},
                    {"beta.kubernetes.io/arch", "amd64"}},
                   true}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestNodeEventGeneration: a new node gets one RegisteredNode event carrying its UID.

TEST_F(NodeLifecycleControllerTest, NodeEventGeneration) {
  start(at("2016-09-10T12:00:00Z"));
  Node n = makeNode("node0", at("2015-08-10T00:00:00Z"),
                    {ready("Unknown", at("2015-08-10T00:00:00Z"), at("2015-08-10T00:00:00Z"))});
  n.metadata.uid = "1234567890";
  putNode(n);
  syncNodes();
  monitor();
  events->flush();
  auto evs = s->list<api::core::v1::Event>();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].reason, "RegisteredNode");
  EXPECT_EQ(evs[0].involvedObject.uid, "1234567890");
  EXPECT_EQ(evs[0].involvedObject.kind, "Node");
  EXPECT_EQ(evs[0].message, "Node node0 event: Registered Node node0 in Controller");
}

// ---- upstream TestTryUpdateNodeHealth: the Ready condition returned is the one remembered.

struct TryUpdateCase {
  std::string name;
  api::Time created;                  // also the heartbeat and transition of the Ready condition
  std::optional<std::string> status;  // the Ready condition's status; none: no conditions
  std::optional<std::string> expectedCurrent;
};
void PrintTo(const TryUpdateCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleTryUpdateNodeHealth : public NodeLifecycleControllerTest,
                                         public ::testing::WithParamInterface<TryUpdateCase> {};

TEST_P(NodeLifecycleTryUpdateNodeHealth, CurrentReadyMatchesSavedHealth) {
  const TryUpdateCase& tc = GetParam();
  start(kNow2017);
  std::vector<NodeCondition> conds;
  if (tc.status) conds.push_back(ready(*tc.status, tc.created, tc.created));
  Node n = putNode(makeNode("node0", tc.created, conds));
  peer->setHealth(n, n.metadata.creationTimestamp);
  auto [st, current] = peer->tryUpdateNodeHealth(n);
  ASSERT_TRUE(st.ok()) << st.toString();
  auto saved = peer->savedReady("node0");
  ASSERT_EQ(current.has_value(), saved.has_value());
  if (current) {
    EXPECT_EQ(current->status, saved->status);
  }
  ASSERT_EQ(current.has_value(), tc.expectedCurrent.has_value());
  if (current) {
    EXPECT_EQ(current->status, *tc.expectedCurrent);
  }
}

const api::Time kOld2016 = at("2016-01-01T12:00:00Z");

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleTryUpdateNodeHealth,
    ::testing::Values(TryUpdateCase{"StatusTrue", kNow2017, "True", "True"},
                      TryUpdateCase{"StatusFalse", kNow2017, "False", "False"},
                      TryUpdateCase{"StatusUnknown", kNow2017, "Unknown", "Unknown"},
                      TryUpdateCase{"StatusNil", kNow2017, std::nullopt, std::nullopt},
                      TryUpdateCase{"StatusTrueAfterGracePeriod", kOld2016, "True", "Unknown"},
                      TryUpdateCase{"StatusFalseAfterGracePeriod", kOld2016, "False", "Unknown"},
                      TryUpdateCase{"StatusUnknownAfterGracePeriod", kOld2016, "Unknown", "Unknown"},
                      TryUpdateCase{"StatusNilAfterGracePeriod", kOld2016, std::nullopt, "Unknown"}),
    [](const auto& info) { return info.param.name; });

// ---- upstream TestProcessPodMarkPodNotReady: a pod bound to a node that is not Ready is marked not Ready.

struct ProcessPodCase {
  std::string name;
  std::string nodeReady;
  bool monitorFirst;  // node health gathered before the pod shows up
  bool expectPodStatusUpdate;
};
void PrintTo(const ProcessPodCase& c, std::ostream* os) { *os << c.name; }

class NodeLifecycleProcessPod : public NodeLifecycleControllerTest,
                                public ::testing::WithParamInterface<ProcessPodCase> {};

TEST_P(NodeLifecycleProcessPod, MarksPodsOnNotReadyNodes) {
  const ProcessPodCase& tc = GetParam();
  start(kNow2015);
  putNode(makeNode("node0", kNow2015, {ready(tc.nodeReady, kNow2015, kNow2015)}));
  syncNodes();
  if (tc.monitorFirst) monitor();
  addPod("pod0", "node0");
  auto r = peer->processPod("default/pod0");
  EXPECT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(podStatusWrites(), tc.expectPodStatusUpdate ? 1u : 0u);
  EXPECT_EQ(s->get<Pod>("default", "pod0")->status.conditions[0].status,
            tc.expectPodStatusUpdate ? "False" : "True");
}

INSTANTIATE_TEST_SUITE_P(, NodeLifecycleProcessPod,
    ::testing::Values(ProcessPodCase{"NodeHealthNotGatheredYet", "False", false, false},
                      ProcessPodCase{"NodeReady", "True", true, false},
                      ProcessPodCase{"NodeNotReady", "False", true, true}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kcm::controllers
