#pragma once
// replicaset-controller and replicationcontroller-controller (upstream pkg/controller/replicaset and
// pkg/controller/replication, which runs the ReplicaSet logic over ReplicationControllers): keep `replicas` active
// pods per owner, creating in slow-start batches (at most 500 per sync) and deleting the pods ranked first for
// scale-down; adopt matching orphans and release pods that stop matching; expectations keep a sync from acting
// before the cache has seen its own creates/deletes, and (ReplicaSets, StaleControllerConsistencyReplicaSet) a
// stale-cache guard waits for the informers to observe this controller's last writes. Status: replicas,
// fullyLabeledReplicas, readyReplicas, availableReplicas (minReadySeconds, with a re-sync when the next pod becomes
// available), observedGeneration, terminatingReplicas (ReplicaSets, DeploymentReplicaSetTerminatingReplicas) and
// the ReplicaFailure condition while creates/deletes fail.
#include <memory>
#include <string>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/util/controller_utils.h"
#include "informers/shared_informer.h"
#include "runtime/consistency.h"
#include "runtime/controller.h"
#include "runtime/expectations.h"

namespace kcm::controllers {

inline constexpr int kBurstReplicas = 500;

struct ReplicaSetKind {
  using Object = api::apps::v1::ReplicaSet;
  using Condition = api::apps::v1::ReplicaSetCondition;
  static constexpr const char* kKind = "ReplicaSet";
  static constexpr const char* kAPIVersion = "apps/v1";
  static constexpr const char* kQueueName = "replicaset";
  static constexpr bool kTerminatingReplicas = true;
  static Result<LabelMatcher> selector(const Object& o);
  static const api::core::v1::PodTemplateSpec& podTemplate(const Object& o) { return o.spec.template_; }
};

struct ReplicationControllerKind {
  using Object = api::core::v1::ReplicationController;
  using Condition = api::core::v1::ReplicationControllerCondition;
  static constexpr const char* kKind = "ReplicationController";
  static constexpr const char* kAPIVersion = "v1";
  static constexpr const char* kQueueName = "replicationmanager";
  static constexpr bool kTerminatingReplicas = false;
  static Result<LabelMatcher> selector(const Object& o);
  static const api::core::v1::PodTemplateSpec& podTemplate(const Object& o);
};

struct ReplicaSetControllerOptions {
  int burstReplicas = kBurstReplicas;
  bool staleConsistency = true;     // StaleControllerConsistencyReplicaSet (ReplicaSets only)
  bool terminatingReplicas = true;  // DeploymentReplicaSetTerminatingReplicas (ReplicaSets only)
};

template <class K>
class ReplicaSetControllerT {
 public:
  using Object = typename K::Object;
  using ObjectPtr = std::shared_ptr<const Object>;

  ReplicaSetControllerT(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                        informers::SharedInformer<Object>& owners, informers::SharedInformer<api::core::v1::Pod>& pods,
                        ReplicaSetControllerOptions opts = {}, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncReplicaSet(const std::string& key);

 private:
  friend class ReplicaSetTestPeer;  // unit tests drive the handlers and helpers below directly

  Status manageReplicas(const std::vector<PodPtr>& activePods, const Object& rs);
  Result<ObjectPtr> updateStatus(const Object& rs, const decltype(Object::status)& newStatus);
  // now: one wall-clock reading shared with the next availability check (upstream syncReplicaSet).
  decltype(Object::status) calculateStatus(const Object& rs, const std::vector<PodPtr>& active,
                                           const std::vector<PodPtr>& terminating, const Status& manageErr,
                                           WallTime now);
  std::vector<PodPtr> indirectlyRelatedPods(const Object& rs);
  ObjectPtr resolveControllerRef(const std::string& ns, const api::meta::v1::OwnerReference& ref);
  std::vector<ObjectPtr> getPodOwners(const api::core::v1::Pod& pod);
  void addPod(const PodPtr& pod);
  void updatePod(const PodPtr& oldPod, const PodPtr& curPod);
  void deletePod(const api::core::v1::Pod& pod);
  client::ObjectReference ref(const Object& rs) const;
  static std::string key(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

  std::shared_ptr<client::RestClient> client_;
  Clock& clock_;  // wall time of status conditions and availability (minReadySeconds)
  informers::SharedInformer<Object>& owners_;
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  ReplicaSetControllerOptions opts_;
  PodControl podControl_;
  runtime::UIDTrackingControllerExpectations expectations_;
  runtime::ConsistencyStore consistency_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

using ReplicaSetController = ReplicaSetControllerT<ReplicaSetKind>;
using ReplicationManager = ReplicaSetControllerT<ReplicationControllerKind>;

}  // namespace kcm::controllers
