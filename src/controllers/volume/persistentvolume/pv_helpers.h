#pragma once
// The PV/PVC binding predicates of component-helpers' storage/volume (storagehelpers) and the access-mode
// helpers of pkg/apis/core/v1/helper and pkg/volume/util, as the persistentvolume-binder-controller uses them.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/status.h"

namespace kcm::controllers::volume::persistentvolume {

using api::core::v1::PersistentVolume;
using api::core::v1::PersistentVolumeClaim;

// Annotations and finalizers, as upstream's storagehelpers constants.
inline constexpr const char* kAnnBindCompleted = "pv.kubernetes.io/bind-completed";
inline constexpr const char* kAnnBoundByController = "pv.kubernetes.io/bound-by-controller";
inline constexpr const char* kAnnSelectedNode = "volume.kubernetes.io/selected-node";
inline constexpr const char* kAnnDynamicallyProvisioned = "pv.kubernetes.io/provisioned-by";
inline constexpr const char* kAnnMigratedTo = "pv.kubernetes.io/migrated-to";
inline constexpr const char* kAnnStorageProvisioner = "volume.kubernetes.io/storage-provisioner";
inline constexpr const char* kAnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner";
inline constexpr const char* kAnnPreResizeCapacity = "volume.alpha.kubernetes.io/pre-resize-capacity";
inline constexpr const char* kBetaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class";
inline constexpr const char* kAnnIsDefaultStorageClass = "storageclass.kubernetes.io/is-default-class";
inline constexpr const char* kAnnBetaIsDefaultStorageClass = "storageclass.beta.kubernetes.io/is-default-class";
inline constexpr const char* kPVDeletionProtectionFinalizer = "external-provisioner.volume.kubernetes.io/finalizer";
inline constexpr const char* kPVDeletionInTreeProtectionFinalizer = "kubernetes.io/pv-controller";

bool hasAnnotation(const api::meta::v1::ObjectMeta& m, const char* key);

bool PersistentVolumeClaimHasClass(const PersistentVolumeClaim& claim);
std::string GetPersistentVolumeClaimClass(const PersistentVolumeClaim& claim);
std::string GetPersistentVolumeClass(const PersistentVolume& volume);
// IsVolumeBoundToClaim: claimRef names the claim, and its UID (when set) is the claim's.
bool IsVolumeBoundToClaim(const PersistentVolume& volume, const PersistentVolumeClaim& claim);
// CheckVolumeModeMismatches: true when the modes differ (unset means Filesystem).
bool CheckVolumeModeMismatches(const api::core::v1::PersistentVolumeClaimSpec& pvc,
                               const api::core::v1::PersistentVolumeSpec& pv);
// CheckAccessModes: the PV offers every mode the claim asks for.
bool CheckAccessModes(const PersistentVolumeClaim& claim, const PersistentVolume& volume);
// IsDelayBindingProvisioning: the scheduler picked a node (selected-node annotation).
bool IsDelayBindingProvisioning(const PersistentVolumeClaim& claim);
// storageQuantity: the "storage" entry of a resource list, zero when absent.
api::Quantity storageQuantity(const api::StringMap<api::Quantity>& list);

// GetAccessModesAsString: "RWO,ROX,RWX,RWOP" order, duplicates dropped (the binder's index key).
std::string GetAccessModesAsString(const std::vector<api::String>& modes);
std::vector<api::String> GetAccessModesFromString(const std::string& modes);
bool ContainsAllAccessModes(const std::vector<api::String>& indexed, const std::vector<api::String>& requested);

// GetClaimReference: reference.GetReference of a claim (kind, apiVersion, namespace, name, uid, resourceVersion).
api::core::v1::ObjectReference GetClaimReference(const PersistentVolumeClaim& claim);
// GetBindVolumeToClaim: a copy of the volume bound to the claim and whether anything changed.
std::pair<PersistentVolume, bool> GetBindVolumeToClaim(const PersistentVolume& volume,
                                                       const PersistentVolumeClaim& claim);
// checkVolumeSatisfyClaim: why a requested volume cannot serve the claim (OK when it can).
Status checkVolumeSatisfyClaim(const PersistentVolume& volume, const PersistentVolumeClaim& claim, bool vacEnabled);

// FindMatchingVolume (the PV controller path: no node, no exclusions): the volume pre-bound to the claim, else
// the smallest Available volume of the claim's class that fits size, mode, attributes class and selector.
// delayBinding skips unbound volumes (the scheduler binds those).
Result<std::shared_ptr<const PersistentVolume>> FindMatchingVolume(
    const PersistentVolumeClaim& claim, const std::vector<std::shared_ptr<const PersistentVolume>>& volumes,
    bool delayBinding, bool vacEnabled);

}  // namespace kcm::controllers::volume::persistentvolume
