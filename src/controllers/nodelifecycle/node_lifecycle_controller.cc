#include "controllers/nodelifecycle/node_lifecycle_controller.h"

#include <atomic>

#include <nlohmann/json.hpp>

#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
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
constexpr int kPodUpdateWorkerSize = 4;

Taint noExecute(const char* key) { return Taint{.effect = kTaintEffectNoExecute, .key = key}; }
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
  registrations_.push_back(pods_.addEventHandler(ph));

  KLOG_INFO("\"Controller will reconcile labels\" logger=\"node-lifecycle-controller\"");
  informers::EventHandler<Node> nh;
  nh.onAdd = [this](const auto& n) { nodeUpdates_.enqueue(n->metadata.name); };
  nh.onUpdate = [this](const auto&, const auto& n) { nodeUpdates_.enqueue(n->metadata.name); };
  nh.onDelete = [this](const auto& n, bool) {
    std::lock_guard l(retryMu_);
    nodesToRetry_.erase(n->metadata.name);
  };
  registrations_.push_back(nodes_.addEventHandler(nh));
}

NodeLifecycleController::~NodeLifecycleController() {
  monitor_.stop();
  tainter_.stop();
}

void NodeLifecycleController::run(std::stop_token stop) {
  KLOG_INFO("\"Starting node controller\"");
  auto synced = [this] { return leases_.hasSynced() && nodes_.hasSynced() && pods_.hasSynced(); };
  nodeUpdates_.start(kNodeUpdateWorkerSize, stop, {synced});
  podUpdates_.start(kPodUpdateWorkerSize, stop, {synced});
  tainter_.start(clock_, RateLimitedTimedQueue::kNodeEvictionPeriod, stop, [this] { doNoExecuteTaintingPass(); },
                 synced);
  monitor_.start(clock_, opts_.nodeMonitorPeriod, stop, [this] {
    if (Status s = monitorNodeHealth(); !s.ok()) KLOG_ERROR("\"Error monitoring node health\" err=\"" + s.message() + "\"");
  }, synced);
}

Clock::TimePoint NodeLifecycleController::fromWall(const api::Time& t) const {
  auto age = clock_.wallNow() - std::chrono::system_clock::from_time_t(t.unixSeconds);
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

void NodeLifecycleController::processTaintBaseEviction(const NodePtr& node, const NodeCondition& ready) {
  const std::string& name = node->metadata.name;
  if (ready.status == "False") {
    if (taintExists(node->spec.taints, kUnreachableTaint)) {
      if (!swapNodeControllerTaint(*client_, {kNotReadyTaint}, {kUnreachableTaint}, node, clock_))
        KLOG_ERROR("\"Failed to instantly swap UnreachableTaint to NotReadyTaint. Will try again in the next cycle\"");
    } else if (markNodeForTainting(*node, "False")) {
      KLOG_V(2, "\"Node is NotReady. Adding it to the Taint queue\" node=\"" + name + "\"");
    }
  } else if (ready.status == "Unknown") {
    if (taintExists(node->spec.taints, kNotReadyTaint)) {
      if (!swapNodeControllerTaint(*client_, {kUnreachableTaint}, {kNotReadyTaint}, node, clock_))
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
      const NodeCondition* ready = getNodeCondition(node->status, "Ready");
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
      bool ok = swapNodeControllerTaint(*client_, {toAdd}, {opposite}, node, clock_);
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
      want.push_back(Taint{.effect = kTaintEffectNoSchedule, .key = key});
  if (node->spec.unschedulable) want.push_back(Taint{.effect = kTaintEffectNoSchedule, .key = kTaintNodeUnschedulable});
  std::vector<Taint> have;
  for (const auto& t : node->spec.taints)
    if (t.effect == kTaintEffectNoSchedule && (t.key == kTaintNodeUnschedulable || isConditionTaintKey(t.key)))
      have.push_back(t);
  auto diff = taintSetDiff(want, have);
  if (diff.toAdd.empty() && diff.toRemove.empty()) return Status::Ok();
  if (!swapNodeControllerTaint(*client_, diff.toAdd, diff.toRemove, node, clock_))
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
  if (Status s = markPodsNotReady(*client_, *recorder_, {pod}, nodeName, clock_); !s.ok())
    return runtime::SyncResult::error(
        Status(s.code(), "Unable to mark pod " + key + " NotReady on node " + nodeName + ": " + s.message()));
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers
