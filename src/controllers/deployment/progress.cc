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
      setDeploymentCondition(s, newDeploymentCondition(clock_, "Progressing", "True", kNewRSAvailableReason,
                                                       subject + " has successfully progressed."));
    } else if (deploymentProgressing(d, s)) {
      auto c = newDeploymentCondition(clock_, "Progressing", "True", kReplicaSetUpdatedReason,
                                      subject + " is progressing.");
      if (cur) {
        if (cur->status == "True") c.lastTransitionTime = cur->lastTransitionTime;
        removeDeploymentCondition(s, "Progressing");
      }
      setDeploymentCondition(s, c);
    } else if (deploymentTimedOut(clock_, d, s)) {
      setDeploymentCondition(s, newDeploymentCondition(clock_, "Progressing", "False", kTimedOutReason,
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
Clock::Duration DeploymentController::requeueStuckDeployment(const Deployment& d,
                                                             const api::apps::v1::DeploymentStatus& s) {
  const Clock::Duration never{-1};
  const auto* cur = getDeploymentCondition(d.status, "Progressing");
  if (!hasProgressDeadline(d) || !cur) return never;
  if (deploymentComplete(d, s) || cur->reason == kTimedOutReason) return never;
  // lastUpdateTime + progressDeadlineSeconds - now, at the clock's precision.
  const auto deadline = std::chrono::system_clock::time_point(
      std::chrono::seconds(cur->lastUpdateTime.unixSeconds + *d.spec.progressDeadlineSeconds));
  const auto after = std::chrono::duration_cast<Clock::Duration>(deadline - clock_.wallNow());
  const std::string key = d.metadata.namespace_ + "/" + d.metadata.name;
  if (after < std::chrono::seconds(1)) {
    KLOG_V(4, "\"Queueing up deployment for a progress check now\" deployment=\"" + key + "\"");
    base_.queue().addRateLimited(key);
    return Clock::Duration::zero();
  }
  KLOG_V(4, "\"Queueing up deployment for a progress check\" deployment=\"" + key + "\" queueAfter=" +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(after).count()));
  // A second more so the check does not land a hair before the deadline.
  base_.enqueueAfter(key, after + std::chrono::seconds(1));
  return after;
}

}  // namespace kcm::controllers
