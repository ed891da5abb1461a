#pragma once
// cronjob-controller (alias cronjob; upstream pkg/controller/cronjob, the v2 controller): for each CronJob, the most
// recent unmet schedule time (from lastScheduleTime or creation, within startingDeadlineSeconds) starts a Job named
// <cronjob>-<scheduled unix minutes> from the jobTemplate, with the batch.kubernetes.io/cronjob-scheduled-timestamp
// annotation in spec.timeZone; concurrencyPolicy Allow / Forbid (JobAlreadyActive) / Replace (the running Jobs
// deleted); suspend; status.active kept in step with the Jobs it owns (SawCompletedJob, MissingJob, UnexpectedJob),
// lastScheduleTime and lastSuccessfulTime; finished Jobs beyond successful/failedJobsHistoryLimit deleted oldest
// first (background propagation). The key is re-queued for the next schedule time (+100 ms), never polled. Events and
// the cronjob_controller_job_creation_skew_duration_seconds histogram as upstream.
#include <memory>
#include <optional>
#include <string>

#include "api/gen/batch_v1.h"
#include "base/clock.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/cronjob/cron_schedule.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::cronjob {

using api::batch::v1::CronJob;
using api::batch::v1::Job;

// The schedule robfig parses for this CronJob: the spec's, prefixed TZ=<spec.timeZone> when one is set (and
// loadable) and the schedule names no TZ itself (upstream formatSchedule; with a recorder it also warns, on every
// sync, that TZ in a schedule is not supported).
std::string formatSchedule(const CronJob& cj, client::EventRecorder* recorder, const client::ObjectReference* ref);
// upstream mostRecentScheduleTime: (earliest time considered, most recent unmet schedule time or none, how many
// were missed: 0 none, 1 few, 2 more than 100); an error when two schedules are less than a second apart.
struct MostRecent {
  WallTime earliest;
  std::optional<WallTime> mostRecent;
  int missed = 0;
  Status err;
};
MostRecent mostRecentScheduleTime(const CronJob& cj, WallTime now, const CronSchedule& sched,
                                  bool includeStartingDeadlineSeconds);
// How long until the next schedule time after now (+100 ms).
Clock::Duration nextScheduleTimeDuration(const CronJob& cj, WallTime now, const CronSchedule& sched);
std::string getJobName(const CronJob& cj, WallTime scheduled);
// RFC 3339 in the zone (Go's Format(time.RFC3339)): "2026-01-02T15:04:05Z" or "...+01:00".
std::string formatRFC3339(WallTime t, const TimeZone& z);

class CronJobController {
 public:
  CronJobController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                    informers::SharedInformer<CronJob>& cronJobs, informers::SharedInformer<Job>& jobs,
                    Clock& clock = RealClock::get(), std::shared_ptr<const TimeZone> local = nullptr);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);

 private:
  struct SyncOutcome {
    std::optional<Clock::Duration> requeueAfter;
    bool updateStatus = false;
    Status err;
  };
  SyncOutcome syncCronJob(CronJob& cj, const std::vector<std::shared_ptr<const Job>>& jobs);
  bool cleanupFinishedJobs(CronJob& cj, const std::vector<std::shared_ptr<const Job>>& jobs);
  bool removeOldestJobs(CronJob& cj, std::vector<std::shared_ptr<const Job>> jobs, int32_t maxJobs);
  bool deleteJob(CronJob& cj, const Job& j);
  std::shared_ptr<const CronJob> resolveControllerRef(const std::string& ns, const api::meta::v1::OwnerReference& r);
  void enqueueForJob(const Job& j);
  void updateCronJob(const CronJob& oldCJ, const CronJob& newCJ);
  client::ObjectReference ref(const CronJob& cj) const;

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<CronJob>& cronJobs_;
  informers::SharedInformer<Job>& jobs_;
  Clock& clock_;
  std::shared_ptr<const TimeZone> local_;  // Go's time.Local: where a schedule without TZ= is walked
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::cronjob
