#pragma once
// job-controller (alias job; upstream pkg/controller/job): runs each Job's pods to parallelism/completions.
//  - pods carry the batch.kubernetes.io/job-tracking finalizer; finished pods go to status.uncountedTerminatedPods,
//    lose the finalizer, then move to succeeded/failed (and, Indexed, to completedIndexes/failedIndexes), so no
//    pod is counted twice or lost to the pod GC;
//  - creates with slow-start batches and expectations, at most 500 creates/deletes per sync; re-creation after
//    failures waits 10 s doubling to 10 min; suspend deletes the active pods (Suspended condition, startTime
//    reset), resume sets a fresh startTime;
//  - the end state in upstream's order: an existing SuccessCriteriaMet/FailureTarget, podFailurePolicy FailJob,
//    backoffLimit (and OnFailure restarts), activeDeadlineSeconds, maxFailedIndexes / failed indexes,
//    successPolicy, completions; interim FailureTarget/SuccessCriteriaMet first, Failed/Complete once no pod is
//    uncounted or terminating;
//  - Indexed: completion-index annotation and label, hostname <job>-<index>, JOB_COMPLETION_INDEX, duplicate and
//    out-of-range indexes removed, backoffLimitPerIndex with the index failure-count annotations;
//  - podReplacementPolicy Failed waits for terminating pods; status.ready and status.terminating;
//  - Jobs whose spec.managedBy names another controller are left alone; orphaned pods (and pods of finished or
//    deleted Jobs) lose the tracking finalizer on the job_orphan_pod queue;
//  - adoption of matching orphans (with the finalizer) and release of pods that stop matching; events and
//    job_controller_* metrics as upstream.
#include <memory>
#include <set>
#include <string>

#include "api/gen/batch_v1.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/job/job_utils.h"
#include "controllers/util/controller_utils.h"
#include "informers/shared_informer.h"
#include "runtime/consistency.h"
#include "runtime/controller.h"
#include "runtime/expectations.h"

namespace kcm::controllers::job {

using JobPtr = std::shared_ptr<const Job>;

struct JobControllerOptions {
  bool staleConsistency = true;             // StaleControllerConsistencyJob
  bool resetStartTimeOnSuspend = true;      // MutableSchedulingDirectivesForSuspendedJobs
  Clock::Duration syncJobBatchPeriod = std::chrono::seconds(1);
  Clock::Duration podFailureBackoff = std::chrono::seconds(10);
  Clock::Duration maxPodFailureBackoff = std::chrono::minutes(10);
  int maxUncountedPods = 500;
  int maxPodCreateDeletePerSync = 500;
};

class JobController {
 public:
  JobController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                informers::SharedInformer<Job>& jobs, informers::SharedInformer<Pod>& pods,
                JobControllerOptions opts = {}, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncJob(const std::string& key);
  runtime::SyncResult syncOrphanPod(const std::string& key);

 private:
  friend class JobTestPeer;
  struct SyncCtx;

  // handlers
  void addPod(const PodPtr& pod);
  void updatePod(const PodPtr& oldPod, const PodPtr& curPod);
  void deletePod(const Pod& pod, bool final);
  void addJob(const JobPtr& j);
  void updateJob(const JobPtr& oldJ, const JobPtr& curJ);
  void deleteJob(const JobPtr& j);
  void enqueueSyncJobBatched(const Job& j);
  void enqueueSyncJobImmediately(const Job& j);
  void enqueueSyncJobWithDelay(const Job& j, Clock::Duration d);
  void enqueueOrphanPod(const Pod& p, bool backoff);
  void enqueueLabelSelector(const Job& j);
  JobPtr resolveControllerRef(const std::string& ns, const api::meta::v1::OwnerReference& ref);
  std::vector<JobPtr> getPodJobs(const Pod& pod);

  // orphans
  Status handleSingleOrphanPod(const Pod& pod);

  // sync
  Result<std::vector<PodPtr>> getPodsForJob(const Job& j);
  // (active, action); the error is the first failed create/delete.
  std::pair<int32_t, std::string> manageJob(Job& j, SyncCtx& ctx, Status& err);
  struct Deleted {
    int32_t ready = 0, total = 0;
    Status err;
  };
  Deleted deleteActivePods(const Job& j, const std::vector<PodPtr>& pods);
  Deleted deleteJobPods(const Job& j, const std::string& jobKey, const std::vector<PodPtr>& pods);
  Status trackJobStatusAndRemoveFinalizers(SyncCtx& ctx, bool needsFlush);
  Status flushUncountedAndRemoveFinalizers(SyncCtx& ctx, const std::vector<PodPtr>& podsToRemoveFinalizer,
                                           std::set<std::string>& uidsWithFinalizer,
                                           api::batch::v1::JobStatus& oldCounters,
                                           const std::map<std::string, int>& podFailureCountByPolicyAction,
                                           bool& needsFlush);
  std::pair<std::vector<bool>, Status> removeTrackingFinalizerFromPods(const std::string& jobKey,
                                                                       const std::vector<PodPtr>& pods);
  bool enactJobFinished(SyncCtx& ctx);
  void recordJobFinished(const Job& j, const JobCondition& finished);
  Result<Job> updateJobStatus(const Job& j);
  bool pastActiveDeadline(const Job& j) const;
  std::vector<int> firstPendingIndexes(const SyncCtx& ctx, int count, int completions) const;
  std::map<int, PodPtr> getPodsWithDelayedDeletionPerIndex(const SyncCtx& ctx) const;
  client::ObjectReference ref(const Job& j) const;
  api::Time now() const;

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Job>& jobs_;
  informers::SharedInformer<Pod>& pods_;
  JobControllerOptions opts_;
  Clock& clock_;
  PodControl podControl_;
  runtime::ControllerExpectations expectations_;
  FinalizerExpectations finalizerExpectations_;
  BackoffStore podBackoffStore_;
  std::mutex finishedMu_;
  std::set<std::string> finishedJobExpectations_;  // UIDs marked finished whose update is not yet observed
  runtime::ConsistencyStore consistency_;
  runtime::ControllerBase base_;
  runtime::ControllerBase orphanBase_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::job
