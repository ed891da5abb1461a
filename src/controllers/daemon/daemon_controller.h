#pragma once
// daemonset-controller (alias daemonset; upstream pkg/controller/daemon): one pod per eligible node.
//  - eligibility: the template's nodeName, nodeSelector and required node affinity, and the node's NoSchedule/
//    NoExecute taints against the template's tolerations plus those every daemon pod gets (not-ready,
//    unreachable, pressure, unschedulable; network-unavailable with hostNetwork); a pod that tolerates the
//    NoExecute taints keeps running on a node it no longer fits;
//  - pods are bound through required node affinity on metadata.name (the scheduler places them); creates in
//    slow-start batches, at most 250 creates/deletes per sync, with expectations; failed pods are deleted with a
//    FailedDaemonPod event under a per-node back-off (1 s doubling to 15 min), succeeded ones with
//    SucceededDaemonPod; extra pods on a node are pruned (the oldest kept); unscheduled pods bound to missing
//    nodes are deleted;
//  - history: one ControllerRevision per template (named <ds>-<pod-template-hash>, data the template-replacing
//    patch), deduplicated, renumbered when the current template returns (rollback), collisions bumping
//    status.collisionCount, old revisions beyond revisionHistoryLimit deleted unless a live pod uses them;
//  - RollingUpdate with maxUnavailable or maxSurge, OnDelete; status counts and observedGeneration;
//  - adoption/release of pods and revisions; node label/taint changes re-queue the affected DaemonSets.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "base/executor.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/daemon/daemonset_util.h"
#include "controllers/history/controller_history.h"
#include "controllers/util/controller_utils.h"
#include "informers/shared_informer.h"
#include "runtime/consistency.h"
#include "runtime/controller.h"
#include "runtime/expectations.h"

namespace kcm::controllers::daemon {

using api::apps::v1::ControllerRevision;
using DaemonSetPtr = std::shared_ptr<const DaemonSet>;
using NodePtr = std::shared_ptr<const Node>;
using history::RevisionPtr;
using NodeToDaemonPods = std::map<std::string, std::vector<PodPtr>>;

inline constexpr int kBurstReplicas = 250;

struct DaemonSetsControllerOptions {
  bool staleConsistency = true;  // StaleControllerConsistencyDaemonSet
  bool comparisonOperators = false;  // TaintTolerationComparisonOperators
  int burstReplicas = kBurstReplicas;
  Clock::Duration failedPodsBackoffInitial = std::chrono::seconds(1);
  Clock::Duration failedPodsBackoffMax = std::chrono::minutes(15);
};

class DaemonSetsController {
 public:
  DaemonSetsController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       informers::SharedInformer<DaemonSet>& daemonSets,
                       informers::SharedInformer<ControllerRevision>& revisions,
                       informers::SharedInformer<Pod>& pods, informers::SharedInformer<Node>& nodes,
                       DaemonSetsControllerOptions opts = {}, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncDaemonSet(const std::string& key);
  runtime::SyncResult syncNodeUpdate(const std::string& nodeName);

 private:
  friend class DaemonSetTestPeer;

  // handlers
  void addDaemonset(const DaemonSetPtr& ds);
  void updateDaemonset(const DaemonSetPtr& oldDS, const DaemonSetPtr& curDS);
  void deleteDaemonset(const DaemonSet& ds);
  void addHistory(const RevisionPtr& h);
  void updateHistory(const RevisionPtr& oldH, const RevisionPtr& curH);
  void deleteHistory(const ControllerRevision& h);
  void addPod(const PodPtr& pod);
  void updatePod(const PodPtr& oldPod, const PodPtr& curPod);
  void deletePod(const Pod& pod);
  void addNode(const NodePtr& node);
  void updateNode(const NodePtr& oldNode, const NodePtr& curNode);
  void enqueue(const DaemonSet& ds);
  void enqueueAfter(const DaemonSet& ds, Clock::Duration d);
  DaemonSetPtr resolveControllerRef(const std::string& ns, const api::meta::v1::OwnerReference& ref);
  std::vector<DaemonSetPtr> getDaemonSetsForLabels(const std::string& ns, const Labels& labels);

