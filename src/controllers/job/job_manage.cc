// manageJob and its helpers: how many pods to create or delete, which ones, and with which index.
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

std::vector<PodPtr> activePodsForRemoval(const Job& j, const std::vector<PodPtr>& pods, int rmAtLeast) {
  std::vector<PodPtr> rm, left;
  if (isIndexedJob(j)) std::tie(rm, left) = appendDuplicatedIndexPodsForRemoval(pods, j.spec.completions.value_or(0));
  else left = pods;
  if (static_cast<int>(rm.size()) < rmAtLeast) {
    sortActivePods(left);
    const size_t more = std::min(left.size(), static_cast<size_t>(rmAtLeast) - rm.size());
    rm.insert(rm.end(), left.begin(), left.begin() + static_cast<std::ptrdiff_t>(more));
  }
  return rm;
}

}  // namespace

JobController::Deleted JobController::deleteActivePods(const Job& j, const std::vector<PodPtr>& pods) {
  std::atomic<int32_t> ok{static_cast<int32_t>(pods.size())}, ready{0};
  std::vector<Status> errs(pods.size());
  const auto owner = ref(j);
  parallelFor(pods.size(), kWritesInFlight, [&](size_t i) {
    Status s = podControl_.deletePod(j.metadata.namespace_, pods[i]->metadata.name, owner);
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      --ok;
      errs[i] = s;
      KLOG_ERROR(log::quote(s.message()));
    }
    if (isPodReady(*pods[i])) ++ready;
  });
  return {ready.load(), ok.load(), firstError(errs)};
}

JobController::Deleted JobController::deleteJobPods(const Job& j, const std::string& jobKey,
                                                    const std::vector<PodPtr>& pods) {
  std::atomic<int32_t> ok{static_cast<int32_t>(pods.size())}, ready{0};
  std::vector<Status> errs(pods.size());
  const auto owner = ref(j);
  parallelFor(pods.size(), kWritesInFlight, [&](size_t i) {
    const Pod& pod = *pods[i];
    auto failDelete = [&](Status s) {
      expectations_.deletionObserved(jobKey);
      if (s.code() == StatusCode::kNotFound) return;
      KLOG_V(2, "\"Failed to delete Pod\" job=" + log::quote(jobKey) + " pod=" + log::quote(podKey(pod)) +
                    " err=" + log::quote(s.message()));
      --ok;
      errs[i] = std::move(s);
    };
    if (auto patch = removeTrackingFinalizerPatch(pod)) {
      Status s = podControl_.patchPod(pod.metadata.namespace_, pod.metadata.name, *patch);
      if (!s.ok()) {
        failDelete(Status(s.code(), "removing completion finalizer: " + s.message()));
        return;
      }
    }
    if (Status s = podControl_.deletePod(j.metadata.namespace_, pod.metadata.name, owner); !s.ok()) failDelete(s);
    if (isPodReady(pod)) ++ready;
  });
  return {ready.load(), ok.load(), firstError(errs)};
}

std::vector<int> JobController::firstPendingIndexes(const SyncCtx& ctx, int count, int completions) const {
  std::vector<int> out;
  if (count == 0) return out;
  auto active = getIndexes(ctx.activePods);
  OrderedIntervals nonPending = ctx.succeededIndexes.withOrderedIndexes({active.begin(), active.end()});
  if (onlyReplaceFailedPods(*ctx.job)) {
    std::vector<PodPtr> terminating;
    for (const auto& p : ctx.pods)
      if (isPodTerminating(*p)) terminating.push_back(p);
    auto t = getIndexes(terminating);
    nonPending = nonPending.withOrderedIndexes({t.begin(), t.end()});
  }
  if (ctx.failedIndexes) nonPending = nonPending.merge(*ctx.failedIndexes);
  int candidate = 0;
  for (const auto& iv : nonPending.intervals()) {
    for (; candidate < completions && static_cast<int>(out.size()) < count && candidate < iv.first; ++candidate)
      out.push_back(candidate);
    if (candidate < iv.last + 1) candidate = iv.last + 1;
  }
  for (; candidate < completions && static_cast<int>(out.size()) < count; ++candidate) out.push_back(candidate);
  return out;
}

