#pragma once
// Quota evaluators (k8s.io/apiserver/pkg/quota/v1 interfaces.go and generic/): an evaluator knows which quota
// resource names it answers for (MatchingResources) and computes a namespace's usage of them from an informer
// cache (UsageStats), honouring the quota's scopes and scope selector. The registry holds one per
// group-resource; the quota controller adds object-count evaluators for resources found by discovery.
// CalculateUsage sums every evaluator's part for one quota. Thread-safe: evaluators only read caches.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/status.h"
#include "quota/resources.h"

namespace kcm::quota {

using api::core::v1::ScopedResourceSelectorRequirement;

struct UsageStatsOptions {
  std::string namespace_;
  std::vector<std::string> scopes;
  std::vector<ResourceName> resources;
  const api::core::v1::ScopeSelector* scopeSelector = nullptr;  // null: none
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // schema.GroupResource.String(): "pods", "deployments.apps".
  virtual std::string groupResource() const = 0;
  virtual std::vector<ResourceName> matchingResources(const std::vector<ResourceName>& input) const = 0;
  // The usage of options.resources in the namespace; every one of them present (zero when nothing counts).
  virtual Result<ResourceList> usageStats(const UsageStatsOptions& options) const = 0;
};

// upstream ObjectCountQuotaResourceNameFor: "count/<resource>" or "count/<resource>.<group>".
ResourceName objectCountQuotaResourceNameFor(const std::string& group, const std::string& resource);
// schema.GroupResource.String().
inline std::string groupResourceString(const std::string& group, const std::string& resource) {
  return group.empty() ? resource : resource + "." + group;
}

// A namespace's objects from a cache, or the "not yet synced" error upstream's protected lister gives.
template <class T>
using ListFuncByNamespace = std::function<Result<std::vector<std::shared_ptr<const T>>>(const std::string& ns)>;
template <class T>
using MatchesScopeFunc = std::function<Result<bool>(const ScopedResourceSelectorRequirement&, const T&)>;
template <class T>
using UsageFunc = std::function<Result<ResourceList>(const T&)>;

// upstream generic.CalculateUsageStats: every requested resource starts at zero (DecimalSI); objects matching
// all scopes and scope-selector requirements add their usage. As upstream, a scope that cannot be evaluated
// ends the count there without an error.
template <class T>
Result<ResourceList> calculateUsageStats(const UsageStatsOptions& options, const ListFuncByNamespace<T>& list,
                                         const MatchesScopeFunc<T>& scopeFunc, const UsageFunc<T>& usageFunc) {
  ResourceList used;
  for (const auto& r : options.resources) used[r] = Amount::zero();
  auto items = list(options.namespace_);
  if (!items.ok()) return Status(items.status().code(), "failed to list content: " + items.status().message());
  for (const auto& item : *items) {
    bool matches = true;
    for (const auto& scope : options.scopes) {
      ScopedResourceSelectorRequirement req;
      req.scopeName = scope;
      req.operator_ = "Exists";
      auto m = scopeFunc(req, *item);
      if (!m.ok()) return used;
      if (!*m) matches = false;
    }
    if (options.scopeSelector) {
      for (const auto& req : options.scopeSelector->matchExpressions) {
        auto m = scopeFunc(req, *item);
        if (!m.ok()) return used;
        matches = matches && *m;
      }
    }
    if (!matches) continue;
    auto usage = usageFunc(*item);
    if (!usage.ok()) return usage.status();
    used = add(used, *usage);
  }
  return used;
}

template <class T>
Result<bool> matchesNoScope(const ScopedResourceSelectorRequirement&, const T&) {
  return false;
}

// upstream helper.ScopedResourceSelectorRequirementsAsSelector + Matches on {scopeName: value} (no labels when
// value is empty): In, NotIn, Exists, DoesNotExist.
Result<bool> scopeSelectorMatches(const ScopedResourceSelectorRequirement& req, const std::string& value);

// The generic evaluator for any resource: one per object ("count/<resource>[.<group>]", and the legacy alias
// when given, e.g. "configmaps").
template <class T>
class ObjectCountEvaluator final : public Evaluator {
 public:
  ObjectCountEvaluator(std::string group, std::string resource, ListFuncByNamespace<T> list, ResourceName alias = "")
      : gr_(groupResourceString(group, resource)), names_{objectCountQuotaResourceNameFor(group, resource)},
        list_(std::move(list)) {
    if (!alias.empty()) names_.push_back(std::move(alias));
  }
  std::string groupResource() const override { return gr_; }
  std::vector<ResourceName> matchingResources(const std::vector<ResourceName>& input) const override {
    return intersection(input, names_);
  }
  Result<ResourceList> usageStats(const UsageStatsOptions& options) const override {
    ResourceList one;
    for (const auto& n : names_) one[n] = Amount::ofInt(1);
    return calculateUsageStats<T>(options, list_, matchesNoScope<T>, [one](const T&) -> Result<ResourceList> { return one; });
  }

 private:
  std::string gr_;
  std::vector<ResourceName> names_;
  ListFuncByNamespace<T> list_;
};

class Registry {
 public:
  void add(std::shared_ptr<Evaluator> e);
  std::shared_ptr<Evaluator> get(const std::string& groupResource) const;
  std::vector<std::shared_ptr<Evaluator>> list() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Evaluator>> evaluators_;
};

// upstream quota.CalculateUsage: the usage of every hard resource some evaluator can compute. An evaluator that
// fails leaves its resources out (and its error is returned) while the others' usage is still given.
struct Usage {
  ResourceList used;
  Status error;
};
Usage calculateUsage(const std::string& ns, const std::vector<std::string>& scopes, const ResourceList& hard,
                     const Registry& registry, const api::core::v1::ScopeSelector* scopeSelector);

}  // namespace kcm::quota
