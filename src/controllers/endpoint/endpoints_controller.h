#pragma once
// endpoints-controller (alias endpoint; upstream pkg/controller/endpoint/endpoints_controller.go): keeps an
// Endpoints object, named as its Service, for every Service with a selector (not ExternalName): one address per
// matching pod with an IP of the Service's family (ready, or not ready unless publishNotReadyAddresses;
// terminating pods only with it), its nodeName and targetRef, the hostname when its subdomain is the Service;
// the ports each Service port targets on that pod; subsets packed and ordered as upstream (endpoints_util.h).
// Over 1000 addresses the subsets are truncated and endpoints.kubernetes.io/over-capacity=truncated is set; the
// endpoints.kubernetes.io/last-change-trigger-time annotation, the Service's labels, service.kubernetes.io/headless
// and endpoints.kubernetes.io/managed-by=endpoint-controller are kept as upstream. A deleted Service's Endpoints is
// deleted; pod changes reach the Services they can affect after --endpoint-updates-batch-period. Each Service is
// retried up to 15 times; a write the informer has not caught up with yet is not repeated on stale data.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/executor.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/util/endpointslice_util.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::endpoint {

inline constexpr int kMaxCapacity = 1000;
inline constexpr const char* kLabelManagedBy = "endpoints.kubernetes.io/managed-by";
inline constexpr const char* kControllerName = "endpoint-controller";
inline constexpr const char* kEndpointsOverCapacity = "endpoints.kubernetes.io/over-capacity";
inline constexpr const char* kEndpointsLastChangeTriggerTime = "endpoints.kubernetes.io/last-change-trigger-time";
inline constexpr const char* kIsHeadlessService = "service.kubernetes.io/headless";
inline constexpr const char* kLeaderElectionRecordAnnotationKey = "control-plane.alpha.kubernetes.io/leader";

class EndpointsController {
 public:
  EndpointsController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<api::core::v1::Pod>& pods,
                      informers::SharedInformer<api::core::v1::Service>& services,
                      informers::SharedInformer<api::core::v1::Endpoints>& endpoints,
                      std::shared_ptr<client::EventRecorder> recorder, Clock::Duration endpointUpdatesBatchPeriod,
                      Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncService(const std::string& key);
  // checkLeftoverEndpoints: every Endpoints not a leader-election record, queued (its Service may be gone).
  void checkLeftoverEndpoints();

 private:
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  informers::SharedInformer<api::core::v1::Service>& services_;
  informers::SharedInformer<api::core::v1::Endpoints>& endpoints_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock::Duration batchPeriod_;
  Clock& clock_;
  endpointsliceutil::TriggerTimeTracker triggerTimeTracker_;
  std::mutex staleMu_;
  std::map<std::string, std::string> staleResourceVersion_;  // staleEndpointsTracker: ns/name -> resourceVersion
  runtime::ControllerBase base_;
  Periodic leftover_;  // the one leftover check, once the caches synced
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

// truncateEndpoints: at most 1000 addresses, ready ones first, taken from each subset in proportion; true when
// something was cut.
bool truncateEndpoints(api::core::v1::Endpoints& endpoints);

}  // namespace kcm::controllers::endpoint
