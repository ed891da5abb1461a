#pragma once
// The pod side of k8s.io/dynamic-resource-allocation/resourceclaim (at the pin): which ResourceClaim a pod's
// spec.resourceClaims entry names (Name), whether a claim belongs to / is reserved for a pod (IsForPod,
// IsReservedForPod), whom to reserve it for (BindTo) and every claim a pod uses (PodClaims). PodGroup ownership
// (DRAWorkloadResourceClaims, alpha) is not implemented: a pod is always its own consumer here.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/gen/core_v1.h"
#include "api/gen/resource_v1.h"
#include "base/status.h"

namespace kcm::controllers::resourceclaim {

using api::core::v1::Pod;
using api::core::v1::PodResourceClaim;
using api::resource::v1::ResourceClaim;
using api::resource::v1::ResourceClaimConsumerReference;

// resourceapi.PodResourceClaimAnnotation, resourceapi.Finalizer.
inline constexpr const char* kPodResourceClaimAnnotation = "resource.kubernetes.io/pod-claim-name";
inline constexpr const char* kExtendedResourceClaimAnnotation = "resource.kubernetes.io/extended-resource-claim";
inline constexpr const char* kFinalizer = "resource.kubernetes.io/delete-protection";

// Name's answer. claimNotFound is upstream's ErrClaimNotFound (a template's claim not recorded in the pod status
// yet); err any other failure (ErrAPIUnsupported: neither source set). name unset: no claim is needed.
struct ClaimName {
  Status err;
  bool claimNotFound = false;
  std::optional<std::string> name;
  bool mustCheckOwner = false;
};
ClaimName Name(const Pod& pod, const PodResourceClaim& podClaim);

// IsForPod: the claim is in the pod's namespace and controlled by it.
Status IsForPod(const Pod& pod, const ResourceClaim& claim);
// IsReservedForPod: the pod's UID is among claim.status.reservedFor.
bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim);
// CanBeReserved: no limit on consumers at the pin.
inline bool CanBeReserved(const ResourceClaim&) { return true; }
// BindTo: the consumer reference for the pod ("" group, "pods").
Result<ResourceClaimConsumerReference> BindTo(const Pod& pod, const PodResourceClaim& podClaim);
// PodClaims: the names of every claim the pod uses (its resolvable spec.resourceClaims, then the extended
// resource claim of its status).
std::vector<std::string> PodClaims(const Pod& pod);
// The same with each claim's mustCheckOwner (a claim from a template, and the extended resource claim).
std::vector<std::pair<std::string, bool>> PodClaimsWithOwnerCheck(const Pod& pod);

}  // namespace kcm::controllers::resourceclaim
