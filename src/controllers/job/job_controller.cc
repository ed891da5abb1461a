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

// A foreign spec.managedBy (JobManagedBy is GA and locked on at the pin).
const api::String* managedByExternalController(const Job& j) {
  if (j.spec.managedBy && *j.spec.managedBy != kJobControllerName) return &*j.spec.managedBy;
  return nullptr;
}

Result<LabelMatcher> selectorOf(const Job& j) {
  if (!j.spec.selector) return LabelMatcher([](const Labels&) { return false; });  // labels.Nothing()
  auto sel = std::make_shared<api::meta::v1::LabelSelector>(*j.spec.selector);
  if (auto probe = api::labelSelectorMatches(*sel, {}); !probe.ok())
    return Status(probe.status().code(), "couldn't convert Job selector: " + probe.status().message());
  return LabelMatcher([sel](const Labels& l) {
    auto r = api::labelSelectorMatches(*sel, l);
    return r.ok() && *r;
  });
}

bool sameOwnerRef(const OwnerReference* a, const OwnerReference* b) {
  if (!a || !b) return a == b;
  return a->apiVersion == b->apiVersion && a->kind == b->kind && a->name == b->name && a->uid == b->uid &&
         a->controller == b->controller && a->blockOwnerDeletion == b->blockOwnerDeletion;
}

bool isFinishedPodWithTrackingFinalizer(const Pod* p) {
  return p && (p->status.phase == "Failed" || p->status.phase == "Succeeded") && hasJobTrackingFinalizer(*p);
}

void recordFinishedPodWithTrackingFinalizer(const Pod* oldPod, const Pod* newPod) {
  const bool was = isFinishedPodWithTrackingFinalizer(oldPod), is = isFinishedPodWithTrackingFinalizer(newPod);
  if (was != is) metrics::terminatedPodsTrackingFinalizer(is ? "add" : "delete");
}

// Orphan-queue keys: "name|<ns>|<pod>" or "selector|<ns>|<LabelSelector JSON>".
std::string orphanNameKey(const std::string& ns, const std::string& name) { return "name|" + ns + "|" + name; }

// The selector in an orphan-queue key: {"l": matchLabels, "e": [[key, operator, values], ...]}.
std::string encodeSelector(const api::meta::v1::LabelSelector& sel) {
  nlohmann::json l = nlohmann::json::object(), e = nlohmann::json::array();
  for (const auto& [k, v] : sel.matchLabels) l[k] = v;
  for (const auto& r : sel.matchExpressions) e.push_back({r.key, r.operator_, r.values});
  return nlohmann::json({{"e", e}, {"l", l}}).dump();
}

std::optional<api::meta::v1::LabelSelector> decodeSelector(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  api::meta::v1::LabelSelector sel;
  const nlohmann::json labels = j.value("l", nlohmann::json::object());
  const nlohmann::json exprs = j.value("e", nlohmann::json::array());
  for (const auto& [k, v] : labels.items())
    if (v.is_string()) sel.matchLabels[k] = v.get<std::string>();
  for (const auto& r : exprs) {
    if (!r.is_array() || r.size() != 3 || !r[0].is_string() || !r[1].is_string() || !r[2].is_array())
      return std::nullopt;
    auto& req = sel.matchExpressions.emplace_back();
    req.key = r[0].get<std::string>();
    req.operator_ = r[1].get<std::string>();
    for (const auto& v : r[2])
      if (v.is_string()) req.values.push_back(v.get<std::string>());
  }
  return sel;
}

int32_t countReadyPods(const std::vector<PodPtr>& pods) {
  int32_t n = 0;
  for (const auto& p : pods) n += isPodReady(*p) ? 1 : 0;
  return n;
}

