#pragma once
// The ResourceClaim evaluator (pkg/quota/v1/evaluator/core/resource_claims.go): count/resourceclaims.resource.k8s.io,
// "<class>.deviceclass.resource.k8s.io/devices" per DeviceClass (the largest alternative of a firstAvailable
// request; allocation mode All counts 32), and with DRAExtendedResource (locked on at the pin) the same devices as
// extended resources: "requests.deviceclass.resource.kubernetes.io/<class>" and, for a class with
// spec.extendedResourceName, "requests.<that name>" — less what the pod the scheduler made the claim for
// already counts. The DeviceClass lookups are upstream's ExtendedResourceCache read from the DeviceClass cache.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/gen/core_v1.h"
#include "api/gen/resource_v1.h"
#include "informers/shared_informer.h"
#include "quota/evaluator.h"

namespace kcm::quota {

// upstream ExtendedResourceCache: the extended resource a class declares ("" none), and whether a resource name
// maps to a class (its declared name, the oldest class winning, or "deviceclass.resource.kubernetes.io/<class>").
struct DeviceClassLookup {
  std::function<std::string(const std::string& className)> extendedResource;
  std::function<bool(const std::string& resourceName)> hasDeviceClass;
};
DeviceClassLookup deviceClassLookup(informers::SharedInformer<api::resource::v1::DeviceClass>& classes);

// upstream getVerifiedPodUsage: the usage of the pod a claim was made for (annotation
// resource.kubernetes.io/extended-resource-claim "true", controlled by that pod, its oldest such claim), or nullopt.
using VerifiedPodUsageFunc = std::function<std::optional<ResourceList>(const api::resource::v1::ResourceClaim&)>;
VerifiedPodUsageFunc verifiedPodUsageFunc(informers::SharedInformer<api::core::v1::Pod>& pods,
                                          informers::SharedInformer<api::resource::v1::ResourceClaim>& claims);

// A claim's usage; `classes` null: no class declares an extended resource; `podUsage` null: none to subtract.
ResourceList resourceClaimUsage(const api::resource::v1::ResourceClaim& claim, const DeviceClassLookup* classes = nullptr,
                                const ResourceList* podUsage = nullptr);
std::shared_ptr<Evaluator> newResourceClaimEvaluator(ListFuncByNamespace<api::resource::v1::ResourceClaim> list,
                                                     DeviceClassLookup classes = {},
                                                     VerifiedPodUsageFunc podUsage = {});

}  // namespace kcm::quota
