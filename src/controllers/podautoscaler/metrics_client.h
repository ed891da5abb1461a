#pragma once
// The HPA's view of the metrics APIs (upstream pkg/controller/podautoscaler/metrics): pod resource usage from
// metrics.k8s.io/v1beta1 PodMetrics (summed over containers, or one container's), per-pod and per-object values
// from custom.metrics.k8s.io/v1beta2, and external values from external.metrics.k8s.io/v1beta1, all through the
// apiserver's aggregator with the controller's own credentials. Values are in milli-units, as upstream's.
// GetResourceUtilizationRatio / GetMetricUsageRatio are upstream's averaging helpers.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/gen/autoscaling_v2.h"
#include "api/support/selector.h"
#include "base/status.h"
#include "client/discovery.h"
#include "client/rest_client.h"

namespace kcm::controllers::podautoscaler {

using WallTime = std::chrono::system_clock::time_point;

struct PodMetric {
  WallTime timestamp{};
  std::chrono::seconds window{};
  int64_t value = 0;  // milli-units
};
using PodMetricsInfo = std::map<std::string, PodMetric>;  // pod name -> metric

// The custom metrics API's default window when a value carries none (metricServerDefaultMetricWindow).
inline constexpr std::chrono::seconds kMetricServerDefaultMetricWindow{60};

class MetricsClient {
 public:
  virtual ~MetricsClient() = default;
  // container empty: the pod's sum (a pod missing the resource in any container is left out).
  virtual Result<std::pair<PodMetricsInfo, WallTime>> getResourceMetric(const std::string& resource,
                                                                        const std::string& ns,
                                                                        const api::Selector& selector,
                                                                        const std::string& container) = 0;
  virtual Result<std::pair<PodMetricsInfo, WallTime>> getRawMetric(const std::string& metricName, const std::string& ns,
                                                                   const api::Selector& selector,
                                                                   const api::Selector& metricSelector) = 0;
  virtual Result<std::pair<int64_t, WallTime>> getObjectMetric(const std::string& metricName, const std::string& ns,
                                                               const api::autoscaling::v2::CrossVersionObjectReference& ref,
                                                               const api::Selector& metricSelector) = 0;
  virtual Result<std::pair<std::vector<int64_t>, WallTime>> getExternalMetric(const std::string& metricName,
                                                                              const std::string& ns,
                                                                              const api::Selector& selector) = 0;
};

// NewRESTMetricsClient. discovery maps an object metric's kind to its resource (the custom metrics client's
// REST mapper).
std::unique_ptr<MetricsClient> newRESTMetricsClient(std::shared_ptr<client::RestClient> client,
                                                    std::shared_ptr<client::DiscoveryClient> discovery);

struct UtilizationRatio {
  double ratio = 0;
  int32_t utilization = 0;  // percent of the requests
  int64_t rawAverage = 0;   // milli-units per pod
};
// Over the pods that have both a metric and a request; error "no metrics returned matched known pods" when the
// requests sum to zero.
Result<UtilizationRatio> getResourceUtilizationRatio(const PodMetricsInfo& metrics,
                                                     const std::map<std::string, int64_t>& requests,
                                                     int32_t targetUtilization);
// (ratio, average usage) over every metric.
std::pair<double, int64_t> getMetricUsageRatio(const PodMetricsInfo& metrics, int64_t targetUsage);

}  // namespace kcm::controllers::podautoscaler
