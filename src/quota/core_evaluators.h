#pragma once
// The evaluators with special logic (pkg/quota/v1/evaluator/core): pods (compute requests and limits, hugepages,
// extended resources; scopes Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass,
// CrossNamespacePodAffinity), services (count, load balancers, node ports), persistentvolumeclaims (count and
// storage, per StorageClass; scope VolumeAttributesClass). ResourceClaims: quota/resource_claims.h.
// Also the quota controller's informer update filter (install.DefaultUpdateFilter) and the resources quota
// ignores (install.DefaultIgnoredResources).
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "client/typed_client.h"
#include "informers/shared_informer.h"
#include "quota/evaluator.h"

namespace kcm::quota {

// A namespace's objects from an informer's cache; until it has synced, upstream's protectedLister error
// ("<gvr> not yet synced"). Once synced it stays so (cachedHasSynced).
template <class T>
ListFuncByNamespace<T> cacheListFunc(informers::SharedInformer<T>& inf, std::string gvr) {
  auto synced = std::make_shared<std::atomic<bool>>(false);
  return [&inf, gvr = std::move(gvr), synced](const std::string& ns) -> Result<std::vector<std::shared_ptr<const T>>> {
    if (!synced->load()) {
      if (!inf.hasSynced()) return Status(StatusCode::kUnavailable, gvr + " not yet synced");
      synced->store(true);
    }
    std::vector<std::shared_ptr<const T>> out;
    for (auto& o : inf.store().byIndex(informers::kNamespaceIndex, ns)) out.push_back(std::move(o));
    return out;
  };
}

// Pods.
bool isTerminating(const api::core::v1::Pod& pod);
bool isBestEffort(const api::core::v1::Pod& pod);
// upstream QuotaV1Pod: the pod still counts (not terminal, not past its deletion grace period).
bool quotaV1Pod(const api::core::v1::Pod& pod, std::chrono::system_clock::time_point now);
bool usesCrossNamespacePodAffinity(const api::core::v1::Pod& pod);
// upstream resourcehelper.PodRequests / PodLimits with the options the quota evaluator uses (status resources
// for in-place resize, pod-level resources).
ResourceList podRequests(const api::core::v1::Pod& pod);
ResourceList podLimits(const api::core::v1::Pod& pod);
ResourceList podUsage(const api::core::v1::Pod& pod, std::chrono::system_clock::time_point now);
// DRA resource name prefixes shared with the ResourceClaim evaluator.
inline constexpr const char* kDeviceClassPrefix = "deviceclass.resource.kubernetes.io/";
inline constexpr const char* kImplicitExtendedClaimsPerClass = "requests.deviceclass.resource.kubernetes.io/";
// Resource names (pkg/apis/core/v1/helper, scheduler util): native (no domain, or kubernetes.io/), extended.
bool isNativeResource(const std::string& name);
bool isExtendedResourceNameForQuota(const std::string& name);
bool hasSuffix(const std::string& s, const std::string& suffix);
Result<bool> podMatchesScope(const ScopedResourceSelectorRequirement& req, const api::core::v1::Pod& pod);
std::shared_ptr<Evaluator> newPodEvaluator(ListFuncByNamespace<api::core::v1::Pod> list, Clock& clock = RealClock::get());

// Services.
ResourceList serviceUsage(const api::core::v1::Service& svc);
std::string getQuotaServiceType(const api::core::v1::Service& svc);
std::shared_ptr<Evaluator> newServiceEvaluator(ListFuncByNamespace<api::core::v1::Service> list);

// PersistentVolumeClaims.
ResourceList pvcUsage(const api::core::v1::PersistentVolumeClaim& pvc);
std::set<std::string> referencedVolumeAttributesClassNames(const api::core::v1::PersistentVolumeClaim& pvc);
std::shared_ptr<Evaluator> newPersistentVolumeClaimEvaluator(ListFuncByNamespace<api::core::v1::PersistentVolumeClaim> list);

// install.DefaultUpdateFilter: which updates may change usage, so the quota is recalculated at once.
bool podUpdateChangesQuota(const api::core::v1::Pod& oldPod, const api::core::v1::Pod& newPod, std::chrono::system_clock::time_point now);
bool serviceUpdateChangesQuota(const api::core::v1::Service& oldSvc, const api::core::v1::Service& newSvc);
bool pvcUpdateChangesQuota(const api::core::v1::PersistentVolumeClaim& oldPvc,
                           const api::core::v1::PersistentVolumeClaim& newPvc);

// upstream legacyObjectCountAliases: the core resources counted under their old names too. configmaps,
// replicationcontrollers and secrets are counted from their metadata informers; resourcequotas from the typed
// informer the controller watches quotas with (as upstream, whose lister is that informer's), so a new quota's own
// sync always counts it.
template <class Factory>
void addLegacyObjectCountEvaluators(Registry& reg, Factory& f) {
  for (const char* r : {"configmaps", "replicationcontrollers", "secrets"}) {
    client::GroupVersionResource gvr{"", "v1", r};
    reg.add(std::make_shared<ObjectCountEvaluator<api::meta::v1::PartialObjectMetadata>>(
        "", r, cacheListFunc(f.forMetadata(gvr), gvr.toString()), r));
  }
  reg.add(std::make_shared<ObjectCountEvaluator<api::core::v1::ResourceQuota>>(
      "", "resourcequotas", cacheListFunc(f.template forType<api::core::v1::ResourceQuota>(), "v1, Resource=resourcequotas"),
      "resourcequotas"));
}

// install.DefaultIgnoredResources, as group-resource strings.
const std::set<std::string>& defaultIgnoredResources();

}  // namespace kcm::quota
