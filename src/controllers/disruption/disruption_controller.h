#pragma once
// disruption-controller (alias disruption; upstream pkg/controller/disruption): keeps every PodDisruptionBudget's
// status — currentHealthy (ready pods not being deleted nor recently evicted), desiredHealthy and expectedPods (from
// an integer minAvailable and the selected pods, or through the pods' controllers' scale for maxUnavailable and
// percentages: ReplicationController, Deployment, ReplicaSet, StatefulSet from the caches, any other owner through
// its scale subresource), disruptionsAllowed, the eviction entries of disruptedPods until the 2-minute deletion
// timeout (rechecked then), observedGeneration and the DisruptionAllowed condition (SufficientPods,
// InsufficientPods, or SyncFailed with disruptionsAllowed 0 when the status cannot be computed). Events as upstream
// (NoPods, UnmanagedPods, CalculateExpectedPodCountFailed, MultiplePodDisruptionBudgets, NotDeleted), from the
// component "controllermanager". A pod whose DisruptionTarget=True condition was not followed by its deletion within
// 2 minutes gets it reset to False.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/core_v1.h"
#include "api/gen/policy_v1.h"
#include "client/discovery.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::disruption {

using api::core::v1::Pod;
using api::policy::v1::PodDisruptionBudget;

inline constexpr auto kDeletionTimeout = std::chrono::minutes(2);
inline constexpr auto kStalePodDisruptionTimeout = std::chrono::minutes(2);

class DisruptionController {
 public:
  struct Informers {
    informers::SharedInformer<Pod>& pods;
    informers::SharedInformer<PodDisruptionBudget>& pdbs;
    informers::SharedInformer<api::core::v1::ReplicationController>& rcs;
    informers::SharedInformer<api::apps::v1::ReplicaSet>& rss;
    informers::SharedInformer<api::apps::v1::Deployment>& deployments;
    informers::SharedInformer<api::apps::v1::StatefulSet>& statefulSets;
  };
  DisruptionController(std::shared_ptr<client::RestClient> client, Informers informers,
                       std::shared_ptr<client::DiscoveryClient> discovery,
                       std::shared_ptr<client::EventRecorder> recorder, Clock& clock = RealClock::get(),
                       Clock::Duration stalePodDisruptionTimeout = kStalePodDisruptionTimeout);
  void run(int workers, std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);
  runtime::SyncResult syncStalePodDisruption(const std::string& key);

  struct ControllerAndScale {
    std::string uid;
    int32_t scale = 0;
  };
  // getExpectedPodCount: expectedCount, desiredHealthy and the unmanaged pods' names, or an error.
  struct Expected {
    int32_t expectedCount = 0, desiredHealthy = 0;
    std::vector<std::string> unmanagedPods;
  };
  Result<Expected> getExpectedPodCount(const PodDisruptionBudget& pdb, const std::vector<std::shared_ptr<const Pod>>& pods);

 private:
  Status trySync(const PodDisruptionBudget& pdb);
  Status failSafe(const PodDisruptionBudget& pdb, const Status& err);
  Status updatePdbStatus(const PodDisruptionBudget& pdb, int32_t currentHealthy, int32_t desiredHealthy,
                         int32_t expectedCount, const api::StringMap<api::Time>& disruptedPods);
  Result<std::vector<std::shared_ptr<const Pod>>> getPodsForPdb(const PodDisruptionBudget& pdb) const;
  std::shared_ptr<const PodDisruptionBudget> getPdbForPod(const Pod& pod);
  Result<int32_t> getExpectedScale(const std::vector<std::shared_ptr<const Pod>>& pods,
                                   std::vector<std::string>& unmanaged);
  Result<std::optional<ControllerAndScale>> findController(const api::meta::v1::OwnerReference& ref,
                                                           const std::string& ns);
  Result<std::optional<ControllerAndScale>> getScaleController(const api::meta::v1::OwnerReference& ref,
                                                               const std::string& ns);
  std::pair<api::StringMap<api::Time>, std::optional<std::chrono::system_clock::time_point>> buildDisruptedPodMap(
      const std::vector<std::shared_ptr<const Pod>>& pods, const PodDisruptionBudget& pdb,
      std::chrono::system_clock::time_point now);
  // nonTerminatingPodHasStaleDisruptionCondition: whether, and after how long, to reset the condition.
  std::optional<Clock::Duration> staleDisruptionCondition(const Pod& pod) const;
  void onPod(const Pod& pod, bool deleted);

  std::shared_ptr<client::RestClient> client_;
  Informers inf_;
  std::shared_ptr<client::DiscoveryClient> discovery_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock& clock_;
  Clock::Duration stalePodDisruptionTimeout_;
  runtime::ControllerBase base_;
  runtime::ControllerBase recheck_;  // upstream's disruption_recheck delaying queue: back into base_, rate limited
  runtime::ControllerBase stale_;    // stale_pod_disruption
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

// metav1.LabelSelector's String() (gogo-generated), as upstream's UnmanagedPods event prints the selector.
std::string labelSelectorString(const api::meta::v1::LabelSelector* s);

}  // namespace kcm::controllers::disruption
