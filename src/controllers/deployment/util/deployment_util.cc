#include "controllers/deployment/util/deployment_util.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>

#include "api/gen/apps_v1_codec.h"
#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "controllers/util/pod_template_hash.h"

namespace kcm::controllers::deploymentutil {

using api::core::v1::PodTemplateSpec;

namespace {
bool skipCopyAnnotation(const std::string& k) {
  return k == "kubectl.kubernetes.io/last-applied-configuration" || k == kRevisionAnnotation ||
         k == kRevisionHistoryAnnotation || k == kDesiredReplicasAnnotation || k == kMaxReplicasAnnotation ||
         k == kDeprecatedRollbackTo;
}

// strconv.ParseInt: an optional sign and digits only (no surrounding space).
std::optional<int64_t> parseInt(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  try {
    size_t pos = 0;
    long long v = std::stoll(s, &pos);
    if (pos != s.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<int32_t> nonNegativeInt32Annotation(const ReplicaSet& rs, const char* key) {
  auto it = rs.metadata.annotations.find(key);
  if (it == rs.metadata.annotations.end() || it->second.empty() || it->second[0] == '-' || it->second[0] == '+')
    return std::nullopt;
  auto v = parseInt(it->second);
  if (!v || *v < 0 || *v > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*v);
}

bool lessByCreation(const RSPtr& a, const RSPtr& b) {
  if (a->metadata.creationTimestamp == b->metadata.creationTimestamp) return a->metadata.name < b->metadata.name;
  return a->metadata.creationTimestamp < b->metadata.creationTimestamp;
}
}  // namespace

int32_t replicas(const Deployment& d) { return d.spec.replicas.value_or(1); }
int32_t replicas(const ReplicaSet& rs) { return rs.spec.replicas.value_or(1); }

DeploymentCondition newDeploymentCondition(const Clock& clock, const std::string& type, const std::string& status,
                                           const std::string& reason, const std::string& message) {
  DeploymentCondition c;
  c.type = type;
  c.status = status;
  c.reason = reason;
  c.message = message;
  c.lastUpdateTime = api::timeNow(clock);
  c.lastTransitionTime = c.lastUpdateTime;
  return c;
}

const DeploymentCondition* getDeploymentCondition(const DeploymentStatus& s, const std::string& type) {
  for (const auto& c : s.conditions)
    if (c.type == type) return &c;
  return nullptr;
}

void setDeploymentCondition(DeploymentStatus& s, DeploymentCondition c) {
  if (const auto* cur = getDeploymentCondition(s, c.type)) {
    if (cur->status == c.status && cur->reason == c.reason) return;
    if (cur->status == c.status) c.lastTransitionTime = cur->lastTransitionTime;
  }
  removeDeploymentCondition(s, c.type);
  s.conditions.push_back(std::move(c));
}

void removeDeploymentCondition(DeploymentStatus& s, const std::string& type) {
  std::erase_if(s.conditions, [&](const DeploymentCondition& c) { return c.type == type; });
}

DeploymentCondition replicaSetToDeploymentCondition(const api::apps::v1::ReplicaSetCondition& c) {
  DeploymentCondition d;
  d.type = c.type;
  d.status = c.status;
  d.lastTransitionTime = c.lastTransitionTime;
  d.lastUpdateTime = c.lastTransitionTime;
  d.reason = c.reason;
  d.message = c.message;
  return d;
}

bool sameStatus(const DeploymentStatus& a, const DeploymentStatus& b) {
  return api::encodeJson(a) == api::encodeJson(b);
}

int64_t revision(const api::meta::v1::ObjectMeta& m) {
  auto it = m.annotations.find(kRevisionAnnotation);
  if (it == m.annotations.end()) return 0;
  return parseInt(it->second).value_or(0);
}

int64_t maxRevision(const std::vector<RSPtr>& rss) {
  int64_t max = 0;
  for (const auto& rs : rss)
    if (rs) max = std::max(max, revision(rs->metadata));
  return max;
}

int64_t lastRevision(const std::vector<RSPtr>& rss) {
  int64_t max = 0, sec = 0;
  for (const auto& rs : rss) {
    if (!rs) continue;
    int64_t v = revision(rs->metadata);
    if (v >= max) {
      sec = max;
      max = v;
    } else if (v > sec) {
      sec = v;
    }
  }
  return sec;
}

bool setDeploymentRevision(Deployment& d, const std::string& rev) {
  auto& a = d.metadata.annotations;
  auto it = a.find(kRevisionAnnotation);
  if (it != a.end() && it->second == rev) return false;
  a[kRevisionAnnotation] = rev;
  return true;
}

bool setReplicasAnnotations(ReplicaSet& rs, int32_t desired, int32_t max) {
  bool updated = false;
  auto& a = rs.metadata.annotations;
  for (auto [key, value] : {std::pair{kDesiredReplicasAnnotation, desired}, std::pair{kMaxReplicasAnnotation, max}}) {
    std::string s = std::to_string(value);
    auto it = a.find(key);
    if (it == a.end() || it->second != s) {
      a[key] = s;
      updated = true;
    }
  }
  return updated;
}

bool replicasAnnotationsNeedUpdate(const ReplicaSet& rs, int32_t desired, int32_t max) {
  const auto& a = rs.metadata.annotations;
  auto d = a.find(kDesiredReplicasAnnotation), m = a.find(kMaxReplicasAnnotation);
  return d == a.end() || d->second != std::to_string(desired) || m == a.end() || m->second != std::to_string(max);
}

std::optional<int32_t> getDesiredReplicasAnnotation(const ReplicaSet& rs) {
  return nonNegativeInt32Annotation(rs, kDesiredReplicasAnnotation);
}

bool setNewReplicaSetAnnotations(const Deployment& d, ReplicaSet& rs, const std::string& newRevision, bool exists,
                                 size_t revHistoryLimitInChars) {
  bool changed = false;
  auto& a = rs.metadata.annotations;
  for (const auto& [k, v] : d.metadata.annotations) {
    auto it = a.find(k);
    if (skipCopyAnnotation(k) || (it != a.end() && it->second == v)) continue;
    a[k] = v;
    changed = true;
  }
  auto old = a.find(kRevisionAnnotation);
  const bool had = old != a.end();
  const std::string oldRevision = had ? old->second : "";
  int64_t oldInt = 0;
  if (!oldRevision.empty()) {
    auto v = parseInt(oldRevision);
    if (!v) return false;
    oldInt = *v;
  }
  auto newInt = parseInt(newRevision);
  if (!newInt) return false;
  if (oldInt < *newInt) {
    a[kRevisionAnnotation] = newRevision;
    changed = true;
  }
  if (had && oldInt < *newInt) {
    std::string history;
    if (auto h = a.find(kRevisionHistoryAnnotation); h != a.end()) history = h->second;
    if (history.empty()) {
      a[kRevisionHistoryAnnotation] = oldRevision;
    } else {
      std::vector<std::string> revs;
      for (size_t s = 0, e; s <= history.size(); s = e + 1) {
        e = history.find(',', s);
        if (e == std::string::npos) e = history.size();
        revs.push_back(history.substr(s, e - s));
      }
      size_t total = history.size() + oldRevision.size() + 1, start = 0;
      while (total > revHistoryLimitInChars && start < revs.size()) total -= revs[start++].size() + 1;
      if (total <= revHistoryLimitInChars) {
        std::string joined;
        for (size_t i = start; i < revs.size(); ++i) joined += revs[i] + ",";
        a[kRevisionHistoryAnnotation] = joined + oldRevision;
      }
    }
  }
  if (!exists && setReplicasAnnotations(rs, replicas(d), replicas(d) + maxSurge(d))) changed = true;
  return changed;
}

void setDeploymentAnnotationsTo(Deployment& d, const ReplicaSet& rollbackTo) {
  api::StringMap<api::String> kept;
  for (const auto& [k, v] : d.metadata.annotations)
    if (skipCopyAnnotation(k)) kept[k] = v;
  for (const auto& [k, v] : rollbackTo.metadata.annotations)
    if (!skipCopyAnnotation(k)) kept[k] = v;
  d.metadata.annotations = kept;
}

void setFromReplicaSetTemplate(Deployment& d, const PodTemplateSpec& t) {
  d.spec.template_.metadata = t.metadata;
  d.spec.template_.spec = t.spec;
  d.spec.template_.metadata.labels.erase(kDefaultDeploymentUniqueLabelKey);
}

std::optional<int64_t> getRollbackTo(const Deployment& d) {
  auto it = d.metadata.annotations.find(kDeprecatedRollbackTo);
  if (it == d.metadata.annotations.end()) return std::nullopt;
  return parseInt(it->second);
}

bool isRollingUpdate(const Deployment& d) { return d.spec.strategy.type == "RollingUpdate"; }

std::optional<std::pair<int32_t, int32_t>> resolveFenceposts(const std::optional<api::IntOrString>& surge,
                                                             const std::optional<api::IntOrString>& unavailable,
                                                             int32_t desired) {
  auto s = api::getScaledValueFromIntOrPercent(surge.value_or(api::IntOrString::fromInt(0)), desired, true);
  if (!s) return std::nullopt;
  auto u = api::getScaledValueFromIntOrPercent(unavailable.value_or(api::IntOrString::fromInt(0)), desired, false);
  if (!u) return std::nullopt;
  if (*s == 0 && *u == 0) *u = 1;
  return std::pair<int32_t, int32_t>{*s, *u};
}

namespace {
// The resolved fenceposts of a RollingUpdate Deployment; (0, 0) when malformed (validation rejects those).
std::pair<int32_t, int32_t> fenceposts(const Deployment& d) {
  const auto* ru = d.spec.strategy.rollingUpdate ? &*d.spec.strategy.rollingUpdate : nullptr;
  return resolveFenceposts(ru ? ru->maxSurge : std::nullopt, ru ? ru->maxUnavailable : std::nullopt, replicas(d))
      .value_or(std::pair<int32_t, int32_t>{0, 0});
}
}  // namespace

int32_t maxSurge(const Deployment& d) {
  if (!isRollingUpdate(d)) return 0;
  return fenceposts(d).first;
}

int32_t maxUnavailable(const Deployment& d) {
  if (!isRollingUpdate(d) || replicas(d) == 0) return 0;
  return std::min(fenceposts(d).second, replicas(d));
}

int32_t minAvailable(const Deployment& d) {
  if (!isRollingUpdate(d)) return 0;
  return replicas(d) - maxUnavailable(d);
}

int32_t newRSNewReplicas(const Deployment& d, const std::vector<RSPtr>& allRSs, const ReplicaSet& newRS) {
  if (!isRollingUpdate(d)) return replicas(d);  // Recreate
  int32_t current = getReplicaCount(allRSs);
  int32_t maxTotal = replicas(d) + maxSurge(d);
  if (current >= maxTotal) return replicas(newRS);
  int32_t up = std::min(maxTotal - current, replicas(d) - replicas(newRS));
  return replicas(newRS) + up;
}

bool isSaturated(const Deployment& d, const RSPtr& rs) {
  if (!rs) return false;
  auto it = rs->metadata.annotations.find(kDesiredReplicasAnnotation);
  if (it == rs->metadata.annotations.end()) return false;
  auto desired = parseInt(it->second);
  if (!desired) return false;
  return replicas(*rs) == replicas(d) && *desired == replicas(d) && rs->status.availableReplicas == replicas(d);
}

int32_t getReplicaSetProportion(const ReplicaSet& rs, const Deployment& d, int32_t toAdd, int32_t added) {
  if (replicas(rs) == 0 || toAdd == 0 || toAdd == added) return 0;
  const int32_t fraction = getReplicaSetFraction(rs, d);
  const int32_t allowed = toAdd - added;
  return toAdd > 0 ? std::min(fraction, allowed) : std::max(fraction, allowed);
}

int32_t getReplicaSetFraction(const ReplicaSet& rs, const Deployment& d) {
  if (replicas(d) == 0) return -replicas(rs);
  const int32_t maxReplicas = replicas(d) + maxSurge(d);
  int32_t before = nonNegativeInt32Annotation(rs, kMaxReplicasAnnotation).value_or(0);
  if (before == 0) before = d.status.replicas;  // annotation missing, malformed or 0
  if (before == 0) return 0;
  const double size = static_cast<double>(replicas(rs) * maxReplicas) / before;
  return static_cast<int32_t>(std::lround(size)) - replicas(rs);
}

int32_t getReplicaCount(const std::vector<RSPtr>& rss) {
  int32_t n = 0;
  for (const auto& rs : rss)
    if (rs) n += replicas(*rs);
  return n;
}
int32_t getActualReplicaCount(const std::vector<RSPtr>& rss) {
  int32_t n = 0;
  for (const auto& rs : rss)
    if (rs) n += rs->status.replicas;
  return n;
}
int32_t getReadyReplicaCount(const std::vector<RSPtr>& rss) {
  int32_t n = 0;
  for (const auto& rs : rss)
    if (rs) n += rs->status.readyReplicas;
  return n;
}
int32_t getAvailableReplicaCount(const std::vector<RSPtr>& rss) {
  int32_t n = 0;
  for (const auto& rs : rss)
    if (rs) n += rs->status.availableReplicas;
  return n;
}
std::optional<int32_t> getTerminatingReplicaCount(const std::vector<RSPtr>& rss) {
  int32_t n = 0;
  for (const auto& rs : rss) {
    if (!rs) continue;
    if (rs->status.observedGeneration == 0 && !rs->status.terminatingReplicas) continue;
    if (!rs->status.terminatingReplicas) return std::nullopt;
    n += *rs->status.terminatingReplicas;
  }
  return n;
}

std::vector<RSPtr> filterActive(const std::vector<RSPtr>& rss) {
  std::vector<RSPtr> out;
  for (const auto& rs : rss)
    if (rs && replicas(*rs) > 0) out.push_back(rs);
  return out;
}

bool hasProgressDeadline(const Deployment& d) {
  return d.spec.progressDeadlineSeconds && *d.spec.progressDeadlineSeconds != INT32_MAX;
}
bool hasRevisionHistoryLimit(const Deployment& d) {
  return d.spec.revisionHistoryLimit && *d.spec.revisionHistoryLimit != INT32_MAX;
}

bool deploymentComplete(const Deployment& d, const DeploymentStatus& s) {
  return s.updatedReplicas == replicas(d) && s.replicas == replicas(d) && s.availableReplicas == replicas(d) &&
         s.observedGeneration >= d.metadata.generation;
}

bool deploymentProgressing(const Deployment& d, const DeploymentStatus& s) {
  const auto& o = d.status;
  return s.updatedReplicas > o.updatedReplicas || (s.replicas - s.updatedReplicas) < (o.replicas - o.updatedReplicas) ||
         s.readyReplicas > o.readyReplicas || s.availableReplicas > o.availableReplicas;
}

bool deploymentTimedOut(const Clock& clock, const Deployment& d, const DeploymentStatus& s) {
  if (!hasProgressDeadline(d)) return false;
  const auto* c = getDeploymentCondition(s, "Progressing");
  if (!c || c->reason == kNewRSAvailableReason) return false;
  if (c->reason == kTimedOutReason) return true;
  // Compared at the clock's full precision, as upstream's Time.Before(now).
  const auto deadline = std::chrono::system_clock::time_point(
      std::chrono::seconds(c->lastUpdateTime.unixSeconds + *d.spec.progressDeadlineSeconds));
  return deadline < clock.wallNow();
}

bool equalIgnoreHash(const PodTemplateSpec& a, const PodTemplateSpec& b) {
  PodTemplateSpec x = a, y = b;
  x.metadata.labels.erase(kDefaultDeploymentUniqueLabelKey);
  y.metadata.labels.erase(kDefaultDeploymentUniqueLabelKey);
  return api::encodeJson(x) == api::encodeJson(y);
}

RSPtr findNewReplicaSet(const Deployment& d, std::vector<RSPtr> rss) {
  sortByCreationTimestamp(rss);
  for (const auto& rs : rss)
    if (equalIgnoreHash(rs->spec.template_, d.spec.template_)) return rs;
  return nullptr;
}

std::vector<RSPtr> findOldReplicaSets(const Deployment& d, const std::vector<RSPtr>& rss) {
  RSPtr n = findNewReplicaSet(d, rss);
  std::vector<RSPtr> out;
  for (const auto& rs : rss)
    if (!n || rs->metadata.uid != n->metadata.uid) out.push_back(rs);
  return out;
}

RSPtr findActiveOrLatest(const RSPtr& newRS, std::vector<RSPtr> oldRSs) {
  if (!newRS && oldRSs.empty()) return nullptr;
  sortByCreationTimestamp(oldRSs);
  std::reverse(oldRSs.begin(), oldRSs.end());  // newest first
  std::vector<RSPtr> all = oldRSs;
  all.push_back(newRS);
  auto active = filterActive(all);
  if (active.empty()) return newRS ? newRS : oldRSs.front();
  if (active.size() == 1) return active.front();
  return nullptr;
}

void sortByCreationTimestamp(std::vector<RSPtr>& rss) { std::stable_sort(rss.begin(), rss.end(), lessByCreation); }

void sortBySizeNewer(std::vector<RSPtr>& rss) {
  std::stable_sort(rss.begin(), rss.end(), [](const RSPtr& a, const RSPtr& b) {
    if (replicas(*a) == replicas(*b)) return lessByCreation(b, a);
    return replicas(*a) > replicas(*b);
  });
}

void sortBySizeOlder(std::vector<RSPtr>& rss) {
  std::stable_sort(rss.begin(), rss.end(), [](const RSPtr& a, const RSPtr& b) {
    if (replicas(*a) == replicas(*b)) return lessByCreation(a, b);
    return replicas(*a) > replicas(*b);
  });
}

void sortByRevision(std::vector<RSPtr>& rss) {
  std::stable_sort(rss.begin(), rss.end(), [](const RSPtr& a, const RSPtr& b) {
    int64_t ra = revision(a->metadata), rb = revision(b->metadata);
    if (ra == rb) return lessByCreation(a, b);
    return ra < rb;
  });
}

std::string computeHash(const PodTemplateSpec& t, std::optional<int32_t> collisionCount) {
  return ::kcm::controllers::computeHash(t, collisionCount);
}

std::string generateReplicaSetName(const std::string& deploymentName, const std::string& hash) {
  // DNS-1123 subdomain limit; a hash too long to leave room for any of the name truncates nothing.
  const int64_t maxLen = 253 - 1 - static_cast<int64_t>(hash.size());
  if (maxLen > 0 && static_cast<int64_t>(deploymentName.size()) > maxLen)
    return deploymentName.substr(0, static_cast<size_t>(maxLen)) + "-" + hash;
  return deploymentName + "-" + hash;
}

}  // namespace kcm::controllers::deploymentutil
