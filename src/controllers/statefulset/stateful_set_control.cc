// The statefulset controller's update loop and pod control (upstream stateful_set_control.go,
// stateful_pod_control.go and stateful_set_status_updater.go).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/statefulset/stateful_set.h"

namespace kcm::controllers::statefulset {

namespace {
constexpr int kMaxBatchSize = 500;
constexpr int kRetries = 5;  // retry.DefaultRetry / DefaultBackoff steps, without the sleeps

std::string title(const std::string& verb) {
  std::string t = verb;
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return t;
}

// Upstream's slowStartBatch: batches 1, 2, 4, ... (at most 500) run concurrently; stops after a batch with errors.
Status slowStart(size_t count, const std::function<Status(size_t)>& fn) {
  size_t next = 0;
  for (size_t batch = std::min<size_t>(count, 1); batch > 0;) {
    std::vector<Status> results(batch);
    parallelFor(batch, batch, [&](size_t i) { results[i] = fn(next + i); });
    next += batch;
    std::string msg;
    Status first;
    for (auto& r : results)
      if (!r.ok()) {
        if (first.ok()) first = r;
        msg += (msg.empty() ? "" : ", ") + r.message();
      }
    if (!first.ok()) return Status(first.code(), msg);
    batch = std::min<size_t>({2 * batch, count - next, static_cast<size_t>(kMaxBatchSize)});
  }
  return Status::Ok();
}

void computeStatus(StatefulSetStatus& status, int32_t minReadySeconds, const std::string& currentRevision,
                   const std::string& updateRevision, WallTime now,
                   std::initializer_list<const std::vector<PodPtr>*> lists) {
  status.replicas = status.readyReplicas = status.availableReplicas = status.currentReplicas =
      status.updatedReplicas = 0;
  for (const auto* list : lists)
    for (const auto& pod : *list) {
      if (!pod) continue;
      if (isCreated(*pod)) ++status.replicas;
      if (isRunningAndReady(*pod)) {
        ++status.readyReplicas;
        if (isRunningAndAvailable(*pod, minReadySeconds, now)) ++status.availableReplicas;
      }
      if (isCreated(*pod) && !isTerminating(*pod)) {
        const std::string rev = getPodRevision(*pod);
        if (rev == currentRevision) ++status.currentReplicas;
        if (rev == updateRevision) ++status.updatedReplicas;
      }
    }
}
}  // namespace

// ---------------------------------------------------------------- pod control

void StatefulSetController::recordPodEvent(const std::string& verb, const StatefulSet& set, const Pod& pod,
                                           const Status& err) {
  if (err.ok())
    recorder_->event(ref(set), client::kEventTypeNormal, "Successful" + title(verb),
                     title(verb) + " Pod " + pod.metadata.name + " in StatefulSet " + set.metadata.name + " successful");
  else
    recorder_->event(ref(set), client::kEventTypeWarning, "Failed" + title(verb),
                     title(verb) + " Pod " + pod.metadata.name + " in StatefulSet " + set.metadata.name +
                         " failed error: " + err.message());
}

void StatefulSetController::recordClaimEvent(const std::string& verb, const StatefulSet& set, const Pod& pod,
                                             const std::string& claim, const Status& err) {
  if (err.ok())
    recorder_->event(ref(set), client::kEventTypeNormal, "Successful" + title(verb),
                     title(verb) + " Claim " + claim + " Pod " + pod.metadata.name + " in StatefulSet " +
                         set.metadata.name + " success");
  else
    recorder_->event(ref(set), client::kEventTypeWarning, "Failed" + title(verb),
                     title(verb) + " Claim " + claim + " for Pod " + pod.metadata.name + " in StatefulSet " +
                         set.metadata.name + " failed error: " + err.message());
}

Status StatefulSetController::createPersistentVolumeClaims(const StatefulSet& set, const Pod& pod) {
  std::vector<std::string> errs;
  StatusCode code = StatusCode::kOk;
  for (auto& [tmplName, claim] : getPersistentVolumeClaims(set, pod)) {
    auto existing = claims_.store().get(claim.metadata.namespace_, claim.metadata.name);
    if (!existing) {
      auto created = client::create(*client_, claim.metadata.namespace_, claim);
      Status s = created.ok() ? Status::Ok() : created.status();
      if (created.ok()) {
        consistency_.wroteAt(key(set.metadata), set.metadata.uid, "persistentvolumeclaims",
                             created->metadata.resourceVersion);
      } else {
        errs.push_back("failed to create PVC " + claim.metadata.name + ": " + s.message());
        code = s.code();
      }
      if (s.ok() || s.code() != StatusCode::kAlreadyExists) recordClaimEvent("create", set, pod, claim.metadata.name, s);
    } else if (existing->metadata.deletionTimestamp) {
      errs.push_back("pvc " + claim.metadata.name + " is being deleted");
      code = StatusCode::kConflict;
    }
  }
  if (errs.empty()) return Status::Ok();
  std::string msg;
  for (const auto& e : errs) msg += (msg.empty() ? "" : ", ") + e;
  return Status(code, errs.size() == 1 ? msg : "[" + msg + "]");
}

Result<bool> StatefulSetController::claimsMatchRetentionPolicy(const StatefulSet& set, const Pod& pod) {
  const int ordinal = getOrdinal(pod);
  for (const auto& t : set.spec.volumeClaimTemplates) {
    auto claim = claims_.store().get(set.metadata.namespace_, getPersistentVolumeClaimName(set, t, ordinal));
    if (claim && !isClaimOwnerUpToDate(*claim, set, pod)) return false;
  }
  return true;
}

Status StatefulSetController::updatePodClaimForRetentionPolicy(const StatefulSet& set, const Pod& pod) {
  const int ordinal = getOrdinal(pod);
  for (const auto& t : set.spec.volumeClaimTemplates) {
    const std::string name = getPersistentVolumeClaimName(set, t, ordinal);
    auto claim = claims_.store().get(set.metadata.namespace_, name);
    if (!claim) continue;
    if (hasUnexpectedController(*claim, set, pod))
      recorder_->event(ref(set), client::kEventTypeWarning, "ConflictingController",
                       "PersistentVolumeClaim " + name +
                           " has a conflicting OwnerReference that acts as a manging controller, the retention "
                           "policy is ignored for this claim");
    if (isClaimOwnerUpToDate(*claim, set, pod)) continue;
    PersistentVolumeClaim updated = *claim;
    updateClaimOwnerRefForSetAndPod(updated, set, pod);
    auto r = client::update(*client_, updated);
    if (!r.ok())
      return Status(r.status().code(), "could not update claim " + name + " for delete policy ownerRefs: " +
                                           r.status().message());
    consistency_.wroteAt(key(set.metadata), set.metadata.uid, "persistentvolumeclaims", r->metadata.resourceVersion);
  }
  return Status::Ok();
}

bool StatefulSetController::podClaimIsStale(const StatefulSet& set, const Pod& pod) {
  if (getPersistentVolumeClaimRetentionPolicy(set).whenScaled == "Retain") return false;
  for (const auto& [tmplName, claim] : getPersistentVolumeClaims(set, pod)) {
    auto pvc = claims_.store().get(claim.metadata.namespace_, claim.metadata.name);
    if (!pvc) continue;
    // A claim still owned by an earlier pod of this name: wait for the garbage collector.
    for (const auto& r : pvc->metadata.ownerReferences)
      if (r.apiVersion == "v1" && r.kind == "Pod" && r.name == pod.metadata.name) {
        if (r.uid != pod.metadata.uid) return true;
        break;
      }
  }
  return false;
}

Status StatefulSetController::createMissingPersistentVolumeClaims(const StatefulSet& set, const Pod& pod) {
  if (Status s = createPersistentVolumeClaims(set, pod); !s.ok()) return s;
  if (Status s = updatePodClaimForRetentionPolicy(set, pod); !s.ok()) {
    recordPodEvent("update", set, pod, s);
    return s;
  }
  return Status::Ok();
}

Status StatefulSetController::createStatefulPod(const StatefulSet& set, const Pod& pod) {
  if (Status s = createPersistentVolumeClaims(set, pod); !s.ok()) {
    recordPodEvent("create", set, pod, s);
    return s;
  }
  auto created = client::create(*client_, pod.metadata.namespace_, pod);
  if (!created.ok() && created.status().code() == StatusCode::kAlreadyExists) return created.status();
  if (created.ok())
    consistency_.wroteAt(key(set.metadata), set.metadata.uid, "pods", created->metadata.resourceVersion);
  // The claims' owner references name the pod's UID: only known now.
  if (created.ok())
    if (Status s = updatePodClaimForRetentionPolicy(set, *created); !s.ok()) {
      recordPodEvent("update", set, pod, s);
      return s;
    }
  Status result = created.ok() ? Status::Ok() : created.status();
  recordPodEvent("create", set, pod, result);
  return result;
}

Status StatefulSetController::updateStatefulPod(const StatefulSet& set, Pod pod) {
  bool attempted = false;
  Status last;
  for (int i = 0; i < kRetries; ++i) {
    bool consistent = true;
    if (!identityMatches(set, pod)) {
      updateIdentity(set, pod);
      consistent = false;
    }
    if (!storageMatches(set, pod)) {
      updateStorage(set, pod);
      consistent = false;
      if (Status s = createPersistentVolumeClaims(set, pod); !s.ok()) {
        recordPodEvent("update", set, pod, s);
        return s;
      }
    }
    auto match = claimsMatchRetentionPolicy(set, pod);
    if (!match.ok() || !*match) {
      if (Status s = updatePodClaimForRetentionPolicy(set, pod); !s.ok()) {
        recordPodEvent("update", set, pod, s);
        return s;
      }
      consistent = false;
    }
    if (consistent) {
      last = Status::Ok();
      break;
    }
    attempted = true;
    auto r = client::update(*client_, pod);
    if (r.ok()) {
      consistency_.wroteAt(key(set.metadata), set.metadata.uid, "pods", r->metadata.resourceVersion);
      last = Status::Ok();
      break;
    }
    last = r.status();
    if (last.code() != StatusCode::kConflict) break;
    if (auto fresh = pods_.store().get(set.metadata.namespace_, pod.metadata.name)) pod = *fresh;
  }
  if (attempted) recordPodEvent("update", set, pod, last);
  return last;
}

Status StatefulSetController::deleteStatefulPod(const StatefulSet& set, const Pod& pod) {
  Status s = client::remove<Pod>(*client_, pod.metadata.namespace_, pod.metadata.name);
  if (!s.ok() && s.code() != StatusCode::kNotFound) {
    recordPodEvent("delete", set, pod, s);
    return s;
  }
  recordPodEvent("delete", set, pod, Status::Ok());
  return Status::Ok();
}

// ---------------------------------------------------------------- revisions

Result<RevisionPtr> StatefulSetController::createControllerRevision(const StatefulSet& set,
                                                                    ControllerRevision revision,
                                                                    int32_t& collisionCount) {
  for (;;) {
    const std::string hash = history::hashControllerRevision(revision.data.json, collisionCount);
    revision.metadata.name = history::controllerRevisionName(set.metadata.name, hash);
    revision.metadata.labels[history::kControllerRevisionHashLabel] = hash;
    auto created = client::create(*client_, set.metadata.namespace_, revision);
    if (created.ok()) return std::make_shared<const ControllerRevision>(std::move(created).value());
    if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
    auto existing = client::get<ControllerRevision>(*client_, set.metadata.namespace_, revision.metadata.name);
    if (!existing.ok()) return existing.status();
    if (existing->data.json == revision.data.json)
      return std::make_shared<const ControllerRevision>(std::move(existing).value());
    ++collisionCount;
  }
}

bool StatefulSetController::setMatchesLatestExistingRevision(const StatefulSet& set,
                                                             const ControllerRevision& proposed,
                                                             const ControllerRevision& latest) {
  if (!opts_.semanticRevisionComparison) return false;
  const std::string cacheKey =
      set.metadata.uid + "/" + std::to_string(set.metadata.generation) + "/" + latest.metadata.resourceVersion;
  {
    std::lock_guard l(equalityMu_);
    if (revisionEquality_.count(cacheKey)) return true;
  }
  auto latestSet = applyRevision(set, latest);
  if (!latestSet.ok()) return false;
  auto reconstructed = newRevision(*latestSet, -1, std::nullopt);
  if (!reconstructed.ok() || !history::equalRevision(proposed, *reconstructed)) return false;
  std::lock_guard l(equalityMu_);
  if (revisionEquality_.size() >= 10000) revisionEquality_.clear();
  revisionEquality_.insert(cacheKey);
  return true;
}

Status StatefulSetController::getStatefulSetRevisions(const StatefulSet& set, std::vector<RevisionPtr>& revisions,
                                                      RevisionPtr& current, RevisionPtr& update,
                                                      int32_t& collisionCount) {
  history::sortControllerRevisions(revisions);
  collisionCount = set.status.collisionCount.value_or(0);
  auto proposed = newRevision(set, nextRevision(revisions), collisionCount);
  if (!proposed.ok()) return proposed.status();
  auto equal = history::findEqualRevisions(revisions, *proposed);
  if (!equal.empty() && history::equalRevision(*revisions.back(), *equal.back())) {
    update = revisions.back();  // the newest revision is the template: nothing to do
  } else if (!equal.empty()) {
    // A template coming back (rollback): renumber its revision to be the newest.
    ControllerRevision clone = *equal.back();
    Status last;
    for (int i = 0; i < kRetries; ++i) {
      if (clone.revision == proposed->revision) break;
      clone.revision = proposed->revision;
      auto r = client::update(*client_, clone);
      if (r.ok()) {
        clone = std::move(r).value();
        last = Status::Ok();
        break;
      }
      last = r.status();
      if (last.code() != StatusCode::kConflict) return last;
      if (auto fresh = revisions_.store().get(clone.metadata.namespace_, clone.metadata.name)) clone = *fresh;
    }
    if (!last.ok()) return last;
    update = std::make_shared<const ControllerRevision>(std::move(clone));
  } else if (!revisions.empty() && setMatchesLatestExistingRevision(set, *proposed, *revisions.back())) {
    update = revisions.back();
  } else {
    auto created = createControllerRevision(set, *proposed, collisionCount);
    if (!created.ok()) return created.status();
    update = *created;
  }
  current.reset();
  for (const auto& r : revisions)
    if (r->metadata.name == set.status.currentRevision) {
      current = r;
      break;
    }
  if (!current) current = update;
  return Status::Ok();
}

Status StatefulSetController::truncateHistory(const StatefulSet& set, const std::vector<PodPtr>& pods,
                                              const std::vector<RevisionPtr>& revisions, const RevisionPtr& current,
                                              const RevisionPtr& update) {
  std::set<std::string> live;
  if (current) live.insert(current->metadata.name);
  if (update) live.insert(update->metadata.name);
  for (const auto& p : pods) live.insert(getPodRevision(*p));
  std::vector<RevisionPtr> old;
  for (const auto& r : revisions)
    if (!live.count(r->metadata.name)) old.push_back(r);
  const int limit = set.spec.revisionHistoryLimit.value_or(10);
  if (limit < 0 || static_cast<int>(old.size()) <= limit) return Status::Ok();
  old.resize(old.size() - limit);
  for (const auto& r : old)
    if (Status s = client::remove<ControllerRevision>(*client_, r->metadata.namespace_, r->metadata.name); !s.ok())
      return s;
  return Status::Ok();
}

// ---------------------------------------------------------------- the update

Result<bool> StatefulSetController::processReplica(const StatefulSet& set, const StatefulSet& updateSet,
                                                   bool monotonic, std::vector<PodPtr>& replicas, size_t i,
                                                   WallTime now) {
  const Pod& pod = *replicas[i];
  if (isTerminalPhase(pod)) {
    // Failed or succeeded: delete it; a later sync creates the replacement.
    if (!pod.metadata.deletionTimestamp)
      if (Status s = deleteStatefulPod(set, pod); !s.ok()) return s;
    return true;
  }
  if (!isCreated(pod)) {
    if (podClaimIsStale(set, pod)) {
      KLOG_V(4, "\"Pod is waiting for the PVC of a previous pod to be cleaned up\" pod=\"" + podKey(pod) + "\"");
      return true;
    }
    if (Status s = createStatefulPod(set, pod); !s.ok()) return s;
    if (monotonic) return true;  // one pod at a time
  }
  if (isPending(pod))
    if (Status s = createMissingPersistentVolumeClaims(set, pod); !s.ok()) return s;
  if (monotonic && (isTerminating(pod) || !isRunningAndReady(pod) ||
                    !isRunningAndAvailable(pod, set.spec.minReadySeconds, now))) {
    KLOG_V(4, "\"StatefulSet is waiting for Pod\" statefulSet=\"" + key(set.metadata) + "\" pod=\"" + podKey(pod) + "\"");
    return true;
  }
  auto retention = claimsMatchRetentionPolicy(updateSet, pod);
  const bool retentionMatch = !retention.ok() || *retention;
  if (identityMatches(set, pod) && storageMatches(set, pod) && retentionMatch) return false;
  if (Status s = updateStatefulPod(updateSet, pod); !s.ok()) return s;
  return false;
}

Result<bool> StatefulSetController::processCondemned(const StatefulSet& set, const Pod* firstUnhealthy,
                                                     bool monotonic, const std::vector<PodPtr>& condemned, size_t i,
                                                     WallTime now) {
  const Pod& pod = *condemned[i];
  if (isTerminating(pod)) return monotonic;  // ordered: wait for it to go
  if (monotonic && &pod != firstUnhealthy &&
      (!isRunningAndReady(pod) || !isRunningAndAvailable(pod, set.spec.minReadySeconds, now)))
    return true;
  if (Status s = deleteStatefulPod(set, pod); !s.ok()) return s;
  return true;
}

Status StatefulSetController::rollingUpdateAfterInvariant(const StatefulSet& set, const std::vector<PodPtr>& replicas,
                                                          const RevisionPtr& updateRevision,
                                                          StatefulSetStatus& status, WallTime now) {
  const int replicaCount = set.spec.replicas.value_or(1);
  int updateMin = 0, maxUnavailable = 1;
  if (const auto& ru = set.spec.updateStrategy.rollingUpdate) {
    updateMin = ru->partition.value_or(0);
    auto m = getStatefulSetMaxUnavailable(ru->maxUnavailable, replicaCount);
    if (!m.ok()) return m.status();
    maxUnavailable = *m;
  }
  const bool parallel = set.spec.podManagementPolicy == "Parallel";
  int unavailablePods = 0, unavailableNeedingUpdate = 0;
  for (int t = static_cast<int>(replicas.size()) - 1; t >= 0; --t) {
    const Pod& pod = *replicas[t];
    if (!isUnavailable(pod, set.spec.minReadySeconds, now)) continue;
    ++unavailablePods;
    if (parallel && getPodRevision(pod) != updateRevision->metadata.name && !isTerminating(pod))
      ++unavailableNeedingUpdate;
  }
  kcm::metrics::Registry::global()
      .gauge("statefulset_controller_statefulset_unavailable_replicas",
             "Current number of unavailable pods in StatefulSet",
             {{"pod_management_policy", set.spec.podManagementPolicy}, {"statefulset_name", set.metadata.name},
              {"statefulset_namespace", set.metadata.namespace_}})
      .set(unavailablePods);
  if (unavailablePods >= maxUnavailable && unavailableNeedingUpdate == 0) return Status::Ok();
  auto needsUpdate = [&](const Pod& p) { return getPodRevision(p) != updateRevision->metadata.name; };
  if (parallel) {
    for (int t = static_cast<int>(replicas.size()) - 1; t >= updateMin; --t) {
      const Pod& pod = *replicas[t];
      if (needsUpdate(pod) && !isRunningAndAvailable(pod, set.spec.minReadySeconds, now) && !isTerminating(pod)) {
        if (Status s = deleteStatefulPod(set, pod); !s.ok()) return s;
        --status.currentReplicas;
      }
    }
    int budget = maxUnavailable - unavailablePods;
    for (int t = static_cast<int>(replicas.size()) - 1; t >= updateMin && budget > 0; --t) {
      const Pod& pod = *replicas[t];
      if (needsUpdate(pod) && !isUnavailable(pod, set.spec.minReadySeconds, now)) {
        if (Status s = deleteStatefulPod(set, pod); !s.ok()) return s;
        --budget;
        --status.currentReplicas;
      }
    }
    return Status::Ok();
  }
  const int toDelete = maxUnavailable - unavailablePods;
  int deleted = 0;
  for (int t = static_cast<int>(replicas.size()) - 1; t >= updateMin && deleted < toDelete; --t) {
    const Pod& pod = *replicas[t];
    if (needsUpdate(pod) && !isTerminating(pod)) {
      if (Status s = deleteStatefulPod(set, pod); !s.ok()) return s;
      ++deleted;
      --status.currentReplicas;
    }
  }
  return Status::Ok();
}

Status StatefulSetController::updatePods(const StatefulSet& set, const RevisionPtr& currentRevision,
                                        const RevisionPtr& updateRevision, int32_t collisionCount,
                                        const std::vector<PodPtr>& pods, WallTime now,
                                        std::optional<StatefulSetStatus>& out) {
  auto currentSet = applyRevision(set, *currentRevision);
  if (!currentSet.ok()) return currentSet.status();
  auto updateSet = applyRevision(set, *updateRevision);
  if (!updateSet.ok()) return updateSet.status();
  if (set.spec.updateStrategy.type == "Recreate") {
    const std::string msg = "statefulset " + key(set.metadata) +
                            " uses Recreate strategy but feature gate StatefulSetRecreateStrategy is disabled";
    recorder_->event(ref(set), client::kEventTypeWarning, "UnknownStrategy", msg);
    return Status(StatusCode::kInvalidArgument, msg);
  }
  StatefulSetStatus& status = out.emplace();
  status.observedGeneration = set.metadata.generation;
  status.currentRevision = currentRevision->metadata.name;
  status.updateRevision = updateRevision->metadata.name;
  status.collisionCount = collisionCount;
  status.conditions = set.status.conditions;
  const std::string& cur = currentRevision->metadata.name;
  const std::string& upd = updateRevision->metadata.name;
  const int32_t minReady = set.spec.minReadySeconds;
  computeStatus(status, minReady, cur, upd, now, {&pods});

  const int replicaCount = set.spec.replicas.value_or(1);
  std::vector<PodPtr> replicas(replicaCount), condemned;
  const int start = getStartOrdinal(set);
  for (const auto& pod : pods) {
    if (podInOrdinalRange(*pod, set)) replicas[getOrdinal(*pod) - start] = pod;
    else if (getOrdinal(*pod) >= 0) condemned.push_back(pod);
  }
  for (int ord = start; ord <= getEndOrdinal(set); ++ord)
    if (!replicas[ord - start])
      replicas[ord - start] = std::make_shared<const Pod>(newVersionedStatefulSetPod(*currentSet, *updateSet, cur, upd, ord));
  std::sort(condemned.begin(), condemned.end(), [](const PodPtr& a, const PodPtr& b) { return getOrdinal(*a) > getOrdinal(*b); });
  const Pod* firstUnhealthy = nullptr;
  for (const auto& p : replicas)
    if (isUnavailable(*p, minReady, now) && !firstUnhealthy) firstUnhealthy = p.get();
  for (auto it = condemned.rbegin(); it != condemned.rend(); ++it)
    if (isUnavailable(**it, minReady, now) && !firstUnhealthy) firstUnhealthy = it->get();
  if (set.metadata.deletionTimestamp) return Status::Ok();

  const bool monotonic = !allowsBurst(set);
  auto finish = [&](Status s) {
    computeStatus(status, minReady, cur, upd, now, {&replicas, &condemned});
    return s;
  };
  // runForAll: in order, stopping at the first that says so (OrderedReady), or slow-start batches (Parallel).
  auto runForAll = [&](size_t n, const std::function<Result<bool>(size_t)>& fn, bool& exit) -> Status {
    exit = false;
    if (monotonic) {
      for (size_t i = 0; i < n; ++i) {
        auto r = fn(i);
        if (!r.ok()) {
          exit = true;
          return r.status();
        }
        if (*r) {
          exit = true;
          return Status::Ok();
        }
      }
      return Status::Ok();
    }
    Status s = slowStart(n, [&](size_t i) { auto r = fn(i); return r.ok() ? Status::Ok() : r.status(); });
    exit = !s.ok();
    return s;
  };
  bool exit = false;
  Status s = runForAll(replicas.size(), [&](size_t i) { return processReplica(set, *updateSet, monotonic, replicas, i, now); }, exit);
  if (exit || !s.ok()) return finish(s);
  s = runForAll(condemned.size(), [&](size_t i) -> Result<bool> {
    auto match = claimsMatchRetentionPolicy(*updateSet, *condemned[i]);
    if (!match.ok()) return match.status();
    if (!*match)
      if (Status u = updatePodClaimForRetentionPolicy(*updateSet, *condemned[i]); !u.ok()) return u;
    return false;
  }, exit);
  if (exit || !s.ok()) return finish(s);
  s = runForAll(condemned.size(), [&](size_t i) { return processCondemned(set, firstUnhealthy, monotonic, condemned, i, now); }, exit);
  if (exit || !s.ok()) return finish(s);
  computeStatus(status, minReady, cur, upd, now, {&replicas, &condemned});
  if (set.spec.updateStrategy.type == "OnDelete") return Status::Ok();
  if (opts_.maxUnavailable) return rollingUpdateAfterInvariant(set, replicas, updateRevision, status, now);
  const int updateMin = set.spec.updateStrategy.rollingUpdate ? set.spec.updateStrategy.rollingUpdate->partition.value_or(0) : 0;
  for (int t = static_cast<int>(replicas.size()) - 1; t >= updateMin; --t) {
    const Pod& pod = *replicas[t];
    if (getPodRevision(pod) != upd && !isTerminating(pod)) {
      Status d = deleteStatefulPod(set, pod);
      if (d.ok()) --status.currentReplicas;
      return d;
    }
    if (isUnavailable(pod, minReady, now)) return Status::Ok();
  }
  return Status::Ok();
}

Status StatefulSetController::updateStatefulSetStatus(const StatefulSet& set, StatefulSetStatus status) {
  completeUpdate(set, status);
  if (opts_.maxUnavailable) {
    int maxUnavailable = 1;
    if (const auto& ru = set.spec.updateStrategy.rollingUpdate) {
      auto m = getStatefulSetMaxUnavailable(ru->maxUnavailable, set.spec.replicas.value_or(1));
      if (!m.ok()) return m.status();
      maxUnavailable = *m;
    }
    kcm::metrics::Registry::global()
        .gauge("statefulset_controller_statefulset_max_unavailable",
               "Maximum number of unavailable pods allowed during StatefulSet rolling updates",
               {{"pod_management_policy", set.spec.podManagementPolicy}, {"statefulset_name", set.metadata.name},
                {"statefulset_namespace", set.metadata.namespace_}})
        .set(maxUnavailable);
  }
  if (!inconsistentStatus(set, status)) return Status::Ok();
  StatefulSet toUpdate = set;
  Status last;
  for (int i = 0; i < kRetries; ++i) {
    toUpdate.status = status;
    auto r = client::updateStatus(*client_, toUpdate);
    if (r.ok()) {
      consistency_.wroteAt(key(set.metadata), r->metadata.uid, "statefulsets", r->metadata.resourceVersion);
      return Status::Ok();
    }
    last = r.status();
    if (last.code() != StatusCode::kConflict) return last;
    if (auto fresh = sets_.store().get(set.metadata.namespace_, set.metadata.name)) toUpdate = *fresh;
  }
  return last;
}

Result<StatefulSetStatus> StatefulSetController::updateStatefulSet(const StatefulSet& set,
                                                                  const std::vector<PodPtr>& pods, WallTime now) {
  std::vector<RevisionPtr> revisions = listRevisions(set);
  history::sortControllerRevisions(revisions);
  RevisionPtr current, update;
  int32_t collisionCount = 0;
  Status err = getStatefulSetRevisions(set, revisions, current, update, collisionCount);
  std::optional<StatefulSetStatus> status;
  if (err.ok()) err = updatePods(set, current, update, collisionCount, pods, now, status);
  // The status is written even when the pods' update failed part way (upstream performUpdate).
  Status statusErr;
  if (status) statusErr = updateStatefulSetStatus(set, *status);
  Status truncErr = truncateHistory(set, pods, revisions, current, update);
  if (!err.ok()) return err;
  if (!statusErr.ok()) return statusErr;
  if (!truncErr.ok()) return truncErr;
  if (!status) return StatefulSetStatus{};
  return *status;
}

}  // namespace kcm::controllers::statefulset
