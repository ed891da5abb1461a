#pragma once
// VisitPodSecretNames (upstream pkg/api/v1/pod/util.go): every Secret a pod references — image pull secrets,
// envFrom and env secretKeyRefs of all containers (init, regular, ephemeral), and secret-bearing volumes
// (azureFile, cephfs, cinder, flexVolume, projected, rbd, secret, scaleIO, iscsi, storageos, csi). Empty names
// are skipped.
#include <set>
#include <string>

#include "api/gen/core_v1.h"

namespace kcm::controllers {

void insertPodSecretNames(const api::core::v1::Pod& pod, std::set<std::string>& out);

}  // namespace kcm::controllers
