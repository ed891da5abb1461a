#include "controllers/disruption/disruption_controller.h"

#include <algorithm>
#include <map>

#include "api/gen/apps_v1_json.h"
#include "api/gen/autoscaling_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/policy_v1_json.h"
#include "api/support/labels.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/util/controller_utils.h"
#include "controllers/util/node_util.h"

namespace kcm::controllers::disruption {
using api::meta::v1::OwnerReference;
using std::chrono::system_clock;

namespace {

constexpr const char* kDisruptionAllowedCondition = "DisruptionAllowed";
constexpr const char* kSyncFailedReason = "SyncFailed";
constexpr const char* kSufficientPodsReason = "SufficientPods";
constexpr const char* kInsufficientPodsReason = "InsufficientPods";

client::ObjectReference refOf(const char* kind, const char* apiVersion, const api::meta::v1::ObjectMeta& m) {
  return {kind, apiVersion, m.namespace_, m.name, m.uid, m.resourceVersion, ""};
}

std::string keyOf(const api::meta::v1::ObjectMeta& m) { return m.namespace_ + "/" + m.name; }

api::Time toTime(system_clock::time_point t) {
  return api::Time::fromUnix(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

// schema.ParseGroupVersion: "" and "v1" are the core group; "g/v"; anything else is an error.
Result<std::pair<std::string, std::string>> parseGroupVersion(const std::string& apiVersion) {
  if (apiVersion.empty()) return std::pair<std::string, std::string>{"", ""};
  const auto slash = apiVersion.find('/');
  if (slash == std::string::npos) return std::pair<std::string, std::string>{"", apiVersion};
  if (apiVersion.find('/', slash + 1) != std::string::npos)
    return Status(StatusCode::kInvalidArgument, "unexpected GroupVersion string: " + apiVersion);
  return std::pair<std::string, std::string>{apiVersion.substr(0, slash), apiVersion.substr(slash + 1)};
}

// verifyGroupKind
Result<bool> verifyGroupKind(const OwnerReference& ref, const std::string& kind, std::vector<std::string> groups) {
  auto gv = parseGroupVersion(ref.apiVersion);
  if (!gv.ok()) return gv.status();
  if (ref.kind != kind) return false;
  return std::find(groups.begin(), groups.end(), gv->first) != groups.end();
}

// meta.SetStatusCondition
void setStatusCondition(std::vector<api::meta::v1::Condition>& conds, api::meta::v1::Condition c, api::Time now) {
  for (auto& old : conds) {
    if (old.type != c.type) continue;
    if (old.status != c.status) old.lastTransitionTime = c.lastTransitionTime.isZero() ? now : c.lastTransitionTime;
    old.status = c.status;
    old.reason = c.reason;
    old.message = c.message;
    old.observedGeneration = c.observedGeneration;
    return;
  }
  if (c.lastTransitionTime.isZero()) c.lastTransitionTime = now;
  conds.push_back(std::move(c));
}

const api::meta::v1::Condition* findCondition(const std::vector<api::meta::v1::Condition>& conds,
                                              const std::string& type) {
  for (const auto& c : conds)
    if (c.type == type) return &c;
  return nullptr;
}

// pdbhelper.UpdateDisruptionAllowedCondition
void updateDisruptionAllowedCondition(PodDisruptionBudget& pdb, api::Time now) {
  const bool allowed = pdb.status.disruptionsAllowed > 0;
  api::meta::v1::Condition c;
  c.type = kDisruptionAllowedCondition;
  c.reason = allowed ? kSufficientPodsReason : kInsufficientPodsReason;
  c.status = allowed ? "True" : "False";
  c.observedGeneration = pdb.status.observedGeneration;
  setStatusCondition(pdb.status.conditions, std::move(c), now);
}

// pdbhelper.ConditionsAreUpToDate
bool conditionsAreUpToDate(const PodDisruptionBudget& pdb) {
  const auto* c = findCondition(pdb.status.conditions, kDisruptionAllowedCondition);
  if (!c || pdb.status.observedGeneration != pdb.metadata.generation) return false;
  if (pdb.status.disruptionsAllowed > 0) return c->status == "True" && c->reason == kSufficientPodsReason;
  return c->status == "False" && c->reason == kInsufficientPodsReason;
}

// intstr.GetScaledValueFromIntOrPercent with upstream's error text.
Result<int> scaled(const api::IntOrString& v, int total) {
  auto r = api::getScaledValueFromIntOrPercent(v, total, true);
  if (!r) {
    if (v.isString && !v.strVal.empty() && v.strVal.back() == '%')
      return Status(StatusCode::kInvalidArgument, "invalid value \"" + v.strVal + "\"");
    return Status(StatusCode::kInvalidArgument, "invalid value for IntOrString: invalid type: string is not a percentage");
  }
  return *r;
}

std::string groupResource(const client::APIResourceInfo& r) {
  return r.group.empty() ? r.resource : r.resource + "." + r.group;
}

bool isTerminalPhase(const std::string& phase) { return phase == "Succeeded" || phase == "Failed"; }

}  // namespace

std::string labelSelectorString(const api::meta::v1::LabelSelector* s) {
  if (!s) return "nil";
  std::string exprs = "[]LabelSelectorRequirement{";
  for (const auto& e : s->matchExpressions) {
    std::string values = "[";
    for (size_t i = 0; i < e.values.size(); ++i) values += (i ? " " : "") + e.values[i];
    exprs += "LabelSelectorRequirement{Key:" + e.key + ",Operator:" + e.operator_ + ",Values:" + values + "],},";
  }
  exprs += "}";
  std::vector<std::pair<std::string, std::string>> labels(s->matchLabels.begin(), s->matchLabels.end());
  std::sort(labels.begin(), labels.end());
  std::string m = "map[string]string{";
  for (const auto& [k, v] : labels) m += k + ": " + v + ",";
  m += "}";
  return "&LabelSelector{MatchLabels:" + m + ",MatchExpressions:" + exprs + ",}";
}

DisruptionController::DisruptionController(std::shared_ptr<client::RestClient> client, Informers informers,
                                           std::shared_ptr<client::DiscoveryClient> discovery,
                                           std::shared_ptr<client::EventRecorder> recorder, Clock& clock,
                                           Clock::Duration stalePodDisruptionTimeout)
    : client_(std::move(client)), inf_(informers), discovery_(std::move(discovery)), recorder_(std::move(recorder)),
      clock_(clock), stalePodDisruptionTimeout_(stalePodDisruptionTimeout),
      base_("disruption", [this](const std::string& key) { return sync(key); }, clock),
      recheck_("disruption_recheck",
               [this](const std::string& key) {
                 base_.queue().addRateLimited(key);
                 return runtime::SyncResult::ok();
               },
               clock),
      stale_("stale_pod_disruption", [this](const std::string& key) { return syncStalePodDisruption(key); }, clock) {
  informers::EventHandler<PodDisruptionBudget> ph;
  ph.onAdd = [this](const auto& p) { base_.enqueueObject(*p); };
  ph.onUpdate = [this](const auto&, const auto& p) { base_.enqueueObject(*p); };
  ph.onDelete = [this](const auto& p, bool) { base_.enqueueObject(*p); };
  registrations_.push_back(inf_.pdbs.addEventHandler(ph));
  informers::EventHandler<Pod> podh;
  podh.onAdd = [this](const auto& p) { onPod(*p, false); };
  podh.onUpdate = [this](const auto&, const auto& p) { onPod(*p, false); };
  podh.onDelete = [this](const auto& p, bool) { onPod(*p, true); };
  registrations_.push_back(inf_.pods.addEventHandler(podh));
}

void DisruptionController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting disruption controller\"");
  auto synced = [this] {
    return inf_.pods.hasSynced() && inf_.pdbs.hasSynced() && inf_.rcs.hasSynced() && inf_.rss.hasSynced() &&
           inf_.deployments.hasSynced() && inf_.statefulSets.hasSynced();
  };
  base_.start(workers, stop, {synced});
  recheck_.start(1, stop, {synced});
  stale_.start(1, stop, {synced});
}

void DisruptionController::onPod(const Pod& pod, bool deleted) {
  if (auto pdb = getPdbForPod(pod)) base_.enqueueObject(*pdb);
  if (deleted) return;
  if (auto after = staleDisruptionCondition(pod)) {
    stale_.enqueueAfter(keyOf(pod.metadata), *after);
    KLOG_V(4, "\"Enqueued pod to cleanup stale DisruptionTarget condition\" pod=" + log::quote(keyOf(pod.metadata)));
  }
}

std::shared_ptr<const PodDisruptionBudget> DisruptionController::getPdbForPod(const Pod& pod) {
  std::vector<std::shared_ptr<const PodDisruptionBudget>> matching;
  for (const auto& pdb : inf_.pdbs.store().byIndex(informers::kNamespaceIndex, pod.metadata.namespace_)) {
    if (!pdb->spec.selector) continue;  // a nil selector selects nothing
    auto m = api::labelSelectorMatches(*pdb->spec.selector, pod.metadata.labels);
    if (m.ok() && *m) matching.push_back(pdb);
  }
  if (matching.empty()) return nullptr;
  if (matching.size() > 1) {
    const std::string msg = "Pod \"" + pod.metadata.namespace_ + "\"/\"" + pod.metadata.name +
                            "\" matches multiple PodDisruptionBudgets.  Chose \"" + matching[0]->metadata.name +
                            "\" arbitrarily.";
    KLOG_INFO("\"" + msg + "\"");
    recorder_->event(refOf("Pod", "v1", pod.metadata), client::kEventTypeWarning, "MultiplePodDisruptionBudgets", msg);
  }
  return matching[0];
}

Result<std::vector<std::shared_ptr<const Pod>>> DisruptionController::getPodsForPdb(
    const PodDisruptionBudget& pdb) const {
  std::vector<std::shared_ptr<const Pod>> out;
  if (!pdb.spec.selector) return out;
  for (const auto& p : inf_.pods.store().byIndex(informers::kNamespaceIndex, pdb.metadata.namespace_)) {
    auto m = api::labelSelectorMatches(*pdb.spec.selector, p->metadata.labels);
    if (!m.ok()) return m.status();
    if (*m) out.push_back(p);
  }
  return out;
}

runtime::SyncResult DisruptionController::sync(const std::string& key) {
  auto pdb = inf_.pdbs.store().get(key);
  if (!pdb) {
    KLOG_V(4, "\"podDisruptionBudget has been deleted\" key=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  Status st = trySync(*pdb);
  if (st.code() == StatusCode::kConflict) return runtime::SyncResult::error(st);
  if (!st.ok()) {
    KLOG_ERROR("\"Failed to sync PDB\" err=" + log::quote(st.message()) + " podDisruptionBudget=" + log::quote(key));
    Status fs = failSafe(*pdb, st);
    if (!fs.ok()) return runtime::SyncResult::error(fs);
  }
  return runtime::SyncResult::ok();
}

Status DisruptionController::trySync(const PodDisruptionBudget& pdb) {
  const auto ref = refOf("PodDisruptionBudget", "policy/v1", pdb.metadata);
  auto pods = getPodsForPdb(pdb);
  if (!pods.ok()) {
    recorder_->event(ref, client::kEventTypeWarning, "NoPods", "Failed to get pods: " + pods.status().message());
    return pods.status();
  }
  if (pods->empty()) recorder_->event(ref, client::kEventTypeNormal, "NoPods", "No matching pods found");
  auto expected = getExpectedPodCount(pdb, *pods);
  if (!expected.ok()) {
    recorder_->event(ref, client::kEventTypeWarning, "CalculateExpectedPodCountFailed",
                     "Failed to calculate the number of expected pods: " + expected.status().message());
    return expected.status();
  }
  if (!expected->unmanagedPods.empty()) {
    KLOG_V(4, "\"Found unmanaged pods associated with this PDB\" pdb=" + log::quote(keyOf(pdb.metadata)));
    recorder_->event(ref, client::kEventTypeWarning, "UnmanagedPods",
                     "Pods selected by this PodDisruptionBudget (selector: " +
                         labelSelectorString(pdb.spec.selector ? &*pdb.spec.selector : nullptr) +
                         ") were found to be unmanaged. As a result, the status of the PDB cannot be calculated "
                         "correctly, which may result in undefined behavior. To account for these pods please set "
                         "\".spec.minAvailable\" field of the PDB to an integer value.");
  }
  const auto now = clock_.wallNow();
  auto [disrupted, recheckTime] = buildDisruptedPodMap(*pods, pdb, now);
  int32_t currentHealthy = 0;
  for (const auto& p : *pods) {  // countHealthyPods
    if (p->metadata.deletionTimestamp) continue;
    if (auto it = disrupted.find(p->metadata.name);
        it != disrupted.end() && toWallTime(it->second) + kDeletionTimeout > now)
      continue;
    if (isPodReady(*p)) ++currentHealthy;
  }
  Status st = updatePdbStatus(pdb, currentHealthy, expected->desiredHealthy, expected->expectedCount, disrupted);
  if (st.ok() && recheckTime)
    recheck_.enqueueAfter(keyOf(pdb.metadata), std::chrono::duration_cast<Clock::Duration>(*recheckTime - now));
  return st;
}

Result<DisruptionController::Expected> DisruptionController::getExpectedPodCount(
    const PodDisruptionBudget& pdb, const std::vector<std::shared_ptr<const Pod>>& pods) {
  Expected e;
  if (pdb.spec.maxUnavailable) {
    auto count = getExpectedScale(pods, e.unmanagedPods);
    if (!count.ok()) return count.status();
    e.expectedCount = *count;
    auto maxUnavailable = scaled(*pdb.spec.maxUnavailable, e.expectedCount);
    if (!maxUnavailable.ok()) return maxUnavailable.status();
    e.desiredHealthy = std::max<int32_t>(0, e.expectedCount - *maxUnavailable);
  } else if (pdb.spec.minAvailable) {
    if (!pdb.spec.minAvailable->isString) {
      e.desiredHealthy = pdb.spec.minAvailable->intVal;
      e.expectedCount = static_cast<int32_t>(pods.size());
    } else {
      auto count = getExpectedScale(pods, e.unmanagedPods);
      if (!count.ok()) return count.status();
      e.expectedCount = *count;
      auto minAvailable = scaled(*pdb.spec.minAvailable, e.expectedCount);
      if (!minAvailable.ok()) return minAvailable.status();
      e.desiredHealthy = *minAvailable;
    }
  }
  return e;
}

Result<int32_t> DisruptionController::getExpectedScale(const std::vector<std::shared_ptr<const Pod>>& pods,
                                                       std::vector<std::string>& unmanaged) {
  std::map<std::string, int32_t> controllerScale;
  for (const auto& pod : pods) {
    const OwnerReference* ref = getControllerOf(pod->metadata);
    if (!ref) {
      unmanaged.push_back(pod->metadata.name);
      continue;
    }
    if (controllerScale.count(ref->uid)) continue;
    auto found = findController(*ref, pod->metadata.namespace_);
    if (!found.ok()) return found.status();
    if (!*found) return Status(StatusCode::kNotFound, "found no controllers for pod \"" + pod->metadata.name + "\"");
    controllerScale[(*found)->uid] = (*found)->scale;
  }
  int32_t expected = 0;
  for (const auto& [uid, n] : controllerScale) expected += n;
  return expected;
}

// The finders, in upstream's order: ReplicationController, Deployment (through its ReplicaSet), ReplicaSet (not
// owned by a Deployment), StatefulSet, then any scale subresource.
Result<std::optional<DisruptionController::ControllerAndScale>> DisruptionController::findController(
    const OwnerReference& ref, const std::string& ns) {
  using Found = std::optional<ControllerAndScale>;
  auto isRC = verifyGroupKind(ref, "ReplicationController", {""});
  if (!isRC.ok()) return isRC.status();
  if (*isRC) {
    auto rc = inf_.rcs.store().get(ns + "/" + ref.name);
    if (rc && rc->metadata.uid == ref.uid) return Found(ControllerAndScale{rc->metadata.uid, rc->spec.replicas.value_or(1)});
  }
  auto isRS = verifyGroupKind(ref, "ReplicaSet", {"apps", "extensions"});
  if (!isRS.ok()) return isRS.status();
  if (*isRS) {
    auto rs = inf_.rss.store().get(ns + "/" + ref.name);
    if (rs && rs->metadata.uid == ref.uid) {
      const OwnerReference* owner = getControllerOf(rs->metadata);
      if (owner) {  // getPodDeployment
        auto isDeployment = verifyGroupKind(*owner, "Deployment", {"apps", "extensions"});
        if (!isDeployment.ok()) return isDeployment.status();
        if (*isDeployment) {
          auto d = inf_.deployments.store().get(ns + "/" + owner->name);
          if (d && d->metadata.uid == owner->uid)
            return Found(ControllerAndScale{d->metadata.uid, d->spec.replicas.value_or(1)});
        }
      }
      if (!owner || owner->kind != "Deployment")  // getPodReplicaSet
        return Found(ControllerAndScale{rs->metadata.uid, rs->spec.replicas.value_or(1)});
    }
  }
  auto isSS = verifyGroupKind(ref, "StatefulSet", {"apps"});
  if (!isSS.ok()) return isSS.status();
  if (*isSS) {
    auto ss = inf_.statefulSets.store().get(ns + "/" + ref.name);
    if (ss && ss->metadata.uid == ref.uid) return Found(ControllerAndScale{ss->metadata.uid, ss->spec.replicas.value_or(1)});
  }
  return getScaleController(ref, ns);
}

Result<std::optional<DisruptionController::ControllerAndScale>> DisruptionController::getScaleController(
    const OwnerReference& ref, const std::string& ns) {
  auto gv = parseGroupVersion(ref.apiVersion);
  if (!gv.ok()) return gv.status();
  auto mapping = discovery_->resourceFor(gv->first, gv->second, ref.kind);
  if (!mapping.ok()) {
    if (mapping.status().code() == StatusCode::kNotFound)  // meta.NoKindMatchError
      return Status(StatusCode::kNotFound, "no matches for kind \"" + ref.kind + "\" in version \"" +
                                               (gv->first.empty() ? gv->second : gv->first + "/" + gv->second) + "\"");
    return mapping.status();
  }
  client::Request req;
  req.path = client::resourcePath(mapping->group, mapping->version, mapping->resource, ns, ref.name, "scale");
  auto scale = client::decodeResponse<api::autoscaling::v1::Scale>(client_->send(req));
  if (!scale.ok()) {
    if (scale.status().code() != StatusCode::kNotFound) return scale.status();
    const auto& subs = mapping->subresources;  // implementsScale
    if (std::find(subs.begin(), subs.end(), "scale") == subs.end())
      return Status(StatusCode::kInvalidArgument, groupResource(*mapping) + " does not implement the scale subresource");
    return std::optional<ControllerAndScale>();
  }
  if (scale->metadata.uid != ref.uid) return std::optional<ControllerAndScale>();
  return std::optional<ControllerAndScale>(ControllerAndScale{scale->metadata.uid, scale->spec.replicas});
}

std::pair<api::StringMap<api::Time>, std::optional<system_clock::time_point>> DisruptionController::buildDisruptedPodMap(
    const std::vector<std::shared_ptr<const Pod>>& pods, const PodDisruptionBudget& pdb, system_clock::time_point now) {
  api::StringMap<api::Time> result;
  std::optional<system_clock::time_point> recheck;
  const auto& disrupted = pdb.status.disruptedPods;
  if (disrupted.empty()) return {result, recheck};
  for (const auto& pod : pods) {
    if (pod->metadata.deletionTimestamp) continue;
    auto it = disrupted.find(pod->metadata.name);
    if (it == disrupted.end()) continue;
    const auto expectedDeletion = toWallTime(it->second) + kDeletionTimeout;
    if (expectedDeletion < now) {
      KLOG_V(1, "\"pod was expected to be deleted but it wasn't, updating PDB\" pod=" + log::quote(keyOf(pod->metadata)) +
                    " deletionTime=" + log::quote(it->second.rfc3339()) + " podDisruptionBudget=" +
                    log::quote(keyOf(pdb.metadata)));
      // upstream names the PDB "<namespace>/<namespace>"
      recorder_->event(refOf("Pod", "v1", pod->metadata), client::kEventTypeWarning, "NotDeleted",
                       "Pod was expected by PDB " + pdb.metadata.namespace_ + "/" + pdb.metadata.namespace_ +
                           " to be deleted but it wasn't");
    } else {
      if (!recheck || expectedDeletion < *recheck) recheck = expectedDeletion;
      result[pod->metadata.name] = it->second;
    }
  }
  return {result, recheck};
}

Status DisruptionController::failSafe(const PodDisruptionBudget& pdb, const Status& err) {
  PodDisruptionBudget p = pdb;
  p.status.disruptionsAllowed = 0;
  api::meta::v1::Condition c;
  c.type = kDisruptionAllowedCondition;
  c.status = "False";
  c.reason = kSyncFailedReason;
  c.message = err.message();
  c.observedGeneration = p.status.observedGeneration;
  setStatusCondition(p.status.conditions, std::move(c), toTime(clock_.wallNow()));
  auto r = client::updateStatus(*client_, p);
  return r.ok() ? Status::Ok() : r.status();
}

Status DisruptionController::updatePdbStatus(const PodDisruptionBudget& pdb, int32_t currentHealthy,
                                             int32_t desiredHealthy, int32_t expectedCount,
                                             const api::StringMap<api::Time>& disruptedPods) {
  int32_t disruptionsAllowed = currentHealthy - desiredHealthy;
  if (expectedCount <= 0 || disruptionsAllowed <= 0) disruptionsAllowed = 0;
  const auto& s = pdb.status;
  if (s.currentHealthy == currentHealthy && s.desiredHealthy == desiredHealthy && s.expectedPods == expectedCount &&
      s.disruptionsAllowed == disruptionsAllowed && s.disruptedPods == disruptedPods &&
      s.observedGeneration == pdb.metadata.generation && conditionsAreUpToDate(pdb))
    return Status::Ok();
  PodDisruptionBudget p = pdb;
  p.status.currentHealthy = currentHealthy;
  p.status.desiredHealthy = desiredHealthy;
  p.status.expectedPods = expectedCount;
  p.status.disruptionsAllowed = disruptionsAllowed;
  p.status.disruptedPods = disruptedPods;
  p.status.observedGeneration = pdb.metadata.generation;
  updateDisruptionAllowedCondition(p, toTime(clock_.wallNow()));
  auto r = client::updateStatus(*client_, p);
  return r.ok() ? Status::Ok() : r.status();
}

std::optional<Clock::Duration> DisruptionController::staleDisruptionCondition(const Pod& pod) const {
  if (pod.metadata.deletionTimestamp) return std::nullopt;
  const api::core::v1::PodCondition* cond = nullptr;
  for (const auto& c : pod.status.conditions)
    if (c.type == "DisruptionTarget") cond = &c;
  if (!cond || cond->status != "True" || cond->reason == "TerminationByKubelet" || isTerminalPhase(pod.status.phase))
    return std::nullopt;
  const auto since = cond->lastTransitionTime.isZero()
                         ? clock_.wallNow() - system_clock::time_point{}
                         : clock_.wallNow() - toWallTime(cond->lastTransitionTime);
  const auto wait = stalePodDisruptionTimeout_ - std::chrono::duration_cast<Clock::Duration>(since);
  return wait < Clock::Duration::zero() ? Clock::Duration::zero() : wait;
}

runtime::SyncResult DisruptionController::syncStalePodDisruption(const std::string& key) {
  auto pod = inf_.pods.store().get(key);
  if (!pod) {
    KLOG_V(4, "\"Skipping clearing DisruptionTarget condition because pod was deleted\" pod=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  auto after = staleDisruptionCondition(*pod);
  if (!after) return runtime::SyncResult::ok();
  if (*after > Clock::Duration::zero()) {
    stale_.enqueueAfter(key, *after);
    return runtime::SyncResult::ok();
  }
  Pod p = *pod;
  api::core::v1::PodCondition c;
  c.type = "DisruptionTarget";
  c.status = "False";
  c.observedGeneration = p.metadata.generation;  // PodObservedGenerationTracking is GA at the pin
  if (!updatePodCondition(p.status, c, toTime(clock_.wallNow()))) return runtime::SyncResult::ok();
  auto r = client::updateStatus(*client_, p);
  if (!r.ok()) return runtime::SyncResult::error(r.status());
  KLOG_V(2, "\"Reset stale DisruptionTarget condition to False\" pod=" + log::quote(key));
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::disruption
