#pragma once
// The job-controller's pure helpers (upstream pkg/controller/job: indexed_job_utils.go, pod_failure_policy.go,
// success_policy.go, backoff_utils.go, tracking_utils.go, util/utils.go): completion indexes and their compressed
// interval form ("1,3-5"), the pod failure policy and success policy matchers, the pod-recreation back-off, the
// tracking-finalizer expectations. No I/O; thread-safe where a class says so.
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/gen/batch_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "controllers/util/controller_utils.h"

namespace kcm::controllers::job {

using api::batch::v1::Job;
using api::batch::v1::JobCondition;
using api::core::v1::Pod;

inline constexpr const char* kJobTrackingFinalizer = "batch.kubernetes.io/job-tracking";
inline constexpr const char* kJobCompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index";
inline constexpr const char* kJobIndexFailureCountAnnotation = "batch.kubernetes.io/job-index-failure-count";
inline constexpr const char* kJobIndexIgnoredFailureCountAnnotation =
    "batch.kubernetes.io/job-index-ignored-failure-count";
inline constexpr const char* kJobControllerName = "kubernetes.io/job-controller";
inline constexpr const char* kCompletionIndexEnvName = "JOB_COMPLETION_INDEX";
inline constexpr int kUnknownCompletionIndex = -1;
inline constexpr size_t kMaxGeneratedNameLength = 58;  // 63 minus the 5 random characters

// --- job predicates ---
bool isIndexedJob(const Job& j);
bool hasBackoffLimitPerIndex(const Job& j);
bool isJobFinished(const Job& j);  // a True Complete or Failed condition
bool jobSuspended(const Job& j);
bool onlyReplaceFailedPods(const Job& j);  // podReplacementPolicy: Failed
std::string completionModeStr(const Job& j);  // "Indexed" / "NonIndexed", the metrics' label
const JobCondition* findConditionByType(const std::vector<JobCondition>& list, const std::string& type);
JobCondition* findConditionByType(std::vector<JobCondition>& list, const std::string& type);
// Appends or updates the condition of `type`; a False condition is never appended. True when the list changed.
bool ensureJobConditionStatus(std::vector<JobCondition>& list, const std::string& type, const std::string& status,
                              const std::string& reason, const std::string& message, api::Time now);
JobCondition newCondition(const std::string& type, const std::string& status, const std::string& reason,
                          const std::string& message, api::Time now);

// --- pods ---
bool hasJobTrackingFinalizer(const Pod& p);
// Failed phase; or (unless podReplacementPolicy is Failed) being deleted without having succeeded.
bool isPodFailed(const Pod& p, const Job& j);
int getCompletionIndex(const api::StringMap<api::String>& annotations);  // kUnknownCompletionIndex if absent/bad
int32_t getIndexFailureCount(const Pod& p);
int32_t getIndexAbsoluteFailureCount(const Pod& p);  // counted + ignored failures
// "<job>-<index>-", the job name cut so that the prefix stays within the generated-name limit.
std::string podGenerateNameWithIndex(const std::string& jobName, int index);
// JOB_COMPLETION_INDEX from the completion-index label, in every (init) container that lacks it.
void addCompletionIndexEnvVariables(api::core::v1::PodTemplateSpec& t);
// The strategic-merge patch removing the tracking finalizer; nullopt when the pod has none.
std::optional<std::string> removeTrackingFinalizerPatch(const Pod& p);

// --- ordered index intervals (upstream orderedIntervals) ---
struct Interval {
  int first = 0, last = 0;
  bool operator==(const Interval&) const = default;
};
class OrderedIntervals {
 public:
  OrderedIntervals() = default;
  explicit OrderedIntervals(std::vector<Interval> v) : v_(std::move(v)) {}
  // Parses "1,3-5"; intervals at or past `completions` are cut; corrupt pieces are skipped.
  static OrderedIntervals parse(const std::string& s, int completions);
  OrderedIntervals withOrderedIndexes(const std::vector<int>& ascending) const;
  OrderedIntervals merge(const OrderedIntervals& o) const;
  int total() const;
  bool has(int ix) const;
  std::string toString() const;  // "1,3-5"; two neighbours are written "3,4"
  const std::vector<Interval>& intervals() const { return v_; }
  bool empty() const { return v_.empty(); }
  bool operator==(const OrderedIntervals&) const = default;

