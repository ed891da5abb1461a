#include "controllers/util/controller_utils.h"

#include "base/executor.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/gen/meta_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Pod;
using api::meta::v1::ObjectMeta;
using api::meta::v1::OwnerReference;

bool isPodActive(const Pod& p) {
  return p.status.phase != "Succeeded" && p.status.phase != "Failed" && !p.metadata.deletionTimestamp;
}

bool isPodTerminating(const Pod& p) {
  return p.status.phase != "Succeeded" && p.status.phase != "Failed" && p.metadata.deletionTimestamp.has_value();
}

const api::core::v1::PodCondition* podReadyCondition(const Pod& p) {
  for (const auto& c : p.status.conditions)
    if (c.type == "Ready") return &c;
  return nullptr;
}

bool isPodReady(const Pod& p) {
  const auto* c = podReadyCondition(p);
  return c && c->status == "True";
}

bool isPodAvailable(const Pod& p, int32_t minReadySeconds, api::Time now) {
  if (!isPodReady(p)) return false;
  const auto* c = podReadyCondition(p);
  // Available once minReadySeconds have passed since the pod turned Ready (at that instant included).
  return minReadySeconds == 0 ||
         (!c->lastTransitionTime.isZero() && c->lastTransitionTime.unixSeconds + minReadySeconds <= now.unixSeconds);
}

std::string podKey(const Pod& p) { return p.metadata.namespace_ + "/" + p.metadata.name; }

std::optional<std::chrono::seconds> findMinNextPodAvailabilityCheck(const std::vector<PodPtr>& pods,
                                                                   int32_t minReadySeconds, api::Time now) {
  if (minReadySeconds <= 0) return std::nullopt;
  std::optional<std::chrono::seconds> min;
  for (const auto& p : pods) {
    if (!isPodReady(*p)) continue;
    const auto* c = podReadyCondition(*p);
    if (c->lastTransitionTime.isZero()) continue;
    int64_t next = c->lastTransitionTime.unixSeconds + minReadySeconds - now.unixSeconds;
    if (next > 0 && (!min || std::chrono::seconds(next) < *min)) min = std::chrono::seconds(next);
  }
  return min;
}

const OwnerReference* getControllerOf(const ObjectMeta& m) {
  for (const auto& r : m.ownerReferences)
    if (r.controller.value_or(false)) return &r;
  return nullptr;
}

OwnerReference newControllerRef(const ObjectMeta& owner, const std::string& apiVersion, const std::string& kind) {
  OwnerReference r;
  r.apiVersion = apiVersion;
  r.kind = kind;
  r.name = owner.name;
  r.uid = owner.uid;
  r.controller = true;
  r.blockOwnerDeletion = true;
  return r;
}

std::string podControllerIndexKey(const std::string& ns, const OwnerReference* ref) {
  if (!ref) return ns;
  return ns + "/" + ref->kind + "/" + ref->name + "/" + ref->uid;
}

std::vector<std::string> podControllerIndexKeys(const Pod& p) {
  return {podControllerIndexKey(p.metadata.namespace_, getControllerOf(p.metadata))};
}

namespace {

int phaseOrdinal(const std::string& phase) {
  if (phase == "Pending") return 0;
  if (phase == "Unknown") return 1;
  if (phase == "Running") return 2;
  return 0;
}

int32_t deletionCost(const Pod& p) {
  auto it = p.metadata.annotations.find(kPodDeletionCost);
  if (it == p.metadata.annotations.end()) return 0;
  try {
    size_t pos = 0;
    long long v = std::stoll(it->second, &pos);
    if (pos != it->second.size() || v < INT32_MIN || v > INT32_MAX) return 0;
    return static_cast<int32_t>(v);
  } catch (...) {
    return 0;
  }
}

// The most restarts of a regular container, and of a sidecar (an init container with restartPolicy Always).
std::pair<int32_t, int32_t> maxContainerRestarts(const Pod& p) {
  int32_t regular = 0, sidecar = 0;
  for (const auto& c : p.status.containerStatuses) regular = std::max(regular, c.restartCount);
  std::set<std::string> sidecars;
  for (const auto& c : p.spec.initContainers)
    if (c.restartPolicy.value_or("") == "Always") sidecars.insert(c.name);
  for (const auto& c : p.status.initContainerStatuses)
    if (sidecars.count(c.name)) sidecar = std::max(sidecar, c.restartCount);
  return {regular, sidecar};
}

// floor(log2(now - t)) in nanoseconds, -1 when not in the past (upstream logarithmicRankDiff's terms).
int64_t logRank(api::Time t, api::Time now) {
  int64_t d = now.unixSeconds - t.unixSeconds;
  if (d <= 0) return -1;
  return static_cast<int64_t>(std::log2(static_cast<double>(d) * 1e9));
}

// Whether a goes before b; ties fall through to the next criterion.
std::optional<bool> compareTimes(api::Time ta, api::Time tb, const std::string& uidA, const std::string& uidB,
                                 api::Time now) {
  if (ta == tb) return std::nullopt;
  if (now.isZero() || ta.isZero() || tb.isZero()) {
    if (ta.isZero() || tb.isZero()) return ta.isZero();
    return ta > tb;  // afterOrZero
  }
  int64_t diff = logRank(ta, now) - logRank(tb, now);
  if (diff == 0) return uidA < uidB;
  return diff < 0;
}

bool lessForDeletion(const RankedPod& a, const RankedPod& b, api::Time now) {
  const Pod& pa = *a.pod;
  const Pod& pb = *b.pod;
  if (pa.spec.nodeName != pb.spec.nodeName && (pa.spec.nodeName.empty() || pb.spec.nodeName.empty()))
    return pa.spec.nodeName.empty();
  if (phaseOrdinal(pa.status.phase) != phaseOrdinal(pb.status.phase))
    return phaseOrdinal(pa.status.phase) < phaseOrdinal(pb.status.phase);
  const bool ra = isPodReady(pa), rb = isPodReady(pb);
  if (ra != rb) return !ra;
  if (int32_t ca = deletionCost(pa), cb = deletionCost(pb); ca != cb) return ca < cb;
  if (a.rank != b.rank) return a.rank > b.rank;
  if (ra && rb) {
    if (auto r = compareTimes(podReadyCondition(pa)->lastTransitionTime, podReadyCondition(pb)->lastTransitionTime,
                              pa.metadata.uid, pb.metadata.uid, now))
      return *r;
  }
  // More restarts first: regular containers decide, then sidecars.
  if (auto xa = maxContainerRestarts(pa), xb = maxContainerRestarts(pb); xa != xb) return xa > xb;
  if (auto r = compareTimes(pa.metadata.creationTimestamp, pb.metadata.creationTimestamp, pa.metadata.uid,
                            pb.metadata.uid, now))
    return *r;
  return false;
}

}  // namespace

