#include "controllers/ttlafterfinished/ttlafterfinished_controller.h"

#include "api/gen/batch_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"

namespace kcm::controllers::ttlafterfinished {
using std::chrono::system_clock;

namespace {

std::string keyOf(const Job& j) { return j.metadata.namespace_ + "/" + j.metadata.name; }

metrics::Histogram& deletionDuration() {
  static auto& h = metrics::Registry::global().histogram(
      "ttl_after_finished_controller_job_deletion_duration_seconds",
      "The time it took to delete the job since it became eligible for deletion",
      metrics::exponentialBuckets(0.1, 2, 14));
  return h;
}

}  // namespace

bool needsCleanup(const Job& j) {
  if (!j.spec.ttlSecondsAfterFinished) return false;
  for (const auto& c : j.status.conditions)
    if ((c.type == "Complete" || c.type == "Failed") && c.status == "True") return true;
  return false;
}

Result<api::Time> jobFinishTime(const Job& j) {
  for (const auto& c : j.status.conditions) {
    if ((c.type != "Complete" && c.type != "Failed") || c.status != "True") continue;
    if (c.lastTransitionTime.isZero())
      return Status(StatusCode::kInvalidArgument, "unable to find the time when the Job " + keyOf(j) + " finished");
    return c.lastTransitionTime;
  }
  return Status(StatusCode::kInvalidArgument, "unable to find the status of the finished Job " + keyOf(j));
}

TTLAfterFinishedController::TTLAfterFinishedController(std::shared_ptr<client::RestClient> client,
                                                       informers::SharedInformer<Job>& jobs, Clock& clock)
    : client_(std::move(client)), jobs_(jobs), clock_(clock),
      base_("ttl_jobs_to_delete", [this](const std::string& key) { return processJob(key); }, clock) {
  deletionDuration();  // registered at start, as upstream's metrics.Register()
  informers::EventHandler<Job> h;
  auto maybeEnqueue = [this](const std::shared_ptr<const Job>& j) {
    if (!j->metadata.deletionTimestamp && needsCleanup(*j)) {
      KLOG_V(4, "\"Add job to cleanup\" job=" + log::quote(keyOf(*j)));
      base_.enqueue(keyOf(*j));
    }
  };
  h.onAdd = maybeEnqueue;
  h.onUpdate = [maybeEnqueue](const auto&, const auto& j) { maybeEnqueue(j); };
  registrations_.push_back(jobs_.addEventHandler(h));
}

void TTLAfterFinishedController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting TTL after finished controller\"");
  base_.start(workers, stop, {[this] { return jobs_.hasSynced(); }});
}

Result<std::optional<system_clock::time_point>> TTLAfterFinishedController::processTTL(const Job& j) {
  using Due = std::optional<system_clock::time_point>;
  if (j.metadata.deletionTimestamp || !needsCleanup(j)) return Due();
  auto finished = jobFinishTime(j);
  if (!finished.ok()) return finished.status();
  const auto now = clock_.wallNow();
  const auto finishAt = toWallTime(*finished);
  const auto expireAt = finishAt + std::chrono::seconds(*j.spec.ttlSecondsAfterFinished);
  if (finishAt > now)
    KLOG_INFO("\"Warning: Found Job finished in the future. This is likely due to time skew in the cluster. Job "
              "cleanup will be deferred.\" job=" + log::quote(keyOf(j)));
  const auto remaining = expireAt - now;
  if (remaining <= system_clock::duration::zero()) return Due(expireAt);
  base_.enqueueAfter(keyOf(j), std::chrono::duration_cast<Clock::Duration>(remaining));
  return Due();
}

runtime::SyncResult TTLAfterFinishedController::processJob(const std::string& key) {
  KLOG_V(4, "\"Checking if Job is ready for cleanup\" job=" + log::quote(key));
  auto cached = jobs_.store().get(key);
  if (!cached) return runtime::SyncResult::ok();
  auto due = processTTL(*cached);
  if (!due.ok()) return runtime::SyncResult::error(due.status());
  if (!*due) return runtime::SyncResult::ok();
  // The cache may be stale (a TTL changed, the Job re-created): decide again on a fresh read.
  const auto slash = key.find('/');
  auto fresh = client::get<Job>(*client_, key.substr(0, slash), key.substr(slash + 1));
  if (!fresh.ok()) {
    if (fresh.status().code() == StatusCode::kNotFound) return runtime::SyncResult::ok();
    return runtime::SyncResult::error(fresh.status());
  }
  due = processTTL(*fresh);
  if (!due.ok()) return runtime::SyncResult::error(due.status());
  if (!*due) return runtime::SyncResult::ok();
  KLOG_V(4, "\"Cleaning up Job\" job=" + log::quote(key));
  client::DeleteOptions o;
  o.propagationPolicy = "Foreground";
  o.preconditionUID = fresh->metadata.uid;
  if (Status st = client::remove<Job>(*client_, fresh->metadata.namespace_, fresh->metadata.name, o); !st.ok())
    return runtime::SyncResult::error(st);
  deletionDuration().observe(std::chrono::duration<double>(clock_.wallNow() - **due).count());
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::ttlafterfinished
