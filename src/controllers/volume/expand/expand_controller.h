#pragma once
// persistentvolume-expander-controller (alias persistentvolume-expander; upstream pkg/controller/volume/expand,
// deprecated there and kept only to hand claims to an external resizer). Watches PVCs only: a Bound claim is
// queued when it is added or deleted, and on an update that grows spec.resources.requests.storage or
// status.capacity.storage. Its PV is read live (GET, not a cache); the PV's claimRef must name the claim's
// namespace and UID. Work is done only when the request is above status.capacity, or the PV carries
// volume.alpha.kubernetes.io/pre-resize-capacity:
//  - an in-tree volume whose plugin migrated to CSI (AWS EBS, GCE PD, Azure Disk/File, Cinder, vSphere,
//    Portworx): Normal ExternalExpanding "CSI migration enabled for <plugin>; waiting for external resizer to
//    expand the pvc", then volume.kubernetes.io/storage-resizer=<CSI driver> written by a strategic-merge patch
//    of the claim's status subresource (with a resourceVersion precondition);
//  - a FlexVolume: expanded "in the controller" by upstream's no-op plugin (kubelet does the real work):
//    the claim is marked ControllerResizeInProgress (allocatedResources, Resizing condition, resizer = the flex
//    driver), the PV's capacity raised, then the claim set NodeResizePending / FileSystemResizePending and the PV
//    annotated with the pre-resize capacity (a Block volume is marked finished instead, VolumeResizeSuccessful);
//    a failure is a VolumeResizeFailed Warning; storage_operation_duration_seconds{operation_name="expand_volume"};
//  - anything else (CSI volumes included: the kube-controller-manager has no expandable plugin at the pin):
//    Normal ExternalExpanding "waiting for an external controller to expand this PVC", nothing written.
// RecoverVolumeExpansionFailure is GA and locked on at the pin, so only its code path exists. Events come from
// component "volume_expand"; queue "volume_expand"; upstream runs 10 workers whatever the flags say.
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::expand {

using api::core::v1::PersistentVolume;
using api::core::v1::PersistentVolumeClaim;

// upstream defaultWorkerCount: what Run starts.
inline constexpr int kDefaultWorkerCount = 10;
// volumetypes.VolumeResizerKey and util.AnnPreResizeCapacity.
inline constexpr const char* kVolumeResizerKey = "volume.kubernetes.io/storage-resizer";
inline constexpr const char* kAnnPreResizeCapacity = "volume.alpha.kubernetes.io/pre-resize-capacity";

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
             informers::SharedInformer<PersistentVolumeClaim>& pvcs, Clock& clock = RealClock::get());
  // Waits for the PVC cache, then processes keys with `workers` syncs in flight until stop.
  void run(int workers, std::stop_token stop);
  runtime::SyncResult syncHandler(const std::string& key);

 private:
  friend class ExpandTestPeer;
  struct inTreeResizeResponse {
    PersistentVolumeClaim pvc;
    PersistentVolume pv;
    Status err;
    bool resizeCalled = false;
  };
  void enqueuePVC(const PersistentVolumeClaim& pvc);
  void onUpdate(const PersistentVolumeClaim& oldPVC, const PersistentVolumeClaim& newPVC);
  Result<PersistentVolume> getPersistentVolume(const PersistentVolumeClaim& pvc);
  Status expand(const PersistentVolumeClaim& pvc, const PersistentVolume& pv, const std::string& resizerName);
  bool isNodeExpandComplete(const PersistentVolumeClaim& pvc, const PersistentVolume& pv) const;
  // operationexecutor: GenerateExpandAndRecoverVolumeFunc's operation run at once (GeneratedOperations.Run:
  // the operation, then its Warning event on failure and its duration metric).
  Status runExpandAndRecoverVolume(const PersistentVolumeClaim& pvc, const PersistentVolume& pv,
                                   const std::string& resizerName);
  inTreeResizeResponse expandAndRecoverFunction(const PersistentVolumeClaim& pvc, const PersistentVolume& pv,
                                                const std::string& resizerName);
  Status markForPendingNodeExpansion(PersistentVolumeClaim& pvc, const PersistentVolume& pv);
  void event(const PersistentVolumeClaim& pvc, const char* type, const std::string& reason,
             const std::string& message) const;
  api::Time now() const;

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<PersistentVolumeClaim>& pvcs_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::unique_ptr<std::stop_callback<std::function<void()>>> onStop_;  // logs the shutdown
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::expand
