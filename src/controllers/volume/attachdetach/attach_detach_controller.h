#pragma once
// persistentvolume-attach-detach-controller (alias attachdetach; upstream pkg/controller/volume/attachdetach):
// attaches the CSI volumes of pods scheduled to nodes that carry volumes.kubernetes.io/controller-managed-attach-detach
// and detaches them once no pod there needs them. For CSI that is a VolumeAttachment named
// csi-<sha256(handle+driver+node)> the external attacher acts on; the attach completes when its status says attached
// (and then node.status.volumesAttached lists the volume), the detach when it is gone. A driver whose CSIDriver has
// attachRequired: false is not attached. Volumes still in the node's volumesInUse are not detached, except after
// the maximum unmount wait (6 min) on an unhealthy node (unless --disable-force-detach-on-timeout) or with the
// out-of-service taint. A ReadWriteOnce volume attached elsewhere waits ("Waiting for detach" events).
// In-tree volume types (and their CSI migration) are not attached: logged as not implemented.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/storage_v1.h"
#include "base/executor.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/volume/attachdetach/cache.h"
#include "controllers/volume/common/operation_backoff.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::attachdetach {

using api::core::v1::Node;
using api::core::v1::PersistentVolume;
using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;
using api::storage::v1::CSIDriver;
using api::storage::v1::VolumeAttachment;

inline constexpr const char* kControllerManagedAttachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach";

// getAttachmentName of the CSI attacher: "csi-" + hex sha256(volumeHandle + driver + node).
std::string getAttachmentName(const std::string& volumeHandle, const std::string& driver, const std::string& node);

struct Parameters {
  Clock::Duration reconcilerSyncPeriod = std::chrono::minutes(1);  // --attach-detach-reconcile-sync-period
  bool disableReconciliationSync = false;                          // --disable-attach-detach-reconcile-sync
  bool disableForceDetachOnTimeout = false;                        // --disable-force-detach-on-timeout
  Clock::Duration loopPeriod = std::chrono::milliseconds(100);     // reconcilerLoopPeriod
  Clock::Duration maxWaitForUnmount = std::chrono::minutes(6);     // reconcilerMaxWaitForUnmountDuration
  Clock::Duration csiTimeout = std::chrono::minutes(2);            // the CSI attacher's wait for the external attacher
  Clock::Duration populatorPeriod = std::chrono::minutes(1);       // desiredStateOfWorldPopulatorLoopSleepPeriod
};

class AttachDetachController {
 public:
  AttachDetachController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                         informers::SharedInformer<Pod>& pods, informers::SharedInformer<Node>& nodes,
                         informers::SharedInformer<PersistentVolumeClaim>& pvcs,
                         informers::SharedInformer<PersistentVolume>& pvs, informers::SharedInformer<CSIDriver>& drivers,
                         informers::SharedInformer<VolumeAttachment>& attachments, Parameters params,
                         Clock& clock = RealClock::get());
  ~AttachDetachController();
  void Run(std::stop_token stop);

  // For tests: the start-up population, one reconciler pass, the periodic passes.
  void populateActualStateOfWorld();
  void reconcile();
  void sync();
  void findAndRemoveDeletedPods();
  runtime::SyncResult syncPVCByKey(const std::string& key);
  void podAdd(const Pod& pod);
  void podDelete(const Pod& pod);
  void nodeUpdate(const Node& node);
  void nodeDelete(const Node& node);
  const DesiredStateOfWorld& desired() const { return dsw_; }
  ActualStateOfWorld& actual() { return asw_; }

 private:
  // util.ProcessPodVolumes: each attachable volume of a scheduled pod on a managed node added or removed.
  void ProcessPodVolumes(const Pod& pod, bool addVolumes);
  // CreateVolumeSpec for a pod volume: the bound PV behind its claim, as a CSI spec; errors say why not.
  Result<VolumeSpec> createVolumeSpec(const Pod& pod, const api::core::v1::Volume& v) const;
  bool canAttach(const std::string& driver) const;  // the CSI plugin's CanAttach (CSIDriver attachRequired)
  void processVolumesInUse(const std::string& node, const std::vector<std::string>& inUse);
  void addNodeToDswp(const Node& node);

  void attachDesiredVolumes();
  void attachVolume(const VolumeToAttach& v);
  void detachVolume(const AttachedVolume& v, bool verifySafeToDetach);
  void reportMultiAttachError(const VolumeToAttach& v, const std::vector<std::string>& nodes);
  void podEvent(const PodRef& p, const char* type, const std::string& reason, const std::string& msg);
  Status updateNodeStatus(const std::string& node, const std::vector<std::string>& volumes);
  void UpdateNodeStatuses();
  Status UpdateNodeStatusForNode(const std::string& node);
  bool nodeIsHealthy(const std::string& node) const;
  bool hasOutOfServiceTaint(const std::string& node) const;

  struct Operation {  // an attach or detach waiting for the external attacher
    Clock::TimePoint started;
    bool detach = false;
  };

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<Node>& nodes_;
  informers::SharedInformer<PersistentVolumeClaim>& pvcs_;
  informers::SharedInformer<PersistentVolume>& pvs_;
  informers::SharedInformer<CSIDriver>& drivers_;
  informers::SharedInformer<VolumeAttachment>& attachments_;
  Parameters params_;
  Clock& clock_;
  DesiredStateOfWorld dsw_;
  ActualStateOfWorld asw_;
  common::OperationBackoff backoff_;
  std::mutex opsMu_;  // guards ops_ (the reconciler runs one pass at a time; tests call in too)
  std::map<std::string, Operation> ops_;  // "<volume>@<node>"
  Clock::TimePoint lastSync_{};
  std::once_flag populated_;
  std::mutex reconcileMu_;
  runtime::ControllerBase pvcQueue_;
  Periodic reconciler_, populator_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::attachdetach
