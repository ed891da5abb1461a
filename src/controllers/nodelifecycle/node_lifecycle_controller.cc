#include "controllers/nodelifecycle/node_lifecycle_controller.h"

#include <atomic>

#include <nlohmann/json.hpp>

#include "api/gen/coordination_v1_codec.h"
#include "api/gen/core_v1_codec.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/node_util.h"
#include "controllers/util/taints.h"

namespace kcm::controllers {

using api::core::v1::NodeCondition;
using api::core::v1::Pod;
using api::core::v1::Taint;
using CondList = std::vector<std::optional<NodeCondition>>;

namespace {

constexpr const char* kPodNodeNameIndex = "spec.nodeName";
constexpr const char* kNodeLeaseNamespace = "kube-node-lease";
constexpr const char* kLabelNodeDisruptionExclusion = "node.kubernetes.io/exclude-disruption";
constexpr int kNodeUpdateWorkerSize = 8;
constexpr int kPodUpdateWorkerSize = 4;
constexpr int kNodeHealthUpdateRetry = 5;
constexpr auto kRetrySleepTime = std::chrono::milliseconds(20);

Taint noExecute(const char* key) { return Taint{kTaintEffectNoExecute, key, std::nullopt, "", {}}; }
const Taint kUnreachableTaint = noExecute(kTaintNodeUnreachable);
const Taint kNotReadyTaint = noExecute(kTaintNodeNotReady);

// Condition type -> status -> NoSchedule taint key (upstream nodeConditionToTaintKeyStatusMap).
const char* taintKeyForCondition(const std::string& type, const std::string& status) {
  if (type == "Ready") return status == "False" ? kTaintNodeNotReady : status == "Unknown" ? kTaintNodeUnreachable : nullptr;
  if (status != "True") return nullptr;
  if (type == "MemoryPressure") return kTaintNodeMemoryPressure;
  if (type == "DiskPressure") return kTaintNodeDiskPressure;
  if (type == "NetworkUnavailable") return kTaintNodeNetworkUnavailable;
  if (type == "PIDPressure") return kTaintNodePIDPressure;
  return nullptr;
}

bool isConditionTaintKey(const std::string& key) {
  return key == kTaintNodeNotReady || key == kTaintNodeUnreachable || key == kTaintNodeNetworkUnavailable ||
         key == kTaintNodeMemoryPressure || key == kTaintNodeDiskPressure || key == kTaintNodePIDPressure;
}

const NodeCondition* getCondition(const api::core::v1::NodeStatus& s, const std::string& type) {
  for (const auto& c : s.conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool sameCondition(const NodeCondition& a, const NodeCondition& b) {
  return a.type == b.type && a.status == b.status && a.reason == b.reason && a.message == b.message &&
         a.lastHeartbeatTime == b.lastHeartbeatTime && a.lastTransitionTime == b.lastTransitionTime;
}

std::string zoneLabel(const std::string& zone) { return zone; }

// The zone key in a log line as klog quotes it (the NUL separator as \x00).
std::string printableZone(const std::string& zone) {
  std::string out;
  for (char ch : zone) out += ch == '\0' ? std::string("\\x00") : std::string(1, ch);
  return out;
}

metrics::Gauge& zoneGauge(const char* name, const char* help, const std::string& zone) {
  return metrics::Registry::global().gauge(std::string("node_collector_") + name, help, {{"zone", zoneLabel(zone)}});
}

void parallelizeUntil(std::stop_token stop, int workers, size_t pieces, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; !stop.stop_requested() && (i = next.fetch_add(1)) < pieces;) fn(i);
  };
  std::vector<std::jthread> ts;
  for (int w = 1; w < workers && static_cast<size_t>(w) < pieces; ++w) ts.emplace_back(work);
  work();
}

}  // namespace

const char* zoneStateName(ZoneState s) {
  switch (s) {
    case ZoneState::kInitial: return "Initial";
    case ZoneState::kNormal: return "Normal";
    case ZoneState::kFullDisruption: return "FullDisruption";
    case ZoneState::kPartialDisruption: return "PartialDisruption";
  }
  return "";
}

std::pair<int, ZoneState> computeZoneState(const CondList& ready, double unhealthyZoneThreshold) {
  int readyNodes = 0, notReadyNodes = 0;
  for (const auto& c : ready) (c && c->status == "True") ? ++readyNodes : ++notReadyNodes;
  if (readyNodes == 0 && notReadyNodes > 0) return {notReadyNodes, ZoneState::kFullDisruption};
  if (notReadyNodes > 2 &&
      static_cast<float>(notReadyNodes) / static_cast<float>(notReadyNodes + readyNodes) >=
          static_cast<float>(unhealthyZoneThreshold))
    return {notReadyNodes, ZoneState::kPartialDisruption};
  return {notReadyNodes, ZoneState::kNormal};
}

NodeLifecycleController::NodeLifecycleController(std::shared_ptr<client::RestClient> client,
                                                 std::shared_ptr<client::EventRecorder> recorder,
                                                 informers::SharedInformer<api::coordination::v1::Lease>& leases,
                                                 informers::SharedInformer<Pod>& pods, informers::SharedInformer<Node>& nodes,
                                                 NodeLifecycleOptions opts, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), leases_(leases), pods_(pods), nodes_(nodes),
      opts_(opts), clock_(clock),
      nodeUpdates_("node_lifecycle_controller",
                   [this](const std::string& name) {
                     if (Status s = doNoScheduleTaintingPass(name); !s.ok())
                       KLOG_ERROR("\"Failed to taint NoSchedule on node, requeue it\" node=\"" + name + "\" err=\""
                                                                                            + s.message() + "\"");
                     if (Status s = reconcileNodeLabels(name); !s.ok())
                       KLOG_ERROR("\"Failed to reconcile labels for node, requeue it\" node=\"" + name + "\" err=\""
                                                                                             + s.message() + "\"");
                     return runtime::SyncResult::ok();  // upstream's queue is not rate limited: no retry
                   }),
      podUpdates_("node_lifecycle_controller_pods", [this](const std::string& key) { return processPod(key); }) {
  if (opts_.leaseCircuitBreaker) consistency_.enable({{"leases", [this] { return leases_.lastSyncResourceVersion(); }}});
  pods_.store().addIndexer(kPodNodeNameIndex, [](const Pod& p) {
    return p.spec.nodeName.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.spec.nodeName};
  });
  informers::EventHandler<Pod> ph;
  auto podUpdated = [this](const Pod* oldPod, const Pod& newPod) {
    if (!newPod.spec.nodeName.empty() && (!oldPod || oldPod->spec.nodeName != newPod.spec.nodeName))
      podUpdates_.enqueueObject(newPod);
  };
  ph.onAdd = [podUpdated](const auto& p) { podUpdated(nullptr, *p); };
  ph.onUpdate = [podUpdated](const auto& o, const auto& n) { podUpdated(o.get(), *n); };
  pods_.addEventHandler(ph);

