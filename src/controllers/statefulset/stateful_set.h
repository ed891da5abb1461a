#pragma once
// statefulset-controller (alias statefulset; upstream pkg/controller/statefulset): pods with stable identities.
//  - ordinals spec.ordinals.start .. start+replicas-1, pods <set>-<ordinal> with hostname and subdomain
//    (serviceName) and the pod-name / pod-index labels; one PVC per volumeClaimTemplate and ordinal
//    (<claim>-<set>-<ordinal>), created before the pod and never deleted here;
//  - OrderedReady: one pod at a time, in order, each Running and Ready (and available after minReadySeconds)
//    before the next, scale-down from the highest ordinal and only while the others are healthy; Parallel: all at
//    once; failed or succeeded pods are deleted and recreated;
//  - persistentVolumeClaimRetentionPolicy: owner references on the claims (the set for WhenDeleted=Delete, the
//    pod once scaled down for WhenScaled=Delete) so the garbage collector removes them; ConflictingController when
//    another controller owns a claim;
//  - revisions: ControllerRevisions <set>-<hash> holding the template (status.currentRevision/updateRevision,
//    collisionCount), a returning template reusing its revision, history beyond revisionHistoryLimit deleted
//    unless live; RollingUpdate with partition and maxUnavailable (MaxUnavailableStatefulSet), OnDelete;
//  - status (replicas, ready, available, current, updated, observedGeneration) and the pod events upstream
//    records (SuccessfulCreate "create Pod web-0 in StatefulSet web successful", ...); adoption and release of
//    pods and adoption of orphan revisions.
// Not done: the Recreate strategy (alpha StatefulSetRecreateStrategy, logged when on) and apiserver defaulting in
// the semantic revision comparison (StatefulSetSemanticRevisionComparison compares re-encoded data only).
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/history/controller_history.h"
#include "controllers/statefulset/stateful_set_utils.h"
#include "informers/shared_informer.h"
#include "runtime/consistency.h"
#include "runtime/controller.h"

namespace kcm::controllers::statefulset {

using SetPtr = std::shared_ptr<const StatefulSet>;
using history::RevisionPtr;

struct StatefulSetControllerOptions {
  bool staleConsistency = true;       // StaleControllerConsistencyStatefulSet
  bool maxUnavailable = true;         // MaxUnavailableStatefulSet
  bool semanticRevisionComparison = true;  // StatefulSetSemanticRevisionComparison
};

class StatefulSetController {
 public:
  StatefulSetController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                        informers::SharedInformer<StatefulSet>& sets, informers::SharedInformer<Pod>& pods,
                        informers::SharedInformer<PersistentVolumeClaim>& claims,
                        informers::SharedInformer<ControllerRevision>& revisions,
                        StatefulSetControllerOptions opts = {}, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);

 private:
  friend class StatefulSetTestPeer;

  void addPod(const PodPtr& pod);
  void updatePod(const PodPtr& oldPod, const PodPtr& curPod);
  void deletePod(const Pod& pod);
  SetPtr resolveControllerRef(const std::string& ns, const api::meta::v1::OwnerReference& ref);
  std::vector<SetPtr> getStatefulSetsForPod(const Pod& pod);
  void enqueue(const StatefulSet& s) { base_.enqueue(s.metadata.namespace_ + "/" + s.metadata.name); }

  Result<std::vector<PodPtr>> getPodsForStatefulSet(const StatefulSet& set);
  Status adoptOrphanRevisions(const StatefulSet& set);
  std::vector<RevisionPtr> listRevisions(const StatefulSet& set);

  // stateful_set_control.go
  Result<StatefulSetStatus> updateStatefulSet(const StatefulSet& set, const std::vector<PodPtr>& pods, WallTime now);
  Status getStatefulSetRevisions(const StatefulSet& set, std::vector<RevisionPtr>& revisions, RevisionPtr& current,
                                 RevisionPtr& update, int32_t& collisionCount);
  bool setMatchesLatestExistingRevision(const StatefulSet& set, const ControllerRevision& proposed,
                                        const ControllerRevision& latest);
  // upstream updateStatefulSet: out is the status to write, set unless an error came before it was computed.
  Status updatePods(const StatefulSet& set, const RevisionPtr& currentRevision, const RevisionPtr& updateRevision,
                    int32_t collisionCount, const std::vector<PodPtr>& pods, WallTime now,
                    std::optional<StatefulSetStatus>& out);
  Result<bool> processReplica(const StatefulSet& set, const StatefulSet& updateSet, bool monotonic,
                              std::vector<PodPtr>& replicas, size_t i, WallTime now);
  Result<bool> processCondemned(const StatefulSet& set, const Pod* firstUnhealthy, bool monotonic,
                                const std::vector<PodPtr>& condemned, size_t i, WallTime now);
  Status rollingUpdateAfterInvariant(const StatefulSet& set, const std::vector<PodPtr>& replicas,
                                     const RevisionPtr& updateRevision, StatefulSetStatus& status, WallTime now);
  Status updateStatefulSetStatus(const StatefulSet& set, StatefulSetStatus status);
  Status truncateHistory(const StatefulSet& set, const std::vector<PodPtr>& pods,
                         const std::vector<RevisionPtr>& revisions, const RevisionPtr& current,
                         const RevisionPtr& update);
  Result<RevisionPtr> createControllerRevision(const StatefulSet& set, ControllerRevision revision,
                                               int32_t& collisionCount);

  // stateful_pod_control.go
  Status createStatefulPod(const StatefulSet& set, const Pod& pod);
  Status updateStatefulPod(const StatefulSet& set, Pod pod);
  Status deleteStatefulPod(const StatefulSet& set, const Pod& pod);
  Result<bool> claimsMatchRetentionPolicy(const StatefulSet& set, const Pod& pod);
  Status updatePodClaimForRetentionPolicy(const StatefulSet& set, const Pod& pod);
  bool podClaimIsStale(const StatefulSet& set, const Pod& pod);
  Status createPersistentVolumeClaims(const StatefulSet& set, const Pod& pod);
  Status createMissingPersistentVolumeClaims(const StatefulSet& set, const Pod& pod);
  void recordPodEvent(const std::string& verb, const StatefulSet& set, const Pod& pod, const Status& err);
  void recordClaimEvent(const std::string& verb, const StatefulSet& set, const Pod& pod, const std::string& claim,
                        const Status& err);

  client::ObjectReference ref(const StatefulSet& s) const;
  static std::string key(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock& clock_;
  informers::SharedInformer<StatefulSet>& sets_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<PersistentVolumeClaim>& claims_;
  informers::SharedInformer<ControllerRevision>& revisions_;
  StatefulSetControllerOptions opts_;
  runtime::ConsistencyStore consistency_;
  std::mutex equalityMu_;
  std::set<std::string> revisionEquality_;  // "<uid>/<generation>/<revision rv>" found semantically equal
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::statefulset
