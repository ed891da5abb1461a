#include "controllers/storageversionmigrator/svm_util.h"

namespace kcm::controllers::storageversionmigrator {

const Condition* FindStatusCondition(const std::vector<Condition>& conds, const std::string& type) {
  for (const auto& c : conds)
    if (c.type == type) return &c;
  return nullptr;
}

bool IsStatusConditionTrue(const std::vector<Condition>& conds, const std::string& type) {
  const Condition* c = FindStatusCondition(conds, type);
  return c && c->status == "True";
}

bool IsStatusConditionFalse(const std::vector<Condition>& conds, const std::string& type) {
  const Condition* c = FindStatusCondition(conds, type);
  return c && c->status == "False";
}

bool SetStatusCondition(std::vector<Condition>& conds, Condition c, const api::Time& now) {
  for (auto& e : conds) {
    if (e.type != c.type) continue;
    bool changed = false;
    if (e.status != c.status) {
      e.status = c.status;
      e.lastTransitionTime = c.lastTransitionTime.isZero() ? now : c.lastTransitionTime;
      changed = true;
    }
    if (e.reason != c.reason) e.reason = c.reason, changed = true;
    if (e.message != c.message) e.message = c.message, changed = true;
    if (e.observedGeneration != c.observedGeneration) e.observedGeneration = c.observedGeneration, changed = true;
    return changed;
  }
  if (c.lastTransitionTime.isZero()) c.lastTransitionTime = now;
  conds.push_back(std::move(c));
  return true;
}

void setStatusConditions(StorageVersionMigration& svm, const std::string& type, const std::string& reason,
                         const std::string& message, const api::Time& now) {
  auto& conds = svm.status.conditions;
  if (IsStatusConditionTrue(conds, type) || IsStatusConditionFalse(conds, type)) return;
  Condition c;
  c.type = type, c.status = "True", c.lastTransitionTime = now, c.reason = reason, c.message = message;
  conds.push_back(std::move(c));
}

std::string migrationRunningMessage(const int* objectsToPatch, const int* totalObjects, const Status* transient) {
  std::string msg = "The migration is running";
  if (objectsToPatch && totalObjects && *totalObjects > 0) {
    if (*objectsToPatch > 0)
      msg += ", " + std::to_string(*objectsToPatch) + "/" + std::to_string(*totalObjects) + " objects not yet migrated";
    else
      msg += ", " + std::to_string(*totalObjects) + " objects verified migrated";
  }
  if (transient && !transient->ok()) msg += "; transient error: " + transient->message();
  return msg;
}

bool isTerminal(const StorageVersionMigration& svm) {
  return IsStatusConditionTrue(svm.status.conditions, kMigrationSucceeded) ||
         IsStatusConditionTrue(svm.status.conditions, kMigrationFailed);
}

bool isRunning(const StorageVersionMigration& svm) {
  return IsStatusConditionTrue(svm.status.conditions, kMigrationRunning);
}

namespace {
bool isWellFormed(const std::string& s) {
  if (s.empty() || s[0] == '0') return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  return true;
}
}  // namespace

Result<int> CompareResourceVersion(const std::string& a, const std::string& b) {
  for (const auto* s : {&a, &b})
    if (!isWellFormed(*s)) return Status(StatusCode::kInvalidArgument, "resource version is not well formed: " + *s);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

Result<std::optional<client::APIResourceInfo>> resourceFor(client::DiscoveryClient& d, const std::string& group,
                                                           const std::string& resource) {
  auto all = d.serverResources();
  if (!all.ok()) return all.status();
  std::optional<client::APIResourceInfo> first;
  for (const auto& r : *all) {
    if (r.group != group || r.resource != resource) continue;
    if (r.preferred) return std::optional<client::APIResourceInfo>(r);
    if (!first) first = r;
  }
  return first;
}

std::string gvrString(const client::APIResourceInfo& r) {
  return r.group + "/" + r.version + ", Resource=" + r.resource;
}

}  // namespace kcm::controllers::storageversionmigrator
