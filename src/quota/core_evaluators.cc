#include "quota/core_evaluators.h"

#include <algorithm>
#include <chrono>

namespace kcm::quota {

using api::core::v1::Container;
using api::core::v1::ContainerStatus;
using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;
using api::core::v1::Service;

namespace {

constexpr const char* kRequestsPrefix = "requests.";
constexpr const char* kHugePagesPrefix = "hugepages-";
constexpr const char* kRequestsHugePagesPrefix = "requests.hugepages-";
constexpr const char* kStorageClassSuffix = ".storageclass.storage.k8s.io/";

bool hasPrefix(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

}  // namespace

// --- resource names (pkg/apis/core/v1/helper) ---

bool isNativeResource(const std::string& name) {
  return name.find('/') == std::string::npos || name.find("kubernetes.io/") != std::string::npos;
}

bool isDNS1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63) return false;
    for (size_t i = 0; i < label.size(); ++i) {
      char c = label[i];
      bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (!alnum && !(c == '-' && i > 0 && i + 1 < label.size())) return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// validation.IsQualifiedName: [prefix/]name, name 1..63 of [A-Za-z0-9] with [-_.] inside.
bool isQualifiedName(std::string_view s) {
  std::string_view name = s;
  if (auto slash = s.find('/'); slash != std::string_view::npos) {
    if (s.find('/', slash + 1) != std::string_view::npos || !isDNS1123Subdomain(s.substr(0, slash))) return false;
    name = s.substr(slash + 1);
  }
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (alnum(c)) continue;
    if ((c == '-' || c == '_' || c == '.') && i > 0 && i + 1 < name.size()) continue;
    return false;
  }
  return true;
}

bool isExtendedResourceName(const std::string& name) {
  if (isNativeResource(name) || hasPrefix(name, kRequestsPrefix)) return false;
  return isQualifiedName(kRequestsPrefix + name);
}

bool isDRAExtendedResourceName(const std::string& name) {
  return isExtendedResourceName(name) || hasPrefix(name, kDeviceClassPrefix);
}

bool isExtendedResourceNameForQuota(const std::string& name) {
  const bool nonNative = !isNativeResource(name);
  const bool implicitExtended = hasPrefix(name, kImplicitExtendedClaimsPerClass);
  return (nonNative || implicitExtended) && hasPrefix(name, kRequestsPrefix);
}

bool hasSuffix(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

namespace {

// --- pod resources (k8s.io/component-helpers/resource) ---

void addResourceList(ResourceList& list, const ResourceList& more) {
  for (const auto& [k, v] : more) {
    auto [it, inserted] = list.emplace(k, v);
    if (!inserted) it->second.add(v);
  }
}

void maxResourceList(ResourceList& list, const ResourceList& other) {
  for (const auto& [k, v] : other) {
    auto it = list.find(k);
    if (it == list.end()) list.emplace(k, v);
    else if (v.cmp(it->second) > 0) it->second = v;
  }
}

ResourceList maxOf(const ResourceList& a, std::initializer_list<const ResourceList*> rest) {
  ResourceList out = a;
  for (const auto* r : rest) maxResourceList(out, *r);
  return out;
}

const ContainerStatus* findContainerStatus(const Pod& pod, const std::string& name) {
  for (const auto& s : pod.status.containerStatuses)
    if (s.name == name) return &s;
  for (const auto& s : pod.status.initContainerStatuses)
    if (s.name == name) return &s;
  return nullptr;
}

bool isPodResizeInfeasible(const Pod& pod) {
  for (const auto& c : pod.status.conditions)
    if (c.type == "PodResizePending") return c.reason == "Infeasible";
  return false;
}

bool isSupportedPodLevelResource(const std::string& name) {
  return name == "cpu" || name == "memory" || hasPrefix(name, kHugePagesPrefix);
}

bool anySupported(const api::StringMap<api::Quantity>& m) {
  return std::any_of(m.begin(), m.end(), [](const auto& kv) { return isSupportedPodLevelResource(kv.first); });
}
bool isPodLevelResourcesSet(const Pod& pod) {
  return pod.spec.resources && (anySupported(pod.spec.resources->requests) || anySupported(pod.spec.resources->limits));
}
bool isPodLevelRequestsSet(const Pod& pod) {
  return pod.spec.resources && anySupported(pod.spec.resources->requests);
}

void applyPodLevelResources(ResourceList& result, const api::StringMap<api::Quantity>& effective) {
  for (const auto& [k, v] : effective)
    if (isSupportedPodLevelResource(k)) result[k] = Amount::of(v);
}

// Which list of a container counts: the spec's, or what the kubelet allocated / actuated (in-place resize).
enum class Source { kSpecRequests, kAllocatedRequests, kActuatedRequests, kSpecLimits, kActuatedLimits };

const api::StringMap<api::Quantity>* containerResources(const Container& c, const ContainerStatus* cs,
                                                         bool infeasible, Source src) {
  const bool hasAllocated = cs && !cs->allocatedResources.empty();
  switch (src) {
    case Source::kSpecRequests:
      return &c.resources.requests;
    case Source::kAllocatedRequests:
      if (hasAllocated) return &cs->allocatedResources;
      return infeasible ? nullptr : &c.resources.requests;
    case Source::kActuatedRequests:
      if (cs && cs->resources && !cs->resources->requests.empty()) return &cs->resources->requests;
      if (hasAllocated) return &cs->allocatedResources;
      return infeasible ? nullptr : &c.resources.requests;
    case Source::kSpecLimits:
      return &c.resources.limits;
    case Source::kActuatedLimits:
      if (cs && cs->resources && !cs->resources->limits.empty()) return &cs->resources->limits;
      return infeasible ? nullptr : &c.resources.limits;
  }
  return nullptr;
}

// upstream aggregateContainerResourcesByFn: containers summed; init containers as the max of each one's need,
// with restartable (sidecar) init containers adding up and running alongside.
ResourceList aggregateContainerResources(const Pod& pod, Source src) {
  const bool infeasible = isPodResizeInfeasible(pod);
  auto get = [&](const Container& c) {
    const auto* m = containerResources(c, findContainerStatus(pod, c.name), infeasible, src);
    return m ? toResourceList(*m) : ResourceList{};
  };
  ResourceList result;
  for (const auto& c : pod.spec.containers) addResourceList(result, get(c));
  ResourceList restartable, initMax;
  for (const auto& c : pod.spec.initContainers) {
    ResourceList own = get(c);
    if (c.restartPolicy && *c.restartPolicy == "Always") {
      addResourceList(result, own);
      addResourceList(restartable, own);
      maxResourceList(initMax, restartable);
    } else {
      ResourceList combined;
      addResourceList(combined, own);
      addResourceList(combined, restartable);
      maxResourceList(initMax, combined);
    }
  }
  maxResourceList(result, initMax);
  return result;
}

// upstream podComputeUsageHelper.
ResourceList podComputeUsageHelper(const ResourceList& requests, const ResourceList& limits) {
  ResourceList out;
  out["pods"] = Amount::ofInt(1);
  auto copy = [&](const ResourceList& from, const char* name, std::initializer_list<const char*> to) {
    auto it = from.find(name);
    if (it == from.end()) return;
    for (const char* t : to) out[t] = it->second;
  };
  copy(requests, "cpu", {"cpu", "requests.cpu"});
  copy(limits, "cpu", {"limits.cpu"});
  copy(requests, "memory", {"memory", "requests.memory"});
  copy(limits, "memory", {"limits.memory"});
  copy(requests, "ephemeral-storage", {"ephemeral-storage", "requests.ephemeral-storage"});
  copy(limits, "ephemeral-storage", {"limits.ephemeral-storage"});
  for (const auto& [k, v] : requests) {
    if (hasPrefix(k, kHugePagesPrefix)) {
      out[k] = v;
      out[kRequestsPrefix + k] = v;
    }
    if (isDRAExtendedResourceName(k)) out[kRequestsPrefix + k] = v;
  }
  return out;
}

const std::vector<ResourceName>& podResources() {
  static const std::vector<ResourceName> r = {
      "count/pods",      "cpu",         "memory",          "ephemeral-storage", "requests.cpu",
      "requests.memory", "requests.ephemeral-storage",     "limits.cpu",        "limits.memory",
      "limits.ephemeral-storage",       "pods"};
  return r;
}

bool crossNamespaceTerm(const api::core::v1::PodAffinityTerm& t) {
  return !t.namespaces.empty() || static_cast<bool>(t.namespaceSelector);
}

template <class A>
bool crossNamespaceAffinity(const A& a) {
  for (const auto& t : a.requiredDuringSchedulingIgnoredDuringExecution)
    if (crossNamespaceTerm(t)) return true;
  for (const auto& w : a.preferredDuringSchedulingIgnoredDuringExecution)
    if (crossNamespaceTerm(w.podAffinityTerm)) return true;
  return false;
}

// requirementsQOS over cpu and memory.
std::string requirementsQOS(const api::core::v1::ResourceRequirements& r) {
  if (r.requests.empty() && r.limits.empty()) return "BestEffort";
  std::string qos;
  for (const char* res : {"cpu", "memory"}) {
    auto req = r.requests.find(res), lim = r.limits.find(res);
    Amount a = req != r.requests.end() ? Amount::of(req->second) : Amount::zero();
    Amount b = lim != r.limits.end() ? Amount::of(lim->second) : Amount::zero();
    std::string q = a.cmp(b) != 0 ? "Burstable" : a.isZero() ? "BestEffort" : "Guaranteed";
    if (q == "Burstable") return q;
    if (qos.empty()) qos = q;
    else if (qos != q) return "Burstable";
  }
  return qos;
}

class PodEvaluator final : public Evaluator {
 public:
  PodEvaluator(ListFuncByNamespace<Pod> list, Clock& clock) : list_(std::move(list)), clock_(clock) {}
  std::string groupResource() const override { return "pods"; }
  std::vector<ResourceName> matchingResources(const std::vector<ResourceName>& input) const override {
    auto out = intersection(input, podResources());
    for (const auto& r : input) {
      if (containsPrefix({kHugePagesPrefix, kRequestsHugePagesPrefix}, r)) out.push_back(r);
      if (isExtendedResourceNameForQuota(r)) out.push_back(r);
    }
    return out;
  }
  Result<ResourceList> usageStats(const UsageStatsOptions& o) const override {
    const auto now = clock_.wallNow();
    return calculateUsageStats<Pod>(o, list_, podMatchesScope,
                                    [now](const Pod& p) -> Result<ResourceList> { return podUsage(p, now); });
  }

 private:
  ListFuncByNamespace<Pod> list_;
  Clock& clock_;
};

const std::vector<ResourceName>& serviceResources() {
  static const std::vector<ResourceName> r = {"count/services", "services", "services.nodeports",
                                              "services.loadbalancers"};
  return r;
}

class ServiceEvaluator final : public Evaluator {
 public:
  explicit ServiceEvaluator(ListFuncByNamespace<Service> list) : list_(std::move(list)) {}
  std::string groupResource() const override { return "services"; }
  std::vector<ResourceName> matchingResources(const std::vector<ResourceName>& input) const override {
    return intersection(input, serviceResources());
  }
  Result<ResourceList> usageStats(const UsageStatsOptions& o) const override {
    return calculateUsageStats<Service>(o, list_, matchesNoScope<Service>,
                                        [](const Service& s) -> Result<ResourceList> { return serviceUsage(s); });
  }

 private:
  ListFuncByNamespace<Service> list_;
};

std::string persistentVolumeClaimClass(const PersistentVolumeClaim& pvc) {
  if (auto it = pvc.metadata.annotations.find("volume.beta.kubernetes.io/storage-class");
      it != pvc.metadata.annotations.end())
    return it->second;
  return pvc.spec.storageClassName.value_or("");
}

Result<bool> pvcMatchesScope(const ScopedResourceSelectorRequirement& req, const PersistentVolumeClaim& pvc) {
  if (req.scopeName != "VolumeAttributesClass") return false;
  const auto names = referencedVolumeAttributesClassNames(pvc);
  if (req.operator_ == "Exists") return !names.empty();
  if (names.empty()) return scopeSelectorMatches(req, "");
  for (const auto& n : names) {
    auto m = scopeSelectorMatches(req, n);
    if (!m.ok()) return m.status();
    if (*m) return true;
  }
  return false;
}

class PersistentVolumeClaimEvaluator final : public Evaluator {
 public:
  explicit PersistentVolumeClaimEvaluator(ListFuncByNamespace<PersistentVolumeClaim> list) : list_(std::move(list)) {}
  std::string groupResource() const override { return "persistentvolumeclaims"; }
  std::vector<ResourceName> matchingResources(const std::vector<ResourceName>& input) const override {
    static const std::string byClassCount = ".storageclass.storage.k8s.io/persistentvolumeclaims",
                             byClassStorage = ".storageclass.storage.k8s.io/requests.storage";
    std::vector<ResourceName> out;
    for (const auto& r : input) {
      if (r == "count/persistentvolumeclaims" || r == "persistentvolumeclaims" || r == "requests.storage" ||
          hasSuffix(r, byClassCount) || hasSuffix(r, byClassStorage))
        out.push_back(r);
    }
    return out;
  }
  Result<ResourceList> usageStats(const UsageStatsOptions& o) const override {
    return calculateUsageStats<PersistentVolumeClaim>(
        o, list_, pvcMatchesScope, [](const PersistentVolumeClaim& p) -> Result<ResourceList> { return pvcUsage(p); });
  }

 private:
  ListFuncByNamespace<PersistentVolumeClaim> list_;
};


}  // namespace

bool isTerminating(const Pod& pod) {
  return pod.spec.activeDeadlineSeconds && *pod.spec.activeDeadlineSeconds >= 0;
}

bool isBestEffort(const Pod& pod) {
  if (!pod.status.qosClass.empty()) return pod.status.qosClass == "BestEffort";
  if (pod.spec.resources && isPodLevelResourcesSet(pod)) return requirementsQOS(*pod.spec.resources) == "BestEffort";
  // ComputePodQOS: any Burstable container, or two that differ, make the pod Burstable.
  std::string qos;
  auto same = [&](const Container& c) {
    const std::string q = requirementsQOS(c.resources);
    if (q == "Burstable") return false;
    if (qos.empty()) qos = q;
    return qos == q;
  };
  for (const auto& c : pod.spec.initContainers)
    if (!same(c)) return false;
  for (const auto& c : pod.spec.containers)
    if (!same(c)) return false;
  return qos.empty() || qos == "BestEffort";
}

bool quotaV1Pod(const Pod& pod, std::chrono::system_clock::time_point now) {
  if (pod.status.phase == "Failed" || pod.status.phase == "Succeeded") return false;
  const auto& m = pod.metadata;
  if (m.deletionTimestamp && m.deletionGracePeriodSeconds) {
    const auto deletion = std::chrono::system_clock::time_point(std::chrono::seconds(m.deletionTimestamp->unixSeconds));
    const auto grace = std::chrono::seconds(*m.deletionGracePeriodSeconds);
    if (now > deletion + grace) return false;
  }
  return true;
}

bool usesCrossNamespacePodAffinity(const Pod& pod) {
  if (!pod.spec.affinity) return false;
  const auto& a = *pod.spec.affinity;
  if (a.podAffinity && crossNamespaceAffinity(*a.podAffinity)) return true;
  if (a.podAntiAffinity && crossNamespaceAffinity(*a.podAntiAffinity)) return true;
  return false;
}

ResourceList podRequests(const Pod& pod) {
  const ResourceList spec = aggregateContainerResources(pod, Source::kSpecRequests);
  const ResourceList allocated = aggregateContainerResources(pod, Source::kAllocatedRequests);
  const ResourceList actuated = aggregateContainerResources(pod, Source::kActuatedRequests);
  ResourceList reqs = isPodResizeInfeasible(pod) ? maxOf(actuated, {&allocated}) : maxOf(spec, {&actuated, &allocated});
  if (isPodLevelRequestsSet(pod)) applyPodLevelResources(reqs, pod.spec.resources->requests);
  addResourceList(reqs, toResourceList(pod.spec.overhead));
  return reqs;
}

ResourceList podLimits(const Pod& pod) {
  const ResourceList spec = aggregateContainerResources(pod, Source::kSpecLimits);
  const ResourceList actuated = aggregateContainerResources(pod, Source::kActuatedLimits);
  ResourceList limits = isPodResizeInfeasible(pod) ? actuated : maxOf(spec, {&actuated});
  if (isPodLevelResourcesSet(pod)) applyPodLevelResources(limits, pod.spec.resources->limits);
  for (const auto& [k, v] : pod.spec.overhead) {
    auto it = limits.find(k);
    if (it != limits.end() && !it->second.isZero()) it->second.add(Amount::of(v));
  }
  return limits;
}

ResourceList podUsage(const Pod& pod, std::chrono::system_clock::time_point now) {
  ResourceList result{{"count/pods", Amount::ofInt(1)}};
  if (!quotaV1Pod(pod, now)) return result;
  return add(result, podComputeUsageHelper(podRequests(pod), podLimits(pod)));
}

Result<bool> podMatchesScope(const ScopedResourceSelectorRequirement& req, const Pod& pod) {
  const std::string& s = req.scopeName;
  if (s == "Terminating") return isTerminating(pod);
  if (s == "NotTerminating") return !isTerminating(pod);
  if (s == "BestEffort") return isBestEffort(pod);
  if (s == "NotBestEffort") return !isBestEffort(pod);
  if (s == "PriorityClass") {
    if (req.operator_ == "Exists") return !pod.spec.priorityClassName.empty();
    return scopeSelectorMatches(req, pod.spec.priorityClassName);
  }
  if (s == "CrossNamespacePodAffinity") return usesCrossNamespacePodAffinity(pod);
  return false;
}

std::shared_ptr<Evaluator> newPodEvaluator(ListFuncByNamespace<Pod> list, Clock& clock) {
  return std::make_shared<PodEvaluator>(std::move(list), clock);
}

ResourceList serviceUsage(const Service& svc) {
  const int64_t ports = static_cast<int64_t>(svc.spec.ports.size());
  ResourceList r{{"count/services", Amount::ofInt(1)},
                 {"services", Amount::ofInt(1)},
                 {"services.loadbalancers", Amount::zero()},
                 {"services.nodeports", Amount::zero()}};
  if (svc.spec.type == "NodePort") {
    r["services.nodeports"] = Amount::ofInt(ports);
  } else if (svc.spec.type == "LoadBalancer") {
    if (svc.spec.allocateLoadBalancerNodePorts && !*svc.spec.allocateLoadBalancerNodePorts) {
      const auto withNodePorts = std::count_if(svc.spec.ports.begin(), svc.spec.ports.end(),
                                               [](const auto& p) { return p.nodePort != 0; });
      r["services.nodeports"] = Amount::ofInt(static_cast<int64_t>(withNodePorts));
    } else {
      r["services.nodeports"] = Amount::ofInt(ports);
    }
    r["services.loadbalancers"] = Amount::ofInt(1);
  }
  return r;
}

std::string getQuotaServiceType(const Service& svc) {
  return svc.spec.type == "NodePort" || svc.spec.type == "LoadBalancer" ? svc.spec.type : "";
}

std::shared_ptr<Evaluator> newServiceEvaluator(ListFuncByNamespace<Service> list) {
  return std::make_shared<ServiceEvaluator>(std::move(list));
}

std::set<std::string> referencedVolumeAttributesClassNames(const PersistentVolumeClaim& pvc) {
  std::set<std::string> names;
  if (pvc.spec.volumeAttributesClassName && !pvc.spec.volumeAttributesClassName->empty())
    names.insert(*pvc.spec.volumeAttributesClassName);
  if (pvc.status.currentVolumeAttributesClassName && !pvc.status.currentVolumeAttributesClassName->empty())
    names.insert(*pvc.status.currentVolumeAttributesClassName);
  if (pvc.status.modifyVolumeStatus && !pvc.status.modifyVolumeStatus->targetVolumeAttributesClassName.empty())
    names.insert(pvc.status.modifyVolumeStatus->targetVolumeAttributesClassName);
  return names;
}

ResourceList pvcUsage(const PersistentVolumeClaim& pvc) {
  ResourceList r{{"persistentvolumeclaims", Amount::ofInt(1)}, {"count/persistentvolumeclaims", Amount::ofInt(1)}};
  const std::string cls = persistentVolumeClaimClass(pvc);
  if (!cls.empty()) r[cls + kStorageClassSuffix + "persistentvolumeclaims"] = Amount::ofInt(1);
  // getStorageUsage: the request rounded up to a whole byte; the allocated size when larger
  // (RecoverVolumeExpansionFailure, on at the pin).
  auto req = pvc.spec.resources.requests.find("storage");
  if (req == pvc.spec.resources.requests.end()) return r;
  Amount storage = Amount::of(req->second);
  storage.roundUpToInteger();
  if (auto alloc = pvc.status.allocatedResources.find("storage"); alloc != pvc.status.allocatedResources.end()) {
    Amount allocated = Amount::of(alloc->second);
    if (allocated.cmp(storage) > 0) {
      allocated.roundUpToInteger();
      storage = allocated;
    }
  }
  r["requests.storage"] = storage;
  if (!cls.empty()) r[cls + kStorageClassSuffix + "requests.storage"] = storage;
  return r;
}

std::shared_ptr<Evaluator> newPersistentVolumeClaimEvaluator(ListFuncByNamespace<PersistentVolumeClaim> list) {
  return std::make_shared<PersistentVolumeClaimEvaluator>(std::move(list));
}


bool podUpdateChangesQuota(const Pod& oldPod, const Pod& newPod, std::chrono::system_clock::time_point now) {
  // InPlacePodVerticalScaling (locked on): a container's actual resources changed.
  auto resourcesChanged = [](const std::vector<ContainerStatus>& olds, const std::vector<ContainerStatus>& news) {
    for (const auto& o : olds)
      for (const auto& n : news)
        if (n.name == o.name) {
          const bool a = static_cast<bool>(o.resources), b = static_cast<bool>(n.resources);
          if (a != b) return true;
          if (a && (!equals(toResourceList(o.resources->requests), toResourceList(n.resources->requests)) ||
                    !equals(toResourceList(o.resources->limits), toResourceList(n.resources->limits))))
            return true;
          break;
        }
    return false;
  };
  if (resourcesChanged(oldPod.status.containerStatuses, newPod.status.containerStatuses) ||
      resourcesChanged(oldPod.status.initContainerStatuses, newPod.status.initContainerStatuses))
    return true;
  if (isTerminating(oldPod) != isTerminating(newPod)) return true;
  return quotaV1Pod(oldPod, now) && !quotaV1Pod(newPod, now);
}

bool serviceUpdateChangesQuota(const Service& oldSvc, const Service& newSvc) {
  return getQuotaServiceType(oldSvc) != getQuotaServiceType(newSvc);
}

bool pvcUpdateChangesQuota(const PersistentVolumeClaim&, const PersistentVolumeClaim&) {
  // RecoverVolumeExpansionFailure is locked on at the pin, and upstream's check compares two freshly taken
  // pointers (Status.AllocatedResources.Storage()), which always differ: every PVC update replenishes.
  return true;
}

const std::set<std::string>& defaultIgnoredResources() {
  static const std::set<std::string> ignored = {
      "bindings",
      "componentstatuses",
      "tokenreviews.authentication.k8s.io",
      "selfsubjectreviews.authentication.k8s.io",
      "subjectaccessreviews.authorization.k8s.io",
      "selfsubjectaccessreviews.authorization.k8s.io",
      "localsubjectaccessreviews.authorization.k8s.io",
      "selfsubjectrulesreviews.authorization.k8s.io",
      "events",
      "events.events.k8s.io",
  };
  return ignored;
}

}  // namespace kcm::quota
