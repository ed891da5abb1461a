// The Progressing condition and progressDeadlineSeconds (upstream progress.go).
#include "base/log.h"
#include "controllers/deployment/deployment_controller.h"

namespace kcm::controllers {

using namespace deploymentutil;

Status DeploymentController::syncRolloutStatus(const std::vector<RSPtr>& all, const RSPtr& newRS, Deployment& d) {
  auto s = calculateStatus(all, newRS, d);
  if (!hasProgressDeadline(d)) removeDeploymentCondition(s, "Progressing");
  const auto* cur = getDeploymentCondition(d.status, "Progressing");
  const bool complete = s.replicas == s.updatedReplicas && cur && cur->reason == kNewRSAvailableReason;
  if (hasProgressDeadline(d) && !complete) {
    const std::string subject = newRS ? "ReplicaSet \"" + newRS->metadata.name + "\"" : "Deployment \"" + d.metadata.name + "\"";
    if (deploymentComplete(d, s)) {
      setDeploymentCondition(s, newDeploymentCondition("Progressing", "True", kNewRSAvailableReason,
                                                       subject + " has successfully progressed."));
    } else if (deploymentProgressing(d, s)) {
      auto c = newDeploymentCondition("Progressing", "True", kReplicaSetUpdatedReason, subject + " is progressing.");
      if (cur) {
        if (cur->status == "True") c.lastTransitionTime = cur->lastTransitionTime;
        removeDeploymentCondition(s, "Progressing");
      }
      setDeploymentCondition(s, c);
    } else if (deploymentTimedOut(d, s)) {
      setDeploymentCondition(s, newDeploymentCondition("Progressing", "False", kTimedOutReason,
                                                       subject + " has timed out progressing."));
    }
  }
  // ReplicaFailure from the new ReplicaSet first, else from any.
  std::vector<api::apps::v1::DeploymentCondition> failures;
  if (newRS)
    for (const auto& c : newRS->status.conditions)
      if (c.type == "ReplicaFailure") failures.push_back(replicaSetToDeploymentCondition(c));
  if (failures.empty())
    for (const auto& rs : all)
      if (rs)
        for (const auto& c : rs->status.conditions)
          if (c.type == "ReplicaFailure") failures.push_back(replicaSetToDeploymentCondition(c));
  if (!failures.empty()) setDeploymentCondition(s, failures.front());
  else removeDeploymentCondition(s, "ReplicaFailure");

  if (sameStatus(d.status, s)) {
    requeueStuckDeployment(d, s);
    return Status::Ok();
  }
  d.status = std::move(s);
  return updateStatus(d);
}

// A Deployment whose status no longer changes is looked at again when its progress deadline passes.
void DeploymentController::requeueStuckDeployment(const Deployment& d, const api::apps::v1::DeploymentStatus& s) {
  const auto* cur = getDeploymentCondition(d.status, "Progressing");
  if (!hasProgressDeadline(d) || !cur) return;
  if (deploymentComplete(d, s) || cur->reason == kTimedOutReason) return;
  const int64_t after = cur->lastUpdateTime.unixSeconds + *d.spec.progressDeadlineSeconds - api::Time::now().unixSeconds;
  const std::string key = d.metadata.namespace_ + "/" + d.metadata.name;
  if (after < 1) {
    KLOG_V(4, "\"Queueing up deployment for a progress check now\" deployment=\"" + key + "\"");
    base_.queue().addRateLimited(key);
    return;
  }
  KLOG_V(4, "\"Queueing up deployment for a progress check\" deployment=\"" + key + "\" queueAfter=\"" +
                std::to_string(after + 1) + "s\"");
  base_.enqueueAfter(key, std::chrono::seconds(after + 1));
}

}  // namespace kcm::controllers
