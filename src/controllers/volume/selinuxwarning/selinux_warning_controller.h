#pragma once
// selinux-warning-controller (upstream pkg/controller/volume/selinuxwarning; off by default, needs
// SELinuxChangePolicy): for every pod's mounted volumes, the SELinux mount label and SELinuxChangePolicy the
// kubelet would use, cached per volume; two pods using one volume with conflicting labels or policies get a
// Normal SELinuxLabelConflict / SELinuxChangePolicyConflict event each and a
// selinux_warning_controller_selinux_volume_conflict series while both exist. A volume mounted in one pod with
// two labels is a MultipleSELinuxLabels warning. It writes nothing but events.
// Volume plugins as kube-controller-manager probes them: host-path, nfs, fc, iscsi and csi (a CSI driver supports
// mount -o context when its CSIDriver says seLinuxMount: true; fc and iscsi always do). In-tree volumes whose CSI
// migration is complete (AWS EBS, GCE PD, Azure disk and file, Cinder, vSphere, Portworx) count as their CSI
// driver's. One worker, queue "selinux_warning".
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/storage_v1.h"
#include "client/events.h"
#include "controllers/volume/common/volume_spec.h"
#include "controllers/volume/selinuxwarning/volume_cache.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::volume::selinuxwarning {

using api::core::v1::PersistentVolume;
using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;
using api::storage::v1::CSIDriver;

inline constexpr const char* kConflictMetric = "selinux_warning_controller_selinux_volume_conflict";

// volumeutil.GetPodVolumeNames(pod, true): each mounted volume's effective container SELinux options, in
// init, regular, ephemeral container order (a volume mounted without options is present with none).
std::map<std::string, std::vector<const api::core::v1::SELinuxOptions*>> GetPodVolumeNames(const Pod& pod);

class Controller {
 public:
  Controller(std::shared_ptr<client::EventRecorder> recorder, informers::SharedInformer<Pod>& pods,
             informers::SharedInformer<PersistentVolumeClaim>& pvcs, informers::SharedInformer<PersistentVolume>& pvs,
             informers::SharedInformer<CSIDriver>& drivers, Clock& clock = RealClock::get());
  ~Controller();
  void run(int workers, std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);
  const VolumeCache& labelCache() const { return labelCache_; }

 private:
  // attachdetach's util.CreateVolumeSpec: the in-tree spec, translated to CSI when its plugin migrated.
  Result<common::VolumeSpec> CreateVolumeSpec(const Pod& pod, const api::core::v1::Volume& v) const;
  Status syncPod(const Pod& pod);
  Status syncVolume(const Pod& pod, const common::VolumeSpec& spec, const std::string& label, bool supportsMount);
  void reportConflictEvents(const std::vector<Conflict>& conflicts);
  Result<bool> SupportsSELinuxContextMount(const common::VolumeSpec& spec) const;
  void enqueueAllPodsForPVC(const std::string& ns, const std::string& name);
  void enqueueAllPodsForCSIDriver(const std::string& driver);

  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<PersistentVolumeClaim>& pvcs_;
  informers::SharedInformer<PersistentVolume>& pvs_;
  informers::SharedInformer<CSIDriver>& drivers_;
  VolumeCache labelCache_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::volume::selinuxwarning