 private:
  std::vector<Interval> v_;
};

// --- pod failure policy (upstream matchPodFailurePolicy) ---
struct PodFailurePolicyMatch {
  std::optional<std::string> failJobMessage;  // a FailJob rule matched
  bool countFailed = true;                    // false when an Ignore rule matched
  std::optional<std::string> action;          // the matched rule's action
};
PodFailurePolicyMatch matchPodFailurePolicy(const api::batch::v1::PodFailurePolicy* policy, const Pod& failedPod);

// --- success policy: the "Matched rules at index N" message when a rule holds ---
std::optional<std::string> matchSuccessPolicy(const api::batch::v1::SuccessPolicy* policy, int32_t completions,
                                              const OrderedIntervals& succeededIndexes);

// --- back-off of pod re-creation after failures (upstream backoff_utils.go) ---
// When a pod finished: its containers' last finishedAt, else the Ready=False transition, else its deletion time
// minus the grace period, else its creation.
WallTime getFinishedTime(const Pod& p);
// 10 s doubling per further failure, capped at `maxBackoff`, minus the time since the last failure (zero if past).
Clock::Duration getRemainingTimeForFailuresCount(WallTime now, Clock::Duration defaultBackoff,
                                                 Clock::Duration maxBackoff, int32_t failures,
                                                 std::optional<WallTime> lastFailure);

struct BackoffRecord {
  std::string key;
  int32_t failuresAfterLastSuccess = 0;
  std::optional<WallTime> lastFailureTime;
  Clock::Duration getRemainingTime(WallTime now, Clock::Duration defaultBackoff, Clock::Duration maxBackoff) const {
    return getRemainingTimeForFailuresCount(now, defaultBackoff, maxBackoff, failuresAfterLastSuccess,
                                            lastFailureTime);
  }
};

// Thread-safe.
class BackoffStore {
 public:
  // The record after these newly finished pods: failures after the last success, and the last failure's time.
  BackoffRecord newBackoffRecord(const std::string& key, std::vector<PodPtr> newSucceeded,
                                 std::vector<PodPtr> newFailed) const;
  void updateBackoffRecord(const BackoffRecord& r);
  void removeBackoffRecord(const std::string& key);
  std::optional<BackoffRecord> get(const std::string& key) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, BackoffRecord> records_;
};

// Pod UIDs whose tracking-finalizer removal the controller issued and has not yet seen (upstream
// uidTrackingExpectations). Thread-safe.
class FinalizerExpectations {
 public:
  std::set<std::string> getExpectedUIDs(const std::string& jobKey) const;
  void expectFinalizersRemoved(const std::string& jobKey, const std::vector<std::string>& uids);
  void finalizerRemovalObserved(const std::string& jobKey, const std::string& uid);
  void deleteExpectations(const std::string& jobKey);

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::set<std::string>> uids_;
};

// --- indexed jobs over pod lists ---
// Pods sorted by completion index (stable; pods without one first).
void sortByCompletionIndex(std::vector<PodPtr>& pods);
std::set<int> getIndexes(const std::vector<PodPtr>& pods);
// (previous, previous + newly succeeded) from status.completedIndexes and the succeeded pods still tracked.
std::pair<OrderedIntervals, OrderedIntervals> calculateSucceededIndexes(const Job& j, const std::vector<PodPtr>& pods);
OrderedIntervals calculateFailedIndexes(const Job& j, const std::vector<PodPtr>& pods);
bool isIndexFailed(const Job& j, const Pod& p);
// Pods to remove from `pods` so that each index in [0, completions) keeps one; pods without an index or past the
// range go first. Returns (rm, left).
std::pair<std::vector<PodPtr>, std::vector<PodPtr>> appendDuplicatedIndexPodsForRemoval(std::vector<PodPtr> pods,
                                                                                       int completions);
// The failure counts the replacement of `podBeingReplaced` starts with: (counted, ignored).
std::pair<int32_t, int32_t> getNewIndexFailureCounts(const Job& j, const Pod* podBeingReplaced);

}  // namespace kcm::controllers::job
