#include "controllers/volume/common/volume_common.h"

namespace kcm::controllers::volume::common {
using api::core::v1::Pod;

std::string VolumeClaimName(const Pod& pod, const api::core::v1::Volume& v) { return pod.metadata.name + "-" + v.name; }

Status VolumeIsForPod(const Pod& pod, const api::core::v1::PersistentVolumeClaim& pvc) {
  bool owned = false;
  if (pod.metadata.namespace_ == pvc.metadata.namespace_)
    for (const auto& r : pvc.metadata.ownerReferences)
      if (r.controller.value_or(false) && r.uid == pod.metadata.uid) owned = true;
  if (owned) return Status::Ok();
  return Status(StatusCode::kInvalidArgument, "PVC " + pvc.metadata.namespace_ + "/" + pvc.metadata.name +
                                                     " was not created for pod " + pod.metadata.namespace_ + "/" +
                                                     pod.metadata.name + " (pod is not owner)");
}

std::vector<std::string> PodPVCIndexFunc(const Pod& pod) {
  std::vector<std::string> keys;
  for (const auto& v : pod.spec.volumes) {
    if (v.persistentVolumeClaim) keys.push_back(pod.metadata.namespace_ + "/" + v.persistentVolumeClaim->claimName);
    else if (v.ephemeral) keys.push_back(pod.metadata.namespace_ + "/" + VolumeClaimName(pod, v));
  }
  return keys;
}

namespace {
bool notRunning(const std::vector<api::core::v1::ContainerStatus>& statuses) {
  for (const auto& s : statuses)
    if (!s.state.terminated && !s.state.waiting) return false;
  return true;
}
}  // namespace

bool IsPodTerminated(const Pod& pod) {
  const auto& st = pod.status;
  return st.phase == "Failed" || st.phase == "Succeeded" ||
         (pod.metadata.deletionTimestamp && notRunning(st.initContainerStatuses) && notRunning(st.containerStatuses) &&
          notRunning(st.ephemeralContainerStatuses));
}

}  // namespace kcm::controllers::volume::common
