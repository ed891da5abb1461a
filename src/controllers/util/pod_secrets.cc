#include "controllers/util/pod_secrets.h"

namespace kcm::controllers {
namespace {

template <class C>
void containerSecretNames(const C& c, std::set<std::string>& out) {
  for (const auto& e : c.envFrom)
    if (e.secretRef) out.insert(e.secretRef->name);
  for (const auto& e : c.env)
    if (e.valueFrom && e.valueFrom->secretKeyRef) out.insert(e.valueFrom->secretKeyRef->name);
}

}  // namespace

void insertPodSecretNames(const api::core::v1::Pod& pod, std::set<std::string>& out) {
  std::set<std::string> names;
  const auto& spec = pod.spec;
  for (const auto& r : spec.imagePullSecrets) names.insert(r.name);
  for (const auto& c : spec.initContainers) containerSecretNames(c, names);
  for (const auto& c : spec.containers) containerSecretNames(c, names);
  for (const auto& c : spec.ephemeralContainers) containerSecretNames(c, names);
  for (const auto& v : spec.volumes) {  // the first source set, as upstream's switch
    if (v.azureFile) names.insert(v.azureFile->secretName);
    else if (v.cephfs) { if (v.cephfs->secretRef) names.insert(v.cephfs->secretRef->name); }
    else if (v.cinder) { if (v.cinder->secretRef) names.insert(v.cinder->secretRef->name); }
    else if (v.flexVolume) { if (v.flexVolume->secretRef) names.insert(v.flexVolume->secretRef->name); }
    else if (v.projected) {
      for (const auto& s : v.projected->sources)
        if (s.secret) names.insert(s.secret->name);
    } else if (v.rbd) { if (v.rbd->secretRef) names.insert(v.rbd->secretRef->name); }
    else if (v.secret) names.insert(v.secret->secretName);
    else if (v.scaleIO) { if (v.scaleIO->secretRef) names.insert(v.scaleIO->secretRef->name); }
    else if (v.iscsi) { if (v.iscsi->secretRef) names.insert(v.iscsi->secretRef->name); }
    else if (v.storageos) { if (v.storageos->secretRef) names.insert(v.storageos->secretRef->name); }
    else if (v.csi) { if (v.csi->nodePublishSecretRef) names.insert(v.csi->nodePublishSecretRef->name); }
  }
  names.erase("");
  out.insert(names.begin(), names.end());
}

}  // namespace kcm::controllers
