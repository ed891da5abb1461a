#pragma once
// Pod ↔ PVC helpers shared by the storage controllers: upstream pkg/controller/volume/common (the pod-pvc-index),
// component-helpers' storage/ephemeral (VolumeClaimName, VolumeIsForPod) and pkg/volume/util's IsPodTerminated.
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/status.h"

namespace kcm::controllers::volume::common {

inline constexpr const char* kPodPVCIndex = "pod-pvc-index";

// VolumeClaimName: the PVC behind a generic ephemeral volume, "<pod>-<volume>".
std::string VolumeClaimName(const api::core::v1::Pod& pod, const api::core::v1::Volume& v);
// VolumeIsForPod: OK when the PVC is controlled by the pod; otherwise the error upstream returns.
Status VolumeIsForPod(const api::core::v1::Pod& pod, const api::core::v1::PersistentVolumeClaim& pvc);
// PodPVCIndexFunc: "ns/claim" for each PVC volume and "ns/<pod>-<volume>" for each ephemeral volume.
std::vector<std::string> PodPVCIndexFunc(const api::core::v1::Pod& pod);
// IsPodTerminated: Failed or Succeeded, or being deleted with no container running.
bool IsPodTerminated(const api::core::v1::Pod& pod);

}  // namespace kcm::controllers::volume::common
