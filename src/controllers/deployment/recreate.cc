// Recreate (upstream recreate.go): old ReplicaSets to zero, wait until none of their pods is left running, then
// the new ReplicaSet to full size.
#include "controllers/deployment/deployment_controller.h"

namespace kcm::controllers {

using namespace deploymentutil;

bool DeploymentController::oldPodsRunning(const RSPtr& newRS, const std::vector<RSPtr>& oldRSs,
                                          const std::map<std::string, std::vector<PodPtr>>& podMap) {
  if (getActualReplicaCount(oldRSs) > 0) return true;
  for (const auto& [uid, pods] : podMap) {
    if (newRS && newRS->metadata.uid == uid) continue;
    // Terminal pods do not count; any other phase (Unknown included) may still be running.
    for (const auto& p : pods)
      if (p->status.phase != "Failed" && p->status.phase != "Succeeded") return true;
  }
  return false;
}

Status DeploymentController::rolloutRecreate(Deployment& d, const std::vector<RSPtr>& rss,
                                             const std::map<std::string, std::vector<PodPtr>>& podMap) {
  auto r = getAllReplicaSetsAndSyncRevision(d, rss, false);
  if (!r.ok()) return r.status();
  RSPtr newRS = r->newRS;
  std::vector<RSPtr> oldRSs = r->oldRSs;
  auto all = r->all();
  bool scaledDown = false;
  for (const auto& rs : filterActive(oldRSs)) {
    auto s = scaleReplicaSet(rs, 0, d, false);
    if (!s.ok()) return s.status();
    scaledDown = scaledDown || s->scaled;
  }
  if (scaledDown) return syncRolloutStatus(all, newRS, d);
  if (oldPodsRunning(newRS, oldRSs, podMap)) return syncRolloutStatus(all, newRS, d);
  if (!newRS) {
    auto created = getAllReplicaSetsAndSyncRevision(d, rss, true);
    if (!created.ok()) return created.status();
    newRS = created->newRS;
    oldRSs = created->oldRSs;
    all = created->all();
  }
  if (auto s = scaleReplicaSet(newRS, replicas(d), d, false); !s.ok()) return s.status();
  if (deploymentComplete(d, d.status))
    if (Status s = cleanupDeployment(oldRSs, d); !s.ok()) return s;
  return syncRolloutStatus(all, newRS, d);
}

}  // namespace kcm::controllers
