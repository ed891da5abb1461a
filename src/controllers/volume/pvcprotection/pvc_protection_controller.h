#pragma once
// persistentvolumeclaim-protection-controller (alias pvc-protection; upstream
// pkg/controller/volume/pvcprotection): every PVC gets kubernetes.io/pvc-protection; a PVC being deleted keeps it
// while a scheduled pod uses it (a PVC volume, or an ephemeral volume the PVC was created for) and loses it
// otherwise. With PersistentVolumeClaimUnusedSinceTime (beta, on) a Bound PVC also carries the Unused condition
// (False PodUsingPVC / True NoPodsUsingPVC), written through the status subresource. The pod cache answers first;
// a PVC found unused there is checked against a live list of the namespace's pods (upstream caches that list for
// a batch of one namespace's PVCs; here each PVC lists on its own). One worker, queue "pvcprotection".
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::pvcprotection {

using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;

// The two notions of "in use": for deletion only scheduled pods count; for the Unused condition any pod that is
// not terminated.
bool podUsesPVCForDeletion(const Pod& pod, const PersistentVolumeClaim& pvc);
bool podUsesPVCForUnusedSince(const Pod& pod, const PersistentVolumeClaim& pvc);

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PersistentVolumeClaim>& pvcs,
             informers::SharedInformer<Pod>& pods, bool unusedSinceTime, Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult processPVC(const std::string& key);

 private:
  using PodUsage = bool (*)(const Pod&, const PersistentVolumeClaim&);
  Result<bool> isBeingUsedWith(const PersistentVolumeClaim& pvc, PodUsage usage);
  Status updateUnusedCondition(const PersistentVolumeClaim& pvc, bool isUsed);
  Status setFinalizer(const PersistentVolumeClaim& pvc, bool add);
  void enqueuePVCs(const Pod& pod, bool deleted);
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<PersistentVolumeClaim>& pvcs_;
  informers::SharedInformer<Pod>& pods_;
  bool unusedSinceTime_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::pvcprotection
