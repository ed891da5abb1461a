#include "quota/evaluator.h"

#include <algorithm>

#include "api/support/labels.h"

namespace kcm::quota {

ResourceName objectCountQuotaResourceNameFor(const std::string& group, const std::string& resource) {
  return group.empty() ? "count/" + resource : "count/" + resource + "." + group;
}

Result<bool> scopeSelectorMatches(const ScopedResourceSelectorRequirement& req, const std::string& value) {
  const std::string& op = req.operator_;
  if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist")
    return Status(StatusCode::kInvalidArgument,
                  "failed to parse and convert selector: \"" + op + "\" is not a valid scope selector operator");
  api::meta::v1::LabelSelector sel;
  api::meta::v1::LabelSelectorRequirement r;
  r.key = req.scopeName;
  r.operator_ = op;
  r.values = req.values;
  sel.matchExpressions.push_back(std::move(r));
  api::StringMap<api::String> labels;
  if (!value.empty()) labels[req.scopeName] = value;
  auto m = api::labelSelectorMatches(sel, labels);
  if (!m.ok()) return Status(m.status().code(), "failed to parse and convert selector: " + m.status().message());
  return *m;
}

void Registry::add(std::shared_ptr<Evaluator> e) {
  std::lock_guard l(mu_);
  evaluators_[e->groupResource()] = std::move(e);
}

std::shared_ptr<Evaluator> Registry::get(const std::string& groupResource) const {
  std::lock_guard l(mu_);
  auto it = evaluators_.find(groupResource);
  return it == evaluators_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Evaluator>> Registry::list() const {
  std::lock_guard l(mu_);
  std::vector<std::shared_ptr<Evaluator>> out;
  out.reserve(evaluators_.size());
  for (const auto& [_, e] : evaluators_) out.push_back(e);
  return out;
}

Usage calculateUsage(const std::string& ns, const std::vector<std::string>& scopes, const ResourceList& hard,
                     const Registry& registry, const api::core::v1::ScopeSelector* scopeSelector) {
  const auto hardResources = resourceNames(hard);
  const auto evaluators = registry.list();
  std::vector<ResourceName> potential;
  for (const auto& e : evaluators)
    for (auto& r : e->matchingResources(hardResources)) potential.push_back(std::move(r));
  auto matched = intersection(hardResources, potential);

  std::vector<std::string> errors;
  ResourceList used;
  for (const auto& e : evaluators) {
    auto mine = e->matchingResources(matched);
    if (mine.empty()) continue;
    UsageStatsOptions o{ns, scopes, mine, scopeSelector};
    auto stats = e->usageStats(o);
    if (!stats.ok()) {
      errors.push_back(stats.status().message());
      matched = difference(matched, mine);
      continue;
    }
    used = add(used, *stats);
  }
  Usage u{mask(used, matched), Status::Ok()};
  // utilerrors.NewAggregate's text: one error as is, several as "[a, b]".
  if (errors.size() == 1) {
    u.error = Status(StatusCode::kUnavailable, errors[0]);
  } else if (errors.size() > 1) {
    std::string msg = "[";
    for (size_t i = 0; i < errors.size(); ++i) msg += (i ? ", " : "") + errors[i];
    u.error = Status(StatusCode::kUnavailable, msg + "]");
  }
  return u;
}

}  // namespace kcm::quota