// Container restarts of pending/running pods past backoffLimit (restartPolicy OnFailure only).
bool pastBackoffLimitOnFailure(const Job& j, const std::vector<PodPtr>& pods) {
  if (j.spec.template_.spec.restartPolicy != "OnFailure") return false;
  int32_t restarts = 0;
  for (const auto& p : pods) {
    if (p->status.phase != "Running" && p->status.phase != "Pending") continue;
    for (const auto& s : p->status.initContainerStatuses) restarts += s.restartCount;
    for (const auto& s : p->status.containerStatuses) restarts += s.restartCount;
  }
  const int32_t limit = j.spec.backoffLimit.value_or(6);
  return limit == 0 ? restarts > 0 : restarts >= limit;
}

std::optional<std::string> getFailJobMessage(const Job& j, const std::vector<PodPtr>& pods) {
  if (!j.spec.podFailurePolicy) return std::nullopt;
  for (const auto& p : pods)
    if (isPodFailed(*p, j))
      if (auto m = matchPodFailurePolicy(j.spec.podFailurePolicy.operator->(), *p); m.failJobMessage)
        return m.failJobMessage;
  return std::nullopt;
}

}  // namespace

JobController::JobController(std::shared_ptr<client::RestClient> client,
                             std::shared_ptr<client::EventRecorder> recorder, informers::SharedInformer<Job>& jobs,
                             informers::SharedInformer<Pod>& pods, JobControllerOptions opts, Clock& clock)
    : client_(client), recorder_(recorder), jobs_(jobs), pods_(pods), opts_(opts), clock_(clock),
      podControl_(client, recorder), expectations_(clock),
      base_("job", [this](const std::string& k) { return syncJob(k); }, clock, -1,
            std::make_unique<runtime::ItemExponentialFailureRateLimiter>(1s, 1min)),
      orphanBase_("job_orphan_pod", [this](const std::string& k) { return syncOrphanPod(k); }, clock, -1,
                  std::make_unique<runtime::ItemExponentialFailureRateLimiter>(1s, 1min)) {
  if (opts_.staleConsistency)
    consistency_.enable({{"pods", [this] { return pods_.lastSyncResourceVersion(); }},
                         {"jobs", [this] { return jobs_.lastSyncResourceVersion(); }}});
  pods_.store().addIndexer(kPodControllerIndex, podControllerIndexKeys);

  informers::EventHandler<Job> jh;
  jh.onAdd = [this](const JobPtr& j) { addJob(j); };
  jh.onUpdate = [this](const JobPtr& o, const JobPtr& c) { updateJob(o, c); };
  jh.onDelete = [this](const JobPtr& j, bool) { deleteJob(j); };
  registrations_.push_back(jobs_.addEventHandler(jh));

  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const PodPtr& p) { addPod(p); };
  ph.onUpdate = [this](const PodPtr& o, const PodPtr& c) { updatePod(o, c); };
  ph.onDelete = [this](const PodPtr& p, bool) { deletePod(*p, true); };
  registrations_.push_back(pods_.addEventHandler(ph));
}

void JobController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting job controller\"");
  std::vector<std::function<bool()>> synced = {[this] { return pods_.hasSynced(); },
                                               [this] { return jobs_.hasSynced(); }};
  base_.start(workers, stop, synced);
  orphanBase_.start(workers, stop, synced);
}

client::ObjectReference JobController::ref(const Job& j) const {
  return {kKind, kAPIVersion, j.metadata.namespace_, j.metadata.name, j.metadata.uid, j.metadata.resourceVersion, ""};
}

api::Time JobController::now() const { return api::timeNow(clock_); }

// ---------------------------------------------------------------- handlers

JobPtr JobController::resolveControllerRef(const std::string& ns, const OwnerReference& r) {
  if (r.kind != kKind) return nullptr;
  auto j = jobs_.store().get(ns, r.name);
  if (!j || j->metadata.uid != r.uid) return nullptr;
  return j;
}

