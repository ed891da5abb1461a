// Finalizer-based tracking: finished pods into uncountedTerminatedPods, finalizers off, counters up, and the
// Job's end conditions once nothing is left uncounted or terminating.
#include "controllers/job/job_sync.h"

#include <atomic>

#include <nlohmann/json.hpp>

#include "api/gen/batch_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/labels.h"
#include "api/support/wall_time.h"
#include "base/executor.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/job/job_metrics.h"

namespace kcm::controllers::job {

using api::meta::v1::OwnerReference;
using namespace std::chrono_literals;

namespace {

std::vector<api::String> filterInUncountedUIDs(const std::vector<api::String>& uncounted,
                                               const std::set<std::string>& include) {
  std::vector<api::String> out;
  for (const auto& u : uncounted)
    if (include.count(u)) out.push_back(u);
  return out;
}

// Moves the UIDs whose finalizer is gone from uncountedTerminatedPods into the counters. True when it changed.
bool cleanUncountedPodsWithoutFinalizers(api::batch::v1::JobStatus& status, const std::set<std::string>& withFinalizer) {
  bool updated = false;
  auto& u = *status.uncountedTerminatedPods;
  auto succ = filterInUncountedUIDs(u.succeeded, withFinalizer);
  if (succ.size() != u.succeeded.size()) {
    updated = true;
    status.succeeded += static_cast<int32_t>(u.succeeded.size() - succ.size());
    u.succeeded = std::move(succ);
  }
  auto fail = filterInUncountedUIDs(u.failed, withFinalizer);
  if (fail.size() != u.failed.size()) {
    updated = true;
    status.failed += static_cast<int32_t>(u.failed.size() - fail.size());
    u.failed = std::move(fail);
  }
  return updated;
}

int indexesCount(const std::optional<std::string>& s, int completions) {
  return s ? OrderedIntervals::parse(*s, completions).total() : 0;
}

std::string backoffLimitMetricsLabel(const Job& j) { return hasBackoffLimitPerIndex(j) ? "perIndex" : "global"; }

void recordJobPodFinished(const Job& j, const api::batch::v1::JobStatus& old) {
  const std::string mode = completionModeStr(j);
  int diff = 0;
  if (isIndexedJob(j)) {
    const int completions = j.spec.completions.value_or(0);
    if (j.status.completedIndexes != old.completedIndexes)
      diff = indexesCount(j.status.completedIndexes, completions) - indexesCount(old.completedIndexes, completions);
    metrics::finishedIndexes("succeeded", backoffLimitMetricsLabel(j), diff);
    if (hasBackoffLimitPerIndex(j) && j.status.failedIndexes != old.failedIndexes)
      if (int failedDiff = indexesCount(j.status.failedIndexes, completions) - indexesCount(old.failedIndexes, completions);
          failedDiff > 0)
        metrics::finishedIndexes("failed", backoffLimitMetricsLabel(j), failedDiff);
  } else {
    diff = j.status.succeeded - old.succeeded;
  }
  metrics::podsFinished(mode, "succeeded", diff);
  metrics::podsFinished(mode, "failed", j.status.failed - old.failed);
}

}  // namespace

Status JobController::trackJobStatusAndRemoveFinalizers(SyncCtx& ctx, bool needsFlush) {
  Job& job = *ctx.job;
  const bool isIndexed = isIndexedJob(job);
  const int completions = job.spec.completions.value_or(0);
  std::vector<PodPtr> podsToRemoveFinalizer;
  auto& uncounted = *job.status.uncountedTerminatedPods;
  std::vector<int> newSucceededIndexes;
  if (isIndexed) sortByCompletionIndex(ctx.pods);
  std::set<std::string> uidsWithFinalizer;
  for (const auto& p : ctx.pods)
    if (hasJobTrackingFinalizer(*p) && !ctx.expectedRmFinalizers.count(p->metadata.uid))
      uidsWithFinalizer.insert(p->metadata.uid);

  api::batch::v1::JobStatus oldCounters = job.status;
  if (cleanUncountedPodsWithoutFinalizers(job.status, uidsWithFinalizer)) needsFlush = true;
  std::map<std::string, int> podFailureCountByPolicyAction;
  bool reachedMaxUncountedPods = false;
  for (const auto& pod : ctx.pods) {
    if (!hasJobTrackingFinalizer(*pod) || ctx.expectedRmFinalizers.count(pod->metadata.uid)) continue;
    const bool considerPodFailed = isPodFailed(*pod, job);
    // canRemoveFinalizer
    bool canRemove = job.metadata.deletionTimestamp || ctx.finishedCondition || pod->status.phase == "Succeeded";
    if (!canRemove && considerPodFailed) {
      canRemove = true;
      if (hasBackoffLimitPerIndex(job))
        if (int ix = getCompletionIndex(pod->metadata.annotations); ix != kUnknownCompletionIndex) {
          auto it = ctx.podsWithDelayedDeletionPerIndex.find(ix);
          if (it != ctx.podsWithDelayedDeletionPerIndex.end() && it->second->metadata.uid == pod->metadata.uid) {
            KLOG_V(3, "\"Delaying pod finalizer removal to await for pod recreation within the index\" pod=" +
                          log::quote(podKey(*pod)));
            canRemove = false;
          }
        }
    }
    if (!canRemove) continue;
    podsToRemoveFinalizer.push_back(pod);
    const std::string& uid = pod->metadata.uid;
    if (pod->status.phase == "Succeeded" && !ctx.uncountedFailed.count(uid)) {
      if (isIndexed) {
        int ix = getCompletionIndex(pod->metadata.annotations);
        if (ix != kUnknownCompletionIndex && ix < completions && !ctx.prevSucceededIndexes.has(ix)) {
          newSucceededIndexes.push_back(ix);
          needsFlush = true;
        }
      } else if (!ctx.uncountedSucceeded.count(uid)) {
        needsFlush = true;
        uncounted.succeeded.push_back(uid);
      }
    } else if (considerPodFailed || (ctx.finishedCondition && !isSuccessCriteriaMetCondition(ctx.finishedCondition))) {
      // A finished Job counts every pod that did not succeed as failed.
      int ix = getCompletionIndex(pod->metadata.annotations);
      if (!ctx.uncountedFailed.count(uid) && (!isIndexed || (ix != kUnknownCompletionIndex && ix < completions))) {
        if (job.spec.podFailurePolicy) {
          auto m = matchPodFailurePolicy(job.spec.podFailurePolicy.operator->(), *pod);
          if (m.action) ++podFailureCountByPolicyAction[*m.action];
          if (m.countFailed) {
            needsFlush = true;
            uncounted.failed.push_back(uid);
          }
        } else {
          needsFlush = true;
          uncounted.failed.push_back(uid);
        }
      }
    }
    if (static_cast<int>(newSucceededIndexes.size() + uncounted.succeeded.size() + uncounted.failed.size()) >=
        opts_.maxUncountedPods) {
      // Keep the status small and this sync short: the pod and status updates bring the Job back.
      reachedMaxUncountedPods = true;
      break;
    }
  }
  if (isIndexed) {
    std::sort(newSucceededIndexes.begin(), newSucceededIndexes.end());
    ctx.succeededIndexes = ctx.succeededIndexes.withOrderedIndexes(newSucceededIndexes);
    const std::string s = ctx.succeededIndexes.toString();
    if (s != job.status.completedIndexes) needsFlush = true;
    job.status.succeeded = ctx.succeededIndexes.total();
    job.status.completedIndexes = s;
    std::optional<std::string> failedStr;
    if (ctx.failedIndexes) failedStr = ctx.failedIndexes->toString();
    if (job.status.failedIndexes != failedStr) {
      job.status.failedIndexes = failedStr;
      needsFlush = true;
    }
  }
  if (ctx.finishedCondition && ctx.finishedCondition->type == "FailureTarget") {
    // The interim condition goes out before the finalizers are removed; Failed follows once they are.
    job.status.conditions.push_back(*ctx.finishedCondition);
    needsFlush = true;
    ctx.finishedCondition = newCondition("Failed", "True", ctx.finishedCondition->reason,
                                         ctx.finishedCondition->message, now());
  }
  if (isSuccessCriteriaMetCondition(ctx.finishedCondition)) {
    if (!hasSuccessCriteriaMetCondition(job)) {
      job.status.conditions.push_back(*ctx.finishedCondition);
      needsFlush = true;
    }
    ctx.finishedCondition = newCondition("Complete", "True", ctx.finishedCondition->reason,
                                         ctx.finishedCondition->message, now());
  }
  if (Status s = flushUncountedAndRemoveFinalizers(ctx, podsToRemoveFinalizer, uidsWithFinalizer, oldCounters,
                                                   podFailureCountByPolicyAction, needsFlush);
      !s.ok())
    return s;
  const bool jobFinished = !reachedMaxUncountedPods && enactJobFinished(ctx);
  if (jobFinished) needsFlush = true;
  if (needsFlush) {
    auto updated = updateJobStatus(job);
    if (!updated.ok())
      return Status(updated.status().code(), "removing uncounted pods from status: " + updated.status().message());
    if (jobFinished) {
      recordJobFinished(job, *ctx.finishedCondition);
      std::lock_guard l(finishedMu_);
      finishedJobExpectations_.insert(job.metadata.uid);
    }
    recordJobPodFinished(job, oldCounters);
  }
  return Status::Ok();
}

Status JobController::flushUncountedAndRemoveFinalizers(SyncCtx& ctx, const std::vector<PodPtr>& podsToRemoveFinalizer,
                                                        std::set<std::string>& uidsWithFinalizer,
                                                        api::batch::v1::JobStatus& oldCounters,
                                                        const std::map<std::string, int>& byAction, bool& needsFlush) {
  Job& job = *ctx.job;
  if (needsFlush) {
    auto updated = updateJobStatus(job);
    if (!updated.ok())
      return Status(updated.status().code(), "adding uncounted pods to status: " + updated.status().message());
    job = std::move(updated).value();
    if (!job.status.uncountedTerminatedPods) job.status.uncountedTerminatedPods.emplace();
    podBackoffStore_.updateBackoffRecord(ctx.newBackoffRecord);
    recordJobPodFinished(job, oldCounters);
    oldCounters = job.status;
    needsFlush = false;
  }
  for (const auto& [a, n] : byAction) metrics::podFailureHandledByPolicy(a, n);
  Status rmErr;
  if (!podsToRemoveFinalizer.empty()) {
    auto [ok, err] = removeTrackingFinalizerFromPods(keyOf(job.metadata), podsToRemoveFinalizer);
    rmErr = err;
    for (size_t i = 0; i < podsToRemoveFinalizer.size(); ++i)
      if (ok[i]) uidsWithFinalizer.erase(podsToRemoveFinalizer[i]->metadata.uid);
  }
  // Some removals failed: write the partial progress.
  if (cleanUncountedPodsWithoutFinalizers(job.status, uidsWithFinalizer)) needsFlush = true;
  if (!rmErr.ok() && needsFlush) {
    auto updated = updateJobStatus(job);
    if (!updated.ok())
      return Status(updated.status().code(), "removing uncounted pods from status: " + updated.status().message());
  }
  return rmErr;
}

std::pair<std::vector<bool>, Status> JobController::removeTrackingFinalizerFromPods(const std::string& jobKey,
                                                                                    const std::vector<PodPtr>& pods) {
  std::vector<bool> succeeded(pods.size(), false);
  std::vector<std::string> uids;
  for (const auto& p : pods) uids.push_back(p->metadata.uid);
  finalizerExpectations_.expectFinalizersRemoved(jobKey, uids);
  std::vector<Status> errs(pods.size());
  std::vector<char> done(pods.size(), 0);
  parallelFor(pods.size(), kWritesInFlight, [&](size_t i) {
    const Pod& pod = *pods[i];
    auto patch = removeTrackingFinalizerPatch(pod);
    if (!patch) return;
    Status s = podControl_.patchPod(pod.metadata.namespace_, pod.metadata.name, *patch);
    if (!s.ok()) {
      // No update will show the finalizer gone.
      finalizerExpectations_.finalizerRemovalObserved(jobKey, pod.metadata.uid);
      if (s.code() != StatusCode::kNotFound) {
        KLOG_ERROR("\"removing tracking finalizer\" err=" + log::quote(s.message()));
        errs[i] = std::move(s);
        return;
      }
    }
    done[i] = 1;
  });
  for (size_t i = 0; i < pods.size(); ++i) succeeded[i] = done[i] != 0;
  return {succeeded, firstError(errs)};
}

bool JobController::enactJobFinished(SyncCtx& ctx) {
  if (!ctx.finishedCondition) return false;
  Job& job = *ctx.job;
  const std::string key = keyOf(job.metadata);
  if (const auto& u = job.status.uncountedTerminatedPods) {
    if (size_t n = u->succeeded.size() + u->failed.size(); n > 0) {
      KLOG_V(4, "\"Delaying marking the Job as finished, because there are still uncounted pod(s)\" job=" +
                    log::quote(key) + " condition=" + log::quote(ctx.finishedCondition->type) +
                    " count=" + std::to_string(n));
      return false;
    }
  }
  if (ctx.terminating > 0) {
    KLOG_V(4, "\"Delaying marking the Job as finished, because there are still terminating pod(s)\" job=" +
                  log::quote(key) + " condition=" + log::quote(ctx.finishedCondition->type) +
                  " count=" + std::to_string(ctx.terminating));
    return false;
  }
  const JobCondition& c = *ctx.finishedCondition;
  ensureJobConditionStatus(job.status.conditions, c.type, c.status, c.reason, c.message, now());
  if (c.type == "Complete") job.status.completionTime = c.lastTransitionTime;
  return true;
}

void JobController::recordJobFinished(const Job& j, const JobCondition& c) {
  const std::string mode = completionModeStr(j);
  if (c.type == "Complete") {
    if (j.spec.completions && j.status.succeeded > *j.spec.completions)
      recorder_->event(ref(j), client::kEventTypeWarning, "TooManySucceededPods",
                       "Too many succeeded pods running after completion count reached");
    recorder_->event(ref(j), client::kEventTypeNormal, "Completed", "Job completed");
    metrics::jobFinished(mode, "succeeded", c.reason);
  } else {
    recorder_->event(ref(j), client::kEventTypeWarning, c.reason, c.message);
    metrics::jobFinished(mode, "failed", c.reason);
  }
}

Result<Job> JobController::updateJobStatus(const Job& j) {
  auto r = client::updateStatus(*client_, j);
  if (!r.ok()) return r.status();
  consistency_.wroteAt(keyOf(j.metadata), j.metadata.uid, "jobs", r->metadata.resourceVersion);
  return r;
}

}  // namespace kcm::controllers::job
