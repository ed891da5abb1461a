#pragma once
// ttl-after-finished-controller (alias ttl-after-finished; upstream pkg/controller/ttlafterfinished): a Job with
// spec.ttlSecondsAfterFinished is deleted (foreground propagation, UID precondition) that many seconds after its
// Complete or Failed condition turned True. The cached Job is checked first, then a fresh read, so a TTL changed
// meanwhile is respected; a Job whose time has not come is looked at again when it has (no polling). Metric
// ttl_after_finished_controller_job_deletion_duration_seconds as upstream.
#include <memory>
#include <optional>
#include <string>

#include "api/gen/batch_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::ttlafterfinished {

using api::batch::v1::Job;

// needsCleanup: a TTL and a finished condition.
bool needsCleanup(const Job& j);
// jobFinishTime: the lastTransitionTime of the True Complete/Failed condition, or an error naming the Job.
Result<api::Time> jobFinishTime(const Job& j);

class TTLAfterFinishedController {
 public:
  TTLAfterFinishedController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Job>& jobs,
                             Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult processJob(const std::string& key);

 private:
  // processTTL: the expiry time when the Job is due now; nullopt when it is not (re-queued for when it will be).
  Result<std::optional<std::chrono::system_clock::time_point>> processTTL(const Job& j);
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<Job>& jobs_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::ttlafterfinished