  KLOG_INFO("\"Controller will reconcile labels\"");
  informers::EventHandler<Node> nh;
  nh.onAdd = [this](const auto& n) { nodeUpdates_.enqueue(n->metadata.name); };
  nh.onUpdate = [this](const auto&, const auto& n) { nodeUpdates_.enqueue(n->metadata.name); };
  nh.onDelete = [this](const auto& n, bool) {
    std::lock_guard l(retryMu_);
    nodesToRetry_.erase(n->metadata.name);
  };
  nodes_.addEventHandler(nh);
}

NodeLifecycleController::~NodeLifecycleController() {
  for (auto& t : threads_) t.request_stop();
}

void NodeLifecycleController::run(std::stop_token stop) {
  threads_.emplace_back([this, stop](std::stop_token own) {
    KLOG_INFO("\"Starting node controller\"");
    for (auto* inf : std::vector<informers::InformerBase*>{&leases_, &nodes_, &pods_})
      if (!inf->waitForCacheSync(stop)) return;
    nodeUpdates_.start(kNodeUpdateWorkerSize, stop);
    podUpdates_.start(kPodUpdateWorkerSize, stop);
    std::jthread tainter([this, stop] {
      while (!stop.stop_requested()) {
        doNoExecuteTaintingPass();
        clock_.sleepFor(RateLimitedTimedQueue::kNodeEvictionPeriod, stop);
      }
    });
    while (!stop.stop_requested() && !own.stop_requested()) {
      if (Status s = monitorNodeHealth(); !s.ok()) KLOG_ERROR("\"Error monitoring node health\" err=\"" + s.message() + "\"");
      clock_.sleepFor(opts_.nodeMonitorPeriod, stop);
    }
    KLOG_INFO("\"Shutting down node controller\"");
  });
}

