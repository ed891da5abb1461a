#include "controllers/volume/common/volume_spec.h"

#include "controllers/volume/common/volume_common.h"

namespace kcm::controllers::volume::common {
namespace {

Status invalid(const std::string& m) { return Status(StatusCode::kInvalid, m); }

template <class Source>
std::string migratablePlugin(const Source& s) {
  if (s.awsElasticBlockStore) return "kubernetes.io/aws-ebs";
  if (s.gcePersistentDisk) return "kubernetes.io/gce-pd";
  if (s.azureDisk) return "kubernetes.io/azure-disk";
  if (s.azureFile) return "kubernetes.io/azure-file";
  if (s.cinder) return "kubernetes.io/cinder";
  if (s.vsphereVolume) return "kubernetes.io/vsphere-volume";
  if (s.portworxVolume) return "kubernetes.io/portworx-volume";
  return "";
}

}  // namespace

Result<VolumeSpec> createInTreeVolumeSpec(const api::core::v1::Pod& pod, const api::core::v1::Volume& v,
                                          const informers::Store<api::core::v1::PersistentVolumeClaim>& pvcs,
                                          const informers::Store<api::core::v1::PersistentVolume>& pvs,
                                          std::string* claimNameOut) {
  std::string claimName;
  bool readOnly = false;
  if (v.persistentVolumeClaim) {
    claimName = v.persistentVolumeClaim->claimName;
    readOnly = v.persistentVolumeClaim->readOnly;
  }
  if (v.ephemeral) claimName = VolumeClaimName(pod, v);
  if (claimNameOut) *claimNameOut = claimName;
  if (claimName.empty()) {
    VolumeSpec inlineSpec;
    inlineSpec.volume = &v;
    return inlineSpec;
  }

  const std::string& ns = pod.metadata.namespace_;
  const std::string processing = "error processing PVC \"" + ns + "\"/\"" + claimName + "\": ";
  auto pvc = pvcs.get(ns, claimName);
  if (!pvc) return invalid(processing + "failed to find PVC " + ns + "/" + claimName +
                                 " in PVCInformer cache: persistentvolumeclaim \"" + claimName + "\" not found");
  if (pvc->status.phase != "Bound" || pvc->spec.volumeName.empty())
    return invalid(processing + "PVC " + ns + "/" + claimName + " has non-bound phase (\"" + pvc->status.phase +
                   "\") or empty pvc.Spec.VolumeName (\"" + pvc->spec.volumeName + "\")");
  if (v.ephemeral)
    if (Status st = VolumeIsForPod(pod, *pvc); !st.ok()) return st;
  auto pv = pvs.get(pvc->spec.volumeName);
  if (!pv) return invalid(processing + "failed to find PV \"" + pvc->spec.volumeName +
                                "\" in PVInformer cache: persistentvolume \"" + pvc->spec.volumeName + "\" not found");
  if (!pv->spec.claimRef)
    return invalid(processing + "found PV object \"" + pv->metadata.name +
                   "\" but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim");
  if (pv->spec.claimRef->uid != pvc->metadata.uid)
    return invalid(processing + "found PV object \"" + pv->metadata.name + "\" but its pv.Spec.ClaimRef.UID (\"" +
                   pv->spec.claimRef->uid + "\") does not point to claim.UID (\"" + pvc->metadata.uid + "\")");
  VolumeSpec spec;
  spec.pv = std::move(pv);
  spec.readOnly = readOnly;
  return spec;
}

std::string inTreeMigratablePluginName(const VolumeSpec& spec) {
  return spec.pv ? migratablePlugin(spec.pv->spec) : migratablePlugin(*spec.volume);
}

}  // namespace kcm::controllers::volume::common
