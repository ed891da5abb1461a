// RollingUpdate (upstream rolling.go): scale the new ReplicaSet up within maxSurge, then old ones down within
// maxUnavailable, unhealthy old replicas first.
#include "base/log.h"
#include "controllers/deployment/deployment_controller.h"

namespace kcm::controllers {

using namespace deploymentutil;

Status DeploymentController::rolloutRolling(Deployment& d, const std::vector<RSPtr>& rss) {
  auto r = getAllReplicaSetsAndSyncRevision(d, rss, true);
  if (!r.ok()) return r.status();
  const RSPtr newRS = r->newRS;
  const auto all = r->all();
  auto scaledUp = reconcileNewReplicaSet(all, newRS, d);
  if (!scaledUp.ok()) return scaledUp.status();
  if (*scaledUp) return syncRolloutStatus(all, newRS, d);
  auto scaledDown = reconcileOldReplicaSets(all, filterActive(r->oldRSs), newRS, d);
  if (!scaledDown.ok()) return scaledDown.status();
  if (*scaledDown) return syncRolloutStatus(all, newRS, d);
  if (deploymentComplete(d, d.status))
    if (Status s = cleanupDeployment(r->oldRSs, d); !s.ok()) return s;
  return syncRolloutStatus(all, newRS, d);
}

Result<bool> DeploymentController::reconcileNewReplicaSet(const std::vector<RSPtr>& all, const RSPtr& newRS,
                                                          const Deployment& d) {
  if (replicas(*newRS) == replicas(d)) return false;
  if (replicas(*newRS) > replicas(d)) {
    auto s = scaleReplicaSet(newRS, replicas(d), d, false);
    if (!s.ok()) return s.status();
    return s->scaled;
  }
  auto s = scaleReplicaSet(newRS, newRSNewReplicas(d, all, *newRS), d, false);
  if (!s.ok()) return s.status();
  return s->scaled;
}

Result<bool> DeploymentController::reconcileOldReplicaSets(const std::vector<RSPtr>& all, std::vector<RSPtr> oldRSs,
                                                           const RSPtr& newRS, const Deployment& d) {
  if (getReplicaCount(oldRSs) == 0) return false;  // nothing to scale down
  const int32_t allPods = getReplicaCount(all);
  const int32_t minAvailable = replicas(d) - maxUnavailable(d);
  const int32_t newRSUnavailable = replicas(*newRS) - newRS->status.availableReplicas;
  const int32_t maxScaledDown = allPods - minAvailable - newRSUnavailable;
  if (maxScaledDown <= 0) return false;
  // Unhealthy replicas first: they cost no availability. Errors end this pass without failing the sync.
  auto cleaned = cleanupUnhealthyReplicas(oldRSs, d, maxScaledDown);
  if (!cleaned.ok()) return false;
  std::vector<RSPtr> all2 = oldRSs;
  all2.push_back(newRS);
  auto scaled = scaleDownOldReplicaSetsForRollingUpdate(all2, oldRSs, d);
  if (!scaled.ok()) return false;
  return *cleaned + *scaled > 0;
}

Result<int32_t> DeploymentController::cleanupUnhealthyReplicas(std::vector<RSPtr>& oldRSs, const Deployment& d,
                                                               int32_t maxCleanup) {
  sortByCreationTimestamp(oldRSs);
  int32_t total = 0;
  for (auto& rs : oldRSs) {
    if (total >= maxCleanup) break;
    if (replicas(*rs) == 0 || replicas(*rs) == rs->status.availableReplicas) continue;
    const int32_t down = std::min(maxCleanup - total, replicas(*rs) - rs->status.availableReplicas);
    auto r = scaleReplicaSet(rs, replicas(*rs) - down, d, false);
    if (!r.ok()) return r.status();
    total += down;
    rs = r->rs;
  }
  return total;
}

Result<int32_t> DeploymentController::scaleDownOldReplicaSetsForRollingUpdate(const std::vector<RSPtr>& all,
                                                                              std::vector<RSPtr> oldRSs,
                                                                              const Deployment& d) {
  const int32_t minAvailable = replicas(d) - maxUnavailable(d);
  const int32_t available = getAvailableReplicaCount(all);
  if (available <= minAvailable) return 0;
  sortByCreationTimestamp(oldRSs);
  int32_t total = 0;
  const int32_t target = available - minAvailable;
  for (const auto& rs : oldRSs) {
    if (total >= target) break;
    if (replicas(*rs) == 0) continue;
    const int32_t down = std::min(replicas(*rs), target - total);
    auto r = scaleReplicaSet(rs, replicas(*rs) - down, d, false);
    if (!r.ok()) return r.status();
    total += down;
  }
  return total;
}

}  // namespace kcm::controllers
