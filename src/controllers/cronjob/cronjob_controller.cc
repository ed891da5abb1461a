#include "controllers/cronjob/cronjob_controller.h"

#include <algorithm>
#include <cstdio>

#include "api/gen/batch_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"

namespace kcm::controllers::cronjob {

using api::meta::v1::OwnerReference;
using std::chrono::system_clock;
using JobPtr = std::shared_ptr<const Job>;
using namespace std::chrono_literals;

namespace {

constexpr const char* kJobControllerUIDIndex = "jobControllerUID";
constexpr const char* kScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp";
constexpr auto kNextScheduleDelta = 100ms;

std::shared_ptr<const TimeZone> localZone() {
  auto z = TimeZone::load("Local");
  return z.ok() ? *z : TimeZone::utc();
}

std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

metrics::Histogram& creationSkew() {
  static auto& h = metrics::Registry::global().histogram(
      "cronjob_controller_job_creation_skew_duration_seconds",
      "Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
      metrics::exponentialBuckets(1, 2, 10));
  return h;
}

int64_t unixOf(WallTime t) { return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(); }
WallTime fromTime(api::Time t) { return system_clock::from_time_t(static_cast<std::time_t>(t.unixSeconds)); }
api::Time toTime(WallTime t) { return api::Time::fromUnix(unixOf(t)); }

// upstream FinishedCondition: (finished, "Complete"/"Failed").
std::pair<bool, std::string> finishedCondition(const Job& j) {
  for (const auto& c : j.status.conditions)
    if ((c.type == "Complete" || c.type == "Failed") && c.status == "True") return {true, c.type};
  return {false, ""};
}
bool isJobSucceeded(const Job& j) {
  for (const auto& c : j.status.conditions)
    if (c.type == "Complete" && c.status == "True") return true;
  return false;
}

bool inActiveList(const CronJob& cj, const std::string& uid) {
  for (const auto& r : cj.status.active)
    if (r.uid == uid) return true;
  return false;
}
bool inActiveListByName(const CronJob& cj, const std::string& ns, const std::string& name) {
  for (const auto& r : cj.status.active)
    if (r.name == name && r.namespace_ == ns) return true;
  return false;
}
void deleteFromActiveList(CronJob& cj, const std::string& uid) {
  std::vector<api::core::v1::ObjectReference> keep;
  for (const auto& r : cj.status.active)
    if (r.uid != uid) keep.push_back(r);
  cj.status.active = std::move(keep);
}

std::string rfc1123z(WallTime t) {  // "Mon, 02 Jan 2006 15:04:05 -0700", in UTC
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const Civil c = civilFromUnix(unixOf(t));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04lld %02d:%02d:%02d +0000", kDays[c.weekday], c.day, kMonths[c.month - 1],
                static_cast<long long>(c.year), c.hour, c.minute, c.second);
  return buf;
}

// Jobs by start time, those without one last, then by name (upstream byJobStartTime).
bool byJobStartTime(const JobPtr& a, const JobPtr& b) {
  const auto& sa = a->status.startTime;
  const auto& sb = b->status.startTime;
  if (!sa && sb) return false;
  if (sa && !sb) return true;
  if (!sa && !sb) return a->metadata.name < b->metadata.name;
  if (*sa == *sb) return a->metadata.name < b->metadata.name;
  return *sa < *sb;
}

}  // namespace

std::string formatRFC3339(WallTime t, const TimeZone& z) {
  const int64_t u = unixOf(t);
  const int32_t off = z.lookup(u).offset;
  const Civil c = civilFromUnix(u + off);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d", static_cast<long long>(c.year), c.month,
                        c.day, c.hour, c.minute, c.second);
  if (off == 0) {
    std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "Z");
  } else {
    const int32_t a = off < 0 ? -off : off;
    std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "%c%02d:%02d", off < 0 ? '-' : '+', a / 3600,
                  a % 3600 / 60);
  }
  return buf;
}

std::string formatSchedule(const CronJob& cj, client::EventRecorder* recorder, const client::ObjectReference* ref) {
  const std::string& schedule = cj.spec.schedule;
  if (schedule.find("TZ") != std::string::npos) {
    if (recorder && ref)
      recorder->event(*ref, client::kEventTypeWarning, "UnsupportedSchedule",
                      "CRON_TZ or TZ used in schedule \"" + schedule +
                          "\" is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details");
    return schedule;
  }
  if (cj.spec.timeZone) {
    if (!TimeZone::load(*cj.spec.timeZone).ok()) return schedule;
    return "TZ=" + *cj.spec.timeZone + " " + schedule;
  }
  return schedule;
}

