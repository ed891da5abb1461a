#pragma once
// endpointslice-controller (alias endpointslice; upstream pkg/controller/endpointslice/endpointslice_controller.go):
// keeps the EndpointSlices (managed-by endpointslice-controller.k8s.io, labelled kubernetes.io/service-name, owned by
// the Service) of every Service with a selector in step with its pods, through the Reconciler (reconciler.h). Pod
// changes reach the Services they can affect after --endpointslice-updates-batch-period; a slice changed by someone
// else brings its Service back after max(1 s, that period); a sync on a slice cache older than our own writes is
// refused and retried (up to 15 times). Slices of a deleted Service go with it (owner references, garbage collector).
// Node changes (added, deleted, readiness or zone changed) refresh the TopologyCache on a queue of their own and
// bring back the Services whose topology hints now overload a zone.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/discovery_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/endpointslice/endpointslice_tracker.h"
#include "controllers/endpointslice/reconciler.h"
#include "controllers/endpointslice/topology_cache.h"
#include "controllers/util/endpointslice_util.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::endpointslice {

class EndpointSliceController {
 public:
  EndpointSliceController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Pod>& pods,
                          informers::SharedInformer<Service>& services,
                          informers::SharedInformer<api::core::v1::Node>& nodes,
                          informers::SharedInformer<EndpointSlice>& slices, int32_t maxEndpointsPerSlice,
                          std::shared_ptr<client::EventRecorder> recorder, Clock::Duration endpointUpdatesBatchPeriod,
                          Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncService(const std::string& key);
  EndpointSliceTracker& tracker() { return tracker_; }

 private:
  void queueServiceForEndpointSlice(const EndpointSlice& s);
  // checkNodeTopologyDistribution
  void checkNodeTopologyDistribution();
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<Service>& services_;
  informers::SharedInformer<api::core::v1::Node>& nodes_;
  informers::SharedInformer<EndpointSlice>& slices_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock::Duration batchPeriod_;
  EndpointSliceTracker tracker_;
  endpointsliceutil::TriggerTimeTracker triggerTimeTracker_;
  TopologyCache topologyCache_;
  Reconciler reconciler_;
  runtime::ControllerBase base_;
  runtime::ControllerBase topologyBase_;  // upstream's topologyQueue: one key, unnamed (no queue metrics)
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::endpointslice
