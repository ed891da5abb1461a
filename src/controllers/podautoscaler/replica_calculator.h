#pragma once
// The HPA's replica arithmetic (upstream pkg/controller/podautoscaler/replica_calculator.go): from the metrics
// of the pods a target selects, how many replicas bring the usage to the target. Pods being deleted or failed are
// ignored; pending pods, and (for CPU) pods still initialising, count as unready; pods without a metric are
// missing. When unready or missing pods could flip the decision, they are assumed at 0 (scale up) or at the
// target (scale down) and the ratio is recomputed, so the controller never over-reacts to partial data.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/gen/autoscaling_v2.h"
#include "api/gen/core_v1.h"
#include "api/support/selector.h"
#include "base/clock.h"
#include "controllers/podautoscaler/metrics_client.h"

namespace kcm::controllers::podautoscaler {

using PodPtr = std::shared_ptr<const api::core::v1::Pod>;
// Pods of a namespace matching a selector (the informer's lister).
using PodLister = std::function<std::vector<PodPtr>(const std::string& ns, const api::Selector& selector)>;

struct Tolerances {
  double scaleDown = 0.1, scaleUp = 0.1;
  bool isWithin(double usageRatio) const { return (1.0 - scaleDown) <= usageRatio && usageRatio <= (1.0 + scaleUp); }
  std::string str() const;  // "[down:10.0%, up:10.0%]"
};

struct ReplicaProposal {
  int32_t replicas = 0;
  int64_t usage = 0;        // the metric's current value (average or total, milli-units)
  int32_t utilization = 0;  // percent of requests (resource utilization targets)
  WallTime timestamp{};
};

class ReplicaCalculator {
 public:
  ReplicaCalculator(MetricsClient& metrics, PodLister pods, std::chrono::nanoseconds cpuInitializationPeriod,
                    std::chrono::nanoseconds delayOfInitialReadinessStatus, Clock& clock = RealClock::get())
      : metrics_(metrics), pods_(std::move(pods)), cpuInitializationPeriod_(cpuInitializationPeriod),
        delayOfInitialReadinessStatus_(delayOfInitialReadinessStatus), clock_(clock) {}

  Result<ReplicaProposal> GetResourceReplicas(int32_t currentReplicas, int32_t targetUtilization,
                                              const std::string& resource, Tolerances t, const std::string& ns,
                                              const api::Selector& selector, const std::string& container);
  Result<ReplicaProposal> GetRawResourceReplicas(int32_t currentReplicas, int64_t targetUsage,
                                                 const std::string& resource, Tolerances t, const std::string& ns,
                                                 const api::Selector& selector, const std::string& container);
  Result<ReplicaProposal> GetMetricReplicas(int32_t currentReplicas, int64_t targetUsage, const std::string& metricName,
                                            Tolerances t, const std::string& ns, const api::Selector& selector,
                                            const api::Selector& metricSelector);
  Result<ReplicaProposal> GetObjectMetricReplicas(int32_t currentReplicas, int64_t targetUsage,
                                                  const std::string& metricName, Tolerances t, const std::string& ns,
                                                  const api::autoscaling::v2::CrossVersionObjectReference& ref,
                                                  const api::Selector& selector, const api::Selector& metricSelector);
  Result<ReplicaProposal> GetObjectPerPodMetricReplicas(int32_t statusReplicas, int64_t targetAverageUsage,
                                                        const std::string& metricName, Tolerances t,
                                                        const std::string& ns,
                                                        const api::autoscaling::v2::CrossVersionObjectReference& ref,
                                                        const api::Selector& metricSelector);
  Result<ReplicaProposal> GetExternalMetricReplicas(int32_t currentReplicas, int64_t targetUsage,
                                                    const std::string& metricName, Tolerances t, const std::string& ns,
                                                    const api::meta::v1::LabelSelector* metricSelector,
                                                    const api::Selector& podSelector);
  Result<ReplicaProposal> GetExternalPerPodMetricReplicas(int32_t statusReplicas, int64_t targetUsagePerPod,
                                                          const std::string& metricName, Tolerances t,
                                                          const std::string& ns,
                                                          const api::meta::v1::LabelSelector* metricSelector);

  struct PodGroups {
    int readyPodCount = 0;
    std::set<std::string> unready, missing, ignored;
  };
  PodGroups groupPods(const std::vector<PodPtr>& pods, const PodMetricsInfo& metrics, const std::string& resource) const;

 private:
  Result<std::pair<int32_t, int64_t>> calcPlainMetricReplicas(PodMetricsInfo metrics, int32_t currentReplicas,
                                                              int64_t targetUsage, Tolerances t, const std::string& ns,
                                                              const api::Selector& selector,
                                                              const std::string& resource);
  Result<int32_t> getUsageRatioReplicaCount(int32_t currentReplicas, double usageRatio, Tolerances t,
                                            const std::string& ns, const api::Selector& selector);
  Result<int64_t> getReadyPodsCount(const std::string& ns, const api::Selector& selector);

  MetricsClient& metrics_;
  PodLister pods_;
  std::chrono::nanoseconds cpuInitializationPeriod_, delayOfInitialReadinessStatus_;
  Clock& clock_;
};

// Requests per pod name in milli-units: pod-level requests where set (PodLevelResources) and no container is
// named, else the sum over containers and restartable init containers (or the named container's).
Result<std::map<std::string, int64_t>> calculateRequests(const std::vector<PodPtr>& pods, const std::string& container,
                                                         const std::string& resource, bool podLevelResources = true);

}  // namespace kcm::controllers::podautoscaler
