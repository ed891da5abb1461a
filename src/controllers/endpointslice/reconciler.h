#pragma once
// The EndpointSlice reconciler (k8s.io/endpointslice reconciler.go and utils.go at the pin): for each address type
// the Service serves, the desired endpoints (one per pod with an address of that family, conditions
// ready/serving/terminating, node, zone, hostname) grouped by their port set are packed into the Service's slices:
// endpoints that changed are updated where they are, removed ones leave (a slice left empty is deleted), new ones
// fill slices already being updated (fullest first), then an unchanged slice they fit in best, then new slices of
// at most --max-endpoints-per-slice; a slice about to be deleted is reused instead of creating one; a Service with no
// endpoints keeps one empty placeholder slice. trafficDistribution (PreferClose, PreferSameZone, PreferSameNode) sets
// zone/node hints on ready endpoints; service.kubernetes.io/topology-mode: Auto gives topology-aware hints from the
// TopologyCache (it takes precedence); otherwise hints are removed. The sync's histograms and the efficiency
// gauges (metrics_cache.h) as upstream.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/discovery_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/endpointslice/endpointslice_tracker.h"
#include "controllers/endpointslice/metrics_cache.h"
#include "controllers/endpointslice/topology_cache.h"
#include "informers/store.h"

namespace kcm::controllers::endpointslice {

inline constexpr const char* kControllerName = "endpointslice-controller.k8s.io";
inline constexpr const char* kLabelServiceName = "kubernetes.io/service-name";
inline constexpr const char* kLabelManagedBy = "endpointslice.kubernetes.io/managed-by";
inline constexpr const char* kIsHeadlessService = "service.kubernetes.io/headless";
inline constexpr const char* kLastChangeTriggerTime = "endpoints.kubernetes.io/last-change-trigger-time";
inline constexpr const char* kLabelTopologyZone = "topology.kubernetes.io/zone";

using api::core::v1::Pod;
using api::core::v1::Service;
using api::discovery::v1::Endpoint;
using api::discovery::v1::EndpointPort;
using api::discovery::v1::EndpointSlice;

class Reconciler {
 public:
  Reconciler(std::shared_ptr<client::RestClient> client, const informers::Store<api::core::v1::Node>& nodes,
             int32_t maxEndpointsPerSlice, EndpointSliceTracker& tracker,
             std::shared_ptr<client::EventRecorder> recorder, TopologyCache* topologyCache = nullptr);
  // Reconcile: every error of every address type, joined ("[a, b]" as utilerrors.NewAggregate prints them).
  Status reconcile(const Service& service, const std::vector<std::shared_ptr<const Pod>>& pods,
                   const std::vector<const EndpointSlice*>& existingSlices,
                   std::optional<std::chrono::system_clock::time_point> triggerTime);
  bool managedByController(const EndpointSlice& s) const;
  // DeleteService: the Service's share of the efficiency metrics goes.
  void deleteService(const std::string& ns, const std::string& name) { metricsCache_.deleteService(ns + "/" + name); }

 private:
  Status reconcileByAddressType(const Service& service, const std::vector<std::shared_ptr<const Pod>>& pods,
                                const std::vector<const EndpointSlice*>& existingSlices,
                                std::optional<std::chrono::system_clock::time_point> triggerTime,
                                const std::string& addressType);
  Status finalize(const Service& service, std::vector<EndpointSlice> toCreate, std::vector<EndpointSlice> toUpdate,
                  std::vector<EndpointSlice> toDelete,
                  std::optional<std::chrono::system_clock::time_point> triggerTime);
  std::shared_ptr<client::RestClient> client_;
  const informers::Store<api::core::v1::Node>& nodes_;
  int32_t maxEndpointsPerSlice_;
  EndpointSliceTracker& tracker_;
  std::shared_ptr<client::EventRecorder> recorder_;
  TopologyCache* topologyCache_;
  MetricsCache metricsCache_;
};

// finalize's writes, shared with the mirroring controller: creates (unless skipCreates: the owner is being deleted;
// a namespace being terminated ends them quietly), updates, deletes, each recorded in the tracker and counted in
// changesMetric{operation}; the first error, naming the slice and `owner` ("Service ns/name"), ends the writes.
Status writeSlices(client::RestClient& client, EndpointSliceTracker& tracker, const std::string& ns,
                   const std::string& owner, std::vector<EndpointSlice>& toCreate, std::vector<EndpointSlice>& toUpdate,
                   const std::vector<EndpointSlice>& toDelete, bool skipCreates, const char* changesMetric);

// Helpers, exposed for tests.
std::vector<std::string> getAddressTypesForService(const Service& service);  // "IPv4", "IPv6"
std::vector<EndpointPort> getEndpointPorts(const Service& service, const Pod& pod);
// util.NewPortMapKey: sorts the ports by the FNV-128a of their dump (upstream's order in a slice) and returns a
// key equal for equal port lists.
std::string newPortMapKey(std::vector<EndpointPort>& ports);
Endpoint podToEndpoint(const Pod& pod, const api::core::v1::Node* node, const Service& service,
                       const std::string& addressType);
// setEndpointSliceLabels: the labels a slice of `service` should have, and whether the non-reserved ones differ.
std::pair<api::StringMap<api::String>, bool> setEndpointSliceLabels(const EndpointSlice& slice, const Service& service);
EndpointSlice newEndpointSlice(const Service& service, const std::vector<EndpointPort>& ports,
                               const std::string& addressType);
bool ownedBy(const EndpointSlice& slice, const Service& service);
// The slice's kubernetes.io/service-name label ("" when absent): whose slice it is.
std::string serviceName(const EndpointSlice& slice);
// EndpointSet's key (util.hashEndpoint): what identifies an endpoint — its sorted addresses, hostname, target
// namespace and name.
std::string endpointSetKey(const Endpoint& e);
// EndpointsEqualBeyondHash: node, zone, conditions and target reference (without resourceVersion) equal.
bool endpointsEqualBeyondHash(const Endpoint& a, const Endpoint& b);

}  // namespace kcm::controllers::endpointslice