  // pods and nodes
  Result<std::vector<PodPtr>> getDaemonPods(const DaemonSet& ds);
  Result<NodeToDaemonPods> getNodesToDaemonPods(const DaemonSet& ds, bool includeDeletedTerminal);
  bool nodeShouldRunDaemonPod(const Node& node, const DaemonSet& ds, const std::vector<api::core::v1::Toleration>& tols,
                              const RequiredNodeAffinity& affinity, bool* shouldContinueRunning) const;
  void podsShouldBeOnNode(const Node& node, const NodeToDaemonPods& nodeToDaemonPods, const DaemonSet& ds,
                          const std::string& hash, const std::vector<api::core::v1::Toleration>& tols,
                          const RequiredNodeAffinity& affinity, std::vector<std::string>& nodesNeedingDaemonPods,
                          std::vector<std::string>& podsToDelete);
  Status manage(const DaemonSet& ds, const std::vector<NodePtr>& nodes, const std::string& hash);
  Status syncNodes(const DaemonSet& ds, const std::vector<std::string>& podsToDelete,
                   const std::vector<std::string>& nodesNeedingDaemonPods, const std::string& hash);
  Status updateDaemonSet(const DaemonSet& ds, const std::vector<NodePtr>& nodes, const std::string& hash,
                         const std::string& key, const std::vector<RevisionPtr>& old);
  Status updateDaemonSetStatus(const DaemonSet& ds, const std::vector<NodePtr>& nodes, const std::string& hash,
                               bool updateObservedGen);
  Result<std::shared_ptr<const DaemonSet>> storeDaemonSetStatus(const DaemonSet& ds,
                                                                const api::apps::v1::DaemonSetStatus& want,
                                                                bool updateObservedGen);

  // rolling update (update.go)
  Status rollingUpdate(const DaemonSet& ds, const std::vector<NodePtr>& nodes, const std::string& hash);
  Status updatedDesiredNodeCounts(const DaemonSet& ds, const std::vector<NodePtr>& nodes,
                                  NodeToDaemonPods& nodeToDaemonPods, int& maxSurge, int& maxUnavailable,
                                  int& desiredNumberScheduled);
  // history
  Status constructHistory(const DaemonSet& ds, RevisionPtr& cur, std::vector<RevisionPtr>& old);
  Result<std::vector<RevisionPtr>> controlledHistories(const DaemonSet& ds);
  Result<RevisionPtr> dedupCurHistories(const DaemonSet& ds, const std::vector<RevisionPtr>& curHistories);
  Result<RevisionPtr> snapshot(const DaemonSet& ds, int64_t revision);
  Status cleanupHistory(const DaemonSet& ds, const std::vector<RevisionPtr>& old);
  std::function<Status()> canAdopt(const DaemonSet& ds);

  client::ObjectReference ref(const DaemonSet& ds) const;
  static std::string key(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock& clock_;
  informers::SharedInformer<DaemonSet>& daemonSets_;
  informers::SharedInformer<ControllerRevision>& revisions_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<Node>& nodes_;
  DaemonSetsControllerOptions opts_;
  PodControl podControl_;
  runtime::ControllerExpectations expectations_;
  runtime::ConsistencyStore consistency_;
  FailedPodsBackoff failedPodsBackoff_;
  runtime::ControllerBase base_;
  runtime::ControllerBase nodeUpdates_;
  Periodic backoffGC_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

// Upstream's podByCreationTimestampAndPhase: scheduled before unscheduled, then older first, then by name.
void sortPodsByCreationTimestampAndPhase(std::vector<PodPtr>& pods);
// The revision data upstream's getPatch computes for ds.
Result<std::string> getPatch(const DaemonSet& ds);
// Whether ds's template is the one history stores (Match).
Result<bool> match(const DaemonSet& ds, const ControllerRevision& history);

}  // namespace kcm::controllers::daemon