Clock::TimePoint NodeLifecycleController::fromWall(const api::Time& t) const {
  auto age = std::chrono::system_clock::now() - std::chrono::system_clock::from_time_t(t.unixSeconds);
  return clock_.now() - std::chrono::duration_cast<Clock::Duration>(age);
}

std::optional<NodeLifecycleController::NodeHealth> NodeLifecycleController::health(const std::string& name) const {
  std::lock_guard l(healthMu_);
  auto it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) return std::nullopt;
  return it->second;
}

void NodeLifecycleController::setHealth(const std::string& name, NodeHealth h) {
  std::lock_guard l(healthMu_);
  nodeHealth_[name] = std::move(h);
}

std::vector<NodeLifecycleController::PodPtr> NodeLifecycleController::podsAssignedToNode(const std::string& n) const {
  return pods_.store().byIndex(kPodNodeNameIndex, n);
}

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
  parallelizeUntil({}, kNodeUpdateWorkerSize, nodes.size(),
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
      if (Status s = markPodsNotReady(*client_, *recorder_, pods, name); !s.ok()) {
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
  const NodeCondition* current = getCondition(node.status, "Ready");
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
    const api::Time nowWall = api::Time::now();
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
    const NodeCondition* updated = getCondition(node.status, "Ready");
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

void NodeLifecycleController::processTaintBaseEviction(const NodePtr& node, const NodeCondition& ready) {
  const std::string& name = node->metadata.name;
  if (ready.status == "False") {
    if (taintExists(node->spec.taints, kUnreachableTaint)) {
      if (!swapNodeControllerTaint(*client_, {kNotReadyTaint}, {kUnreachableTaint}, node))
        KLOG_ERROR("\"Failed to instantly swap UnreachableTaint to NotReadyTaint. Will try again in the next cycle\"");
    } else if (markNodeForTainting(*node, "False")) {
      KLOG_V(2, "\"Node is NotReady. Adding it to the Taint queue\" node=\"" + name + "\"");
    }
  } else if (ready.status == "Unknown") {
    if (taintExists(node->spec.taints, kNotReadyTaint)) {
      if (!swapNodeControllerTaint(*client_, {kUnreachableTaint}, {kNotReadyTaint}, node))
        KLOG_ERROR("\"Failed to instantly swap NotReadyTaint to UnreachableTaint. Will try again in the next cycle\"");
    } else if (markNodeForTainting(*node, "Unknown")) {
      KLOG_V(2, "\"Node is unresponsive. Adding it to the Taint queue\" node=\"" + name + "\"");
    }
  } else if (ready.status == "True") {
    auto removed = markNodeAsReachable(node);
    if (!removed.ok())
      KLOG_ERROR("\"Failed to remove taints from node. Will retry in next iteration\" node=\"" + name + "\"");
    else if (*removed)
      KLOG_V(2, "\"Node is healthy again, removed all taints\" node=\"" + name + "\"");
  }
}

void NodeLifecycleController::handleDisruption(const std::map<std::string, CondList>& zones,
                                               const std::vector<NodePtr>& nodes) {
  std::map<std::string, ZoneState> newZoneStates;
  bool allAreFullyDisrupted = true;
  for (const auto& [zone, conds] : zones) {
    zoneGauge("zone_size", "Gauge measuring number of registered Nodes per zones.", zone)
        .set(static_cast<double>(conds.size()));
    auto [unhealthy, state] = computeZoneState(conds, opts_.unhealthyZoneThreshold);
    zoneGauge("zone_health", "Gauge measuring percentage of healthy nodes per zone.", zone)
        .set(100.0 * static_cast<double>(conds.size() - unhealthy) / static_cast<double>(conds.size()));
    zoneGauge("unhealthy_nodes_in_zone", "Gauge measuring number of not Ready Nodes per zones.", zone)
        .set(unhealthy);
    if (state != ZoneState::kFullDisruption) allAreFullyDisrupted = false;
    newZoneStates[zone] = state;
    if (!zoneStates_.count(zone)) {
      KLOG_ERROR("\"Setting initial state for unseen zone\" zone=\"" + printableZone(zone) + "\"");
      zoneStates_[zone] = ZoneState::kInitial;
    }
  }
  bool allWasFullyDisrupted = true;
  for (auto it = zoneStates_.begin(); it != zoneStates_.end();) {
    if (!zones.count(it->first)) {
      zoneGauge("zone_size", "Gauge measuring number of registered Nodes per zones.", it->first).set(0);
      zoneGauge("zone_health", "Gauge measuring percentage of healthy nodes per zone.", it->first).set(100);
      zoneGauge("unhealthy_nodes_in_zone", "Gauge measuring number of not Ready Nodes per zones.", it->first).set(0);
      it = zoneStates_.erase(it);
      continue;
    }
    if (it->second != ZoneState::kFullDisruption) {
      allWasFullyDisrupted = false;
      break;
    }
    ++it;
  }
  if (allAreFullyDisrupted && allWasFullyDisrupted) return;
  if (allAreFullyDisrupted) {
    KLOG_INFO("\"Controller detected that all Nodes are not-Ready. Entering master disruption mode\"");
    for (const auto& n : nodes)
      if (!markNodeAsReachable(n).ok())
        KLOG_ERROR("\"Failed to remove taints from Node\" node=\"" + n->metadata.name + "\"");
    {
      std::lock_guard l(evictorMu_);
      for (auto& [zone, st] : zoneStates_)
        if (auto q = zoneNoExecuteTainter_.find(zone); q != zoneNoExecuteTainter_.end()) q->second->swapLimiter(0);
    }
    for (auto& [zone, st] : zoneStates_) st = ZoneState::kFullDisruption;
    return;
  }
  if (allWasFullyDisrupted) {
    KLOG_INFO("\"Controller detected that some Nodes are Ready. Exiting master disruption mode\"");
    auto now = clock_.now();
    for (const auto& n : nodes) {
      auto h = health(n->metadata.name);
      if (!h) continue;
      h->probeTimestamp = now;
      h->readyTransitionTimestamp = now;
      setHealth(n->metadata.name, *h);
    }
    for (auto& [zone, st] : zoneStates_) {
      auto z = zones.find(zone);
      setLimiterInZone(zone, z == zones.end() ? 0 : static_cast<int>(z->second.size()), newZoneStates[zone]);
      st = newZoneStates[zone];
    }
    return;
  }
  for (auto& [zone, st] : zoneStates_) {
    ZoneState next = newZoneStates[zone];
    if (st == next) continue;
    KLOG_INFO("\"Controller detected that zone is now in new state\" zone=\"" + printableZone(zone) + "\" newState=\""
                                                                          + zoneStateName(next) + "\"");
    auto z = zones.find(zone);
    setLimiterInZone(zone, z == zones.end() ? 0 : static_cast<int>(z->second.size()), next);
    st = next;
  }
}

double NodeLifecycleController::reducedQPS(int nodeNum) const {
  return nodeNum > opts_.largeClusterThreshold ? opts_.secondaryEvictionLimiterQPS : 0;
}

void NodeLifecycleController::setLimiterInZone(const std::string& zone, int zoneSize, ZoneState state) {
  std::lock_guard l(evictorMu_);
  auto q = zoneNoExecuteTainter_.find(zone);
  if (q == zoneNoExecuteTainter_.end()) return;
  switch (state) {
    case ZoneState::kNormal: q->second->swapLimiter(opts_.evictionLimiterQPS); break;
    case ZoneState::kPartialDisruption: q->second->swapLimiter(reducedQPS(zoneSize)); break;
    case ZoneState::kFullDisruption: q->second->swapLimiter(opts_.evictionLimiterQPS); break;
    case ZoneState::kInitial: break;
  }
}

void NodeLifecycleController::addPodEvictorForNewZone(const Node& node) {
  const std::string zone = getZoneKey(node);
  std::lock_guard l(evictorMu_);
  if (zoneStates_.count(zone)) return;
  zoneStates_[zone] = ZoneState::kInitial;
  zoneNoExecuteTainter_[zone] = std::make_shared<RateLimitedTimedQueue>(opts_.evictionLimiterQPS, clock_);
  KLOG_INFO("\"Initializing eviction metric for zone\" zone=\"" + printableZone(zone) + "\"");
  metrics::Registry::global().counter("node_collector_evictions_total",
                                      "Number of Node evictions that happened since current instance of "
                                      "NodeController started.",
                                      {{"zone", zoneLabel(zone)}});
}

bool NodeLifecycleController::markNodeForTainting(const Node& node, const std::string& status) {
  std::lock_guard l(evictorMu_);
  auto q = zoneNoExecuteTainter_.find(getZoneKey(node));
  if (q == zoneNoExecuteTainter_.end()) return false;
  if (status == "False" && !taintExists(node.spec.taints, kNotReadyTaint)) q->second->remove(node.metadata.name);
  if (status == "Unknown" && !taintExists(node.spec.taints, kUnreachableTaint)) q->second->remove(node.metadata.name);
  return q->second->add(node.metadata.name, node.metadata.uid);
}

Result<bool> NodeLifecycleController::markNodeAsReachable(const NodePtr& node) {
  const std::string& name = node->metadata.name;
  if (Status s = removeTaintOffNode(*client_, name, node, {kUnreachableTaint}); !s.ok()) {
    KLOG_ERROR("\"Failed to remove unreachable taint from node\" node=\"" + name + "\" err=\"" + s.message() + "\"");
    return s;
  }
  if (Status s = removeTaintOffNode(*client_, name, node, {kNotReadyTaint}); !s.ok()) {
    KLOG_ERROR("\"Failed to remove not-ready taint from node\" node=\"" + name + "\" err=\"" + s.message() + "\"");
    return s;
  }
  std::lock_guard l(evictorMu_);
  auto q = zoneNoExecuteTainter_.find(getZoneKey(*node));
  return q != zoneNoExecuteTainter_.end() && q->second->remove(name);
}

void NodeLifecycleController::doNoExecuteTaintingPass() {
  std::vector<std::pair<std::string, std::shared_ptr<RateLimitedTimedQueue>>> queues;
  {
    std::lock_guard l(evictorMu_);
    queues.assign(zoneNoExecuteTainter_.begin(), zoneNoExecuteTainter_.end());
  }
  for (auto& [zone, q] : queues) {
    q->tryProcess([this](const TimedValue& v) -> std::pair<bool, Clock::Duration> {
      auto node = nodes_.store().get(v.value);
      if (!node) {
        KLOG_INFO("\"Node no longer present in nodeLister\" node=\"" + v.value + "\"");
        return {true, {}};
      }
      const NodeCondition* ready = getCondition(node->status, "Ready");
      if (!ready) {
        KLOG_INFO("\"Failed to get NodeCondition from the node status\" node=\"" + v.value + "\"");
        return {false, std::chrono::milliseconds(50)};
      }
      Taint toAdd, opposite;
      if (ready->status == "False") {
        toAdd = kNotReadyTaint;
        opposite = kUnreachableTaint;
      } else if (ready->status == "Unknown") {
        toAdd = kUnreachableTaint;
        opposite = kNotReadyTaint;
      } else {
        KLOG_V(4, "\"Node was in a taint queue, but it's ready now. Ignoring taint request\" node=\"" + v.value + "\"");
        return {true, {}};
      }
      bool ok = swapNodeControllerTaint(*client_, {toAdd}, {opposite}, node);
      if (ok)
        metrics::Registry::global()
            .counter("node_collector_evictions_total",
                     "Number of Node evictions that happened since current instance of NodeController started.",
                     {{"zone", zoneLabel(getZoneKey(*node))}})
            .inc();
      return {ok, {}};
    });
  }
}

Status NodeLifecycleController::doNoScheduleTaintingPass(const std::string& nodeName) {
  auto node = nodes_.store().get(nodeName);
  if (!node) return Status::Ok();
  std::vector<Taint> want;
  for (const auto& c : node->status.conditions)
    if (const char* key = taintKeyForCondition(c.type, c.status))
      want.push_back(Taint{kTaintEffectNoSchedule, key, std::nullopt, "", {}});
  if (node->spec.unschedulable) want.push_back(Taint{kTaintEffectNoSchedule, kTaintNodeUnschedulable, std::nullopt, "", {}});
  std::vector<Taint> have;
  for (const auto& t : node->spec.taints)
    if (t.effect == kTaintEffectNoSchedule && (t.key == kTaintNodeUnschedulable || isConditionTaintKey(t.key)))
      have.push_back(t);
  auto diff = taintSetDiff(want, have);
  if (diff.toAdd.empty() && diff.toRemove.empty()) return Status::Ok();
  if (!swapNodeControllerTaint(*client_, diff.toAdd, diff.toRemove, node))
    return Status(StatusCode::kInternal, "failed to swap taints of node " + nodeName);
  return Status::Ok();
}

Status NodeLifecycleController::reconcileNodeLabels(const std::string& nodeName) {
  auto node = nodes_.store().get(nodeName);
  if (!node || node->metadata.labels.empty()) return Status::Ok();
  static const std::pair<const char*, const char*> kPairs[] = {{"kubernetes.io/os", "beta.kubernetes.io/os"},
                                                               {"kubernetes.io/arch", "beta.kubernetes.io/arch"}};
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [primary, secondary] : kPairs) {
    auto p = node->metadata.labels.find(primary);
    if (p == node->metadata.labels.end()) continue;
    auto s = node->metadata.labels.find(secondary);
    if (s == node->metadata.labels.end() || s->second != p->second) labels[secondary] = p->second;
  }
  if (labels.empty()) return Status::Ok();
  nlohmann::json patch = {{"metadata", {{"labels", labels}}}};
  auto r = client::patch<Node>(*client_, "", nodeName, client::PatchType::kStrategicMerge, patch.dump());
  if (!r.ok() && r.status().code() != StatusCode::kNotFound)
    return Status(r.status().code(), "failed update labels for node " + nodeName + ": " + r.status().message());
  return Status::Ok();
}

runtime::SyncResult NodeLifecycleController::processPod(const std::string& key) {
  auto pod = pods_.store().get(key);
  if (!pod) return runtime::SyncResult::ok();
  const std::string& nodeName = pod->spec.nodeName;
  auto h = health(nodeName);
  if (!h) return runtime::SyncResult::ok();
  if (!nodes_.store().get(nodeName))
    return runtime::SyncResult::error(Status(StatusCode::kNotFound, "Failed to read node " + nodeName));
  if (!h->ready || h->ready->status == "True") return runtime::SyncResult::ok();
  if (Status s = markPodsNotReady(*client_, *recorder_, {pod}, nodeName); !s.ok())
    return runtime::SyncResult::error(
        Status(s.code(), "Unable to mark pod " + key + " NotReady on node " + nodeName + ": " + s.message()));
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers
