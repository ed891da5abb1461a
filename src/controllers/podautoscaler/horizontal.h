#pragma once
// horizontal-pod-autoscaler-controller (upstream pkg/controller/podautoscaler/horizontal.go): every
// --horizontal-pod-autoscaler-sync-period each HorizontalPodAutoscaler (autoscaling/v2) is reconciled: the
// target's /scale subresource is read (any kind, through the REST mapping), each metric proposes a replica count
// (ReplicaCalculator), the largest wins, then min/max replicas, the scale-up limit (or spec.behavior's policies)
// and the stabilization window (--horizontal-pod-autoscaler-downscale-stabilization, or behavior's windows)
// bound it; a change is written to /scale with conflict retries. Status (current/desired replicas, current
// metrics, lastScaleTime, observedGeneration) and the conditions AbleToScale, ScalingActive, ScalingLimited and
// ScaledToZero are written through the status subresource only when they changed; events as upstream
// (SuccessfulRescale, FailedGetScale, FailedGetResourceMetric, FailedComputeMetricsReplicas, ...).
// The queue "horizontalpodautoscaler" re-adds each key after the sync period (upstream's fixed-interval limiter).
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "api/gen/autoscaling_v1.h"
#include "api/gen/autoscaling_v2.h"
#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/discovery.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/podautoscaler/metrics_client.h"
#include "controllers/podautoscaler/replica_calculator.h"
#include "informers/factory.h"
#include "runtime/consistency.h"
#include "runtime/controller.h"

namespace kcm::controllers::podautoscaler {

using api::autoscaling::v2::HorizontalPodAutoscaler;

struct HorizontalControllerOptions {
  std::chrono::nanoseconds resyncPeriod = std::chrono::seconds(15);
  std::chrono::nanoseconds downscaleStabilisationWindow = std::chrono::minutes(5);
  double tolerance = 0.1;
  std::chrono::nanoseconds cpuInitializationPeriod = std::chrono::minutes(5);
  std::chrono::nanoseconds delayOfInitialReadinessStatus = std::chrono::seconds(30);
  // Feature gates, as at the pin.
  bool scaleToZero = true;          // HPAScaleToZero
  bool generation = true;           // HPAGeneration
  bool configurableTolerance = true;  // HPAConfigurableTolerance
  bool podLevelResources = true;    // PodLevelResources
  bool staleConsistency = true;     // StaleControllerConsistencyHPA
};

// Which HPAs select which pods (hpa_selector_store): each known HPA with its target's last selector.
class HpaSelectorTracker {
 public:
  bool putIfAbsent(const std::string& key);                          // registered with the Nothing selector
  bool putIfPresent(const std::string& key, const api::Selector& s);  // false when the HPA was deleted
  void remove(const std::string& key);
  // Up to `limit` HPA keys of the namespace whose selector matches one of the pods.
  std::vector<std::string> hpasMatchingPods(const std::string& ns, const std::vector<PodPtr>& pods, size_t limit) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, api::Selector> selectors_;  // "ns/name"
};

class HorizontalController {
 public:
  HorizontalController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                       std::shared_ptr<client::DiscoveryClient> mapper, std::unique_ptr<MetricsClient> metrics,
                       informers::SharedInformer<HorizontalPodAutoscaler>& hpas,
                       informers::SharedInformer<api::core::v1::Pod>& pods, HorizontalControllerOptions opts,
                       Clock& clock = RealClock::get());
  ~HorizontalController();

  void run(int workers, std::stop_token stop);
  // upstream reconcileKey; true when the HPA is gone.
  runtime::SyncResult reconcileKey(const std::string& key);
  Status reconcileAutoscaler(const HorizontalPodAutoscaler& shared, const std::string& key);
  // HPAs the event handlers have registered (a reconcile of one not registered yet reports it deleted).
  size_t trackedHPAs() const { return selectorTracker_.size(); }

  // The behaviour arithmetic, exposed for tests.
  struct NormalizationArg {
    std::string key;
    const api::autoscaling::v2::HPAScalingRules* scaleUp = nullptr;
    const api::autoscaling::v2::HPAScalingRules* scaleDown = nullptr;
    int32_t minReplicas = 0, maxReplicas = 0, currentReplicas = 0, desiredReplicas = 0;
  };
  struct Limited {
    int32_t replicas;
    std::string reason, message;
  };
  static Limited convertDesiredReplicasWithRules(int32_t current, int32_t desired, int32_t minReplicas,
                                                 int32_t maxReplicas);
  // Records a rescale for behavior policies (upstream storeScaleEvent).
  void storeScaleEvent(const api::autoscaling::v2::HorizontalPodAutoscalerBehavior* behavior, const std::string& key,
                       int32_t prevReplicas, int32_t newReplicas);
  Limited stabilizeRecommendationWithBehaviors(const NormalizationArg& a);
  Limited convertDesiredReplicasWithBehaviorRate(const NormalizationArg& a);

