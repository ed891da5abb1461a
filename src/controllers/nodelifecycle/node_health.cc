// Node health (upstream monitorNodeHealth / tryUpdateNodeHealth): every --node-monitor-period each node's Lease
// and Ready heartbeat are compared with what was last seen; silence beyond the grace period turns the node's
// conditions Unknown; the results feed zone states and NoExecute tainting (node_lifecycle_controller.cc).
#include <atomic>
#include <set>

#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/nodelifecycle/node_lifecycle_controller.h"

#include "base/executor.h"
#include "controllers/util/node_util.h"

namespace kcm::controllers {

using api::core::v1::NodeCondition;
using CondList = std::vector<std::optional<NodeCondition>>;

namespace {

constexpr const char* kNodeLeaseNamespace = "kube-node-lease";
constexpr const char* kLabelNodeDisruptionExclusion = "node.kubernetes.io/exclude-disruption";
constexpr int kNodeHealthUpdateRetry = 5;
constexpr auto kRetrySleepTime = std::chrono::milliseconds(20);

bool sameCondition(const NodeCondition& a, const NodeCondition& b) {
  return a.type == b.type && a.status == b.status && a.reason == b.reason && a.message == b.message &&
         a.lastHeartbeatTime == b.lastHeartbeatTime && a.lastTransitionTime == b.lastTransitionTime;
}

}  // namespace

Status NodeLifecycleController::monitorNodeHealth() {
  auto start = clock_.now();
  std::vector<NodePtr> nodes = nodes_.store().list();
  std::vector<NodePtr> added, deleted, newZoneRepresentatives;
  for (const auto& n : nodes) {
    if (!knownNodeSet_.count(n->metadata.name)) added.push_back(n);
    else if (!zoneStates_.count(getZoneKey(*n))) newZoneRepresentatives.push_back(n);
  }
  if (knownNodeSet_.size() + added.size() != nodes.size()) {
    std::set<std::string> present;
    for (const auto& n : nodes) present.insert(n->metadata.name);
    for (const auto& [name, n] : knownNodeSet_)
      if (!present.count(name)) deleted.push_back(n);
  }
  for (const auto& n : newZoneRepresentatives) addPodEvictorForNewZone(*n);
  for (const auto& n : added) {
    KLOG_V(1, "\"Controller observed a new Node\" node=\"" + n->metadata.name + "\"");
    recordNodeEvent(*recorder_, n->metadata.name, n->metadata.uid, client::kEventTypeNormal, "RegisteredNode",
                    "Registered Node " + n->metadata.name + " in Controller");
    knownNodeSet_[n->metadata.name] = n;
    addPodEvictorForNewZone(*n);
    (void)markNodeAsReachable(n);
  }
  for (const auto& n : deleted) {
    KLOG_V(1, "\"Controller observed a Node deletion\" node=\"" + n->metadata.name + "\"");
    recordNodeEvent(*recorder_, n->metadata.name, n->metadata.uid, client::kEventTypeNormal, "RemovingNode",
                    "Removing Node " + n->metadata.name + " from Controller");
    knownNodeSet_.erase(n->metadata.name);
  }

  std::map<std::string, CondList> zoneToNodeConditions;
  std::mutex zoneMu;
  parallelFor(nodes.size(), kNodeUpdateWorkerSize,
                   [&](size_t i) { updateNode(nodes[i], zoneToNodeConditions, zoneMu); });
  handleDisruption(zoneToNodeConditions, nodes);
  metrics::Registry::global()
      .histogram("node_collector_update_all_nodes_health_duration_seconds",
                 "Duration in seconds for NodeController to update the health of all nodes.",
                 {0.01, 0.04, 0.16, 0.64, 2.56, 10.24, 40.96, 163.84})
      .observe(std::chrono::duration<double>(clock_.now() - start).count());
  return Status::Ok();
}

void NodeLifecycleController::updateNode(const NodePtr& cached, std::map<std::string, CondList>& zoneConditions,
                                         std::mutex& zoneMu) {
  auto start = clock_.now();
  auto observe = [&] {
    metrics::Registry::global()
        .histogram("node_collector_update_node_health_duration_seconds",
                   "Duration in seconds for NodeController to update the health of a single node.",
                   {0.001, 0.004, 0.016, 0.064, 0.256, 1.024, 4.096, 16.384})
        .observe(std::chrono::duration<double>(clock_.now() - start).count());
  };
  auto node = std::make_shared<Node>(*cached);
  const std::string name = node->metadata.name;
  HealthResult r;
  bool done = false;
  for (int attempt = 0; attempt <= kNodeHealthUpdateRetry; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kRetrySleepTime);
    r = tryUpdateNodeHealth(*node);
    if (r.status.ok()) {
      done = true;
      break;
    }
    if (r.shortCircuit) break;
    auto live = client::get<Node>(*client_, "", name);
    if (!live.ok()) {
      KLOG_ERROR("\"Failed while getting a Node to retry updating node health. Probably Node was deleted\" node=\""
                 + name + "\"");
      break;
    }
    *node = std::move(live).value();
  }
  if (!done) {
    KLOG_ERROR("\"Update health of Node from Controller error, Skipping - no pods will be evicted\" node=\""
               + name + "\" err=\"" + r.status.message() + "\"");
    observe();
    return;
  }
  if (!node->metadata.labels.count(kLabelNodeDisruptionExclusion)) {
    std::lock_guard l(zoneMu);
    zoneConditions[getZoneKey(*node)].push_back(r.currentReady);
  }
  if (r.currentReady) {
    auto pods = podsAssignedToNode(name);
    processTaintBaseEviction(node, *r.currentReady);
    bool needsRetry;
    {
      std::lock_guard l(retryMu_);
      needsRetry = nodesToRetry_.count(name) > 0;
    }
    const bool becameNotReady = r.currentReady->status != "True" && r.observedReady.status == "True";
    if (becameNotReady) recordNodeStatusChange(*recorder_, *node, "NodeNotReady");
    if (becameNotReady || (needsRetry && r.observedReady.status != "True")) {
      if (Status s = markPodsNotReady(*client_, *recorder_, pods, name, clock_); !s.ok()) {
        KLOG_ERROR("\"Unable to mark all pods NotReady on node; queuing for retry\" node=\"" + name + "\" err=\"" +
                   s.message() + "\"");
        std::lock_guard l(retryMu_);
        nodesToRetry_.insert(name);
        observe();
        return;
      }
    }
  }
  {
    std::lock_guard l(retryMu_);
    nodesToRetry_.erase(name);
  }
  observe();
}

