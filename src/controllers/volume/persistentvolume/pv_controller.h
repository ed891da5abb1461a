#pragma once
// persistentvolume-binder-controller (alias persistentvolume-binder; upstream
// pkg/controller/volume/persistentvolume): binds PersistentVolumeClaims to PersistentVolumes and keeps both sides'
// phases true. Unbound claims get the best-fitting Available volume (or the one they or it name), WaitForFirstConsumer
// claims wait for the scheduler's selected-node annotation, claims with a class and no volume go to the class's
// provisioner (external ones get the storage-provisioner annotations and an ExternalProvisioning event; the in-tree
// hostPath one, with --enable-hostpath-provisioner, creates the PV); claims that lose their volume are Lost.
// Volumes whose claim is gone are Released and reclaimed by policy: Retain keeps them, Delete hands them to their
// external deleter (or deletes a /tmp hostPath), Recycle scrubs hostPath/NFS volumes with a recycler pod.
// Two queues ("claims", "volumes"), one worker each, our own caches of the newest PVs and PVCs seen (written
// through on every save, so stale informer events are ignored), and a resync every --pvclaimbinder-sync-period.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/storage_v1.h"
#include "base/executor.h"
#include "controllers/volume/common/operation_backoff.h"
#include "controllers/volume/persistentvolume/volume_plugins.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "informers/store.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::persistentvolume {

using api::core::v1::Node;
using api::core::v1::PersistentVolume;
using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;
using api::storage::v1::StorageClass;

struct ControllerParameters {
  Clock::Duration syncPeriod = std::chrono::seconds(15);  // --pvclaimbinder-sync-period
  bool enableDynamicProvisioning = true;                  // --enable-dynamic-provisioning
  bool enableHostPathProvisioning = false;                // --enable-hostpath-provisioner
  bool volumeAttributesClass = true;                      // feature gate VolumeAttributesClass
  int64_t recyclerMinimumTimeoutHostPath = 60;            // --pv-recycler-minimum-timeout-hostpath
  int64_t recyclerTimeoutIncrementHostPath = 30;          // --pv-recycler-timeout-increment-hostpath
  int64_t recyclerMinimumTimeoutNFS = 300;                // --pv-recycler-minimum-timeout-nfs
  int64_t recyclerTimeoutIncrementNFS = 30;               // --pv-recycler-increment-timeout-nfs
};

// recyclerclient names the scrubbing pod of a volume "recycler-for-<pv>" (namespace default).
inline constexpr const char* kRecyclerPodPrefix = "recycler-for-";

using common::OperationBackoff;

// pkg/controller/volume/persistentvolume/metrics: the plain retroactive StorageClass counters, registered once the
// controller's caches synced (as upstream's Run); RecordRetroactiveStorageClassMetric counts one assignment attempt.
void registerRetroactiveStorageClassMetrics();
void RecordRetroactiveStorageClassMetric(bool success);