std::vector<JobPtr> JobController::getPodJobs(const Pod& pod) {
  // upstream GetPodJobs: Jobs of the pod's namespace whose selector matches its labels (a pod without labels
  // matches none).
  std::vector<JobPtr> out;
  if (pod.metadata.labels.empty()) return out;
  for (const auto& j : jobs_.store().byIndex(informers::kNamespaceIndex, pod.metadata.namespace_)) {
    auto sel = selectorOf(*j);
    if (sel.ok() && (*sel)(pod.metadata.labels)) out.push_back(j);
  }
  if (out.size() > 1)
    KLOG_ERROR("\"user error! more than one job is selecting pods with labels\" pod=" + log::quote(podKey(pod)));
  return out;
}

void JobController::enqueueSyncJobImmediately(const Job& j) { enqueueSyncJobWithDelay(j, Clock::Duration::zero()); }
void JobController::enqueueSyncJobBatched(const Job& j) { enqueueSyncJobWithDelay(j, opts_.syncJobBatchPeriod); }
void JobController::enqueueSyncJobWithDelay(const Job& j, Clock::Duration d) {
  KLOG_V(2, "\"enqueueing job\" key=" + log::quote(keyOf(j.metadata)) + " delay=\"" +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms\"");
  base_.enqueueAfter(keyOf(j.metadata), d);
}

void JobController::enqueueOrphanPod(const Pod& p, bool backoff) {
  const std::string k = orphanNameKey(p.metadata.namespace_, p.metadata.name);
  if (backoff) orphanBase_.queue().addRateLimited(k);
  else orphanBase_.enqueue(k);
}

void JobController::enqueueLabelSelector(const Job& j) {
  if (!j.spec.selector) return;  // labels.Nothing(): no pod to look at
  if (auto probe = api::labelSelectorMatches(*j.spec.selector, {}); !probe.ok()) {
    KLOG_ERROR("\"job " + keyOf(j.metadata) + " has invalid label selector: " + probe.status().message() + "\"");
    return;
  }
  orphanBase_.enqueue("selector|" + j.metadata.namespace_ + "|" + encodeSelector(*j.spec.selector));
}

void JobController::addPod(const PodPtr& pod) {
  recordFinishedPodWithTrackingFinalizer(nullptr, pod.get());
  if (pod->metadata.deletionTimestamp) {
    deletePod(*pod, false);
    return;
  }
  if (const OwnerReference* r = getControllerOf(pod->metadata)) {
    auto j = resolveControllerRef(pod->metadata.namespace_, *r);
    if (!j) return;
    expectations_.creationObserved(keyOf(j->metadata));
    enqueueSyncJobBatched(*j);
    return;
  }
  if (hasJobTrackingFinalizer(*pod)) enqueueOrphanPod(*pod, false);
  for (const auto& j : getPodJobs(*pod)) enqueueSyncJobBatched(*j);
}

void JobController::updatePod(const PodPtr& oldPod, const PodPtr& curPod) {
  recordFinishedPodWithTrackingFinalizer(oldPod.get(), curPod.get());
  if (curPod->metadata.resourceVersion == oldPod->metadata.resourceVersion) return;
  if (curPod->metadata.deletionTimestamp) {
    deletePod(*curPod, false);
    return;
  }
  const bool finalizerRemoved = !hasJobTrackingFinalizer(*curPod);
  const OwnerReference* cur = getControllerOf(curPod->metadata);
  const OwnerReference* old = getControllerOf(oldPod->metadata);
  const bool refChanged = !sameOwnerRef(cur, old);
  if (refChanged && old) {
    if (auto j = resolveControllerRef(oldPod->metadata.namespace_, *old)) {
      if (finalizerRemoved) finalizerExpectations_.finalizerRemovalObserved(keyOf(j->metadata), curPod->metadata.uid);
      enqueueSyncJobBatched(*j);
    }
  }
  if (cur) {
    auto j = resolveControllerRef(curPod->metadata.namespace_, *cur);
    if (!j) return;
    if (finalizerRemoved) finalizerExpectations_.finalizerRemovalObserved(keyOf(j->metadata), curPod->metadata.uid);
    enqueueSyncJobBatched(*j);
    return;
  }
  if (hasJobTrackingFinalizer(*curPod)) enqueueOrphanPod(*curPod, false);
  if (curPod->metadata.labels != oldPod->metadata.labels || refChanged)
    for (const auto& j : getPodJobs(*curPod)) enqueueSyncJobBatched(*j);
}

