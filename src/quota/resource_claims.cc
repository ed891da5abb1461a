#include "quota/resource_claims.h"

#include "quota/core_evaluators.h"

namespace kcm::quota {

using api::resource::v1::DeviceClass;
using api::resource::v1::ResourceClaim;

namespace {

constexpr const char* kClaimsPerClass = ".deviceclass.resource.k8s.io/devices";
constexpr const char* kExtendedResourceClaimAnnotation = "resource.kubernetes.io/extended-resource-claim";
constexpr int64_t kAllocationResultsMaxSize = 32;

int64_t requestedDevices(const std::string& mode, int64_t count) {
  if (mode == "ExactCount") return count;
  if (mode == "All") return kAllocationResultsMaxSize;
  return 0;
}

const api::meta::v1::OwnerReference* controllerOf(const api::meta::v1::ObjectMeta& m) {
  for (const auto& r : m.ownerReferences)
    if (r.controller && *r.controller) return &r;
  return nullptr;
}

// The pod (namespace/uid) a claim was made for by the scheduler, if it is such a claim.
std::optional<std::string> extendedResourceClaimPodOwner(const ResourceClaim& c) {
  auto a = c.metadata.annotations.find(kExtendedResourceClaimAnnotation);
  if (a == c.metadata.annotations.end() || a->second != "true") return std::nullopt;
  const auto* ref = controllerOf(c.metadata);
  if (!ref || ref->kind != "Pod" || ref->apiVersion != "v1") return std::nullopt;
  return c.metadata.namespace_ + "/" + ref->uid;
}

class ResourceClaimEvaluator final : public Evaluator {
 public:
  ResourceClaimEvaluator(ListFuncByNamespace<ResourceClaim> list, DeviceClassLookup classes, VerifiedPodUsageFunc pod)
      : list_(std::move(list)), classes_(std::move(classes)), podUsage_(std::move(pod)) {}
  std::string groupResource() const override { return "resourceclaims.resource.k8s.io"; }
  std::vector<ResourceName> matchingResources(const std::vector<ResourceName>& input) const override {
    std::vector<ResourceName> out;
    for (const auto& r : input) {
      if (r == "count/resourceclaims.resource.k8s.io" || hasSuffix(r, kClaimsPerClass)) {
        out.push_back(r);
        continue;
      }
      if (r.rfind(kImplicitExtendedClaimsPerClass, 0) == 0) {
        const std::string cls = r.substr(std::string(kImplicitExtendedClaimsPerClass).size());
        if (classes_.extendedResource && !classes_.extendedResource(cls).empty()) {
          out.push_back(r);
          continue;
        }
      }
      if (isExtendedResourceNameForQuota(r) && classes_.hasDeviceClass &&
          classes_.hasDeviceClass(r.substr(std::string("requests.").size())))
        out.push_back(r);
    }
    return out;
  }
  Result<ResourceList> usageStats(const UsageStatsOptions& o) const override {
    return calculateUsageStats<ResourceClaim>(o, list_, matchesNoScope<ResourceClaim>,
                                              [this](const ResourceClaim& c) -> Result<ResourceList> {
                                                std::optional<ResourceList> pod;
                                                if (podUsage_) pod = podUsage_(c);
                                                return resourceClaimUsage(c, classes_.extendedResource ? &classes_ : nullptr,
                                                                          pod ? &*pod : nullptr);
                                              });
  }