MostRecent mostRecentScheduleTime(const CronJob& cj, WallTime now, const CronSchedule& sched,
                                  bool includeStartingDeadlineSeconds) {
  MostRecent r;
  r.earliest = cj.status.lastScheduleTime ? fromTime(*cj.status.lastScheduleTime) : fromTime(cj.metadata.creationTimestamp);
  if (includeStartingDeadlineSeconds && cj.spec.startingDeadlineSeconds) {
    const WallTime deadline = now - std::chrono::seconds(*cj.spec.startingDeadlineSeconds);
    if (deadline > r.earliest) r.earliest = deadline;
  }
  const WallTime t1 = sched.next(r.earliest), t2 = sched.next(t1);
  if (now < t1) return r;
  if (now < t2) {
    r.mostRecent = t1;
    return r;
  }
  const auto between = std::chrono::round<std::chrono::seconds>(t2 - t1).count();
  if (between < 1) {
    r.err = Status(StatusCode::kInvalidArgument, "time difference between two schedules is less than 1 second");
    return r;
  }
  const int64_t elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - t1).count();
  const int64_t missed = elapsed / between + 1;
  std::optional<WallTime> mostRecent;
  const WallTime potentialEarliest = t1 + std::chrono::seconds((missed - 2) * between);
  for (WallTime t = sched.next(potentialEarliest); t <= now && t != WallTime{}; ) {
    mostRecent = t;
    const WallTime n = sched.next(t);
    if (n <= t) break;
    t = n;
  }
  r.missed = missed > 100 ? 2 : missed > 0 ? 1 : 0;
  r.mostRecent = mostRecent;
  return r;
}

Clock::Duration nextScheduleTimeDuration(const CronJob& cj, WallTime now, const CronSchedule& sched) {
  MostRecent m = mostRecentScheduleTime(cj, now, sched, false);
  WallTime from = now;
  if (m.err.ok()) {
    if (m.mostRecent) from = *m.mostRecent;
    else if (m.missed == 0) from = m.earliest;
  }
  return std::chrono::duration_cast<Clock::Duration>(sched.next(from) + kNextScheduleDelta - now);
}

std::string getJobName(const CronJob& cj, WallTime scheduled) {
  return cj.metadata.name + "-" + std::to_string(unixOf(scheduled) / 60);
}

CronJobController::CronJobController(std::shared_ptr<client::RestClient> client,
                                     std::shared_ptr<client::EventRecorder> recorder,
                                     informers::SharedInformer<CronJob>& cronJobs, informers::SharedInformer<Job>& jobs,
                                     Clock& clock, std::shared_ptr<const TimeZone> local)
    : client_(std::move(client)), recorder_(std::move(recorder)), cronJobs_(cronJobs), jobs_(jobs), clock_(clock),
      local_(local ? std::move(local) : localZone()),
      base_("cronjob", [this](const std::string& k) { return sync(k); }, clock) {
  creationSkew();  // registered at start, as upstream's metrics.Register()
  jobs_.store().addIndexer(kJobControllerUIDIndex, [](const Job& j) {
    const OwnerReference* r = getControllerOf(j.metadata);
    return r ? std::vector<std::string>{r->uid} : std::vector<std::string>{};
  });
  informers::EventHandler<Job> jh;
  jh.onAdd = [this](const JobPtr& j) { enqueueForJob(*j); };
  jh.onUpdate = [this](const JobPtr& o, const JobPtr& c) {
    if (c->metadata.resourceVersion == o->metadata.resourceVersion) return;
    const OwnerReference* cur = getControllerOf(c->metadata);
    const OwnerReference* old = getControllerOf(o->metadata);
    const bool changed = (cur == nullptr) != (old == nullptr) ||
                         (cur && (cur->uid != old->uid || cur->name != old->name || cur->kind != old->kind ||
                                  cur->apiVersion != old->apiVersion || cur->controller != old->controller ||
                                  cur->blockOwnerDeletion != old->blockOwnerDeletion));
    if (changed && old)
      if (auto cj = resolveControllerRef(o->metadata.namespace_, *old)) base_.enqueue(keyOf(cj->metadata));
    if (cur)
      if (auto cj = resolveControllerRef(c->metadata.namespace_, *cur)) base_.enqueue(keyOf(cj->metadata));
  };
  jh.onDelete = [this](const JobPtr& j, bool) { enqueueForJob(*j); };
  registrations_.push_back(jobs_.addEventHandler(jh));
  informers::EventHandler<CronJob> ch;
  ch.onAdd = [this](const std::shared_ptr<const CronJob>& c) { base_.enqueue(keyOf(c->metadata)); };
  ch.onUpdate = [this](const std::shared_ptr<const CronJob>& o, const std::shared_ptr<const CronJob>& c) {
    updateCronJob(*o, *c);
  };
  ch.onDelete = [this](const std::shared_ptr<const CronJob>& c, bool) { base_.enqueue(keyOf(c->metadata)); };
  registrations_.push_back(cronJobs_.addEventHandler(ch));
}

