// The parts of deployment-controller shared by every strategy (upstream sync.go).
#include "api/gen/apps_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/deployment/deployment_controller.h"

namespace kcm::controllers {

using namespace deploymentutil;

namespace {
constexpr size_t kMaxRevHistoryLengthInChars = 2000;
}

std::vector<DeploymentController::RSPtr> DeploymentController::AllRSs::all() const {
  std::vector<RSPtr> out = oldRSs;
  out.push_back(newRS);  // may be null, as upstream's append(oldRSs, newRS)
  return out;
}

Status DeploymentController::syncStatusOnly(Deployment& d, const std::vector<RSPtr>& rss) {
  auto all = getAllReplicaSetsAndSyncRevision(d, rss, false);
  if (!all.ok()) return all.status();
  return syncDeploymentStatus(all->all(), all->newRS, d);
}

// Scaling (paused deployments and scaling events): no new ReplicaSet is created.
Status DeploymentController::sync(Deployment& d, const std::vector<RSPtr>& rss) {
  auto all = getAllReplicaSetsAndSyncRevision(d, rss, false);
  if (!all.ok()) return all.status();
  if (Status s = scale(d, all->newRS, all->oldRSs); !s.ok()) return s;
  if (d.spec.paused && !getRollbackTo(d))
    if (Status s = cleanupDeployment(all->oldRSs, d); !s.ok()) return s;
  return syncDeploymentStatus(all->all(), all->newRS, d);
}

Status DeploymentController::checkPausedConditions(Deployment& d) {
  if (!hasProgressDeadline(d)) return Status::Ok();
  const auto* cond = getDeploymentCondition(d.status, "Progressing");
  if (cond && cond->reason == kTimedOutReason) return Status::Ok();
  const bool pausedCondExists = cond && cond->reason == kPausedDeployReason;
  if (d.spec.paused && !pausedCondExists) {
    setDeploymentCondition(d.status, newDeploymentCondition(clock_, "Progressing", "Unknown", kPausedDeployReason,
                                                            "Deployment is paused"));
  } else if (!d.spec.paused && pausedCondExists) {
    setDeploymentCondition(d.status, newDeploymentCondition(clock_, "Progressing", "Unknown", kResumedDeployReason,
                                                            "Deployment is resumed"));
  } else {
    return Status::Ok();
  }
  return updateStatus(d);
}

Result<DeploymentController::AllRSs> DeploymentController::getAllReplicaSetsAndSyncRevision(
    Deployment& d, const std::vector<RSPtr>& rss, bool create) {
  AllRSs out;
  out.oldRSs = findOldReplicaSets(d, rss);
  auto n = getNewReplicaSet(d, rss, out.oldRSs, create);
  if (!n.ok()) return n.status();
  out.newRS = *n;
  return out;
}

Result<DeploymentController::RSPtr> DeploymentController::getNewReplicaSet(Deployment& d, const std::vector<RSPtr>& rss,
                                                                           const std::vector<RSPtr>& oldRSs,
                                                                           bool create) {
  RSPtr existing = findNewReplicaSet(d, rss);
  const std::string newRevision = std::to_string(maxRevision(oldRSs) + 1);
  if (existing) {
    ReplicaSet copy = *existing;
    const bool annotationsUpdated = setNewReplicaSetAnnotations(d, copy, newRevision, true, kMaxRevHistoryLengthInChars);
    const bool minReadyUpdate = copy.spec.minReadySeconds != d.spec.minReadySeconds;
    if (annotationsUpdated || minReadyUpdate) {
      copy.spec.minReadySeconds = d.spec.minReadySeconds;
      return updateReplicaSet(copy);
    }
    std::string rev;
    if (auto it = copy.metadata.annotations.find(kRevisionAnnotation); it != copy.metadata.annotations.end())
      rev = it->second;
    bool needsUpdate = setDeploymentRevision(d, rev);
    if (hasProgressDeadline(d) && !getDeploymentCondition(d.status, "Progressing")) {
      setDeploymentCondition(d.status, newDeploymentCondition(clock_, "Progressing", "True", kFoundNewRSReason,
                                                              "Found new replica set \"" + copy.metadata.name + "\""));
      needsUpdate = true;
    }
    if (needsUpdate)
      if (Status s = updateStatus(d); !s.ok()) return s;
    return existing;
  }
  if (!create) return RSPtr();

  api::core::v1::PodTemplateSpec tmpl = d.spec.template_;
  const std::string hash = computeHash(tmpl, d.status.collisionCount);
  tmpl.metadata.labels[kDefaultDeploymentUniqueLabelKey] = hash;
  ReplicaSet rs;
  rs.metadata.name = generateReplicaSetName(d.metadata.name, hash);
  rs.metadata.namespace_ = d.metadata.namespace_;
  rs.metadata.ownerReferences.push_back(newControllerRef(d.metadata, "apps/v1", "Deployment"));
  rs.metadata.labels = tmpl.metadata.labels;
  rs.spec.replicas = 0;
  rs.spec.minReadySeconds = d.spec.minReadySeconds;
  api::meta::v1::LabelSelector sel = d.spec.selector ? *d.spec.selector : api::meta::v1::LabelSelector{};
  sel.matchLabels[kDefaultDeploymentUniqueLabelKey] = hash;
  rs.spec.selector = sel;
  rs.spec.template_ = tmpl;
  std::vector<RSPtr> all = oldRSs;
  auto newRSPtr = std::make_shared<const ReplicaSet>(rs);
  all.push_back(newRSPtr);
  const int32_t newReplicas = newRSNewReplicas(d, all, *newRSPtr);
  rs.spec.replicas = newReplicas;
  setNewReplicaSetAnnotations(d, rs, newRevision, false, kMaxRevHistoryLengthInChars);

  bool alreadyExists = false;
  RSPtr created;
  auto r = client::create(*client_, d.metadata.namespace_, rs);
  if (r.ok()) {
    created = std::make_shared<const ReplicaSet>(std::move(r).value());
  } else if (r.status().code() == StatusCode::kAlreadyExists) {
    alreadyExists = true;
    auto cur = rss_.store().get(rs.metadata.namespace_, rs.metadata.name);
    if (!cur) return Status(StatusCode::kNotFound, "replicaset " + rs.metadata.name + " not found in the cache");
    const auto* ref = getControllerOf(cur->metadata);
    if (ref && ref->uid == d.metadata.uid && equalIgnoreHash(d.spec.template_, cur->spec.template_)) {
      created = cur;
    } else {
      // A hash collision: bump collisionCount so the next sync picks another name.
      int32_t pre = d.status.collisionCount.value_or(0);
      d.status.collisionCount = pre + 1;
      if (updateStatus(d).ok())
        KLOG_V(2, "\"Found a hash collision for deployment - bumping collisionCount\" deployment=\"" +
                      d.metadata.namespace_ + "/" + d.metadata.name + "\" oldCollisionCount=" + std::to_string(pre) +
                      " newCollisionCount=" + std::to_string(pre + 1));
      return r.status();
    }
  } else if (isNamespaceTerminating(r.status())) {
    return r.status();
  } else {
    const std::string msg = "Failed to create new replica set \"" + rs.metadata.name + "\": " + r.status().message();
    if (hasProgressDeadline(d)) {
      setDeploymentCondition(d.status,
                             newDeploymentCondition(clock_, "Progressing", "False", kFailedRSCreateReason, msg));
      (void)updateStatus(d);
    }
    event(d, client::kEventTypeWarning, kFailedRSCreateReason, msg);
    return r.status();
  }
  if (!alreadyExists && newReplicas > 0)
    event(d, client::kEventTypeNormal, "ScalingReplicaSet",
          "Scaled up replica set " + created->metadata.name + " from 0 to " + std::to_string(newReplicas));
  bool needsUpdate = setDeploymentRevision(d, newRevision);
  if (!alreadyExists && hasProgressDeadline(d)) {
    const std::string msg = "Created new replica set \"" + created->metadata.name + "\"";
    setDeploymentCondition(d.status, newDeploymentCondition(clock_, "Progressing", "True", kNewReplicaSetReason, msg));
    needsUpdate = true;
  }
  if (needsUpdate)
    if (Status s = updateStatus(d); !s.ok()) return s;
  return created;
}

Status DeploymentController::scale(Deployment& d, const RSPtr& newRS, const std::vector<RSPtr>& oldRSs) {
  if (RSPtr target = findActiveOrLatest(newRS, oldRSs)) {
    if (replicas(*target) == replicas(d)) return Status::Ok();
    return scaleReplicaSet(target, replicas(d), d, false).status();
  }
  if (isSaturated(d, newRS)) {
    for (const auto& old : filterActive(oldRSs))
      if (auto r = scaleReplicaSet(old, 0, d, false); !r.ok()) return r.status();
    return Status::Ok();
  }
  if (!isRollingUpdate(d)) return Status::Ok();
  std::vector<RSPtr> all = oldRSs;
  all.push_back(newRS);
  all = filterActive(all);
  const int32_t allReplicas = getReplicaCount(all);
  const int32_t allowed = replicas(d) > 0 ? replicas(d) + maxSurge(d) : 0;
  const int32_t toAdd = allowed - allReplicas;
  if (toAdd > 0) sortBySizeNewer(all);
  else if (toAdd < 0) sortBySizeOlder(all);
  int32_t added = 0;
  std::map<std::string, int32_t> nameToSize;
  for (const auto& rs : all) {
    if (toAdd != 0) {
      int32_t p = getReplicaSetProportion(*rs, d, toAdd, added);
      nameToSize[rs->metadata.name] = replicas(*rs) + p;
      added += p;
    } else {
      nameToSize[rs->metadata.name] = replicas(*rs);
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& rs = all[i];
    if (i == 0 && toAdd != 0) nameToSize[rs->metadata.name] = std::max(0, nameToSize[rs->metadata.name] + toAdd - added);
    if (auto r = scaleReplicaSet(rs, nameToSize[rs->metadata.name], d, true); !r.ok()) return r.status();
  }
  return Status::Ok();
}

Result<DeploymentController::ScaleResult> DeploymentController::scaleReplicaSet(const RSPtr& rs, int32_t newScale,
                                                                               const Deployment& d, bool force) {
  if (!force && replicas(*rs) == newScale) return ScaleResult{false, rs};
  const bool sizeNeedsUpdate = replicas(*rs) != newScale;
  const int32_t maxReplicas = replicas(d) + maxSurge(d);
  if (!sizeNeedsUpdate && !replicasAnnotationsNeedUpdate(*rs, replicas(d), maxReplicas)) return ScaleResult{false, rs};
  const int32_t oldScale = replicas(*rs);
  ReplicaSet copy = *rs;
  copy.spec.replicas = newScale;
  setReplicasAnnotations(copy, replicas(d), maxReplicas);
  auto updated = updateReplicaSet(copy);
  if (!updated.ok()) return updated.status();
  bool scaled = false;
  if (sizeNeedsUpdate) {
    scaled = true;
    event(d, client::kEventTypeNormal, "ScalingReplicaSet",
          std::string("Scaled ") + (oldScale < newScale ? "up" : "down") + " replica set " + copy.metadata.name +
              " from " + std::to_string(oldScale) + " to " + std::to_string(newScale));
  }
  return ScaleResult{scaled, *updated};
}

Status DeploymentController::cleanupDeployment(const std::vector<RSPtr>& oldRSs, const Deployment& d) {
  if (!hasRevisionHistoryLimit(d)) return Status::Ok();
  std::vector<RSPtr> cleanable;
  for (const auto& rs : oldRSs)
    if (rs && !rs->metadata.deletionTimestamp) cleanable.push_back(rs);
  int32_t diff = static_cast<int32_t>(cleanable.size()) - *d.spec.revisionHistoryLimit;
  if (diff <= 0) return Status::Ok();
  sortByRevision(cleanable);
  KLOG_V(4, "\"Looking to cleanup old replica sets for deployment\" deployment=\"" + d.metadata.name + "\"");
  for (int32_t i = 0; i < diff; ++i) {
    const auto& rs = cleanable[i];
    if (rs->status.replicas != 0 || replicas(*rs) != 0 || rs->metadata.generation > rs->status.observedGeneration ||
        rs->metadata.deletionTimestamp)
      continue;
    KLOG_V(4, "\"Trying to cleanup replica set for deployment\" replicaSet=\"" + rs->metadata.name + "\"");
    Status s = client::remove<ReplicaSet>(*client_, rs->metadata.namespace_, rs->metadata.name);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  return Status::Ok();
}

api::apps::v1::DeploymentStatus DeploymentController::calculateStatus(const std::vector<RSPtr>& all,
                                                                      const RSPtr& newRS, const Deployment& d) const {
  const int32_t available = getAvailableReplicaCount(all);
  const int32_t total = getReplicaCount(all);
  api::apps::v1::DeploymentStatus s;
  s.observedGeneration = d.metadata.generation;
  s.replicas = getActualReplicaCount(all);
  s.updatedReplicas = getActualReplicaCount({newRS});
  s.readyReplicas = getReadyReplicaCount(all);
  s.availableReplicas = available;
  s.unavailableReplicas = std::max(0, total - available);
  s.collisionCount = d.status.collisionCount;
  if (terminatingReplicas_) s.terminatingReplicas = getTerminatingReplicaCount(all);
  s.conditions = d.status.conditions;
  if (available >= replicas(d) - maxUnavailable(d))
    setDeploymentCondition(s, newDeploymentCondition(clock_, "Available", "True", kMinimumReplicasAvailable,
                                                     "Deployment has minimum availability."));
  else
    setDeploymentCondition(s, newDeploymentCondition(clock_, "Available", "False", kMinimumReplicasUnavailable,
                                                     "Deployment does not have minimum availability."));
  return s;
}

Status DeploymentController::syncDeploymentStatus(const std::vector<RSPtr>& all, const RSPtr& newRS, Deployment& d) {
  auto s = calculateStatus(all, newRS, d);
  if (sameStatus(d.status, s)) return Status::Ok();
  d.status = std::move(s);
  return updateStatus(d);
}

Result<bool> DeploymentController::isScalingEvent(Deployment& d, const std::vector<RSPtr>& rss) {
  auto all = getAllReplicaSetsAndSyncRevision(d, rss, false);
  if (!all.ok()) return all.status();
  for (const auto& rs : filterActive(all->all())) {
    auto desired = getDesiredReplicasAnnotation(*rs);
    if (desired && *desired != replicas(d)) return true;
  }
  return false;
}

}  // namespace kcm::controllers