 private:
  struct MetricResult {
    int32_t replicas = 0;
    std::string metricName;
    WallTime timestamp{};
    api::autoscaling::v2::HorizontalPodAutoscalerCondition condition;  // set on error
    Status error;
    bool specError = false;
  };
  struct TimestampedRecommendation {
    int32_t recommendation;
    WallTime timestamp;
  };
  struct TimestampedScaleEvent {
    int32_t replicaChange;
    WallTime timestamp;
    bool outdated;
  };

  void enqueueHPA(const HorizontalPodAutoscaler& hpa);
  void updateHPA(const HorizontalPodAutoscaler& old, const HorizontalPodAutoscaler& cur);
  void deleteHPA(const HorizontalPodAutoscaler& hpa);

  Result<api::Selector> validateAndParseSelector(HorizontalPodAutoscaler& hpa, const std::string& selector);
  Status computeReplicasForMetrics(HorizontalPodAutoscaler& hpa, const api::autoscaling::v1::Scale& scale,
                                   int32_t& replicas, std::string& metric,
                                   std::vector<api::autoscaling::v2::MetricStatus>& statuses, bool& fatal);
  MetricResult computeReplicasForMetric(HorizontalPodAutoscaler& hpa, const api::autoscaling::v2::MetricSpec& spec,
                                        int32_t specReplicas, int32_t statusReplicas, const api::Selector& selector,
                                        api::autoscaling::v2::MetricStatus& status);
  MetricResult computeStatusForResourceMetricGeneric(HorizontalPodAutoscaler& hpa, int32_t currentReplicas,
                                                     const api::autoscaling::v2::MetricTarget& target,
                                                     const std::string& resource, const std::string& container,
                                                     const api::Selector& selector, bool containerSource,
                                                     api::autoscaling::v2::MetricValueStatus& out);
  api::autoscaling::v2::HorizontalPodAutoscalerCondition getUnableComputeReplicaCountCondition(
      const HorizontalPodAutoscaler& hpa, const std::string& reason, const Status& err);
  Tolerances tolerancesForHpa(const HorizontalPodAutoscaler& hpa) const;
  int32_t stabilizeRecommendation(const std::string& key, int32_t prenormalized);
  int32_t normalizeDesiredReplicas(HorizontalPodAutoscaler& hpa, const std::string& key, int32_t current,
                                   int32_t prenormalized, int32_t minReplicas);
  int32_t normalizeDesiredReplicasWithBehaviors(HorizontalPodAutoscaler& hpa, const std::string& key, int32_t current,
                                                int32_t prenormalized, int32_t minReplicas);
  void recordInitialRecommendation(int32_t currentReplicas, const std::string& key);
  Result<std::pair<api::autoscaling::v1::Scale, client::APIResourceInfo>> scaleForResourceMapping(
      const std::string& ns, const std::string& name, const std::string& group, const std::string& version,
      const std::string& kind);
  Status updateScale(const client::APIResourceInfo& mapping, api::autoscaling::v1::Scale& scale, int32_t replicas,
                     const std::string& name);
  void setStatus(HorizontalPodAutoscaler& hpa, int32_t currentReplicas, int32_t desiredReplicas,
                 std::vector<api::autoscaling::v2::MetricStatus> metricStatuses, bool rescale);
  void setCondition(HorizontalPodAutoscaler& hpa, const std::string& type, const std::string& status,
                    const std::string& reason, const std::string& message);
  Status updateStatusIfNeeded(const api::autoscaling::v2::HorizontalPodAutoscalerStatus& old,
                              HorizontalPodAutoscaler& hpa);
  client::ObjectReference ref(const HorizontalPodAutoscaler& hpa) const;

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  std::shared_ptr<client::DiscoveryClient> mapper_;
  std::unique_ptr<MetricsClient> metrics_;
  informers::SharedInformer<HorizontalPodAutoscaler>& hpas_;
  informers::SharedInformer<api::core::v1::Pod>& pods_;
  HorizontalControllerOptions opts_;
  Clock& clock_;
  ReplicaCalculator replicaCalc_;
  HpaSelectorTracker selectorTracker_;
  runtime::ConsistencyStore consistency_;

  std::mutex mu_;  // the three maps below; never held across I/O
  std::map<std::string, std::vector<TimestampedRecommendation>> recommendations_;
  std::map<std::string, std::vector<TimestampedScaleEvent>> scaleUpEvents_, scaleDownEvents_;

  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::podautoscaler