void CronJobController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting cronjob controller v2\"");
  base_.start(workers, stop, {[this] { return jobs_.hasSynced(); }, [this] { return cronJobs_.hasSynced(); }});
}

client::ObjectReference CronJobController::ref(const CronJob& cj) const {
  return {"CronJob", "batch/v1", cj.metadata.namespace_, cj.metadata.name, cj.metadata.uid,
          cj.metadata.resourceVersion, ""};
}

std::shared_ptr<const CronJob> CronJobController::resolveControllerRef(const std::string& ns, const OwnerReference& r) {
  if (r.kind != "CronJob") return nullptr;
  auto cj = cronJobs_.store().get(ns, r.name);
  if (!cj || cj->metadata.uid != r.uid) return nullptr;
  return cj;
}

void CronJobController::enqueueForJob(const Job& j) {
  if (const OwnerReference* r = getControllerOf(j.metadata))
    if (auto cj = resolveControllerRef(j.metadata.namespace_, *r)) base_.enqueue(keyOf(cj->metadata));
}

void CronJobController::updateCronJob(const CronJob& oldCJ, const CronJob& newCJ) {
  if (oldCJ.spec.schedule != newCJ.spec.schedule || oldCJ.spec.timeZone != newCJ.spec.timeZone) {
    auto sched = CronSchedule::parseStandard(formatSchedule(newCJ, nullptr, nullptr), local_);
    if (!sched.ok()) {
      KLOG_V(2, "\"Unparseable schedule for cronjob\" cronjob=" + log::quote(keyOf(newCJ.metadata)) +
                    " schedule=" + log::quote(newCJ.spec.schedule) + " err=" + log::quote(sched.status().message()));
      recorder_->event(ref(newCJ), client::kEventTypeWarning, "UnParseableCronJobSchedule",
                       "unparseable schedule for cronjob: " + newCJ.spec.schedule);
      return;
    }
    base_.enqueueAfter(keyOf(newCJ.metadata), nextScheduleTimeDuration(newCJ, clock_.wallNow(), *sched));
    return;
  }
  base_.enqueue(keyOf(newCJ.metadata));
}

