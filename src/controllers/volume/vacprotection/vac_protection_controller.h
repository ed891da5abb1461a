#pragma once
// volumeattributesclass-protection-controller (upstream pkg/controller/volume/vacprotection): every
// VolumeAttributesClass gets the kubernetes.io/vac-protection finalizer. A VAC that is being deleted keeps it
// while a PersistentVolume (spec.volumeAttributesClassName) or a PersistentVolumeClaim (spec.volumeAttributesClassName,
// status.currentVolumeAttributesClassName or status.modifyVolumeStatus.targetVolumeAttributesClassName) names it,
// and loses it once none does. Users are found through a "volumeAttributesClassName" index on the PV and PVC caches
// only: as upstream, there is no live list, so a user the caches have not seen yet cannot hold the VAC.
// PVC/PV updates that drop a name and PVC/PV deletes queue the VACs they named. One worker, queue "vacprotection".
// Needs the VolumeAttributesClass feature gate (GA, locked on at the pin).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/storage_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::vacprotection {

using api::core::v1::PersistentVolume;
using api::core::v1::PersistentVolumeClaim;
using api::storage::v1::VolumeAttributesClass;

// As upstream's volumeutil.VACProtectionFinalizer.
inline constexpr std::string_view kVACProtectionFinalizer = "kubernetes.io/vac-protection";
// The index added to the PV and PVC caches: VAC name -> the objects naming it.
inline constexpr const char* kVACNameKeyIndex = "volumeAttributesClassName";

// The distinct, non-empty VAC names a PVC refers to (spec, current status, modification target), sorted.
std::vector<std::string> getPVCReferencedVACNames(const PersistentVolumeClaim& pvc);
// The VAC name a PV refers to, if any.
std::vector<std::string> getPVReferencedVACNames(const PersistentVolume& pv);

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<PersistentVolumeClaim>& pvcs,
             informers::SharedInformer<PersistentVolume>& pvs, informers::SharedInformer<VolumeAttributesClass>& vacs,
             Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult processVAC(const std::string& vacName);

  // The informer callbacks (public so tests can play events, as upstream's test does).
  void vacAddedUpdated(const VolumeAttributesClass& vac);
  void pvcUpdated(const PersistentVolumeClaim& oldPVC, const PersistentVolumeClaim& newPVC);
  void pvcDeleted(const PersistentVolumeClaim& pvc);
  void pvUpdated(const PersistentVolume& oldPV, const PersistentVolume& newPV);
  void pvDeleted(const PersistentVolume& pv);

  // Tests: how many keys are ready, and one of them synced (blocks while none is; false once shut down).
  size_t queueLen() { return base_.queue().len(); }
  bool processNextWorkItem() { return base_.processNextWorkItem(); }

 private:
  bool isBeingUsed(const VolumeAttributesClass& vac) const;
  Status addFinalizer(const VolumeAttributesClass& vac);
  Status removeFinalizer(const VolumeAttributesClass& vac);
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<PersistentVolumeClaim>& pvcs_;
  informers::SharedInformer<PersistentVolume>& pvs_;
  informers::SharedInformer<VolumeAttributesClass>& vacs_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::vacprotection
