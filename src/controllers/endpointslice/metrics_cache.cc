#include "controllers/endpointslice/metrics_cache.h"

#include <cmath>

#include "base/metrics.h"

namespace kcm::controllers::endpointslice {

namespace {

int numDesiredSlices(int endpoints, int maxPerSlice) {
  if (endpoints == 0) return 0;
  if (endpoints <= maxPerSlice) return 1;
  return static_cast<int>(std::ceil(static_cast<double>(endpoints) / maxPerSlice));
}

metrics::Gauge& gauge(const char* name, const char* help, metrics::Labels labels = {}) {
  return metrics::Registry::global().gauge(std::string("endpoint_slice_controller_") + name, help, labels);
}

}  // namespace

MetricsCache::Totals MetricsCache::totals(const ServicePortCache& spc) const {
  Totals t;
  for (const auto& [key, e] : spc) {
    t.endpoints += e.endpoints;
    t.actualSlices += e.slices;
    t.desiredSlices += numDesiredSlices(e.endpoints, maxEndpointsPerSlice_);
  }
  if (t.desiredSlices == 0) t.desiredSlices = 1;  // there is always a placeholder at least
  return t;
}

void MetricsCache::updateServicePortCache(const std::string& serviceKey, ServicePortCache spc) {
  std::lock_guard l(mu_);
  Totals prev;
  if (auto it = cache_.find(serviceKey); it != cache_.end()) prev = totals(it->second);
  const Totals cur = totals(spc);
  numEndpoints_ += cur.endpoints - prev.endpoints;
  numSlicesDesired_ += cur.desiredSlices - prev.desiredSlices;
  numSlicesActual_ += cur.actualSlices - prev.actualSlices;
  cache_[serviceKey] = std::move(spc);
  updateMetricsLocked();
}

void MetricsCache::updateTrafficDistributionForService(const std::string& serviceKey,
                                                       const std::optional<std::string>& td) {
  std::lock_guard l(mu_);
  for (auto& [value, services] : servicesByTrafficDistribution_) services.erase(serviceKey);
  if (td) servicesByTrafficDistribution_[*td].insert(serviceKey);
  updateMetricsLocked();
}

void MetricsCache::deleteService(const std::string& serviceKey) {
  std::lock_guard l(mu_);
  for (auto& [value, services] : servicesByTrafficDistribution_) services.erase(serviceKey);
  auto it = cache_.find(serviceKey);
  if (it == cache_.end()) return;
  const Totals t = totals(it->second);
  numEndpoints_ -= t.endpoints;
  numSlicesDesired_ -= t.desiredSlices;
  numSlicesActual_ -= t.actualSlices;
  updateMetricsLocked();
  cache_.erase(it);
}

void MetricsCache::updateMetricsLocked() {
  gauge("num_endpoint_slices", "Number of EndpointSlices").set(numSlicesActual_);
  gauge("desired_endpoint_slices", "Number of EndpointSlices that would exist with perfect endpoint allocation")
      .set(numSlicesDesired_);
  gauge("endpoints_desired", "Number of endpoints desired").set(numEndpoints_);
  // Upstream resets the vector and sets every value it has seen, so a value once used stays, at 0 when unused.
  for (const auto& [value, services] : servicesByTrafficDistribution_)
    gauge("services_count_by_traffic_distribution", "Number of Services using some specific trafficDistribution",
          {{"traffic_distribution", value}})
        .set(static_cast<double>(services.size()));
}

void observeEndpointsAddedRemoved(int added, int removed) {
  static const auto buckets = metrics::exponentialBuckets(2, 2, 15);
  auto& reg = metrics::Registry::global();
  reg.histogram("endpoint_slice_controller_endpoints_added_per_sync", "Number of endpoints added on each Service sync",
                buckets)
      .observe(added);
  reg.histogram("endpoint_slice_controller_endpoints_removed_per_sync",
                "Number of endpoints removed on each Service sync", buckets)
      .observe(removed);
}

void observeSlicesChangedPerSync(bool topologyAuto, const std::string& trafficDistribution, int changed) {
  // Upstream declares no buckets here, and component-base then exposes the +Inf bucket alone (a scrape shows
  // only le="+Inf"): count and sum are what it carries.
  metrics::Registry::global()
      .histogram("endpoint_slice_controller_endpointslices_changed_per_sync",
                 "Number of EndpointSlices changed on each Service sync", {},
                 {{"topology", topologyAuto ? "Auto" : "Disabled"}, {"traffic_distribution", trafficDistribution}})
      .observe(changed);
}

}  // namespace kcm::controllers::endpointslice