runtime::SyncResult CronJobController::sync(const std::string& key) {
  auto [ns, name] = informers::splitMetaNamespaceKey(key);
  auto cached = cronJobs_.store().get(ns, name);
  if (!cached) {
    KLOG_V(4, "\"CronJob not found, may be it is deleted\" cronjob=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  const auto jobs = jobs_.store().byIndex(kJobControllerUIDIndex, cached->metadata.uid);
  CronJob cj = *cached;
  const bool updateAfterCleanup = cleanupFinishedJobs(cj, jobs);
  SyncOutcome o = syncCronJob(cj, jobs);
  if (!o.err.ok())
    KLOG_V(2, "\"Error reconciling cronjob\" cronjob=" + log::quote(key) + " err=" + log::quote(o.err.message()));
  if (updateAfterCleanup || o.updateStatus) {
    auto r = client::updateStatus(*client_, cj);
    if (!r.ok()) {
      KLOG_V(2, "\"Unable to update status for cronjob\" cronjob=" + log::quote(key) + " resourceVersion=" +
                    log::quote(cached->metadata.resourceVersion) + " err=" + log::quote(r.status().message()));
      return runtime::SyncResult::error(r.status());
    }
  }
  if (o.requeueAfter) {
    KLOG_V(4, "\"Re-queuing cronjob\" cronjob=" + log::quote(key) + " requeueAfter=\"" +
                  std::to_string(std::chrono::duration<double>(*o.requeueAfter).count()) + "s\"");
    return runtime::SyncResult::after(*o.requeueAfter);
  }
  return o.err.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(o.err);
}

CronJobController::SyncOutcome CronJobController::syncCronJob(CronJob& cronJob, const std::vector<JobPtr>& jobs) {
  const WallTime now = clock_.wallNow();
  SyncOutcome out;
  // upstream rebinds its cronJob pointer to a fresh read in one case below; later changes then go to that copy.
  CronJob* cj = &cronJob;
  CronJob fresh;
  std::set<std::string> children;
  for (const auto& j : jobs) {
    children.insert(j->metadata.uid);
    const bool found = inActiveList(*cj, j->metadata.uid);
    const auto [finished, condition] = finishedCondition(*j);
    if (!found && !finished) {
      auto got = client::get<CronJob>(*client_, cj->metadata.namespace_, cj->metadata.name);
      if (!got.ok()) {
        out.err = got.status();
        return out;
      }
      if (inActiveList(*got, j->metadata.uid)) {
        fresh = std::move(got).value();
        cj = &fresh;
        continue;
      }
      recorder_->event(ref(*cj), client::kEventTypeWarning, "UnexpectedJob",
                       "Saw a job that the controller did not create or forgot: " + j->metadata.name);
    } else if (finished) {
      if (found) {
        deleteFromActiveList(*cj, j->metadata.uid);
        recorder_->event(ref(*cj), client::kEventTypeNormal, "SawCompletedJob",
                         "Saw completed job: " + j->metadata.name + ", condition: " + condition);
        out.updateStatus = true;
      }
      if (isJobSucceeded(*j)) {
        if (!cj->status.lastSuccessfulTime) {
          cj->status.lastSuccessfulTime = j->status.completionTime;
          out.updateStatus = true;
        }
        if (j->status.completionTime && cj->status.lastSuccessfulTime &&
            *j->status.completionTime > *cj->status.lastSuccessfulTime) {
          cj->status.lastSuccessfulTime = j->status.completionTime;
          out.updateStatus = true;
        }
      }
    }
  }
  const auto active = cj->status.active;
  for (const auto& r : active) {
    if (children.count(r.uid)) continue;
    auto got = client::get<Job>(*client_, r.namespace_, r.name);
    if (got.status().code() == StatusCode::kNotFound) {
      recorder_->event(ref(*cj), client::kEventTypeNormal, "MissingJob", "Active job went missing: " + r.name);
      deleteFromActiveList(*cj, r.uid);
      out.updateStatus = true;
    } else if (!got.ok()) {
      out.err = got.status();
      return out;
    }
  }
  if (cj->metadata.deletionTimestamp) return out;
  const std::string key = keyOf(cj->metadata);
  if (cj->spec.timeZone) {
    if (auto z = TimeZone::load(*cj->spec.timeZone); !z.ok()) {
      KLOG_V(4, "\"Not starting job because timeZone is invalid\" cronjob=" + log::quote(key) + " timeZone=" +
                    log::quote(*cj->spec.timeZone) + " err=" + log::quote(z.status().message()));
      recorder_->event(ref(*cj), client::kEventTypeWarning, "UnknownTimeZone",
                       "invalid timeZone: \"" + *cj->spec.timeZone + "\": " + z.status().message());
      return out;
    }
  }
  if (cj->spec.suspend.value_or(false)) {
    KLOG_V(4, "\"Not starting job because the cron is suspended\" cronjob=" + log::quote(key));
    return out;
  }
  const auto cjRef = ref(*cj);
  auto sched = CronSchedule::parseStandard(formatSchedule(*cj, recorder_.get(), &cjRef), local_);
  if (!sched.ok()) {
    KLOG_V(2, "\"Unparseable schedule\" cronjob=" + log::quote(key) + " schedule=" + log::quote(cj->spec.schedule) +
                  " err=" + log::quote(sched.status().message()));
    recorder_->event(cjRef, client::kEventTypeWarning, "UnparseableSchedule",
                     "unparseable schedule: \"" + cj->spec.schedule + "\" : " + sched.status().message());
    return out;
  }
  // nextScheduleTime
  MostRecent m = mostRecentScheduleTime(*cj, now, *sched, true);
  std::optional<WallTime> scheduled;
  if (m.mostRecent && !(*m.mostRecent > now)) {
    if (m.missed == 2) {
      recorder_->event(cjRef, client::kEventTypeWarning, "TooManyMissedTimes",
                       "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew");
      KLOG_INFO("\"too many missed times\" cronjob=" + log::quote(key));
    }
    scheduled = m.mostRecent;
  }
  if (!m.err.ok()) {
    KLOG_V(2, "\"Invalid schedule\" cronjob=" + log::quote(key) + " schedule=" + log::quote(cj->spec.schedule) +
                  " err=" + log::quote(m.err.message()));
    recorder_->event(cjRef, client::kEventTypeWarning, "InvalidSchedule",
                     "invalid schedule: " + cj->spec.schedule + " : " + m.err.message());
    return out;
  }
  auto requeue = [&] { out.requeueAfter = nextScheduleTimeDuration(*cj, now, *sched); };
  if (!scheduled) {
    KLOG_V(4, "\"No unmet start times\" cronjob=" + log::quote(key));
    requeue();
    return out;
  }
  if (cj->spec.startingDeadlineSeconds &&
      *scheduled + std::chrono::seconds(*cj->spec.startingDeadlineSeconds) < now) {
    KLOG_V(4, "\"Missed starting window\" cronjob=" + log::quote(key));
    recorder_->event(cjRef, client::kEventTypeWarning, "MissSchedule",
                     "Missed scheduled time to start a job: " + rfc1123z(*scheduled));
    requeue();
    return out;
  }
  const std::string jobName = getJobName(*cj, *scheduled);
  if (inActiveListByName(*cj, cj->metadata.namespace_, jobName) ||
      (cj->status.lastScheduleTime && fromTime(*cj->status.lastScheduleTime) == *scheduled)) {
    KLOG_V(4, "\"Not starting job because the scheduled time is already processed\" cronjob=" + log::quote(key));
    requeue();
    return out;
  }
  if (cj->spec.concurrencyPolicy == "Forbid" && !cj->status.active.empty()) {
    KLOG_V(4, "\"Not starting job because prior execution is still running and concurrency policy is Forbid\" "
              "cronjob=" + log::quote(key));
    recorder_->event(cjRef, client::kEventTypeNormal, "JobAlreadyActive",
                     "Not starting job because prior execution is running and concurrency policy is Forbid");
    requeue();
    return out;
  }
  if (cj->spec.concurrencyPolicy == "Replace") {
    const auto running = cj->status.active;
    for (const auto& r : running) {
      KLOG_V(4, "\"Deleting job that was still running at next scheduled start time\" job=" +
                    log::quote(r.namespace_ + "/" + r.name));
      auto j = client::get<Job>(*client_, r.namespace_, r.name);
      if (!j.ok()) {
        recorder_->event(cjRef, client::kEventTypeWarning, "FailedGet", "Get job: " + j.status().message());
        out.err = j.status();
        return out;
      }
      if (!deleteJob(*cj, *j)) {
        out.err = Status(StatusCode::kInternal, "could not replace job " + r.namespace_ + "/" + r.name);
        return out;
      }
      out.updateStatus = true;
    }
  }
  // getJobFromTemplate2
  auto zone = TimeZone::load(cj->spec.timeZone.value_or(""));
  if (!zone.ok()) {
    KLOG_ERROR("\"Unable to make Job from template\" err=" + log::quote(zone.status().message()) +
               " cronjob=" + log::quote(key));
    out.err = zone.status();
    return out;
  }
  Job req;
  req.metadata.name = jobName;
  req.metadata.namespace_ = cj->metadata.namespace_;
  req.metadata.labels = cj->spec.jobTemplate.metadata.labels;
  req.metadata.annotations = cj->spec.jobTemplate.metadata.annotations;
  req.metadata.annotations[kScheduledTimestampAnnotation] = formatRFC3339(*scheduled, **zone);
  req.metadata.ownerReferences.push_back(newControllerRef(cj->metadata, "batch/v1", "CronJob"));
  req.spec = cj->spec.jobTemplate.spec;
  auto created = client::create(*client_, cj->metadata.namespace_, req);
  bool alreadyExists = false;
  if (!created.ok()) {
    if (isNamespaceTerminating(created.status())) {
      out.err = created.status();
      return out;
    }
    if (created.status().code() == StatusCode::kAlreadyExists) {
      alreadyExists = true;
      auto existing = client::get<Job>(*client_, cj->metadata.namespace_, jobName);
      if (!existing.ok()) {
        out.err = existing.status();
        return out;
      }
      const OwnerReference* owner = getControllerOf(existing->metadata);
      if (!owner || owner->uid != cj->metadata.uid) return out;
      if (inActiveList(*cj, existing->metadata.uid)) return out;
      created = std::move(existing);
    } else {
      recorder_->event(cjRef, client::kEventTypeWarning, "FailedCreate",
                       "Error creating job: " + created.status().message());
      out.err = created.status();
      return out;
    }
  }
  const Job& job = *created;
  if (alreadyExists) {
    KLOG_INFO("\"Job already exists\" cronjob=" + log::quote(key) + " job=" + log::quote(keyOf(job.metadata)));
  } else {
    creationSkew().observe(std::chrono::duration<double>(fromTime(job.metadata.creationTimestamp) - *scheduled).count());
    KLOG_V(4, "\"Created Job\" job=" + log::quote(keyOf(job.metadata)) + " cronjob=" + log::quote(key));
    recorder_->event(cjRef, client::kEventTypeNormal, "SuccessfulCreate", "Created job " + job.metadata.name);
  }
  api::core::v1::ObjectReference jobRef;
  jobRef.apiVersion = "batch/v1";
  jobRef.kind = "Job";
  jobRef.name = job.metadata.name;
  jobRef.namespace_ = job.metadata.namespace_;
  jobRef.uid = job.metadata.uid;
  jobRef.resourceVersion = job.metadata.resourceVersion;
  cj->status.active.push_back(std::move(jobRef));
  cj->status.lastScheduleTime = toTime(*scheduled);
  out.updateStatus = true;
  requeue();
  return out;
}

bool CronJobController::cleanupFinishedJobs(CronJob& cj, const std::vector<JobPtr>& jobs) {
  if (!cj.spec.failedJobsHistoryLimit && !cj.spec.successfulJobsHistoryLimit) return false;
  std::vector<JobPtr> failed, succeeded;
  for (const auto& j : jobs) {
    auto [finished, type] = finishedCondition(*j);
    if (finished && type == "Complete") succeeded.push_back(j);
    else if (finished && type == "Failed") failed.push_back(j);
  }
  bool update = false;
  if (cj.spec.successfulJobsHistoryLimit && removeOldestJobs(cj, succeeded, *cj.spec.successfulJobsHistoryLimit))
    update = true;
  if (cj.spec.failedJobsHistoryLimit && removeOldestJobs(cj, failed, *cj.spec.failedJobsHistoryLimit)) update = true;
  return update;
}

bool CronJobController::removeOldestJobs(CronJob& cj, std::vector<JobPtr> jobs, int32_t maxJobs) {
  const int numToDelete = static_cast<int>(jobs.size()) - maxJobs;
  if (numToDelete <= 0) return false;
  KLOG_V(4, "\"Cleaning up jobs from CronJob list\" deletejobnum=" + std::to_string(numToDelete) +
                " jobnum=" + std::to_string(jobs.size()) + " cronjob=" + log::quote(keyOf(cj.metadata)));
  std::stable_sort(jobs.begin(), jobs.end(), byJobStartTime);
  bool update = false;
  for (int i = 0; i < numToDelete; ++i) {
    KLOG_V(4, "\"Removing job from CronJob list\" job=" + log::quote(jobs[static_cast<size_t>(i)]->metadata.name) +
                  " cronjob=" + log::quote(keyOf(cj.metadata)));
    if (deleteJob(cj, *jobs[static_cast<size_t>(i)])) update = true;
  }
  return update;
}

bool CronJobController::deleteJob(CronJob& cj, const Job& j) {
  client::DeleteOptions o;
  o.propagationPolicy = "Background";
  Status s = client::remove<Job>(*client_, j.metadata.namespace_, j.metadata.name, o);
  if (!s.ok()) {
    recorder_->event(ref(cj), client::kEventTypeWarning, "FailedDelete", "Deleted job: " + s.message());
    KLOG_ERROR("\"Error deleting job from cronjob\" err=" + log::quote(s.message()) + " job=" +
               log::quote(keyOf(j.metadata)) + " cronjob=" + log::quote(keyOf(cj.metadata)));
    return false;
  }
  deleteFromActiveList(cj, j.metadata.uid);
  recorder_->event(ref(cj), client::kEventTypeNormal, "SuccessfulDelete", "Deleted job " + j.metadata.name);
  return true;
}

}  // namespace kcm::controllers::cronjob