void JobController::deletePod(const Pod& pod, bool final) {
  if (final) recordFinishedPodWithTrackingFinalizer(&pod, nullptr);
  const OwnerReference* r = getControllerOf(pod.metadata);
  const bool hasFinalizer = hasJobTrackingFinalizer(pod);
  if (!r) {
    if (hasFinalizer) enqueueOrphanPod(pod, false);
    return;
  }
  auto j = resolveControllerRef(pod.metadata.namespace_, *r);
  if (!j || isJobFinished(*j)) {
    if (hasFinalizer) enqueueOrphanPod(pod, false);
    return;
  }
  const std::string key = keyOf(j->metadata);
  expectations_.deletionObserved(key);
  if (final || !hasFinalizer) finalizerExpectations_.finalizerRemovalObserved(key, pod.metadata.uid);
  enqueueSyncJobBatched(*j);
}

void JobController::addJob(const JobPtr& j) {
  enqueueSyncJobImmediately(*j);
  if (const api::String* name = managedByExternalController(*j)) metrics::jobByExternalController(*name);
}

void JobController::updateJob(const JobPtr& oldJ, const JobPtr& curJ) {
  if (isJobFinished(*curJ)) {
    enqueueLabelSelector(*curJ);
    return;
  }
  if (curJ->metadata.generation == oldJ->metadata.generation) enqueueSyncJobBatched(*curJ);
  else enqueueSyncJobImmediately(*curJ);
  if (!curJ->status.startTime || !curJ->spec.activeDeadlineSeconds) return;
  const auto& oldADS = oldJ->spec.activeDeadlineSeconds;
  if (!oldADS || *oldADS != *curJ->spec.activeDeadlineSeconds) {
    const auto passed = clock_.wallNow() - toWallTime(*curJ->status.startTime);
    const auto total = std::chrono::seconds(*curJ->spec.activeDeadlineSeconds);
    const auto wait = std::chrono::duration_cast<Clock::Duration>(total - passed);
    base_.enqueueAfter(keyOf(curJ->metadata), wait);
    KLOG_V(4, "\"job's ActiveDeadlineSeconds updated, will rsync\" key=" + log::quote(keyOf(curJ->metadata)) +
                  " interval=\"" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(wait).count()) +
                  "s\"");
  }
}

void JobController::deleteJob(const JobPtr& j) {
  enqueueSyncJobImmediately(*j);
  const std::string key = keyOf(j->metadata);
  consistency_.clear(key, j->metadata.uid);
  {
    std::lock_guard l(finishedMu_);
    finishedJobExpectations_.erase(j->metadata.uid);
  }
  enqueueLabelSelector(*j);
  expectations_.deleteExpectations(key);
  podBackoffStore_.removeBackoffRecord(key);
}

// ---------------------------------------------------------------- orphan pods

