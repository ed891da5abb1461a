#pragma once
// podgroup-protection-controller (upstream pkg/controller/scheduling/podgroupprotection; gate GenericWorkload, beta
// and off by default at the pin): the apiserver's PodGroupProtection admission plugin gives every PodGroup
// (scheduling.k8s.io/v1beta1) the scheduling.k8s.io/podgroup-protection finalizer. A PodGroup being deleted keeps
// it while an active pod (phase neither Succeeded nor Failed) of its namespace names it in
// spec.schedulingGroup.podGroupName, and loses it (an Update) once none does. Active pods are found through an
// index on the pod cache only. PodGroup adds/updates that are deletion candidates, and pods deleted, replaced
// (new UID) or turned terminal queue the PodGroup they name. One worker, queue "podgroupprotection".
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/scheduling_v1beta1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::scheduling::podgroupprotection {

using api::core::v1::Pod;
using api::scheduling::v1beta1::PodGroup;

// As upstream's scheduling.PodGroupProtectionFinalizer.
inline constexpr std::string_view kPodGroupProtectionFinalizer = "scheduling.k8s.io/podgroup-protection";
// The pod cache index: "<namespace>/<podGroupName>" of each non-terminated pod that names a PodGroup.
inline constexpr const char* kActivePodSchedulingGroupIndex = "activePodSchedulingGroup";

std::vector<std::string> activePodSchedulingGroupKeys(const Pod& pod);

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PodGroup>& podGroups,
             informers::SharedInformer<Pod>& pods, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult processPodGroup(const std::string& key);

  // The informer callbacks (public so tests can play events).
  void handlePodGroupUpdate(const PodGroup& pg);
  void handlePodChange(const Pod* oldPod, const Pod* newPod);

  size_t queueLen() { return base_.queue().len(); }
  bool processNextWorkItem() { return base_.processNextWorkItem(); }

 private:
  bool hasActivePods(const PodGroup& pg) const;
  Status removeFinalizer(const PodGroup& pg);
  void enqueuePodGroupForPod(const Pod& pod);

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<PodGroup>& podGroups_;
  informers::SharedInformer<Pod>& pods_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::scheduling::podgroupprotection
