#pragma once
// A pod volume as the volume plugins see it (upstream volume.Spec) and the in-tree half of attachdetach's
// util.CreateVolumeSpec that builds it: an inline volume as it is, a PVC (or a generic ephemeral volume's PVC)
// resolved through the informer caches to its bound PV. Errors carry upstream's texts.
#include <memory>
#include <optional>
#include <string>

#include "api/gen/core_v1.h"
#include "base/status.h"
#include "informers/store.h"

namespace kcm::controllers::volume::common {

// A migrated in-tree volume as CSI sees it (csi_translation.h).
struct MigratedCSIVolume {
  std::string driver, volumeHandle;
};

struct VolumeSpec {
  const api::core::v1::Volume* volume = nullptr;          // an inline volume (points into the pod)
  std::shared_ptr<const api::core::v1::PersistentVolume> pv;  // or the PV behind the pod's claim
  bool readOnly = false;
  std::optional<MigratedCSIVolume> migratedCSI;  // set once an in-tree volume was translated (Spec.Migrated)
  // volume.Spec.Name(): the inline volume's name or the PV's.
  const api::String& name() const { return pv ? pv->metadata.name : volume->name; }
};

// createInTreeVolumeSpec; claimName (when given) receives the claim looked at, "" for an inline volume.
Result<VolumeSpec> createInTreeVolumeSpec(const api::core::v1::Pod& pod, const api::core::v1::Volume& v,
                                          const informers::Store<api::core::v1::PersistentVolumeClaim>& pvcs,
                                          const informers::Store<api::core::v1::PersistentVolume>& pvs,
                                          std::string* claimName = nullptr);

// csimigration's GetInTreePluginNameFromSpec: the in-tree plugin whose volumes a CSI driver took over
// (kubernetes.io/aws-ebs, gce-pd, azure-disk, azure-file, cinder, vsphere-volume, portworx-volume), or "".
std::string inTreeMigratablePluginName(const VolumeSpec& spec);

}  // namespace kcm::controllers::volume::common
