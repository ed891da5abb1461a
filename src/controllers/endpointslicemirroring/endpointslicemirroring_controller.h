#pragma once
// endpointslice-mirroring-controller (alias endpointslicemirroring; upstream
// pkg/controller/endpointslicemirroring): mirrors the Endpoints of Services without a selector (custom Endpoints)
// into EndpointSlices managed by endpointslicemirroring-controller.k8s.io and owned by the Endpoints: one slice per
// address type and port set (the subsets repacked first), at most --mirroring-max-endpoints-per-subset addresses
// each (the rest skipped, event TooManyAddressesToMirror), invalid IPs skipped (event InvalidIPAddress), the
// Endpoints' labels and annotations (but the trigger time and last-applied configuration) carried over. Endpoints
// labelled endpointslice.kubernetes.io/skip-mirror=true, leader-election records, and Endpoints whose Service is
// gone or has a selector get no (more) mirrored slices.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/discovery_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/endpointslice/endpointslice_tracker.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::endpointslicemirroring {

inline constexpr const char* kControllerName = "endpointslicemirroring-controller.k8s.io";
inline constexpr const char* kLabelSkipMirror = "endpointslice.kubernetes.io/skip-mirror";

using api::core::v1::Endpoints;
using api::core::v1::Service;
using api::discovery::v1::EndpointSlice;

class EndpointSliceMirroringController {
 public:
  EndpointSliceMirroringController(std::shared_ptr<client::RestClient> client,
                                   informers::SharedInformer<Endpoints>& endpoints,
                                   informers::SharedInformer<EndpointSlice>& slices,
                                   informers::SharedInformer<Service>& services, int32_t maxEndpointsPerSubset,
                                   std::shared_ptr<client::EventRecorder> recorder,
                                   Clock::Duration endpointUpdatesBatchPeriod, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncEndpoints(const std::string& key);
  // The reconciler: the mirrored slices for `endpoints` given the existing ones.
  Status reconcile(const Endpoints& endpoints, const std::vector<const EndpointSlice*>& existing);

 private:
  std::vector<std::shared_ptr<const EndpointSlice>> mirroredSlices(const std::string& ns, const std::string& name);
  Status deleteMirroredSlices(const std::string& ns, const std::string& name);
  void queueEndpointsForEndpointSlice(const EndpointSlice& s);
  // upstream's metrics cache: per mirrored Endpoints, its endpoints and its slices (desired and actual); the
  // endpoints_desired / desired_endpoint_slices / num_endpoint_slices gauges are their sums.
  struct EndpointsCounts {
    int endpoints = 0, desiredSlices = 0, actualSlices = 0;
  };
  void updateMetricsCache(const std::string& key, std::optional<EndpointsCounts> counts);
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<Endpoints>& endpoints_;
  informers::SharedInformer<EndpointSlice>& slices_;
  informers::SharedInformer<Service>& services_;
  int32_t maxEndpointsPerSubset_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock::Duration batchPeriod_;
  endpointslice::EndpointSliceTracker tracker_;
  std::mutex metricsMu_;
  std::map<std::string, EndpointsCounts> metricsCache_;  // guarded by metricsMu_
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

bool shouldMirror(const Endpoints& e);

}  // namespace kcm::controllers::endpointslicemirroring
