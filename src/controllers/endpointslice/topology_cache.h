#pragma once
// Topology-aware hints for Services annotated service.kubernetes.io/topology-mode: Auto (or the deprecated
// service.kubernetes.io/topology-aware-hints), as k8s.io/endpointslice/topologycache at the pin: the ready,
// non-control-plane Nodes' allocatable CPU per zone gives each zone its share of a Service's ready endpoints; every
// ready endpoint is hinted for its own zone, then zones holding more than their share (beyond what the 20 %
// overload threshold allows) give endpoints to zones holding fewer. Hints are removed, with a
// TopologyAwareHintsDisabled event, when the Nodes lack zones or CPU, are ready in one zone only, when there are
// fewer endpoints than zones, when the minimum per zone cannot be met, or an endpoint has no zone.
// Upstream walks Go maps (random order) where ties or several receivers exist; here zones are taken in name order.
// Thread-safe.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/discovery_v1.h"

namespace kcm::controllers::endpointslice {

// topologycache's event texts.
inline constexpr const char* kNoZoneSpecified = "One or more endpoints do not have a zone specified";
inline constexpr const char* kNoAllocatedHintsForZones = "No hints allocated for zones";
inline constexpr const char* kTopologyAwareHintsEnabled = "Topology Aware Hints has been enabled";
inline constexpr const char* kTopologyAwareHintsDisabled = "Topology Aware Hints has been disabled";
inline constexpr const char* kInsufficientNodeInfo =
    "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes";
inline constexpr const char* kNodesReadyInOneZoneOnly = "Nodes only ready in one zone";
inline constexpr const char* kInsufficientNumberOfEndpoints = "Insufficient number of endpoints";
inline constexpr const char* kMinAllocationExceedsOverloadThreshold =
    "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold";

// EventBuilder: an event for the Service, recorded after the slices are written.
struct HintEvent {
  std::string type, reason, message;
};

// SliceInfo: one Service's slices of one address type, as the reconciler is about to write them.
struct SliceInfo {
  std::string serviceKey;  // namespace/name
  std::string addressType;
  std::vector<api::discovery::v1::EndpointSlice> toCreate, toUpdate;
  std::vector<const api::discovery::v1::EndpointSlice*> unchanged;  // informer cache objects: copied before a change
};

// FormatWithAddressType
std::string formatWithAddressType(const std::string& s, const std::string& addressType);
// RemoveHintsFromSlices: no hints on the slices to write; unchanged slices that carry hints join toUpdate.
void removeHintsFromSlices(SliceInfo& si);

class TopologyCache {
 public:
  using ZoneCounts = std::map<std::string, int>;  // EndpointZoneInfo
  struct Allocation {
    int minimum = 0, maximum = 0;
    double desired = 0;
  };

  // AddHints: sets the hints on si's slices (moving unchanged slices whose hints no longer fit into toUpdate), or
  // removes them all; the events to record on the Service.
  std::vector<HintEvent> addHints(SliceInfo& si);
  void setHints(const std::string& serviceKey, const std::string& addressType, const ZoneCounts& allocatedHintsByZone);
  void removeHints(const std::string& serviceKey, const std::string& addressType);
  // SetNodes: the zones' CPU shares from the Nodes (excluding control-plane ones and those not Ready).
  void setNodes(const std::vector<std::shared_ptr<const api::core::v1::Node>>& nodes);
  bool hasPopulatedHints(const std::string& serviceKey) const;
  // GetOverloadedServices: the Services whose hinted endpoints leave some zone below its minimum.
  std::vector<std::string> getOverloadedServices() const;
  // getAllocations: per zone, or an event saying why hints cannot be given.
  std::map<std::string, Allocation> getAllocations(int numEndpoints, std::optional<HintEvent>& why) const;

 private:
  mutable std::mutex mu_;
  bool sufficientNodeInfo_ = false;
  std::map<std::string, int64_t> cpuByZone_;  // milli-CPU
  std::map<std::string, double> cpuRatiosByZone_;
  bool haveRatios_ = false;  // cpuRatiosByZone != nil
  std::map<std::string, std::map<std::string, ZoneCounts>> endpointsByService_;
  std::set<std::string> hintsPopulatedByService_;
};

// isNodeReady: the Node's Ready condition is True.
bool isNodeReady(const api::core::v1::Node& n);
// Helpers, exposed for tests.
bool serviceOverloaded(const TopologyCache::ZoneCounts& ezi, const std::map<std::string, double>& zoneRatios);
// getGivingAndReceivingZones: how many endpoints each zone gives, and each receives.
std::pair<std::map<std::string, int>, std::map<std::string, int>> getGivingAndReceivingZones(
    const std::map<std::string, TopologyCache::Allocation>& allocations,
    const TopologyCache::ZoneCounts& allocatedHintsByZone);

}  // namespace kcm::controllers::endpointslice
