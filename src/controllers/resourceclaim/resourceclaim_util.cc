#include "controllers/resourceclaim/resourceclaim_util.h"

namespace kcm::controllers::resourceclaim {
namespace {

const char* kErrAPIUnsupported = "none of the supported fields are set";
const char* kErrClaimNotFound = "ResourceClaim not created yet";

}  // namespace

ClaimName Name(const Pod& pod, const PodResourceClaim& podClaim) {
  ClaimName out;
  if (podClaim.resourceClaimName) {
    out.name = podClaim.resourceClaimName;
    return out;
  }
  if (podClaim.resourceClaimTemplateName) {
    for (const auto& s : pod.status.resourceClaimStatuses)
      if (s.name == podClaim.name) {
        out.name = s.resourceClaimName;
        out.mustCheckOwner = true;
        return out;
      }
    out.claimNotFound = true;
    out.err = Status(StatusCode::kNotFound, "pod \"" + pod.metadata.namespace_ + "/" + pod.metadata.name + "\": " +
                                                kErrClaimNotFound);
    return out;
  }
  out.err = Status(StatusCode::kInvalidArgument, "pod \"" + pod.metadata.namespace_ + "/" + pod.metadata.name +
                                                     "\", spec.resourceClaim \"" + podClaim.name +
                                                     "\": " + kErrAPIUnsupported);
  return out;
}

Status IsForPod(const Pod& pod, const ResourceClaim& claim) {
  const auto& cm = claim.metadata;
  const auto& pm = pod.metadata;
  if (cm.namespace_ != pm.namespace_)
    return Status(StatusCode::kInvalidArgument, "ResourceClaim " + cm.namespace_ + "/" + cm.name +
                                                    " is not in the same namespace as Pod " + pm.namespace_ + "/" +
                                                    pm.name);
  for (const auto& r : cm.ownerReferences)
    if (r.controller.value_or(false)) {
      if (r.uid == pm.uid) return Status::Ok();
      break;
    }
  return Status(StatusCode::kInvalidArgument, "ResourceClaim " + cm.namespace_ + "/" + cm.name +
                                                  " was not created for Pod " + pm.namespace_ + "/" + pm.name +
                                                  " (Pod is not owner)");
}

bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim) {
  for (const auto& r : claim.status.reservedFor)
    if (r.uid == pod.metadata.uid) return true;
  return false;
}

Result<ResourceClaimConsumerReference> BindTo(const Pod& pod, const PodResourceClaim& podClaim) {
  if (!podClaim.resourceClaimName && !podClaim.resourceClaimTemplateName)
    return Status(StatusCode::kInvalidArgument, "Pod " + pod.metadata.namespace_ + "/" + pod.metadata.name +
                                                    " claim " + podClaim.name + ": " + kErrAPIUnsupported);
  ResourceClaimConsumerReference ref;
  ref.resource = "pods";
  ref.name = pod.metadata.name;
  ref.uid = pod.metadata.uid;
  return ref;
}

std::vector<std::pair<std::string, bool>> PodClaimsWithOwnerCheck(const Pod& pod) {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& pc : pod.spec.resourceClaims) {
    ClaimName n = Name(pod, pc);
    if (n.err.ok() && n.name) out.emplace_back(*n.name, n.mustCheckOwner);
  }
  if (const auto& ext = pod.status.extendedResourceClaimStatus; ext && !ext->resourceClaimName.empty())
    out.emplace_back(ext->resourceClaimName, true);
  return out;
}

std::vector<std::string> PodClaims(const Pod& pod) {
  std::vector<std::string> out;
  for (auto& [name, check] : PodClaimsWithOwnerCheck(pod)) out.push_back(std::move(name));
  return out;
}

}  // namespace kcm::controllers::resourceclaim