runtime::SyncResult JobController::syncOrphanPod(const std::string& key) {
  const size_t a = key.find('|'), b = key.find('|', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos)
    return runtime::SyncResult::errorNoRetry(Status(StatusCode::kInvalidArgument, "unknown key type: " + key));
  const std::string kind = key.substr(0, a), ns = key.substr(a + 1, b - a - 1), value = key.substr(b + 1);
  if (kind == "name") {
    auto pod = pods_.store().get(ns, value);
    if (!pod) {
      KLOG_V(4, "\"Orphan pod has been deleted\" pod=" + log::quote(ns + "/" + value));
      return runtime::SyncResult::ok();
    }
    Status s = handleSingleOrphanPod(*pod);
    return s.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(s);
  }
  auto decoded = decodeSelector(value);
  if (!decoded)
    return runtime::SyncResult::errorNoRetry(Status(StatusCode::kInvalidArgument, "invalid label selector: " + value));
  const api::meta::v1::LabelSelector& sel = *decoded;
  KLOG_V(8, "\"syncing all pods matching the label selector\" namespace=" + log::quote(ns));
  for (const auto& pod : pods_.store().byIndex(informers::kNamespaceIndex, ns)) {
    auto m = api::labelSelectorMatches(sel, pod->metadata.labels);
    if (!m.ok() || !*m) continue;
    if (Status s = handleSingleOrphanPod(*pod); !s.ok()) {
      KLOG_ERROR("\"syncing orphan pod failed\" err=" + log::quote(s.message()) + " pod=" + log::quote(podKey(*pod)));
      enqueueOrphanPod(*pod, true);
    }
  }
  return runtime::SyncResult::ok();
}

Status JobController::handleSingleOrphanPod(const Pod& pod) {
  if (const OwnerReference* r = getControllerOf(pod.metadata)) {
    if (r->kind != kKind || r->apiVersion != kAPIVersion) return Status::Ok();  // not a batch/v1 Job's
    auto j = resolveControllerRef(pod.metadata.namespace_, *r);
    if (j) {
      if (const api::String* name = managedByExternalController(*j)) {
        KLOG_V(2, "\"Skip cleanup of the job finalizer for a pod owned by a job that is managed by an external "
                  "controller\" pod=" + log::quote(podKey(pod)) + " controllerName=" + log::quote(*name));
        return Status::Ok();
      }
      if (!isJobFinished(*j)) return Status::Ok();  // adopted meanwhile
    }
  }
  if (auto patch = removeTrackingFinalizerPatch(pod)) {
    Status s = podControl_.patchPod(pod.metadata.namespace_, pod.metadata.name, *patch);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- sync

Result<std::vector<PodPtr>> JobController::getPodsForJob(const Job& j) {
  auto selector = selectorOf(j);
  if (!selector.ok()) return selector.status();
  const std::string& ns = j.metadata.namespace_;
  std::vector<PodPtr> candidates = pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, nullptr));
  OwnerReference self = newControllerRef(j.metadata, kAPIVersion, kKind);
  for (auto& p : pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, &self))) candidates.push_back(p);
  ControllerRefManager<Pod> cm(
      j.metadata, kAPIVersion, kKind, *selector,
      [&]() -> Status {
        auto fresh = client::get<Job>(*client_, ns, j.metadata.name);
        if (!fresh.ok()) return fresh.status();
        if (fresh->metadata.uid != j.metadata.uid)
          return Status(StatusCode::kConflict, "original Job " + keyOf(j.metadata) + " is gone: got uid " +
                                                   fresh->metadata.uid + ", wanted " + j.metadata.uid);
        if (fresh->metadata.deletionTimestamp)
          return Status(StatusCode::kConflict,
                        keyOf(j.metadata) + " has just been deleted at " + fresh->metadata.deletionTimestamp->rfc3339());
        return Status::Ok();
      },
      [this](const std::string& pns, const std::string& pname, const std::string& patch) {
        return podControl_.patchPod(pns, pname, patch);
      },
      {kJobTrackingFinalizer});
  auto [pods, err] = cm.claim(candidates);
  // Adopted pods carry the finalizer from now on (the adoption patch added it).
  for (auto& p : pods) {
    bool adopted = true;
    for (const auto& r : p->metadata.ownerReferences)
      if (r.uid == j.metadata.uid) adopted = false;
    if (adopted && !hasJobTrackingFinalizer(*p)) {
      auto copy = std::make_shared<Pod>(*p);
      copy->metadata.finalizers.push_back(kJobTrackingFinalizer);
      p = copy;
    }
  }
  if (!err.ok()) return err;
  return pods;
}

