#include "controllers/statefulset/stateful_set_utils.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "controllers/history/controller_history.h"

namespace kcm::controllers::statefulset {

using api::meta::v1::OwnerReference;

namespace {
constexpr const char* kKind = "StatefulSet";
constexpr const char* kAPIVersion = "apps/v1";
constexpr const char* kRetain = "Retain";
constexpr const char* kDelete = "Delete";

bool matchesRef(const OwnerReference& ref, const std::string& apiVersion, const std::string& kind,
                const std::string& name) {
  return ref.apiVersion == apiVersion && ref.kind == kind && ref.name == name;
}
bool matchesSet(const OwnerReference& ref, const StatefulSet& set) {
  return matchesRef(ref, kAPIVersion, kKind, set.metadata.name);
}
bool matchesPod(const OwnerReference& ref, const Pod& pod) { return matchesRef(ref, "v1", "Pod", pod.metadata.name); }

bool hasStaleOwnerRef(const PersistentVolumeClaim& claim, const api::meta::v1::ObjectMeta& owner, bool isSet,
                      const StatefulSet& set, const Pod& pod) {
  for (const auto& r : claim.metadata.ownerReferences)
    if (isSet ? matchesSet(r, set) : matchesPod(r, pod)) return r.uid != owner.uid;
  return false;
}

void addControllerRef(std::vector<OwnerReference>& refs, const api::meta::v1::ObjectMeta& owner,
                      const std::string& apiVersion, const std::string& kind) {
  for (const auto& r : refs)
    if (r.uid == owner.uid) return;
  refs.push_back(newControllerRef(owner, apiVersion, kind));
}
}  // namespace

std::pair<std::string, int> getParentNameAndOrdinal(const Pod& pod) {
  // "(.*)-([0-9]+)$": the last dash followed only by digits.
  const std::string& n = pod.metadata.name;
  const size_t dash = n.rfind('-');
  if (dash == std::string::npos || dash + 1 >= n.size()) return {"", -1};
  for (size_t i = dash + 1; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return {"", -1};
  int32_t v = 0;
  auto [p, ec] = std::from_chars(n.data() + dash + 1, n.data() + n.size(), v);
  return {n.substr(0, dash), ec == std::errc() ? static_cast<int>(v) : -1};
}

int getOrdinal(const Pod& pod) { return getParentNameAndOrdinal(pod).second; }
int getStartOrdinal(const StatefulSet& set) { return set.spec.ordinals ? set.spec.ordinals->start : 0; }
int getEndOrdinal(const StatefulSet& set) { return getStartOrdinal(set) + set.spec.replicas.value_or(1) - 1; }

bool podInOrdinalRange(const Pod& pod, const StatefulSet& set) {
  const int o = getOrdinal(pod);
  return o >= getStartOrdinal(set) && o <= getEndOrdinal(set);
}

std::string getPodName(const StatefulSet& set, int ordinal) { return set.metadata.name + "-" + std::to_string(ordinal); }

std::string getPersistentVolumeClaimName(const StatefulSet& set, const PersistentVolumeClaim& claim, int ordinal) {
  return claim.metadata.name + "-" + set.metadata.name + "-" + std::to_string(ordinal);
}

bool isMemberOf(const StatefulSet& set, const Pod& pod) { return getParentNameAndOrdinal(pod).first == set.metadata.name; }

bool identityMatches(const StatefulSet& set, const Pod& pod) {
  auto [parent, ordinal] = getParentNameAndOrdinal(pod);
  auto it = pod.metadata.labels.find(kStatefulSetPodNameLabel);
  return ordinal >= 0 && set.metadata.name == parent && pod.metadata.name == getPodName(set, ordinal) &&
         pod.metadata.namespace_ == set.metadata.namespace_ && it != pod.metadata.labels.end() &&
         it->second == pod.metadata.name;
}

bool storageMatches(const StatefulSet& set, const Pod& pod) {
  const int ordinal = getOrdinal(pod);
  if (ordinal < 0) return false;
  for (const auto& claim : set.spec.volumeClaimTemplates) {
    const api::core::v1::Volume* found = nullptr;
    for (const auto& v : pod.spec.volumes)
      if (v.name == claim.metadata.name) found = &v;
    if (!found || !found->persistentVolumeClaim ||
        found->persistentVolumeClaim->claimName != getPersistentVolumeClaimName(set, claim, ordinal))
      return false;
  }
  return true;
}

RetentionPolicy getPersistentVolumeClaimRetentionPolicy(const StatefulSet& set) {
  RetentionPolicy p;
  if (const auto& s = set.spec.persistentVolumeClaimRetentionPolicy) {
    p.whenDeleted = s->whenDeleted;
    p.whenScaled = s->whenScaled;
  }
  return p;
}

bool hasOwnerRef(const api::meta::v1::ObjectMeta& target, const std::string& ownerUID) {
  for (const auto& r : target.ownerReferences)
    if (r.uid == ownerUID) return true;
  return false;
}

bool hasUnexpectedController(const PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod) {
  const auto policy = getPersistentVolumeClaimRetentionPolicy(set);
  if (policy.whenScaled == kRetain && policy.whenDeleted == kRetain) return false;
  for (const auto& r : claim.metadata.ownerReferences) {
    if (matchesSet(r, set)) {
      if (r.uid != set.metadata.uid) return true;
      continue;
    }
    if (matchesPod(r, pod)) {
      if (r.uid != pod.metadata.uid) return true;
      continue;
    }
    if (r.controller.value_or(false)) return true;
  }
  return false;
}

bool hasNonControllerOwner(const PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod) {
  for (const auto& r : claim.metadata.ownerReferences)
    if ((r.uid == set.metadata.uid || r.uid == pod.metadata.uid) && !r.controller.value_or(false)) return true;
  return false;
}

bool isClaimOwnerUpToDate(const PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod) {
  if (hasStaleOwnerRef(claim, set.metadata, true, set, pod) || hasStaleOwnerRef(claim, pod.metadata, false, set, pod))
    return true;  // a stale reference: the garbage collector removes the claim, nothing to update
  const bool ownedBySet = hasOwnerRef(claim.metadata, set.metadata.uid);
  const bool ownedByPod = hasOwnerRef(claim.metadata, pod.metadata.uid);
  if (hasUnexpectedController(claim, set, pod)) return !(ownedBySet || ownedByPod);
  if (hasNonControllerOwner(claim, set, pod)) return false;
  const auto policy = getPersistentVolumeClaimRetentionPolicy(set);
  const bool scaledDown = !podInOrdinalRange(pod, set);
  if (policy.whenScaled == kRetain && policy.whenDeleted == kDelete) return ownedBySet && !ownedByPod;
  if (policy.whenScaled == kDelete && policy.whenDeleted == kRetain) return !ownedBySet && scaledDown == ownedByPod;
  if (policy.whenScaled == kDelete && policy.whenDeleted == kDelete)
    return scaledDown != ownedBySet && scaledDown == ownedByPod;
  return !ownedBySet && !ownedByPod;  // Retain/Retain, and unknown policies treated as Retain
}

void updateClaimOwnerRefForSetAndPod(PersistentVolumeClaim& claim, const StatefulSet& set, const Pod& pod) {
  const bool unexpectedController = hasUnexpectedController(claim, set, pod);
  auto& refs = claim.metadata.ownerReferences;
  std::erase_if(refs, [&](const OwnerReference& r) { return matchesSet(r, set) || matchesPod(r, pod); });
  if (unexpectedController) return;
  const auto policy = getPersistentVolumeClaimRetentionPolicy(set);
  const bool scaledDown = !podInOrdinalRange(pod, set);
  if (policy.whenScaled == kRetain && policy.whenDeleted == kDelete) {
    addControllerRef(refs, set.metadata, kAPIVersion, kKind);
  } else if (policy.whenScaled == kDelete && policy.whenDeleted == kRetain) {
    if (scaledDown) addControllerRef(refs, pod.metadata, "v1", "Pod");
  } else if (policy.whenScaled == kDelete && policy.whenDeleted == kDelete) {
    if (scaledDown) addControllerRef(refs, pod.metadata, "v1", "Pod");
    else addControllerRef(refs, set.metadata, kAPIVersion, kKind);
  }
}

std::map<std::string, PersistentVolumeClaim> getPersistentVolumeClaims(const StatefulSet& set, const Pod& pod) {
  const int ordinal = getOrdinal(pod);
  std::map<std::string, PersistentVolumeClaim> claims;
  for (const auto& t : set.spec.volumeClaimTemplates) {
    PersistentVolumeClaim c = t;
    c.metadata.name = getPersistentVolumeClaimName(set, t, ordinal);
    c.metadata.namespace_ = set.metadata.namespace_;
    if (set.spec.selector)
      for (const auto& [k, v] : set.spec.selector->matchLabels) c.metadata.labels[k] = v;
    claims[t.metadata.name] = std::move(c);
  }
  return claims;
}

void updateStorage(const StatefulSet& set, Pod& pod) {
  const auto claims = getPersistentVolumeClaims(set, pod);
  std::vector<api::core::v1::Volume> volumes;
  for (const auto& [name, claim] : claims) {
    api::core::v1::Volume v;
    v.name = name;
    v.persistentVolumeClaim.emplace().claimName = claim.metadata.name;
    volumes.push_back(std::move(v));
  }
  for (auto& v : pod.spec.volumes)
    if (!claims.count(v.name)) volumes.push_back(std::move(v));
  pod.spec.volumes = std::move(volumes);
}

void updateIdentity(const StatefulSet& set, Pod& pod) {
  const int ordinal = getOrdinal(pod);
  pod.metadata.name = getPodName(set, ordinal);
  pod.metadata.namespace_ = set.metadata.namespace_;
  pod.metadata.labels[kStatefulSetPodNameLabel] = pod.metadata.name;
  pod.metadata.labels[kPodIndexLabel] = std::to_string(ordinal);
}

void initIdentity(const StatefulSet& set, Pod& pod) {
  updateIdentity(set, pod);
  pod.spec.hostname = pod.metadata.name;
  pod.spec.subdomain = set.spec.serviceName;
}

bool isRunningAndReady(const Pod& pod) { return pod.status.phase == "Running" && isPodReady(pod); }
bool isRunningAndAvailable(const Pod& pod, int32_t minReadySeconds, WallTime now) {
  return isPodAvailable(pod, minReadySeconds, now);
}
bool isCreated(const Pod& pod) { return !pod.status.phase.empty(); }
bool isPending(const Pod& pod) { return pod.status.phase == "Pending"; }
bool isTerminalPhase(const Pod& pod) { return pod.status.phase == "Failed" || pod.status.phase == "Succeeded"; }
bool isTerminating(const Pod& pod) { return pod.metadata.deletionTimestamp.has_value(); }
bool isUnavailable(const Pod& pod, int32_t minReadySeconds, WallTime now) {
  return !isPodAvailable(pod, minReadySeconds, now) || isTerminating(pod);
}
bool allowsBurst(const StatefulSet& set) { return set.spec.podManagementPolicy == "Parallel"; }

void setPodRevision(Pod& pod, const std::string& revision) { pod.metadata.labels[kStatefulSetRevisionLabel] = revision; }
std::string getPodRevision(const Pod& pod) {
  auto it = pod.metadata.labels.find(kStatefulSetRevisionLabel);
  return it == pod.metadata.labels.end() ? "" : it->second;
}

Pod newStatefulSetPod(const StatefulSet& set, int ordinal) {
  Pod pod;
  const auto& t = set.spec.template_;
  pod.metadata.labels = t.metadata.labels;
  pod.metadata.annotations = t.metadata.annotations;
  pod.metadata.finalizers = t.metadata.finalizers;
  pod.metadata.generateName = set.metadata.name + "-";
  pod.metadata.ownerReferences.push_back(newControllerRef(set.metadata, kAPIVersion, kKind));
  pod.spec = t.spec;
  pod.metadata.name = getPodName(set, ordinal);
  initIdentity(set, pod);
  updateStorage(set, pod);
  return pod;
}

Pod newVersionedStatefulSetPod(const StatefulSet& currentSet, const StatefulSet& updateSet,
                               const std::string& currentRevision, const std::string& updateRevision, int ordinal) {
  const auto& s = currentSet.spec.updateStrategy;
  const int start = getStartOrdinal(currentSet);
  // Upstream's condition groups as (RollingUpdate && no rollingUpdate && below currentReplicas) || (rollingUpdate
  // set && below the partition), whatever the strategy type.
  const bool useCurrent =
      (s.type == "RollingUpdate" && !s.rollingUpdate && ordinal < start + currentSet.status.currentReplicas) ||
      (s.rollingUpdate && ordinal < start + s.rollingUpdate->partition.value_or(0));
  Pod pod = newStatefulSetPod(useCurrent ? currentSet : updateSet, ordinal);
  setPodRevision(pod, useCurrent ? currentRevision : updateRevision);
  return pod;
}

Result<std::string> getPatch(const StatefulSet& set) {
  return history::templateReplacePatch(api::apps::v1::toJson(set));
}

Result<ControllerRevision> newRevision(const StatefulSet& set, int64_t revision, std::optional<int32_t> collisionCount) {
  auto patch = getPatch(set);
  if (!patch.ok()) return patch.status();
  ControllerRevision cr;
  cr.metadata.labels = set.spec.template_.metadata.labels;
  cr.metadata.ownerReferences.push_back(newControllerRef(set.metadata, kAPIVersion, kKind));
  cr.data.json = *patch;
  cr.revision = revision;
  const std::string hash = history::hashControllerRevision(cr.data.json, collisionCount);
  cr.metadata.name = history::controllerRevisionName(set.metadata.name, hash);
  cr.metadata.labels[history::kControllerRevisionHashLabel] = hash;
  for (const auto& [k, v] : set.metadata.annotations) cr.metadata.annotations[k] = v;
  return cr;
}

Result<StatefulSet> applyRevision(const StatefulSet& set, const ControllerRevision& revision) {
  // The data replaces spec.template ("$patch":"replace"); what else a strategic merge would do is nothing here.
  auto data = nlohmann::json::parse(revision.data.json, nullptr, false);
  if (data.is_discarded() || !data.is_object())
    return Status(StatusCode::kInvalidArgument, "revision " + revision.metadata.name + " holds no JSON object");
  StatefulSet clone = set;
  auto spec = data.find("spec");
  if (spec == data.end() || !spec->is_object()) return clone;
  auto tmpl = spec->find("template");
  if (tmpl == spec->end() || !tmpl->is_object()) return clone;
  nlohmann::json t = *tmpl;
  t.erase("$patch");
  // Decode through a Pod-shaped wrapper: PodTemplateSpec is not a top-level kind of the codec.
  api::core::v1::PodTemplate holder;
  const nlohmann::json wrapper = {{"apiVersion", "v1"}, {"kind", "PodTemplate"}, {"template", t}};
  if (Status s = api::core::v1::fromJson(wrapper.dump(), holder); !s.ok())
    return Status(StatusCode::kInvalidArgument, "revision " + revision.metadata.name + ": " + s.message());
  clone.spec.template_ = std::move(holder.template_);
  return clone;
}

int64_t nextRevision(const std::vector<std::shared_ptr<const ControllerRevision>>& sortedRevisions) {
  return sortedRevisions.empty() ? 1 : sortedRevisions.back()->revision + 1;
}

bool inconsistentStatus(const StatefulSet& set, const StatefulSetStatus& status) {
  const auto& s = set.status;
  auto sameConditions = [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].type != b[i].type || a[i].status != b[i].status || a[i].reason != b[i].reason ||
          a[i].message != b[i].message || a[i].lastTransitionTime != b[i].lastTransitionTime)
        return false;
    return true;
  };
  return status.observedGeneration > s.observedGeneration || status.replicas != s.replicas ||
         status.currentReplicas != s.currentReplicas || status.readyReplicas != s.readyReplicas ||
         status.updatedReplicas != s.updatedReplicas || status.currentRevision != s.currentRevision ||
         status.availableReplicas != s.availableReplicas || status.updateRevision != s.updateRevision ||
         !sameConditions(s.conditions, status.conditions);
}

void completeUpdate(const StatefulSet& set, StatefulSetStatus& status) {
  const int32_t replicas = set.spec.replicas.value_or(1);
  if (status.updatedReplicas == replicas && status.readyReplicas == replicas && status.replicas == replicas) {
    status.currentReplicas = status.updatedReplicas;
    status.currentRevision = status.updateRevision;
  }
}

Result<int> getStatefulSetMaxUnavailable(const std::optional<api::IntOrString>& maxUnavailable, int replicaCount) {
  auto v = api::getScaledValueFromIntOrPercent(maxUnavailable.value_or(api::IntOrString::fromInt(1)), replicaCount, false);
  if (!v) return Status(StatusCode::kInvalidArgument, "invalid value for IntOrString: invalid value \"" +
                                                          maxUnavailable->strVal + "\"");
  return std::max(*v, 1);
}

}  // namespace kcm::controllers::statefulset