NodeLifecycleController::HealthResult NodeLifecycleController::tryUpdateNodeHealth(Node& node) {
  const std::string& name = node.metadata.name;
  std::optional<NodeHealth> nodeHealth = health(name);
  HealthResult res;
  struct Save {  // what upstream's deferred set does: the health entry is stored on every return path
    NodeLifecycleController* c;
    const std::string& name;
    std::optional<NodeHealth>& h;
    ~Save() {
      if (h) c->setHealth(name, *h);
    }
  } save{this, name, nodeHealth};

  if (Status ready = consistency_.ensureReady(""); !ready.ok()) {
    res.status = ready;
    res.shortCircuit = true;
    return res;
  }
  const auto now = clock_.now();
  Clock::Duration gracePeriod;
  const NodeCondition* current = getNodeCondition(node.status, "Ready");
  if (!current) {
    res.observedReady = NodeCondition{node.metadata.creationTimestamp, node.metadata.creationTimestamp, "", "",
                                      "Unknown", "Ready", {}};
    gracePeriod = opts_.nodeStartupGracePeriod;
    if (nodeHealth) {
      nodeHealth->hasStatus = true;
      nodeHealth->ready.reset();
    } else {
      nodeHealth = NodeHealth{fromWall(node.metadata.creationTimestamp), fromWall(node.metadata.creationTimestamp),
                              true, std::nullopt, std::nullopt};
    }
  } else {
    res.observedReady = *current;
    gracePeriod = opts_.nodeMonitorGracePeriod;
  }
  std::optional<NodeCondition> saved;
  std::optional<LeaseInfo> savedLease;
  if (nodeHealth) {
    saved = nodeHealth->ready;
    savedLease = nodeHealth->lease;
  }
  auto fresh = [&] {
    return NodeHealth{now, now, true, current ? std::optional<NodeCondition>(*current) : std::nullopt, std::nullopt};
  };
  if (!nodeHealth) {
    KLOG_INFO("\"Missing timestamp for Node. Assuming now as a timestamp\" node=\"" + name + "\"");
    nodeHealth = fresh();
  } else if (!saved && current) {
    KLOG_V(1, "\"Creating timestamp entry for newly observed Node\" node=\"" + name + "\"");
    nodeHealth = fresh();
  } else if (saved && !current) {
    KLOG_ERROR("\"ReadyCondition was removed from Status of Node\" node=\"" + name + "\"");
    nodeHealth = fresh();
  } else if (saved && current && saved->lastHeartbeatTime != current->lastHeartbeatTime) {
    Clock::TimePoint transition = saved->lastTransitionTime != current->lastTransitionTime
                                      ? now
                                      : nodeHealth->readyTransitionTimestamp;
    KLOG_V(3, "\"Node ReadyCondition updated. Updating timestamp\" node=\"" + name + "\"");
    nodeHealth = NodeHealth{now, transition, true, *current, std::nullopt};
  }
  std::optional<LeaseInfo> observedLease;
  if (auto l = leases_.store().get(kNodeLeaseNamespace, name))
    observedLease = LeaseInfo{l->metadata.resourceVersion, l->spec.renewTime};
  if (observedLease &&
      (!savedLease || (savedLease->renewTime && observedLease->renewTime &&
                       *savedLease->renewTime < *observedLease->renewTime))) {
    nodeHealth->lease = observedLease;
    nodeHealth->probeTimestamp = now;
  }

  if (now > nodeHealth->probeTimestamp + gracePeriod) {
    if (opts_.leaseCircuitBreaker) {
      std::string cachedRV = nodeHealth->lease ? nodeHealth->lease->resourceVersion : "";
      auto live = client::get<api::coordination::v1::Lease>(*client_, kNodeLeaseNamespace, name);
      if (live.ok()) {
        if (live->metadata.resourceVersion != cachedRV) {
          consistency_.wroteAt("", "", "leases", live->metadata.resourceVersion);
          res.status = Status(StatusCode::kUnavailable, "lease cache is stale: read resourceVersion \"" + cachedRV +
                                                            "\", the API server has \"" +
                                                            live->metadata.resourceVersion + "\"");
          res.shortCircuit = true;
          return res;
        }
      } else if (live.status().code() != StatusCode::kNotFound) {
        res.status = Status(StatusCode::kUnavailable,
                            "error looking up lease to verify node " + name + ": " + live.status().message());
        res.shortCircuit = true;
        return res;
      }
    }
    const api::Time nowWall = api::timeNow(clock_);
    for (std::string type : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
      NodeCondition* c = nullptr;
      for (auto& x : node.status.conditions)
        if (x.type == type) c = &x;
      if (!c) {
        KLOG_V(2, "\"Condition of node was never updated by kubelet\" nodeConditionType=\"" + type + "\" node=\""
                                                                                         + name + "\"");
        node.status.conditions.push_back(NodeCondition{node.metadata.creationTimestamp, nowWall,
                                                       "Kubelet never posted node status.", "NodeStatusNeverUpdated",
                                                       "Unknown", type, {}});
      } else {
        KLOG_V(2, "\"Node hasn't been updated\" node=\"" + name + "\" nodeConditionType=\"" + type + "\"");
        if (c->status != "Unknown") {
          c->status = "Unknown";
          c->reason = "NodeStatusUnknown";
          c->message = "Kubelet stopped posting node status.";
          c->lastTransitionTime = nowWall;
        }
      }
    }
    const NodeCondition* updated = getNodeCondition(node.status, "Ready");
    res.currentReady = updated ? std::optional<NodeCondition>(*updated) : std::nullopt;
    if (!updated || !sameCondition(*updated, res.observedReady)) {
      auto r = client::updateStatus(*client_, node);
      if (!r.ok()) {
        KLOG_ERROR("\"Error updating node\" node=\"" + name + "\" err=\"" + r.status().message() + "\"");
        res.status = r.status();
        return res;
      }
      node = std::move(r).value();
      nodeHealth = NodeHealth{nodeHealth->probeTimestamp, now, true, res.currentReady, observedLease};
      return res;
    }
    return res;
  }
  res.currentReady = current ? std::optional<NodeCondition>(*current) : std::nullopt;
  return res;
}

}  // namespace kcm::controllers
