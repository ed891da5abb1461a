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

WallTime toWallTime(api::Time t) { return WallTime(std::chrono::seconds(t.unixSeconds)); }

bool isPodAvailable(const Pod& p, int32_t minReadySeconds, WallTime now) {
  if (!isPodReady(p)) return false;
  if (minReadySeconds == 0) return true;
  const auto* c = podReadyCondition(p);
  // Available from the instant minReadySeconds have passed since the pod turned Ready (included).
  return !c->lastTransitionTime.isZero() &&
         toWallTime(c->lastTransitionTime) + std::chrono::seconds(minReadySeconds) <= now;
}

std::string podKey(const Pod& p) { return p.metadata.namespace_ + "/" + p.metadata.name; }

namespace {

// upstream nextPodAvailabilityCheck: time left at `now` until a Ready pod is available; nullopt when it already
// is (or never will be by this rule).
std::optional<Clock::Duration> nextPodAvailabilityCheck(const Pod& p, int32_t minReadySeconds, WallTime now) {
  if (!isPodReady(p) || minReadySeconds <= 0) return std::nullopt;
  const auto* c = podReadyCondition(p);
  if (c->lastTransitionTime.isZero()) return std::nullopt;
  auto left = toWallTime(c->lastTransitionTime) + std::chrono::seconds(minReadySeconds) - now;
  if (left <= WallTime::duration::zero()) return std::nullopt;
  return std::chrono::duration_cast<Clock::Duration>(left);
}

}  // namespace

std::optional<Clock::Duration> findMinNextPodAvailabilityCheck(const std::vector<PodPtr>& pods,
                                                               int32_t minReadySeconds,
                                                               WallTime lastOwnerStatusEvaluation, const Clock& clock) {
  // The pods waiting as of the status evaluation: judging them by a later time could skip one that turned
  // available in between, whose availability the status has not counted yet.
  std::optional<Clock::Duration> min;
  const Pod* first = nullptr;
  for (const auto& p : pods) {
    auto next = nextPodAvailabilityCheck(*p, minReadySeconds, lastOwnerStatusEvaluation);
    if (next && (!min || *next < *min)) {
      min = next;
      first = p.get();
    }
  }
  if (!first) return std::nullopt;
  // Time has passed since the evaluation (the status write): measure the earliest pod again from now, and when
  // its moment is already behind us, come back at once (upstream falls back to 0).
  if (auto updated = nextPodAvailabilityCheck(*first, minReadySeconds, clock.wallNow())) return updated;
  return Clock::Duration::zero();
}

namespace {

// patchMergeKey of PodStatus's lists (k8s.io/api/core/v1 types.go); lists without one are replaced whole.
const char* podStatusMergeKey(const std::string& field) {
  if (field == "conditions") return "type";
  if (field == "podIPs" || field == "hostIPs") return "ip";
  if (field == "resourceClaimStatuses") return "name";
  return nullptr;
}

nlohmann::json diffObjects(const nlohmann::json& from, const nlohmann::json& to);

// A merge-keyed list: the elements added or changed (changed ones as their own diff plus the key), deleted ones
// as {"$patch": "delete"}, and the new order.
void diffKeyedList(const std::string& field, const std::string& mk, const nlohmann::json& from,
                   const nlohmann::json& to, nlohmann::json& out) {
  auto find = [&](const nlohmann::json& list, const nlohmann::json& key) -> const nlohmann::json* {
    for (const auto& e : list)
      if (e.is_object() && e.contains(mk) && e[mk] == key) return &e;
    return nullptr;
  };
  nlohmann::json changes = nlohmann::json::array(), order = nlohmann::json::array();
  for (const auto& e : to) {
    if (!e.is_object() || !e.contains(mk)) continue;
    order.push_back({{mk, e[mk]}});
    const nlohmann::json* old = find(from, e[mk]);
    if (!old) {
      changes.push_back(e);
    } else if (*old != e) {
      nlohmann::json d = diffObjects(*old, e);
      d[mk] = e[mk];
      changes.push_back(std::move(d));
    }
  }
  for (const auto& e : from)
    if (e.is_object() && e.contains(mk) && !find(to, e[mk])) changes.push_back({{mk, e[mk]}, {"$patch", "delete"}});
  if (changes.empty()) return;
  out[field] = std::move(changes);
  out["$setElementOrder/" + field] = std::move(order);
}

nlohmann::json diffObjects(const nlohmann::json& from, const nlohmann::json& to) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : to.items()) {
    auto it = from.find(k);
    if (it == from.end()) {
      out[k] = v;
    } else if (*it == v) {
      continue;
    } else if (it->is_object() && v.is_object()) {
      out[k] = diffObjects(*it, v);
    } else if (const char* mk = podStatusMergeKey(k); mk && it->is_array() && v.is_array()) {
      diffKeyedList(k, mk, *it, v, out);
    } else {
      out[k] = v;
    }
  }
  for (const auto& [k, v] : from.items())
    if (!to.contains(k)) out[k] = nullptr;
  return out;
}

