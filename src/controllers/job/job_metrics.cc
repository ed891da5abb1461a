#include "controllers/job/job_metrics.h"

namespace kcm::controllers::job::metrics {

namespace {
kcm::metrics::Registry& reg() { return kcm::metrics::Registry::global(); }
}  // namespace

void observeSync(const std::string& completionMode, const std::string& result, const std::string& action,
                 double seconds) {
  const kcm::metrics::Labels l = {{"action", action}, {"completion_mode", completionMode}, {"result", result}};
  reg().histogram("job_controller_job_sync_duration_seconds", "The time it took to sync a job",
                  kcm::metrics::exponentialBuckets(0.004, 2, 15), l)
      .observe(seconds);
  reg().counter("job_controller_job_syncs_total", "The number of job syncs", l).inc();
}

void jobFinished(const std::string& completionMode, const std::string& result, const std::string& reason) {
  reg().counter("job_controller_jobs_finished_total", "The number of finished jobs",
                {{"completion_mode", completionMode}, {"reason", reason}, {"result", result}})
      .inc();
}

void jobByExternalController(const std::string& controllerName) {
  reg().counter("job_controller_jobs_by_external_controller_total",
                "The number of Jobs managed by an external controller", {{"controller_name", controllerName}})
      .inc();
}

void podsFinished(const std::string& completionMode, const std::string& result, double n) {
  if (n < 0) return;  // a Prometheus counter cannot go down; zero still creates the series
  reg().counter("job_controller_job_pods_finished_total", "The number of finished Pods that are fully tracked",
                {{"completion_mode", completionMode}, {"result", result}})
      .inc(n);
}

void podFailureHandledByPolicy(const std::string& action, double n) {
  reg().counter("job_controller_pod_failures_handled_by_failure_policy_total",
                "The number of failed Pods handled by failure policy with\n\t\t\trespect to the failure policy "
                "action applied based on the matched\n\t\t\trule. Possible values of the action label correspond "
                "to the\n\t\t\tpossible values for the failure policy rule action, which are:\n\t\t\t\"FailJob\", "
                "\"Ignore\" and \"Count\".",
                {{"action", action}})
      .inc(n);
}

void terminatedPodsTrackingFinalizer(const std::string& event) {
  reg().counter("job_controller_terminated_pods_tracking_finalizer_total",
                "The number of terminated pods (phase=Failed|Succeeded)\nthat have the finalizer "
                "batch.kubernetes.io/job-tracking\nThe event label can be \"add\" or \"delete\".",
                {{"event", event}})
      .inc();
}

void finishedIndexes(const std::string& status, const std::string& backoffLimit, double n) {
  if (n < 0) return;  // a Prometheus counter cannot go down; zero still creates the series
  reg().counter("job_controller_job_finished_indexes_total",
                "The number of finished indexes. Possible values for the\n\t\t\tstatus label are: \"succeeded\", "
                "\"failed\". Possible values for the\n\t\t\tbackoffLimit label are: \"perIndex\" and \"global\"",
                {{"backoffLimit", backoffLimit}, {"status", status}})
      .inc(n);
}

void podsCreation(const std::string& reason, const std::string& status, double n) {
  reg().counter("job_controller_job_pods_creation_total",
                "The number of Pods created by the Job controller labelled with a reason for the Pod creation.\n"
                "This metric also distinguishes between Pods created using different PodReplacementPolicy "
                "settings.\nPossible values of the \"reason\" label are:\n\"new\", "
                "\"recreate_terminating_or_failed\", \"recreate_failed\".\nPossible values of the \"status\" label "
                "are:\n\"succeeded\", \"failed\".",
                {{"reason", reason}, {"status", status}})
      .inc(n);
}

void staleSyncSkip(const std::string& group, const std::string& resource) {
  reg().counter("job_controller_stale_sync_skips_total",
                "Total number of Job syncs skipped due to a stale watch cache.",
                {{"group", group}, {"resource", resource}})
      .inc();
}

}  // namespace kcm::controllers::job::metrics