std::map<int, PodPtr> JobController::getPodsWithDelayedDeletionPerIndex(const SyncCtx& ctx) const {
  // Failed pods of indexes that have an active pod can go: the replacement already carries the failure count.
  const auto activeIndexes = getIndexes(ctx.activePods);
  std::map<int, PodPtr> out;
  const int completions = ctx.job->spec.completions.value_or(0);
  for (const auto& p : ctx.validPods(nullptr, [](const Pod&) { return true; })) {
    if (!isPodFailed(*p, *ctx.job)) continue;
    int ix = getCompletionIndex(p->metadata.annotations);
    if (ix == kUnknownCompletionIndex || ix >= completions) continue;
    if (ctx.succeededIndexes.has(ix) || (ctx.failedIndexes && ctx.failedIndexes->has(ix)) || activeIndexes.count(ix))
      continue;
    auto it = out.find(ix);
    if (it == out.end()) {
      out[ix] = p;
    } else if (getIndexAbsoluteFailureCount(*it->second) <= getIndexAbsoluteFailureCount(*p) &&
               !(getFinishedTime(*p) < getFinishedTime(*it->second))) {
      it->second = p;
    }
  }
  return out;
}

std::pair<int32_t, std::string> JobController::manageJob(Job& job, SyncCtx& ctx, Status& err) {
  int32_t active = static_cast<int32_t>(ctx.activePods.size());
  const int32_t parallelism = job.spec.parallelism.value_or(1);
  const std::string jobKey = keyOf(job.metadata);

  auto removePods = [&](const std::vector<PodPtr>& podsToDelete) {
    expectations_.expectDeletions(jobKey, static_cast<int>(podsToDelete.size()));
    Deleted d = deleteJobPods(job, jobKey, podsToDelete);
    active -= d.total;
    ctx.terminating += d.total;
    ctx.ready -= d.ready;
    err = d.err;
    return std::pair<int32_t, std::string>{active, metrics::kActionPodsDeleted};
  };

  if (jobSuspended(job)) {
    KLOG_V(4, "\"Deleting all active pods in suspended job\" job=" + log::quote(jobKey) +
                  " active=" + std::to_string(active));
    return removePods(activePodsForRemoval(job, ctx.activePods, active));
  }

  int32_t wantActive = 0;
  if (!job.spec.completions) {
    // Without completions any success ends the Job: leave what runs running.
    wantActive = ctx.succeeded > 0 ? active : parallelism;
  } else {
    wantActive = std::max(0, std::min(*job.spec.completions - ctx.succeeded, parallelism));
  }

  const int32_t rmAtLeast = std::max(0, active - wantActive);
  auto podsToDelete = activePodsForRemoval(job, ctx.activePods, rmAtLeast);
  if (static_cast<int>(podsToDelete.size()) > opts_.maxPodCreateDeletePerSync)
    podsToDelete.resize(static_cast<size_t>(opts_.maxPodCreateDeletePerSync));
  if (!podsToDelete.empty()) {
    KLOG_V(4, "\"Too many pods running for job\" job=" + log::quote(jobKey) + " deleted=" +
                  std::to_string(podsToDelete.size()) + " target=" + std::to_string(wantActive));
    // Deletions and creations are never mixed in one sync; deletions go first.
    return removePods(podsToDelete);
  }

  const int32_t terminating = onlyReplaceFailedPods(job) ? ctx.terminating : 0;
  int32_t diff = wantActive - terminating - active;
  if (diff <= 0) return {active, metrics::kActionTracking};

  const WallTime wallNow = clock_.wallNow();
  if (!hasBackoffLimitPerIndex(job)) {
    auto remaining = ctx.newBackoffRecord.getRemainingTime(wallNow, opts_.podFailureBackoff, opts_.maxPodFailureBackoff);
    if (remaining > Clock::Duration::zero()) {
      enqueueSyncJobWithDelay(job, std::max(remaining, opts_.syncJobBatchPeriod));
      return {active, metrics::kActionPodsCreated};
    }
  }
  diff = std::min(diff, static_cast<int32_t>(opts_.maxPodCreateDeletePerSync));

  std::vector<int> indexesToAdd;
  if (isIndexedJob(job)) {
    indexesToAdd = firstPendingIndexes(ctx, diff, job.spec.completions.value_or(0));
    if (hasBackoffLimitPerIndex(job)) {
      std::vector<int> now;
      std::optional<Clock::Duration> minRemaining;
      for (int ix : indexesToAdd) {
        auto it = ctx.podsWithDelayedDeletionPerIndex.find(ix);
        Clock::Duration r = Clock::Duration::zero();
        if (it != ctx.podsWithDelayedDeletionPerIndex.end())
          r = getRemainingTimeForFailuresCount(wallNow, opts_.podFailureBackoff, opts_.maxPodFailureBackoff,
                                               getIndexAbsoluteFailureCount(*it->second) + 1,
                                               getFinishedTime(*it->second));
        if (r == Clock::Duration::zero()) now.push_back(ix);
        else if (!minRemaining || r < *minRemaining) minRemaining = r;
      }
      if (now.empty() && minRemaining && *minRemaining > Clock::Duration::zero()) {
        enqueueSyncJobWithDelay(job, std::max(*minRemaining, opts_.syncJobBatchPeriod));
        return {active, metrics::kActionPodsCreated};
      }
      indexesToAdd = std::move(now);
    }
    diff = static_cast<int32_t>(indexesToAdd.size());
  }
  if (diff == 0) return {active, metrics::kActionPodsCreated};

  expectations_.expectCreations(jobKey, diff);
  KLOG_V(4, "\"Too few pods running\" key=" + log::quote(jobKey) + " need=" + std::to_string(wantActive) +
                " creating=" + std::to_string(diff));
  api::core::v1::PodTemplateSpec podTemplate = job.spec.template_;
  if (isIndexedJob(job)) addCompletionIndexEnvVariables(podTemplate);
  auto& fin = podTemplate.metadata.finalizers;
  if (std::find(fin.begin(), fin.end(), kJobTrackingFinalizer) == fin.end()) fin.push_back(kJobTrackingFinalizer);

  const auto controllerRef = newControllerRef(job.metadata, kAPIVersion, kKind);
  const auto owner = ref(job);
  std::atomic<size_t> next{0};
  std::atomic<int32_t> attempted{0};
  auto [succeeded, createErr] = slowStartBatch(diff, kSlowStartInitialBatchSize, [&]() -> Status {
    const size_t slot = next++;
    std::string generateName;
    const api::core::v1::PodTemplateSpec* tmpl = &podTemplate;
    api::core::v1::PodTemplateSpec indexed;
    if (slot < indexesToAdd.size()) {
      const int ix = indexesToAdd[slot];
      indexed = podTemplate;
      indexed.metadata.annotations[kJobCompletionIndexAnnotation] = std::to_string(ix);
      indexed.metadata.labels[kJobCompletionIndexAnnotation] = std::to_string(ix);
      indexed.spec.hostname = job.metadata.name + "-" + std::to_string(ix);
      generateName = podGenerateNameWithIndex(job.metadata.name, ix);
      if (hasBackoffLimitPerIndex(job)) {
        auto it = ctx.podsWithDelayedDeletionPerIndex.find(ix);
        auto [counted, ignored] =
            getNewIndexFailureCounts(job, it == ctx.podsWithDelayedDeletionPerIndex.end() ? nullptr : it->second.get());
        indexed.metadata.annotations[kJobIndexFailureCountAnnotation] = std::to_string(counted);
        if (ignored > 0) indexed.metadata.annotations[kJobIndexIgnoredFailureCountAnnotation] = std::to_string(ignored);
      }
      tmpl = &indexed;
    }
    auto pod = podControl_.createPods(job.metadata.namespace_, *tmpl, owner, controllerRef, generateName);
    if (!pod.ok()) {
      if (isNamespaceTerminating(pod.status())) return Status::Ok();  // the rest would fail the same way
      ++attempted;
      KLOG_V(2, "\"Failed creation, decrementing expectations\" job=" + log::quote(jobKey));
      return pod.status();
    }
    ++attempted;
    consistency_.wroteAt(jobKey, job.metadata.uid, "pods", pod->metadata.resourceVersion);
    return Status::Ok();
  });
  // Creates that failed or were never tried will not be observed.
  if (const int32_t unseen = diff - succeeded; unseen > 0) {
    const int32_t skipped = diff - static_cast<int32_t>(next.load());
    if (skipped > 0)
      KLOG_V(2, "\"Slow-start failure. Skipping creating pods, decrementing expectations\" skippedCount=" +
                    std::to_string(skipped) + " job=" + log::quote(jobKey));
    for (int32_t i = 0; i < unseen; ++i) expectations_.creationObserved(jobKey);
  }
  active += succeeded;
  // job_pods_creation_total as upstream counts it: every attempt as succeeded, the failed ones as failed too.
  const int32_t failedCreates = static_cast<int32_t>(next.load()) - succeeded;
  std::string reason = "new";
  if (job.spec.podReplacementPolicy.value_or("TerminatingOrFailed") == "Failed" && ctx.failed > 0)
    reason = "recreate_failed";
  else if (ctx.failed > 0 || ctx.terminating > 0)
    reason = "recreate_terminating_or_failed";
  if (attempted.load() > 0) metrics::podsCreation(reason, "succeeded", attempted.load());
  if (failedCreates > 0) metrics::podsCreation(reason, "failed", failedCreates);
  err = createErr;
  return {active, metrics::kActionPodsCreated};
}

}  // namespace kcm::controllers::job
