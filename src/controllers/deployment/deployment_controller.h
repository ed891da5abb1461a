#pragma once
// deployment-controller (upstream pkg/controller/deployment): each Deployment owns ReplicaSets (adopting matching
// orphans, releasing those that stop matching); the one whose template equals the Deployment's (ignoring
// pod-template-hash) is "new", named <deployment>-<hash>; RollingUpdate scales it up and the old ones down within
// maxSurge/maxUnavailable, Recreate scales the old ones to zero and waits for their pods to go first; scaling the
// Deployment mid-rollout is spread proportionally (desired-replicas/max-replicas annotations); paused Deployments
// only scale; revisions and revision-history annotations, rollback through the deprecated rollback annotation,
// Progressing/Available/ReplicaFailure conditions with progressDeadlineSeconds, clean-up to revisionHistoryLimit.
// Files: deployment_controller.cc (handlers, sync loop), sync.cc, rolling.cc, recreate.cc, progress.cc, rollback.cc.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/deployment/util/deployment_util.h"
#include "controllers/util/controller_utils.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers {

class DeploymentControllerTestPeer;  // unit tests reach the private steps through it

class DeploymentController {
 public:
  using Deployment = api::apps::v1::Deployment;
  using ReplicaSet = api::apps::v1::ReplicaSet;
  using RSPtr = deploymentutil::RSPtr;

  DeploymentController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       informers::SharedInformer<Deployment>& deployments, informers::SharedInformer<ReplicaSet>& rss,
                       informers::SharedInformer<api::core::v1::Pod>& pods, bool terminatingReplicas = true,
                       Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncDeployment(const std::string& key);

 private:
  friend class DeploymentControllerTestPeer;

  // deployment_controller.cc
  Result<std::vector<RSPtr>> getReplicaSetsForDeployment(const Deployment& d);
  std::map<std::string, std::vector<PodPtr>> getPodMapForDeployment(const std::vector<RSPtr>& rss);
  std::shared_ptr<const Deployment> resolveControllerRef(const std::string& ns, const api::meta::v1::OwnerReference& r);
  std::vector<std::shared_ptr<const Deployment>> getDeploymentsForReplicaSet(const ReplicaSet& rs);
  void addReplicaSet(const RSPtr& rs);
  void updateReplicaSet(const RSPtr& oldRS, const RSPtr& curRS);
  void deleteReplicaSet(const ReplicaSet& rs);
  void deletePod(const api::core::v1::Pod& pod);
  void enqueue(const Deployment& d);
  client::ObjectReference ref(const Deployment& d) const;
  void event(const Deployment& d, const char* type, const std::string& reason, const std::string& message);
  Status updateStatus(Deployment& d);
  Result<RSPtr> updateReplicaSet(const ReplicaSet& rs);

  // sync.cc
  Status syncStatusOnly(Deployment& d, const std::vector<RSPtr>& rss);
  Status sync(Deployment& d, const std::vector<RSPtr>& rss);
  Status checkPausedConditions(Deployment& d);
  struct AllRSs {
    RSPtr newRS;                // may be null
    std::vector<RSPtr> oldRSs;  // all but the new one
    std::vector<RSPtr> all() const;
  };
  Result<AllRSs> getAllReplicaSetsAndSyncRevision(Deployment& d, const std::vector<RSPtr>& rss, bool create);
  Result<RSPtr> getNewReplicaSet(Deployment& d, const std::vector<RSPtr>& rss, const std::vector<RSPtr>& oldRSs,
                                 bool create);
  Status scale(Deployment& d, const RSPtr& newRS, const std::vector<RSPtr>& oldRSs);
  struct ScaleResult {
    bool scaled = false;
    RSPtr rs;
  };
  Result<ScaleResult> scaleReplicaSet(const RSPtr& rs, int32_t newScale, const Deployment& d, bool force);
  Status cleanupDeployment(const std::vector<RSPtr>& oldRSs, const Deployment& d);
  Status syncDeploymentStatus(const std::vector<RSPtr>& all, const RSPtr& newRS, Deployment& d);
  api::apps::v1::DeploymentStatus calculateStatus(const std::vector<RSPtr>& all, const RSPtr& newRS,
                                                  const Deployment& d) const;
  Result<bool> isScalingEvent(Deployment& d, const std::vector<RSPtr>& rss);

  // rolling.cc
  Status rolloutRolling(Deployment& d, const std::vector<RSPtr>& rss);
  Result<bool> reconcileNewReplicaSet(const std::vector<RSPtr>& all, const RSPtr& newRS, const Deployment& d);
  Result<bool> reconcileOldReplicaSets(const std::vector<RSPtr>& all, std::vector<RSPtr> oldRSs, const RSPtr& newRS,
                                       const Deployment& d);
  Result<int32_t> cleanupUnhealthyReplicas(std::vector<RSPtr>& oldRSs, const Deployment& d, int32_t maxCleanup);
  Result<int32_t> scaleDownOldReplicaSetsForRollingUpdate(const std::vector<RSPtr>& all, std::vector<RSPtr> oldRSs,
                                                          const Deployment& d);

  // recreate.cc
  Status rolloutRecreate(Deployment& d, const std::vector<RSPtr>& rss,
                         const std::map<std::string, std::vector<PodPtr>>& podMap);
  // Whether pods of the old ReplicaSets may still run (Recreate waits for them): podMap is by ReplicaSet uid.
  static bool oldPodsRunning(const RSPtr& newRS, const std::vector<RSPtr>& oldRSs,
                             const std::map<std::string, std::vector<PodPtr>>& podMap);

  // progress.cc
  Status syncRolloutStatus(const std::vector<RSPtr>& all, const RSPtr& newRS, Deployment& d);
  // When the Deployment is looked at again for a progress check: -1ns never (no deadline, complete or timed out),
  // 0 now (rate limited), else the time left until the deadline (it is queued a second after that).
  Clock::Duration requeueStuckDeployment(const Deployment& d, const api::apps::v1::DeploymentStatus& newStatus);

  // rollback.cc
  Status rollback(Deployment& d, const std::vector<RSPtr>& rss);
  Status updateDeploymentAndClearRollbackTo(Deployment& d);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Deployment>& deployments_;
  informers::SharedInformer<ReplicaSet>& rss_;
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  bool terminatingReplicas_;
  Clock& clock_;  // wall time of conditions and progress deadlines
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