runtime::SyncResult JobController::syncJob(const std::string& key) {
  const auto start = clock_.now();
  struct Finished {
    const std::string& key;
    Clock& clock;
    Clock::TimePoint start;
    ~Finished() {
      KLOG_V(4, "\"Finished syncing job\" key=" + log::quote(key) + " elapsed=\"" +
                    std::to_string(std::chrono::duration<double>(clock.now() - start).count()) + "s\"");
    }
  } finished{key, clock_, start};

  auto [ns, name] = informers::splitMetaNamespaceKey(key);
  if (ns.empty() || name.empty())
    return runtime::SyncResult::errorNoRetry(Status(
        StatusCode::kInvalidArgument, "invalid job key \"" + key + "\": either namespace or name is missing"));
  std::string lagging;
  if (Status s = consistency_.ensureReady(key, &lagging); !s.ok()) {
    metrics::staleSyncSkip(lagging == "jobs" ? "batch" : "", lagging);
    return runtime::SyncResult::error(s);
  }
  auto shared = jobs_.store().get(ns, name);
  if (!shared) {
    KLOG_V(4, "\"Job has been deleted\" key=" + log::quote(key));
    expectations_.deleteExpectations(key);
    finalizerExpectations_.deleteExpectations(key);
    consistency_.clear(key);
    podBackoffStore_.removeBackoffRecord(key);
    return runtime::SyncResult::ok();
  }
  if (const api::String* controllerName = managedByExternalController(*shared)) {
    KLOG_V(2, "\"Skip syncing the job as it is managed by an external controller\" key=" + log::quote(key) +
                  " uid=" + log::quote(shared->metadata.uid) + " controllerName=" + log::quote(*controllerName));
    return runtime::SyncResult::ok();
  }
  Job job = *shared;
  if (isJobFinished(job)) {
    podBackoffStore_.removeBackoffRecord(key);
    consistency_.clear(key, job.metadata.uid);
    std::lock_guard l(finishedMu_);
    finishedJobExpectations_.erase(job.metadata.uid);
    return runtime::SyncResult::ok();
  }
  {
    std::lock_guard l(finishedMu_);
    if (finishedJobExpectations_.count(job.metadata.uid)) {
      KLOG_V(2, "\"Skip syncing the job as its marked finished but the corresponding update event is not yet "
                "received\" uid=" + log::quote(job.metadata.uid) + " key=" + log::quote(key));
      return runtime::SyncResult::ok();
    }
  }
  if (job.spec.completionMode && *job.spec.completionMode != "NonIndexed" && *job.spec.completionMode != "Indexed") {
    recorder_->event(ref(job), client::kEventTypeWarning, "UnknownCompletionMode",
                     "Skipped Job sync because completion mode is unknown");
    return runtime::SyncResult::ok();
  }

  const std::string completionMode = completionModeStr(job);
  std::string action = metrics::kActionReconciling;
  auto finish = [&](Status s) {
    metrics::observeSync(completionMode, s.ok() ? "success" : "error", action,
                         std::chrono::duration<double>(clock_.now() - start).count());
    return s.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(std::move(s));
  };

  if (!job.status.uncountedTerminatedPods) job.status.uncountedTerminatedPods.emplace();
  // Expectations before listing pods: a pod created after the check only defers this sync to the next one.
  const bool satisfiedExpectations = expectations_.satisfiedExpectations(key);
  auto pods = getPodsForJob(job);
  if (!pods.ok()) return finish(pods.status());

  SyncCtx ctx;
  ctx.job = &job;
  ctx.pods = std::move(pods).value();
  for (const auto& p : ctx.pods) {
    if (isPodActive(*p)) ctx.activePods.push_back(p);
    if (isPodTerminating(*p)) ++ctx.terminating;
  }
  ctx.ready = countReadyPods(ctx.activePods);
  ctx.uncountedSucceeded = {job.status.uncountedTerminatedPods->succeeded.begin(),
                            job.status.uncountedTerminatedPods->succeeded.end()};
  ctx.uncountedFailed = {job.status.uncountedTerminatedPods->failed.begin(),
                         job.status.uncountedTerminatedPods->failed.end()};
  ctx.expectedRmFinalizers = finalizerExpectations_.getExpectedUIDs(key);
  int32_t active = static_cast<int32_t>(ctx.activePods.size());
  auto newSucceededPods = ctx.validPods(&ctx.uncountedSucceeded, [](const Pod& p) { return p.status.phase == "Succeeded"; });
  auto newFailedPods = ctx.validPods(&ctx.uncountedFailed, [&](const Pod& p) { return isPodFailed(p, job); });
  int32_t nonIgnoredFailed = static_cast<int32_t>(newFailedPods.size());
  if (job.spec.podFailurePolicy)
    for (const auto& p : newFailedPods)
      if (!matchPodFailurePolicy(job.spec.podFailurePolicy.operator->(), *p).countFailed) --nonIgnoredFailed;
  ctx.succeeded = job.status.succeeded + static_cast<int32_t>(newSucceededPods.size()) +
                  static_cast<int32_t>(ctx.uncountedSucceeded.size());
  ctx.failed = job.status.failed + nonIgnoredFailed + static_cast<int32_t>(ctx.uncountedFailed.size());

  if (!job.status.startTime && !jobSuspended(job)) job.status.startTime = now();
  ctx.newBackoffRecord = podBackoffStore_.newBackoffRecord(key, newSucceededPods, newFailedPods);

  Status manageJobErr;
  const int32_t backoffLimit = job.spec.backoffLimit.value_or(6);
  const bool exceedsBackoffLimit = ctx.failed > backoffLimit;
  auto failureCondition = [&](const char* reason, const char* message) {
    return newCondition("FailureTarget", "True", reason, message, now());
  };
  if (const JobCondition* c = hasSuccessCriteriaMetCondition(job)) ctx.finishedCondition = *c;
  if (!ctx.finishedCondition) {
    const JobCondition* ft = findConditionByType(job.status.conditions, "FailureTarget");
    if (ft && ft->status == "True") {
      ctx.finishedCondition = newCondition("Failed", "True", ft->reason, ft->message, now());
    } else if (auto msg = getFailJobMessage(job, ctx.pods)) {
      ctx.finishedCondition = newCondition("FailureTarget", "True", "PodFailurePolicy", *msg, now());
    }
  }
  if (!ctx.finishedCondition) {
    if (exceedsBackoffLimit || pastBackoffLimitOnFailure(job, ctx.pods)) {
      ctx.finishedCondition = failureCondition("BackoffLimitExceeded", "Job has reached the specified backoff limit");
    } else if (pastActiveDeadline(job)) {
      ctx.finishedCondition = failureCondition("DeadlineExceeded", "Job was active longer than specified deadline");
    } else if (job.spec.activeDeadlineSeconds && !jobSuspended(job)) {
      const auto wait = std::chrono::duration_cast<Clock::Duration>(
          std::chrono::seconds(*job.spec.activeDeadlineSeconds) - (clock_.wallNow() - toWallTime(*job.status.startTime)));
      KLOG_V(2, "\"Job has activeDeadlineSeconds configuration. Will sync this job again\" key=" + log::quote(key) +
                    " nextSyncIn=\"" + std::to_string(std::chrono::duration<double>(wait).count()) + "s\"");
      base_.enqueueAfter(key, wait);
    }
  }

  if (isIndexedJob(job)) {
    std::tie(ctx.prevSucceededIndexes, ctx.succeededIndexes) = calculateSucceededIndexes(job, ctx.pods);
    ctx.succeeded = ctx.succeededIndexes.total();
    const int32_t completions = job.spec.completions.value_or(0);
    if (hasBackoffLimitPerIndex(job)) {
      ctx.failedIndexes = calculateFailedIndexes(job, ctx.pods);
      if (!ctx.finishedCondition) {
        if (job.spec.maxFailedIndexes && ctx.failedIndexes->total() > *job.spec.maxFailedIndexes)
          ctx.finishedCondition = failureCondition("MaxFailedIndexesExceeded",
                                                   "Job has exceeded the specified maximal number of failed indexes");
        else if (ctx.failedIndexes->total() > 0 &&
                 ctx.failedIndexes->total() + ctx.succeededIndexes.total() >= completions)
          ctx.finishedCondition = failureCondition("FailedIndexes", "Job has failed indexes");
      }
      ctx.podsWithDelayedDeletionPerIndex = getPodsWithDelayedDeletionPerIndex(ctx);
    }
    if (!ctx.finishedCondition)
      if (auto msg = matchSuccessPolicy(job.spec.successPolicy.operator->(), completions, ctx.succeededIndexes))
        ctx.finishedCondition = newCondition("SuccessCriteriaMet", "True", "SuccessPolicy", *msg, now());
  }

  bool suspendCondChanged = false;
  if (ctx.finishedCondition) {
    Deleted d = deleteActivePods(job, ctx.activePods);
    // Pods left, or creates not yet seen: not finished yet.
    if (d.total != active || !satisfiedExpectations) ctx.finishedCondition.reset();
    active -= d.total;
    ctx.terminating += d.total;
    ctx.ready -= d.ready;
    manageJobErr = d.err;
  } else {
    bool manageJobCalled = false;
    if (satisfiedExpectations && !job.metadata.deletionTimestamp) {
      std::tie(active, action) = manageJob(job, ctx, manageJobErr);
      manageJobCalled = true;
    }
    const bool complete = job.spec.completions ? ctx.succeeded >= *job.spec.completions && active == 0
                                               : ctx.succeeded > 0 && active == 0;
    if (complete) {
      ctx.finishedCondition = newCondition("SuccessCriteriaMet", "True", "CompletionsReached",
                                           "Reached expected number of succeeded pods", now());
    } else if (manageJobCalled) {
      if (jobSuspended(job)) {
        if (ensureJobConditionStatus(job.status.conditions, "Suspended", "True", "JobSuspended", "Job suspended",
                                     now())) {
          suspendCondChanged = true;
          recorder_->event(ref(job), client::kEventTypeNormal, "Suspended", "Job suspended");
          if (opts_.resetStartTimeOnSuspend) job.status.startTime.reset();
        }
      } else if (ensureJobConditionStatus(job.status.conditions, "Suspended", "False", "JobResumed", "Job resumed",
                                          now())) {
        suspendCondChanged = true;
        recorder_->event(ref(job), client::kEventTypeNormal, "Resumed", "Job resumed");
        // activeDeadlineSeconds counts from the resume.
        job.status.startTime = now();
      }
    }
  }

  bool needsStatusUpdate = suspendCondChanged || active != job.status.active || job.status.ready != ctx.ready ||
                           job.status.terminating != ctx.terminating;
  job.status.active = active;
  job.status.ready = ctx.ready;
  job.status.terminating = ctx.terminating;
  if (Status s = trackJobStatusAndRemoveFinalizers(ctx, needsStatusUpdate); !s.ok())
    return finish(Status(s.code(), "tracking status: " + s.message()));
  return finish(manageJobErr);
}

bool JobController::pastActiveDeadline(const Job& j) const {
  if (!j.spec.activeDeadlineSeconds || !j.status.startTime || jobSuspended(j)) return false;
  return clock_.wallNow() - toWallTime(*j.status.startTime) >= std::chrono::seconds(*j.spec.activeDeadlineSeconds);
}

}  // namespace kcm::controllers::job
