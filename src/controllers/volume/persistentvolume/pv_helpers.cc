#include "controllers/volume/persistentvolume/pv_helpers.h"

#include <algorithm>
#include <array>
#include <utility>

#include "api/support/labels.h"

namespace kcm::controllers::volume::persistentvolume {
namespace {

constexpr std::array<std::pair<const char*, const char*>, 4> kModeShort = {{
    {"ReadWriteOnce", "RWO"}, {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"}}};

bool containsMode(const std::vector<api::String>& modes, std::string_view m) {
  return std::find(modes.begin(), modes.end(), m) != modes.end();
}

std::string claimKey(const PersistentVolumeClaim& c) { return c.metadata.namespace_ + "/" + c.metadata.name; }

}  // namespace

bool hasAnnotation(const api::meta::v1::ObjectMeta& m, const char* key) { return m.annotations.contains(key); }

bool PersistentVolumeClaimHasClass(const PersistentVolumeClaim& claim) {
  return hasAnnotation(claim.metadata, kBetaStorageClassAnnotation) || claim.spec.storageClassName.has_value();
}

std::string GetPersistentVolumeClaimClass(const PersistentVolumeClaim& claim) {
  if (auto it = claim.metadata.annotations.find(kBetaStorageClassAnnotation); it != claim.metadata.annotations.end())
    return it->second;
  return claim.spec.storageClassName.value_or("");
}

std::string GetPersistentVolumeClass(const PersistentVolume& volume) {
  if (auto it = volume.metadata.annotations.find(kBetaStorageClassAnnotation); it != volume.metadata.annotations.end())
    return it->second;
  return volume.spec.storageClassName;
}

bool IsVolumeBoundToClaim(const PersistentVolume& volume, const PersistentVolumeClaim& claim) {
  const auto& ref = volume.spec.claimRef;
  if (!ref) return false;
  if (ref->name != claim.metadata.name || ref->namespace_ != claim.metadata.namespace_) return false;
  return ref->uid.empty() || ref->uid == claim.metadata.uid;
}

bool CheckVolumeModeMismatches(const api::core::v1::PersistentVolumeClaimSpec& pvc,
                               const api::core::v1::PersistentVolumeSpec& pv) {
  return pvc.volumeMode.value_or("Filesystem") != pv.volumeMode.value_or("Filesystem");
}

bool CheckAccessModes(const PersistentVolumeClaim& claim, const PersistentVolume& volume) {
  for (const auto& m : claim.spec.accessModes)
    if (!containsMode(volume.spec.accessModes, m)) return false;
  return true;
}

bool IsDelayBindingProvisioning(const PersistentVolumeClaim& claim) {
  return hasAnnotation(claim.metadata, kAnnSelectedNode);
}

api::Quantity storageQuantity(const api::StringMap<api::Quantity>& list) {
  auto it = list.find("storage");
  return it == list.end() ? api::Quantity::fromInt(0) : it->second;
}

std::string GetAccessModesAsString(const std::vector<api::String>& modes) {
  std::string out;
  for (const auto& [full, abbrev] : kModeShort) {
    if (!containsMode(modes, full)) continue;
    if (!out.empty()) out += ",";
    out += abbrev;
  }
  return out;
}

std::vector<api::String> GetAccessModesFromString(const std::string& modes) {
  std::vector<api::String> out;
  size_t start = 0;
  while (start <= modes.size()) {
    size_t end = modes.find(',', start);
    if (end == std::string::npos) end = modes.size();
    const std::string part = modes.substr(start, end - start);
    for (const auto& [full, abbrev] : kModeShort)
      if (part == abbrev) out.emplace_back(full);
    start = end + 1;
  }
  return out;
}

bool ContainsAllAccessModes(const std::vector<api::String>& indexed, const std::vector<api::String>& requested) {
  for (const auto& m : requested)
    if (!containsMode(indexed, m)) return false;
  return true;
}

api::core::v1::ObjectReference GetClaimReference(const PersistentVolumeClaim& claim) {
  api::core::v1::ObjectReference ref;
  ref.kind = "PersistentVolumeClaim";
  ref.apiVersion = "v1";
  ref.namespace_ = claim.metadata.namespace_;
  ref.name = claim.metadata.name;
  ref.uid = claim.metadata.uid;
  ref.resourceVersion = claim.metadata.resourceVersion;
  return ref;
}

std::pair<PersistentVolume, bool> GetBindVolumeToClaim(const PersistentVolume& volume,
                                                       const PersistentVolumeClaim& claim) {
  bool dirty = false;
  const bool setBoundByController = !IsVolumeBoundToClaim(volume, claim);
  PersistentVolume clone = volume;
  const auto& ref = volume.spec.claimRef;
  if (!ref || ref->name != claim.metadata.name || ref->namespace_ != claim.metadata.namespace_ ||
      ref->uid != claim.metadata.uid) {
    clone.spec.claimRef = GetClaimReference(claim);
    dirty = true;
  }
  if (setBoundByController && !hasAnnotation(clone.metadata, kAnnBoundByController)) {
    clone.metadata.annotations[kAnnBoundByController] = "yes";
    dirty = true;
  }
  return {std::move(clone), dirty};
}

Status checkVolumeSatisfyClaim(const PersistentVolume& volume, const PersistentVolumeClaim& claim, bool vacEnabled) {
  const auto bad = [](const std::string& m) { return Status(StatusCode::kInvalid, m); };
  if (volume.metadata.deletionTimestamp) return bad("the volume is marked for deletion \"" + volume.metadata.name + "\"");
  if (storageQuantity(volume.spec.capacity).value() < storageQuantity(claim.spec.resources.requests).value())
    return bad("requested PV is too small");
  if (GetPersistentVolumeClass(volume) != GetPersistentVolumeClaimClass(claim))
    return bad("storageClassName does not match");
  const std::string claimVAC = claim.spec.volumeAttributesClassName.value_or("");
  const std::string volumeVAC = volume.spec.volumeAttributesClassName.value_or("");
  if (vacEnabled && claimVAC != volumeVAC) return bad("volumeAttributesClassName does not match");
  if (!vacEnabled && (!claimVAC.empty() || !volumeVAC.empty()))
    return bad("volumeAttributesClassName is not supported when the feature-gate VolumeAttributesClass is disabled");
  if (CheckVolumeModeMismatches(claim.spec, volume.spec)) return bad("incompatible volumeMode");
  if (!CheckAccessModes(claim, volume)) return bad("incompatible accessMode");
  return Status::Ok();
}

Result<std::shared_ptr<const PersistentVolume>> FindMatchingVolume(
    const PersistentVolumeClaim& claim, const std::vector<std::shared_ptr<const PersistentVolume>>& volumes,
    bool delayBinding, bool vacEnabled) {
  const std::string claimVAC = claim.spec.volumeAttributesClassName.value_or("");
  if (!vacEnabled && !claimVAC.empty())
    return Status(StatusCode::kInvalid, "unsupported volumeAttributesClassName is set on claim " + claimKey(claim) +
                                            " when the feature-gate VolumeAttributesClass is disabled");
  const api::Quantity requested = storageQuantity(claim.spec.resources.requests);
  const std::string requestedClass = GetPersistentVolumeClaimClass(claim);
  std::shared_ptr<const PersistentVolume> smallest;
  api::Quantity smallestQty;
  for (const auto& volume : volumes) {
    if (volume->spec.claimRef && !IsVolumeBoundToClaim(*volume, claim)) continue;
    const api::Quantity qty = storageQuantity(volume->spec.capacity);
    if (qty.compare(requested) < 0) continue;
    if (CheckVolumeModeMismatches(claim.spec, volume->spec)) continue;
    const std::string volumeVAC = volume->spec.volumeAttributesClassName.value_or("");
    if (vacEnabled && claimVAC != volumeVAC) continue;
    if (!vacEnabled && !volumeVAC.empty()) continue;
    if (volume->metadata.deletionTimestamp) continue;
    if (IsVolumeBoundToClaim(*volume, claim)) return volume;  // pre-bound: no further checks on this path
    if (delayBinding) continue;
    if (volume->status.phase != "Available") continue;
    if (claim.spec.selector) {
      auto m = api::labelSelectorMatches(*claim.spec.selector, volume->metadata.labels);
      if (!m.ok())
        return Status(StatusCode::kInvalid, "error creating internal label selector for claim: " + claimKey(claim) +
                                                ": " + m.status().message());
      if (!*m) continue;
    }
    if (GetPersistentVolumeClass(*volume) != requestedClass) continue;
    if (!smallest || smallestQty.compare(qty) > 0) smallest = volume, smallestQty = qty;
  }
  return smallest;
}

}  // namespace kcm::controllers::volume::persistentvolume