class PersistentVolumeController {
 public:
  PersistentVolumeController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                             informers::SharedInformer<PersistentVolume>& volumes,
                             informers::SharedInformer<PersistentVolumeClaim>& claims,
                             informers::SharedInformer<StorageClass>& classes, informers::SharedInformer<Pod>& pods,
                             informers::SharedInformer<Node>& nodes, ControllerParameters params,
                             Clock& clock = RealClock::get());
  ~PersistentVolumeController();
  void Run(std::stop_token stop);

  // Queue handlers (public for tests).
  runtime::SyncResult syncClaimByKey(const std::string& key);
  runtime::SyncResult syncVolumeByKey(const std::string& key);
  // Fills the controller's caches from the informers (Run does it once they synced).
  void initializeCaches();

 private:
  using PVPtr = std::shared_ptr<const PersistentVolume>;
  using PVCPtr = std::shared_ptr<const PersistentVolumeClaim>;

  // pv_controller_base.cc
  Status updateVolume(const PVPtr& volume);
  void deleteVolume(const PersistentVolume& volume);
  Status updateClaim(const PVCPtr& claim);
  void deleteClaim(const PersistentVolumeClaim& claim);
  void resync();
  Result<bool> storeVolumeUpdate(const PersistentVolume& volume);
  Result<bool> storeClaimUpdate(const PersistentVolumeClaim& claim);
  Result<PersistentVolumeClaim> updateClaimMigrationAnnotations(const PersistentVolumeClaim& claim);
  Result<PersistentVolume> updateVolumeMigrationAnnotationsAndFinalizers(const PersistentVolume& volume);
  Result<PersistentVolumeClaim> setClaimProvisioner(const PersistentVolumeClaim& claim, const std::string& provisioner);
  // persistentVolumeOrderedIndex.findBestMatchForClaim over the controller's volume cache.
  Result<PVPtr> findBestMatchForClaim(const PersistentVolumeClaim& claim, bool delayBinding) const;
  Result<bool> IsDelayBindingMode(const PersistentVolumeClaim& claim) const;

  // pv_controller.cc: the state machine.
  Status syncClaim(const PersistentVolumeClaim& claim);
  Status syncUnboundClaim(const PersistentVolumeClaim& claim);
  Status syncBoundClaim(const PersistentVolumeClaim& claim);
  Status syncVolume(const PersistentVolume& volume);
  Status emitEventForUnboundDelayBindingClaim(const PersistentVolumeClaim& claim);
  Result<PersistentVolumeClaim> updateClaimStatus(const PersistentVolumeClaim& claim, const std::string& phase,
                                                  const PersistentVolume* volume);
  Result<PersistentVolumeClaim> updateClaimStatusWithEvent(const PersistentVolumeClaim& claim,
                                                           const std::string& phase, const PersistentVolume* volume,
                                                           const char* type, const std::string& reason,
                                                           const std::string& message);
  Result<PersistentVolume> updateVolumePhase(const PersistentVolume& volume, const std::string& phase,
                                             const std::string& message);
  Result<PersistentVolume> updateVolumePhaseWithEvent(const PersistentVolume& volume, const std::string& phase,
                                                      const char* type, const std::string& reason,
                                                      const std::string& message);
  Result<bool> assignDefaultStorageClass(const PersistentVolumeClaim& claim);
  Result<PersistentVolume> bindVolumeToClaim(const PersistentVolume& volume, const PersistentVolumeClaim& claim);
  Result<PersistentVolumeClaim> bindClaimToVolume(const PersistentVolumeClaim& claim, const PersistentVolume& volume);
  Status bind(const PersistentVolume& volume, const PersistentVolumeClaim& claim);
  Status unbindVolume(const PersistentVolume& volume);
  Status reclaimVolume(const PersistentVolume& volume);
  Result<bool> isVolumeReleased(const PersistentVolume& volume) const;
  std::vector<std::string> isVolumeUsed(const PersistentVolume& volume) const;
  std::vector<std::string> findNonScheduledPodsByPVC(const PersistentVolumeClaim& claim) const;
  // Result<PVCPtr> of the claim a volume points to, looked up as syncVolume does (cache, informer, apiserver).
  Result<PVCPtr> claimForVolume(const PersistentVolume& volume);

  // pv_operations.cc: what upstream runs as goroutinemap operations (run inline here, with their backoff).
  void scheduleOperation(const std::string& name, const std::function<Status()>& op);
  void recycleVolumeOperation(const PersistentVolume& volume);
  Status deleteVolumeOperation(const PersistentVolume& volume);
  Status doDeleteVolume(const PersistentVolume& volume);
  Status removeDeletionProtectionFinalizer(const PersistentVolume& volume);
  Status provisionClaim(const PersistentVolumeClaim& claim);
  Status provisionClaimOperation(const PersistentVolumeClaim& claim, const StorageClass& storageClass);
  Status provisionClaimOperationExternal(const PersistentVolumeClaim& claim, const StorageClass& storageClass);
  void rescheduleProvisioning(const PersistentVolumeClaim& claim);
  // pv_recycler.cc: one step of recycling with the hostPath/NFS recycler pod.
  Status recycle(const PersistentVolume& volume, Plugin plugin);

  // Cross-queue adds (a volume sync queues its claim and the other way round), safe while the queues go away.
  void enqueueClaim(const std::string& key);
  void enqueueVolume(const std::string& name);

  void claimEvent(const PersistentVolumeClaim& c, const char* type, const std::string& reason, const std::string& msg);
  void volumeEvent(const PersistentVolume& v, const char* type, const std::string& reason, const std::string& msg);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<PersistentVolume>& volumeInformer_;
  informers::SharedInformer<PersistentVolumeClaim>& claimInformer_;
  informers::SharedInformer<StorageClass>& classes_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<Node>& nodes_;
  ControllerParameters params_;
  Clock& clock_;
  informers::Store<PersistentVolume> volumes_;  // ctrl.volumes: newest version seen or saved
  informers::Store<PersistentVolumeClaim> claims_;  // ctrl.claims
  OperationBackoff operations_;
  struct Recycling {
    std::string podUID;
    std::set<std::string> forwarded;  // the recycler pod's events already on the volume
  };
  std::mutex recyclingMu_;
  std::map<std::string, Recycling> recycling_;  // by PV name
  std::once_flag cachesInitialized_;
  std::shared_mutex queuesMu_;  // guards the two pointers, not the queues
  std::unique_ptr<runtime::ControllerBase> claimQueue_;
  std::unique_ptr<runtime::ControllerBase> volumeQueue_;
  Periodic resync_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::persistentvolume