void sortPodsForDeletion(std::vector<RankedPod>& pods, api::Time now) {
  std::stable_sort(pods.begin(), pods.end(),
                   [now](const RankedPod& a, const RankedPod& b) { return lessForDeletion(a, b, now); });
}

namespace {
constexpr size_t kSlowStartInFlight = 16;
}  // namespace

std::pair<int, Status> slowStartBatch(int count, int initialBatchSize, const std::function<Status()>& fn) {
  int remaining = count, successes = 0;
  for (int batch = std::min(remaining, initialBatchSize); batch > 0; batch = std::min(2 * batch, remaining)) {
    // Upstream starts a goroutine per call; here at most kSlowStartInFlight run at once on the executor (the
    // client's rate limiter, not this bound, is what paces them).
    std::vector<Status> results(static_cast<size_t>(batch));
    parallelFor(results.size(), kSlowStartInFlight, [&](size_t i) { results[i] = fn(); });
    Status first;
    int failed = 0;
    for (auto& s : results) {
      if (!s.ok()) {
        ++failed;
        if (first.ok()) first = s;
      }
    }
    successes += batch - failed;
    if (failed > 0) return {successes, first};
    remaining -= batch;
  }
  return {successes, Status::Ok()};
}

bool isNamespaceTerminating(const Status& s) {
  return s.code() == StatusCode::kForbidden && s.message().find("because it is being terminated") != std::string::npos;
}

Result<Pod> PodControl::createPods(const std::string& ns, const api::core::v1::PodTemplateSpec& tmpl,
                                   const client::ObjectReference& owner, const OwnerReference& controllerRef,
                                   const std::string& generateName) {
  if (!controllerRef.controller.value_or(false) || !controllerRef.blockOwnerDeletion.value_or(false) ||
      controllerRef.apiVersion.empty() || controllerRef.kind.empty())
    return Status(StatusCode::kInvalidArgument, "invalid controllerRef for " + owner.name);
  Pod pod;
  pod.metadata.labels = tmpl.metadata.labels;
  pod.metadata.annotations = tmpl.metadata.annotations;
  pod.metadata.finalizers = tmpl.metadata.finalizers;
  pod.metadata.generateName = generateName.empty() ? owner.name + "-" : generateName;
  pod.metadata.ownerReferences.push_back(controllerRef);
  pod.spec = tmpl.spec;
  if (pod.metadata.labels.empty()) return Status(StatusCode::kInvalidArgument, "unable to create pods, no labels");
  auto r = client::create(*client_, ns, pod);
  if (!r.ok()) {
    if (!isNamespaceTerminating(r.status()))
      recorder_->event(owner, client::kEventTypeWarning, "FailedCreate", "Error creating: " + r.status().message());
    return r.status();
  }
  recorder_->event(owner, client::kEventTypeNormal, "SuccessfulCreate", "Created pod: " + r->metadata.name);
  return r;
}

Status PodControl::deletePod(const std::string& ns, const std::string& name, const client::ObjectReference& owner) {
  KLOG_V(2, "\"Deleting pod\" controller=\"" + owner.name + "\" pod=\"" + ns + "/" + name + "\"");
  Status s = client::remove<Pod>(*client_, ns, name);
  if (s.code() == StatusCode::kNotFound) return s;
  if (!s.ok()) {
    recorder_->event(owner, client::kEventTypeWarning, "FailedDelete", "Error deleting: " + s.message());
    return Status(s.code(), "unable to delete pods: " + s.message());
  }
  recorder_->event(owner, client::kEventTypeNormal, "SuccessfulDelete", "Deleted pod: " + name);
  return Status::Ok();
}

Status PodControl::patchPod(const std::string& ns, const std::string& name, const std::string& patch) {
  return client::patch<Pod>(*client_, ns, name, client::PatchType::kStrategicMerge, patch).status();
}

std::string adoptPatch(const std::string& apiVersion, const std::string& kind, const ObjectMeta& owner,
                       const std::string& objectUID) {
  nlohmann::json ref = {{"apiVersion", apiVersion}, {"kind", kind},       {"name", owner.name},
                        {"uid", owner.uid},         {"controller", true}, {"blockOwnerDeletion", true}};
  return nlohmann::json({{"metadata", {{"ownerReferences", nlohmann::json::array({ref})}, {"uid", objectUID}}}})
      .dump();
}

std::string releasePatch(const std::string& ownerUID, const std::string& objectUID) {
  nlohmann::json del = {{"$patch", "delete"}, {"uid", ownerUID}};
  return nlohmann::json({{"metadata", {{"ownerReferences", nlohmann::json::array({del})}, {"uid", objectUID}}}})
      .dump();
}

}  // namespace kcm::controllers
