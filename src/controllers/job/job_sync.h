#pragma once
// Private to the job-controller's sources (job_controller.cc, job_manage.cc, job_tracking.cc): the state of one
// syncJob pass and the helpers all three use.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/job/job_controller.h"

namespace kcm::controllers::job {

inline constexpr const char* kKind = "Job";

inline constexpr const char* kAPIVersion = "batch/v1";

inline constexpr size_t kWritesInFlight = 16;  // pod deletes / finalizer patches of one sync at once

inline std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

inline Status firstError(const std::vector<Status>& errs) {
  for (const auto& s : errs)
    if (!s.ok()) return s;
  return Status::Ok();
}

inline const JobCondition* hasSuccessCriteriaMetCondition(const Job& j) {
  const JobCondition* c = findConditionByType(j.status.conditions, "SuccessCriteriaMet");
  return c && c->status == "True" ? c : nullptr;
}

inline bool isSuccessCriteriaMetCondition(const std::optional<JobCondition>& c) {
  return c && c->type == "SuccessCriteriaMet" && c->status == "True";
}

struct JobController::SyncCtx {
  Job* job = nullptr;
  std::vector<PodPtr> pods;
  std::optional<JobCondition> finishedCondition;
  std::vector<PodPtr> activePods;
  int32_t succeeded = 0, failed = 0;
  OrderedIntervals prevSucceededIndexes, succeededIndexes;
  std::optional<OrderedIntervals> failedIndexes;
  BackoffRecord newBackoffRecord;
  std::set<std::string> expectedRmFinalizers;
  std::set<std::string> uncountedSucceeded, uncountedFailed;
  std::map<int, PodPtr> podsWithDelayedDeletionPerIndex;
  int32_t terminating = 0;
  int32_t ready = 0;

  // Pods with the finalizer, not yet uncounted nor expected to lose it, and (Indexed) with a valid index.
  std::vector<PodPtr> validPods(const std::set<std::string>* uncounted, const std::function<bool(const Pod&)>& f) const {
    std::vector<PodPtr> out;
    for (const auto& p : pods) {
      if (!hasJobTrackingFinalizer(*p) || (uncounted && uncounted->count(p->metadata.uid)) ||
          expectedRmFinalizers.count(p->metadata.uid))
        continue;
      if (isIndexedJob(*job)) {
        int ix = getCompletionIndex(p->metadata.annotations);
        if (ix == kUnknownCompletionIndex || ix >= job->spec.completions.value_or(0)) continue;
      }
      if (f(*p)) out.push_back(p);
    }
    return out;
  }
};

}  // namespace kcm::controllers::job
