#pragma once
// node-lifecycle-controller (upstream pkg/controller/nodelifecycle):
//  - every --node-monitor-period, each node's health is judged from its kube-node-lease Lease and its Ready
//    condition's heartbeat; a node silent for longer than --node-monitor-grace-period (or
//    --node-startup-grace-period before it ever reported Ready) gets Ready/MemoryPressure/DiskPressure/PIDPressure
//    Unknown ("NodeStatusUnknown", "Kubelet stopped posting node status."), after a live look at its Lease
//    (NodeControllerLeaseCircuitBreaker: a stale lease cache skips the pass instead of condemning nodes);
//  - not-ready / unreachable nodes are queued per zone for the NoExecute taints (the taint-eviction controller
//    then evicts), at --node-eviction-rate in a healthy zone, --secondary-node-eviction-rate (large zones) or 0
//    in a partially disrupted one; when every zone is fully disrupted nothing is tainted and existing NoExecute
//    taints are removed ("master disruption mode"); healthy nodes lose them;
//  - NoSchedule taints follow conditions and spec.unschedulable (node events, 8 workers);
//  - pods on a node that is not Ready are marked not Ready (4 pod workers);
//  - beta.kubernetes.io/os and /arch labels follow the stable ones.
// Files: node_health.cc (monitorNodeHealth, tryUpdateNodeHealth), node_lifecycle_controller.cc (the rest).
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/gen/coordination_v1.h"
#include "api/gen/core_v1.h"
#include "base/executor.h"
#include "base/clock.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/nodelifecycle/rate_limited_queue.h"
#include "informers/shared_informer.h"
#include "runtime/consistency.h"
#include "runtime/controller.h"

namespace kcm::controllers {

enum class ZoneState { kInitial, kNormal, kFullDisruption, kPartialDisruption };
const char* zoneStateName(ZoneState s);

struct NodeLifecycleOptions {
  Clock::Duration nodeMonitorPeriod = std::chrono::seconds(5);
  Clock::Duration nodeStartupGracePeriod = std::chrono::minutes(1);
  Clock::Duration nodeMonitorGracePeriod = std::chrono::seconds(50);
  double evictionLimiterQPS = 0.1;
  double secondaryEvictionLimiterQPS = 0.01;
  int largeClusterThreshold = 50;
  double unhealthyZoneThreshold = 0.55;
  bool leaseCircuitBreaker = true;  // NodeControllerLeaseCircuitBreaker
};

// Ready conditions of a zone's nodes (nullopt: no Ready condition) -> (not ready count, state).
std::pair<int, ZoneState> computeZoneState(const std::vector<std::optional<api::core::v1::NodeCondition>>& ready,
                                           double unhealthyZoneThreshold);

class NodeLifecycleController {
 public:
  using Node = api::core::v1::Node;
  using NodePtr = std::shared_ptr<const Node>;
  using PodPtr = std::shared_ptr<const api::core::v1::Pod>;
  static constexpr int kNodeUpdateWorkerSize = 8;  // node event workers, and health checks in parallel

  NodeLifecycleController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                          informers::SharedInformer<api::coordination::v1::Lease>& leases,
                          informers::SharedInformer<api::core::v1::Pod>& pods,
                          informers::SharedInformer<Node>& nodes, NodeLifecycleOptions opts,
                          Clock& clock = RealClock::get());
  ~NodeLifecycleController();
  void run(std::stop_token stop);

  Status monitorNodeHealth();
  void doNoExecuteTaintingPass();
  Status doNoScheduleTaintingPass(const std::string& nodeName);
  Status reconcileNodeLabels(const std::string& nodeName);

 private:
  friend class NodeLifecycleTestPeer;  // unit tests drive tryUpdateNodeHealth/processPod and read zone state
  struct LeaseInfo {
    std::string resourceVersion;
    std::optional<api::MicroTime> renewTime;
  };
  struct NodeHealth {
    Clock::TimePoint probeTimestamp{};
    Clock::TimePoint readyTransitionTimestamp{};
    bool hasStatus = false;
    std::optional<api::core::v1::NodeCondition> ready;  // the Ready condition of the status last seen
    std::optional<LeaseInfo> lease;
  };
  struct HealthResult {
    Status status;
    api::core::v1::NodeCondition observedReady;
    std::optional<api::core::v1::NodeCondition> currentReady;
    bool shortCircuit = false;
  };

  HealthResult tryUpdateNodeHealth(Node& node);
  void updateNode(const NodePtr& cached, std::map<std::string, std::vector<std::optional<api::core::v1::NodeCondition>>>&
                                             zoneConditions,
                  std::mutex& zoneMu);
  void processTaintBaseEviction(const NodePtr& node, const api::core::v1::NodeCondition& ready);
  void handleDisruption(const std::map<std::string, std::vector<std::optional<api::core::v1::NodeCondition>>>& zones,
                        const std::vector<NodePtr>& nodes);
  void setLimiterInZone(const std::string& zone, int zoneSize, ZoneState state);
  void addPodEvictorForNewZone(const Node& node);
  bool markNodeForTainting(const Node& node, const std::string& status);
  Result<bool> markNodeAsReachable(const NodePtr& node);
  double reducedQPS(int nodeNum) const;
  std::vector<PodPtr> podsAssignedToNode(const std::string& nodeName) const;
  runtime::SyncResult processPod(const std::string& key);
  Clock::TimePoint fromWall(const api::Time& t) const;
  std::optional<NodeHealth> health(const std::string& name) const;
  void setHealth(const std::string& name, NodeHealth h);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<api::coordination::v1::Lease>& leases_;
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  informers::SharedInformer<Node>& nodes_;
  NodeLifecycleOptions opts_;
  Clock& clock_;

  mutable std::mutex healthMu_;
  std::map<std::string, NodeHealth> nodeHealth_;

  std::mutex evictorMu_;  // zoneNoExecuteTainter_
  std::map<std::string, std::shared_ptr<RateLimitedTimedQueue>> zoneNoExecuteTainter_;

  // Monitor thread only.
  std::map<std::string, NodePtr> knownNodeSet_;
  std::map<std::string, ZoneState> zoneStates_;

  std::mutex retryMu_;
  std::set<std::string> nodesToRetry_;

  // Lease circuit breaker: the live Lease resourceVersion the cache must reach before health is judged again.
  runtime::ConsistencyStore consistency_;

  runtime::ControllerBase nodeUpdates_;  // doNoScheduleTaintingPass + reconcileNodeLabels
  runtime::ControllerBase podUpdates_;   // processPod
  Periodic monitor_, tainter_;  // last: stopped first on destruction
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
