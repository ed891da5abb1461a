#pragma once
// The endpointslice-controller's efficiency metrics (k8s.io/endpointslice/metrics cache.go at the pin): per Service
// and port set, the endpoints desired and the slices there are, summed into endpoint_slice_controller_
// {endpoints_desired, num_endpoint_slices, desired_endpoint_slices}; the Services per trafficDistribution value into
// services_count_by_traffic_distribution. Thread-safe.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace kcm::controllers::endpointslice {

class MetricsCache {
 public:
  struct EfficiencyInfo {
    int endpoints = 0, slices = 0;
  };
  using ServicePortCache = std::map<std::string, EfficiencyInfo>;  // by port-map key

  explicit MetricsCache(int32_t maxEndpointsPerSlice) : maxEndpointsPerSlice_(maxEndpointsPerSlice) {}
  void updateServicePortCache(const std::string& serviceKey, ServicePortCache spc);
  void updateTrafficDistributionForService(const std::string& serviceKey, const std::optional<std::string>& td);
  void deleteService(const std::string& serviceKey);

 private:
  struct Totals {
    int actualSlices = 0, desiredSlices = 0, endpoints = 0;
  };
  Totals totals(const ServicePortCache& spc) const;
  void updateMetricsLocked();
  const int32_t maxEndpointsPerSlice_;
  std::mutex mu_;
  int numEndpoints_ = 0, numSlicesActual_ = 0, numSlicesDesired_ = 0;
  std::map<std::string, ServicePortCache> cache_;
  std::map<std::string, std::set<std::string>> servicesByTrafficDistribution_;
};

// The per-sync histograms of reconciler.go.
void observeEndpointsAddedRemoved(int added, int removed);
void observeSlicesChangedPerSync(bool topologyAuto, const std::string& trafficDistribution, int changed);

}  // namespace kcm::controllers::endpointslice