nlohmann::json statusJson(const api::core::v1::PodStatus& st) {
  Pod p;
  p.status = st;
  auto j = nlohmann::json::parse(api::core::v1::toJson(p), nullptr, false);
  return j.is_object() && j.contains("status") ? j["status"] : nlohmann::json::object();
}

}  // namespace

std::optional<std::string> podStatusPatch(const std::string& podUID, const api::core::v1::PodStatus& oldStatus,
                                          const api::core::v1::PodStatus& newStatus) {
  nlohmann::json status = diffObjects(statusJson(oldStatus), statusJson(newStatus));
  if (status.empty()) return std::nullopt;
  return nlohmann::json({{"metadata", {{"uid", podUID}}}, {"status", std::move(status)}}).dump();
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

// floor(log2(now - t)) with the age in nanoseconds from an unrounded now, -1 when not in the past (upstream
// logarithmicRankDiff's terms).
int64_t logRank(api::Time t, WallTime now) {
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - toWallTime(t)).count();
  if (ns <= 0) return -1;
  return static_cast<int64_t>(std::log2(static_cast<double>(ns)));
}

// Whether a goes before b; ties fall through to the next criterion.
std::optional<bool> compareTimes(api::Time ta, api::Time tb, const std::string& uidA, const std::string& uidB,
                                 const std::optional<WallTime>& now) {
  if (ta == tb) return std::nullopt;
  if (!now || ta.isZero() || tb.isZero()) {
    if (ta.isZero() || tb.isZero()) return ta.isZero();
    return ta > tb;  // afterOrZero
  }
  int64_t diff = logRank(ta, *now) - logRank(tb, *now);
  if (diff == 0) return uidA < uidB;
  return diff < 0;
}

// costAndRank: ActivePodsWithRanks (deletion cost, then rank); without, the plain ActivePods order.
bool lessForDeletion(const RankedPod& a, const RankedPod& b, const std::optional<WallTime>& now,
                     bool costAndRank = true) {
  const Pod& pa = *a.pod;
  const Pod& pb = *b.pod;
  if (pa.spec.nodeName != pb.spec.nodeName && (pa.spec.nodeName.empty() || pb.spec.nodeName.empty()))
    return pa.spec.nodeName.empty();
  if (phaseOrdinal(pa.status.phase) != phaseOrdinal(pb.status.phase))
    return phaseOrdinal(pa.status.phase) < phaseOrdinal(pb.status.phase);
  const bool ra = isPodReady(pa), rb = isPodReady(pb);
  if (ra != rb) return !ra;
  if (costAndRank) {
    if (int32_t ca = deletionCost(pa), cb = deletionCost(pb); ca != cb) return ca < cb;
    if (a.rank != b.rank) return a.rank > b.rank;
  }
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

void sortPodsForDeletion(std::vector<RankedPod>& pods, std::optional<WallTime> now) {
  std::stable_sort(pods.begin(), pods.end(),
                   [now](const RankedPod& a, const RankedPod& b) { return lessForDeletion(a, b, now); });
}

void sortActivePods(std::vector<PodPtr>& pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
    return lessForDeletion({a, 0}, {b, 0}, std::nullopt, /*costAndRank=*/false);
  });
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
                       const std::string& objectUID, const std::vector<std::string>& finalizers) {
  nlohmann::json ref = {{"apiVersion", apiVersion}, {"kind", kind},       {"name", owner.name},
                        {"uid", owner.uid},         {"controller", true}, {"blockOwnerDeletion", true}};
  nlohmann::json md = {{"ownerReferences", nlohmann::json::array({ref})}, {"uid", objectUID}};
  if (!finalizers.empty()) md["finalizers"] = finalizers;
  return nlohmann::json({{"metadata", md}}).dump();
}

std::string releasePatch(const std::string& ownerUID, const std::string& objectUID,
                         const std::vector<std::string>& finalizers) {
  nlohmann::json del = {{"$patch", "delete"}, {"uid", ownerUID}};
  nlohmann::json md = {{"ownerReferences", nlohmann::json::array({del})}, {"uid", objectUID}};
  if (!finalizers.empty()) md["$deleteFromPrimitiveList/finalizers"] = finalizers;
  return nlohmann::json({{"metadata", md}}).dump();
}

}  // namespace kcm::controllers