 private:
  ListFuncByNamespace<ResourceClaim> list_;
  DeviceClassLookup classes_;
  VerifiedPodUsageFunc podUsage_;
};

}  // namespace

DeviceClassLookup deviceClassLookup(informers::SharedInformer<DeviceClass>& inf) {
  DeviceClassLookup l;
  l.extendedResource = [&inf](const std::string& cls) -> std::string {
    auto c = inf.store().get(cls);
    return c && c->spec.extendedResourceName ? *c->spec.extendedResourceName : "";
  };
  l.hasDeviceClass = [&inf](const std::string& name) {
    if (name.rfind(kDeviceClassPrefix, 0) == 0 && inf.store().get(name.substr(std::string(kDeviceClassPrefix).size())))
      return true;
    for (const auto& c : inf.store().list())
      if (c->spec.extendedResourceName && *c->spec.extendedResourceName == name) return true;
    return false;
  };
  return l;
}

VerifiedPodUsageFunc verifiedPodUsageFunc(informers::SharedInformer<api::core::v1::Pod>& pods,
                                          informers::SharedInformer<ResourceClaim>& claims) {
  static constexpr const char* kIndex = "extendedResourceClaimPodUIDOwner";
  claims.store().addIndexer(kIndex, [](const ResourceClaim& c) {
    auto owner = extendedResourceClaimPodOwner(c);
    return owner ? std::vector<std::string>{*owner} : std::vector<std::string>{};
  });
  return [&pods, &claims](const ResourceClaim& claim) -> std::optional<ResourceList> {
    auto owner = extendedResourceClaimPodOwner(claim);
    if (!owner) return std::nullopt;
    const auto* ref = controllerOf(claim.metadata);
    auto pod = pods.store().get(claim.metadata.namespace_, ref->name);
    if (!pod || pod->metadata.uid != ref->uid) return std::nullopt;
    const auto& ext = pod->status.extendedResourceClaimStatus;
    if (ext && ext->resourceClaimName != claim.metadata.name) return std::nullopt;
    if (!ext) {
      // Until the pod names its claim, the oldest claim made for it (then the first by name) is the one.
      const auto mine = claim.metadata.creationTimestamp;
      for (const auto& other : claims.store().byIndex(kIndex, *owner)) {
        const auto t = other->metadata.creationTimestamp;
        if (t < mine || (t == mine && other->metadata.name < claim.metadata.name)) return std::nullopt;
      }
    }
    return podUsage(*pod, std::chrono::system_clock::now());
  };
}

ResourceList resourceClaimUsage(const ResourceClaim& claim, const DeviceClassLookup* classes,
                                const ResourceList* podUsage) {
  ResourceList r{{"count/resourceclaims.resource.k8s.io", Amount::ofInt(1)}};
  auto addDevices = [&](const std::string& key, const Amount& n) { r.emplace(key, Amount()).first->second.add(n); };
  for (const auto& req : claim.spec.devices.requests) {
    if (!req.firstAvailable.empty()) {
      // The most any alternative could take, per DeviceClass.
      std::map<std::string, Amount> most;
      for (const auto& sub : req.firstAvailable) {
        Amount q = Amount::ofInt(requestedDevices(sub.allocationMode, sub.count));
        auto& m = most.emplace(sub.deviceClassName + kClaimsPerClass, Amount()).first->second;
        if (q.cmp(m) > 0) m = q;
      }
      for (const auto& [key, q] : most) addDevices(key, q);
    } else if (req.exactly) {
      addDevices(req.exactly->deviceClassName + kClaimsPerClass,
                 Amount::ofInt(requestedDevices(req.exactly->allocationMode, req.exactly->count)));
    }
  }
  // addExtendedResourceQuota: each class's devices as its extended resources, less what the pod counts.
  ResourceList extended;
  for (const auto& [k, v] : r) {
    if (!hasSuffix(k, kClaimsPerClass)) continue;
    const std::string cls = k.substr(0, k.size() - std::string(kClaimsPerClass).size());
    if (cls.empty()) continue;
    extended[kImplicitExtendedClaimsPerClass + cls] = v;
    if (classes)
      if (std::string ern = classes->extendedResource(cls); !ern.empty()) extended["requests." + ern] = v;
  }
  for (auto& [k, v] : extended) {
    if (podUsage)
      if (auto it = podUsage->find(k); it != podUsage->end()) v.sub(it->second);
    if (v.cmp(Amount::zero()) > 0) r[k] = v;
  }
  return r;
}

std::shared_ptr<Evaluator> newResourceClaimEvaluator(ListFuncByNamespace<ResourceClaim> list, DeviceClassLookup classes,
                                                     VerifiedPodUsageFunc podUsage) {
  return std::make_shared<ResourceClaimEvaluator>(std::move(list), std::move(classes), std::move(podUsage));
}

}  // namespace kcm::quota
