#pragma once
// resourcepoolstatusrequest-controller (upstream pkg/controller/resourcepoolstatusrequest at the pin; gate
// DRAResourcePoolStatus, alpha, off by default): a ResourcePoolStatusRequest (resource.k8s.io/v1alpha3,
// cluster-scoped) without status gets, once, the status of the driver's pools (optionally one pool, at most
// spec.limit of them, sorted by driver then pool) computed from the ResourceSlices of each pool's latest generation
// and the allocated ResourceClaims: totals of devices, allocated (once per device, admin access aside),
// unavailable (a NoSchedule/NoExecute taint, in the slice or from a DeviceTaintRule when DRADeviceTaintRules is on)
// and available; the partition and shareable views (views.h); a Complete condition "Calculated status for N pools".
// A pool still missing slices of its generation is retried (5 times) rather than written. Requests are deleted
// 1 h after completing and 24 h after creation if never completed (checked every 10 min). One worker; metrics
// resourcepoolstatusrequest_controller_{requests_processed_total,request_processing_errors_total,
// request_processing_duration_seconds}{driver_name}.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/resource_v1.h"
#include "api/gen/resource_v1alpha3.h"
#include "base/executor.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::resourcepoolstatusrequest {

using api::resource::v1::DeviceTaintRule;
using api::resource::v1::ResourceClaim;
using api::resource::v1::ResourceSlice;
using api::resource::v1alpha3::ResourcePoolStatusRequest;
using api::resource::v1alpha3::ResourcePoolStatusRequestStatus;

class Controller {
 public:
  // taintRules: null when DRADeviceTaintRules is off.
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<ResourcePoolStatusRequest>& requests,
             informers::SharedInformer<ResourceSlice>& slices, informers::SharedInformer<ResourceClaim>& claims,
             informers::SharedInformer<DeviceTaintRule>* taintRules, Clock& clock = RealClock::get());
  void run(std::stop_token stop);

  // The status a request gets now, from the caches.
  ResourcePoolStatusRequestStatus calculatePoolStatus(const ResourcePoolStatusRequest& request);
  runtime::SyncResult syncRequest(const std::string& name);
  // Deletes the requests past their TTL (UID precondition).
  void cleanupExpiredRequests();
  bool shouldDeleteRequest(const ResourcePoolStatusRequest& request) const;

  // The event handler (public for tests): a request without status is queued.
  void enqueueRequest(const ResourcePoolStatusRequest& request);
  runtime::WorkQueue& queue() { return queue_.queue(); }

 private:

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<ResourcePoolStatusRequest>& requests_;
  informers::SharedInformer<ResourceSlice>& slices_;
  informers::SharedInformer<ResourceClaim>& claims_;
  informers::SharedInformer<DeviceTaintRule>* taintRules_;
  Clock& clock_;
  runtime::ControllerBase queue_;
  std::vector<informers::Registration> registrations_;
  Periodic cleanup_;  // last: stopped before the rest goes
};

}  // namespace kcm::controllers::resourcepoolstatusrequest
