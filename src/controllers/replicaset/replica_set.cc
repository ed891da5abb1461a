#include "controllers/replicaset/replica_set.h"

#include "base/executor.h"

#include <future>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/labels.h"
#include "api/support/wall_time.h"
#include "base/duration.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Pod;
using api::meta::v1::OwnerReference;

namespace {
constexpr const char* kControllerUIDIndex = "controllerUID";
constexpr const char* kReplicaFailure = "ReplicaFailure";
constexpr int kStatusUpdateRetries = 1;

// A plain histogram, registered by the ReplicaSet controller only (not the ReplicationController manager).
metrics::Histogram& sortingDeletionAgeRatio() {
  static auto& h = metrics::Registry::global().histogram(
      "replicaset_controller_sorting_deletion_age_ratio",
      "The ratio of chosen deleted pod's ages to the current youngest pod's age (at the time). Should be <2. The "
      "intent of this metric is to measure the rough efficacy of the sorting (and deletion) of pods when a "
      "replicaset scales down. This only considers Ready pods when calculating and reporting.",
      metrics::exponentialBuckets(0.25, 2, 6));
  return h;
}

// upstream reportSortingDeletionAgeRatioMetric: each Ready pod chosen for deletion, its age over the youngest
// Ready pod's, in whole milliseconds divided as integers (as upstream does).
void reportSortingDeletionAgeRatioMetric(const std::vector<RankedPod>& sorted, size_t diff, WallTime now) {
  std::optional<WallTime> youngest;
  for (const auto& r : sorted) {
    if (!isPodReady(*r.pod) || r.pod->metadata.creationTimestamp.isZero()) continue;
    WallTime t = toWallTime(r.pod->metadata.creationTimestamp);
    if (!youngest || t > *youngest) youngest = t;
  }
  if (!youngest) return;
  auto ms = [&](WallTime t) { return std::chrono::duration_cast<std::chrono::milliseconds>(now - t).count(); };
  const int64_t youngestAge = ms(*youngest);
  if (youngestAge <= 0) return;
  for (size_t i = 0; i < diff && i < sorted.size(); ++i) {
    const auto& pod = *sorted[i].pod;
    if (!isPodReady(pod) || pod.metadata.creationTimestamp.isZero()) continue;
    sortingDeletionAgeRatio().observe(static_cast<double>(ms(toWallTime(pod.metadata.creationTimestamp)) / youngestAge));
  }
}
}  // namespace

Result<LabelMatcher> ReplicaSetKind::selector(const Object& o) {
  if (!o.spec.selector) return LabelMatcher([](const Labels&) { return false; });  // nil selector: nothing
  auto sel = std::make_shared<api::meta::v1::LabelSelector>(*o.spec.selector);
  // Validate once: a bad operator is a user error, not a per-pod one.
  if (auto probe = api::labelSelectorMatches(*sel, {}); !probe.ok()) return probe.status();
  return LabelMatcher([sel](const Labels& l) {
    auto r = api::labelSelectorMatches(*sel, l);
    return r.ok() && *r;
  });
}

Result<LabelMatcher> ReplicationControllerKind::selector(const Object& o) {
  auto want = o.spec.selector;
  return LabelMatcher([want](const Labels& l) {
    for (const auto& [k, v] : want) {
      auto it = l.find(k);
      if (it == l.end() || it->second != v) return false;
    }
    return true;
  });
}

const api::core::v1::PodTemplateSpec& ReplicationControllerKind::podTemplate(const Object& o) {
  static const api::core::v1::PodTemplateSpec kEmpty;
  return o.spec.template_ ? *o.spec.template_ : kEmpty;
}

template <class K>
ReplicaSetControllerT<K>::ReplicaSetControllerT(std::shared_ptr<client::RestClient> client,
                                                std::shared_ptr<client::EventRecorder> recorder,
                                                informers::SharedInformer<Object>& owners,
                                                informers::SharedInformer<Pod>& pods, ReplicaSetControllerOptions opts,
                                                Clock& clock)
    : client_(client), clock_(clock), owners_(owners), pods_(pods), opts_(opts),
      podControl_(client, std::move(recorder)), expectations_(clock),
      base_(K::kQueueName, [this](const std::string& key) { return syncReplicaSet(key); }, clock) {
  if constexpr (K::kTerminatingReplicas) sortingDeletionAgeRatio();  // ReplicaSets only, as upstream
  if constexpr (!K::kTerminatingReplicas) {
    opts_.staleConsistency = false;
    opts_.terminatingReplicas = false;
  }
  if (opts_.staleConsistency)
    consistency_.enable({{"pods", [this] { return pods_.lastSyncResourceVersion(); }},
                         {"owners", [this] { return owners_.lastSyncResourceVersion(); }}});
  owners_.store().addIndexer(kControllerUIDIndex, [](const Object& o) {
    const OwnerReference* r = getControllerOf(o.metadata);
    return r ? std::vector<std::string>{r->uid} : std::vector<std::string>{};
  });
  pods_.store().addIndexer(kPodControllerIndex, podControllerIndexKeys);

  informers::EventHandler<Object> oh;
  oh.onAdd = [this](const ObjectPtr& o) {
    // The controller's logger name, as upstream's handlers carry it.
    KLOG_V(4, std::string("\"Adding\" logger=\"") +
                  (std::string(K::kKind) == "ReplicaSet" ? "replicaset-controller" : "replicationcontroller-controller") +
                  "\" replicaSet=" + log::quote(key(o->metadata)));
    base_.enqueue(key(o->metadata));
  };
  oh.onUpdate = [this](const ObjectPtr& oldO, const ObjectPtr& cur) {
    if (oldO->metadata.uid != cur->metadata.uid) {
      consistency_.clear(key(oldO->metadata), oldO->metadata.uid);
      expectations_.deleteExpectations(key(oldO->metadata));
    }
    base_.enqueue(key(cur->metadata));
  };
  oh.onDelete = [this](const ObjectPtr& o, bool) {
    consistency_.clear(key(o->metadata), o->metadata.uid);
    expectations_.deleteExpectations(key(o->metadata));
    base_.enqueue(key(o->metadata));
  };
  registrations_.push_back(owners_.addEventHandler(oh));

  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const PodPtr& p) { addPod(p); };
  ph.onUpdate = [this](const PodPtr& o, const PodPtr& c) { updatePod(o, c); };
  ph.onDelete = [this](const PodPtr& p, bool) { deletePod(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));
}

template <class K>
void ReplicaSetControllerT<K>::run(int workers, std::stop_token stop) {
  base_.start(workers, stop, {[this] { return owners_.hasSynced(); }, [this] { return pods_.hasSynced(); }});
}

template <class K>
client::ObjectReference ReplicaSetControllerT<K>::ref(const Object& rs) const {
  return {K::kKind, K::kAPIVersion, rs.metadata.namespace_, rs.metadata.name, rs.metadata.uid,
          rs.metadata.resourceVersion, ""};
}

template <class K>
typename ReplicaSetControllerT<K>::ObjectPtr ReplicaSetControllerT<K>::resolveControllerRef(
    const std::string& ns, const OwnerReference& r) {
  if (r.kind != K::kKind) return nullptr;
  auto rs = owners_.store().get(ns, r.name);
  if (!rs || rs->metadata.uid != r.uid) return nullptr;
  return rs;
}

template <class K>
std::vector<typename ReplicaSetControllerT<K>::ObjectPtr> ReplicaSetControllerT<K>::getPodOwners(const Pod& pod) {
  std::vector<ObjectPtr> out;
  for (const auto& rs : owners_.store().byIndex(informers::kNamespaceIndex, pod.metadata.namespace_)) {
    if constexpr (std::is_same_v<K, ReplicationControllerKind>) {
      if (rs->spec.selector.empty()) continue;
    } else {
      if (!rs->spec.selector || (rs->spec.selector->matchLabels.empty() && rs->spec.selector->matchExpressions.empty()))
        continue;
    }
    auto sel = K::selector(*rs);
    if (sel.ok() && (*sel)(pod.metadata.labels)) out.push_back(rs);
  }
  if (out.size() > 1)
    KLOG_ERROR("\"user error! more than one " + std::string(K::kKind) + " is selecting pods with labels\" pod=\"" +
               podKey(pod) + "\"");
  return out;
}

template <class K>
void ReplicaSetControllerT<K>::addPod(const PodPtr& pod) {
  if (pod->metadata.deletionTimestamp) {
    deletePod(*pod);
    return;
  }
  if (const OwnerReference* r = getControllerOf(pod->metadata)) {
    auto rs = resolveControllerRef(pod->metadata.namespace_, *r);
    if (!rs) return;
    expectations_.creationObserved(key(rs->metadata));
    base_.enqueue(key(rs->metadata));
    return;
  }
  for (const auto& rs : getPodOwners(*pod)) base_.enqueue(key(rs->metadata));
}

template <class K>
void ReplicaSetControllerT<K>::updatePod(const PodPtr& oldPod, const PodPtr& curPod) {
  if (curPod->metadata.resourceVersion == oldPod->metadata.resourceVersion) return;
  const bool labelChanged = curPod->metadata.labels != oldPod->metadata.labels;
  if (curPod->metadata.deletionTimestamp) {
    deletePod(*curPod);
    if (labelChanged) deletePod(*oldPod);
    return;
  }
  const OwnerReference* cur = getControllerOf(curPod->metadata);
  const OwnerReference* old = getControllerOf(oldPod->metadata);
  const bool refChanged = (cur == nullptr) != (old == nullptr) ||
                          (cur && (cur->uid != old->uid || cur->name != old->name || cur->kind != old->kind));
  if (refChanged && old)
    if (auto rs = resolveControllerRef(oldPod->metadata.namespace_, *old)) base_.enqueue(key(rs->metadata));
  if (cur) {
    auto rs = resolveControllerRef(curPod->metadata.namespace_, *cur);
    if (!rs) return;
    base_.enqueue(key(rs->metadata));
    if (!isPodReady(*oldPod) && isPodReady(*curPod) && rs->spec.minReadySeconds > 0)
      base_.enqueueAfter(key(rs->metadata), std::chrono::seconds(rs->spec.minReadySeconds));
    return;
  }
  if (labelChanged || refChanged)
    for (const auto& rs : getPodOwners(*curPod)) base_.enqueue(key(rs->metadata));
}

template <class K>
void ReplicaSetControllerT<K>::deletePod(const Pod& pod) {
  const OwnerReference* r = getControllerOf(pod.metadata);
  if (!r) return;
  auto rs = resolveControllerRef(pod.metadata.namespace_, *r);
  if (!rs) return;
  expectations_.deletionObserved(key(rs->metadata), podKey(pod));
  base_.enqueue(key(rs->metadata));
}

template <class K>
std::vector<PodPtr> ReplicaSetControllerT<K>::indirectlyRelatedPods(const Object& rs) {
  std::vector<PodPtr> out;
  const OwnerReference* owner = getControllerOf(rs.metadata);
  if (!owner) return out;
  std::set<std::string> seen;
  for (const auto& related : owners_.store().byIndex(kControllerUIDIndex, owner->uid)) {
    auto sel = K::selector(*related);
    if (!sel.ok()) continue;
    for (const auto& p : pods_.store().byIndex(informers::kNamespaceIndex, related->metadata.namespace_))
      if ((*sel)(p->metadata.labels) && seen.insert(p->metadata.uid).second) out.push_back(p);
  }
  return out;
}

template <class K>
Status ReplicaSetControllerT<K>::manageReplicas(const std::vector<PodPtr>& activePods, const Object& rs) {
  const std::string rsKey = key(rs.metadata);
  int diff = static_cast<int>(activePods.size()) - rs.spec.replicas.value_or(1);
  if (diff < 0) {
    diff = std::min(-diff, opts_.burstReplicas);
    expectations_.expectCreations(rsKey, diff);
    KLOG_V(2, "\"Too few replicas\" replicaSet=\"" + rsKey + "\" need=" + std::to_string(rs.spec.replicas.value_or(1)) +
                  " creating=" + std::to_string(diff));
    const auto controllerRef = newControllerRef(rs.metadata, K::kAPIVersion, K::kKind);
    const auto owner = ref(rs);
    auto [created, err] = slowStartBatch(diff, kSlowStartInitialBatchSize, [&]() -> Status {
      auto pod = podControl_.createPods(rs.metadata.namespace_, K::podTemplate(rs), owner, controllerRef);
      if (!pod.ok()) return isNamespaceTerminating(pod.status()) ? Status::Ok() : pod.status();
      consistency_.wroteAt(rsKey, rs.metadata.uid, "pods", pod->metadata.resourceVersion);
      return Status::Ok();
    });
    if (int skipped = diff - created; skipped > 0) {
      KLOG_V(2, "\"Slow-start failure. Skipping creation of pods, decrementing expectations\" podsSkipped=" +
                    std::to_string(skipped) + " kind=\"" + K::kKind + "\" replicaSet=\"" + rsKey + "\"");
      for (int i = 0; i < skipped; ++i) expectations_.creationObserved(rsKey);
    }
    return err;
  }
  if (diff > 0) {
    diff = std::min(diff, opts_.burstReplicas);
    KLOG_V(2, "\"Too many replicas\" replicaSet=\"" + rsKey + "\" need=" + std::to_string(rs.spec.replicas.value_or(1)) +
                  " deleting=" + std::to_string(diff));
    std::map<std::string, int> podsOnNode;
    for (const auto& p : indirectlyRelatedPods(rs))
      if (isPodActive(*p)) ++podsOnNode[p->spec.nodeName];
    std::vector<RankedPod> ranked;
    for (const auto& p : activePods) ranked.push_back({p, podsOnNode[p->spec.nodeName]});
    if (diff < static_cast<int>(ranked.size())) {
      sortPodsForDeletion(ranked, clock_.wallNow());
      if constexpr (K::kTerminatingReplicas) reportSortingDeletionAgeRatioMetric(ranked, diff, clock_.wallNow());
    }
    ranked.resize(diff);
    std::set<std::string> keys;
    for (const auto& r : ranked) keys.insert(podKey(*r.pod));
    expectations_.expectDeletions(rsKey, keys);
    const auto owner = ref(rs);
    std::vector<Status> results(ranked.size());
    parallelFor(ranked.size(), 16, [&](size_t i) {
      const auto& pod = ranked[i].pod;
      Status s = podControl_.deletePod(rs.metadata.namespace_, pod->metadata.name, owner);
      if (s.ok()) return;
      expectations_.deletionObserved(rsKey, podKey(*pod));
      if (s.code() == StatusCode::kNotFound) return;
      KLOG_V(2, "\"Failed to delete pod, decremented expectations\" pod=\"" + podKey(*pod) + "\"");
      results[i] = s;
    });
    Status first;
    for (auto& s : results)
      if (!s.ok() && first.ok()) first = s;
    return first;
  }
  return Status::Ok();
}

template <class K>
decltype(K::Object::status) ReplicaSetControllerT<K>::calculateStatus(const Object& rs,
                                                                      const std::vector<PodPtr>& active,
                                                                      const std::vector<PodPtr>& terminating,
                                                                      const Status& manageErr, WallTime now) {
  auto s = rs.status;
  int32_t fullyLabeled = 0, ready = 0, available = 0;
  const auto& tmplLabels = K::podTemplate(rs).metadata.labels;
  for (const auto& p : active) {
    bool all = true;
    for (const auto& [k, v] : tmplLabels) {
      auto it = p->metadata.labels.find(k);
      if (it == p->metadata.labels.end() || it->second != v) all = false;
    }
    if (all) ++fullyLabeled;
    if (isPodReady(*p)) {
      ++ready;
      if (isPodAvailable(*p, rs.spec.minReadySeconds, now)) ++available;
    }
  }
  if constexpr (K::kTerminatingReplicas) {
    if (opts_.terminatingReplicas) s.terminatingReplicas = static_cast<int32_t>(terminating.size());
    else s.terminatingReplicas.reset();
  }
  auto failure = std::find_if(s.conditions.begin(), s.conditions.end(),
                              [](const auto& c) { return c.type == kReplicaFailure; });
  if (!manageErr.ok() && failure == s.conditions.end()) {
    int diff = static_cast<int>(active.size()) - rs.spec.replicas.value_or(1);
    typename K::Condition c;
    c.type = kReplicaFailure;
    c.status = "True";
    c.reason = diff < 0 ? "FailedCreate" : diff > 0 ? "FailedDelete" : "";
    c.message = manageErr.message();
    c.lastTransitionTime = api::timeNow(clock_);
    s.conditions.push_back(std::move(c));
  } else if (manageErr.ok() && failure != s.conditions.end()) {
    s.conditions.erase(failure);
  }
  s.replicas = static_cast<int32_t>(active.size());
  s.fullyLabeledReplicas = fullyLabeled;
  s.readyReplicas = ready;
  s.availableReplicas = available;
  return s;
}

template <class K>
Result<typename ReplicaSetControllerT<K>::ObjectPtr> ReplicaSetControllerT<K>::updateStatus(
    const Object& rs, const decltype(Object::status)& newStatus) {
  auto sameConditions = [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].type != b[i].type || a[i].status != b[i].status || a[i].reason != b[i].reason ||
          a[i].message != b[i].message || a[i].lastTransitionTime != b[i].lastTransitionTime)
        return false;
    return true;
  };
  const auto& cur = rs.status;
  bool same = cur.replicas == newStatus.replicas && cur.fullyLabeledReplicas == newStatus.fullyLabeledReplicas &&
              cur.readyReplicas == newStatus.readyReplicas && cur.availableReplicas == newStatus.availableReplicas &&
              rs.metadata.generation == cur.observedGeneration && sameConditions(cur.conditions, newStatus.conditions);
  if constexpr (K::kTerminatingReplicas) same = same && cur.terminatingReplicas == newStatus.terminatingReplicas;
  if (same) return std::make_shared<const Object>(rs);
  // The generation this sync acted on, not the one a retry's fresh read brings: the status must not claim a spec
  // it never reconciled (upstream updateReplicaSetStatus sets it once, before its retry loop).
  auto status = newStatus;
  status.observedGeneration = rs.metadata.generation;
  Object obj = rs;
  Status last;
  for (int i = 0;; ++i) {
    obj.status = status;
    KLOG_V(4, "\"Updating status\" replicaSet=\"" + key(rs.metadata) + "\" replicas=" +
                  std::to_string(newStatus.replicas));
    auto r = client::updateStatus(*client_, obj);
    if (r.ok()) return std::make_shared<const Object>(std::move(r).value());
    last = r.status();
    if (i >= kStatusUpdateRetries) break;
    auto fresh = client::get<Object>(*client_, rs.metadata.namespace_, rs.metadata.name);
    if (!fresh.ok()) return fresh.status();
    obj = std::move(fresh).value();
  }
  return last;
}

template <class K>
runtime::SyncResult ReplicaSetControllerT<K>::syncReplicaSet(const std::string& rsKey) {
  struct Finished {
    const std::string& key;
    std::chrono::steady_clock::time_point began = std::chrono::steady_clock::now();
    ~Finished() {
      KLOG_V(4, "\"Finished syncing\" kind=\"" + std::string(K::kKind) + "\" key=" + log::quote(key) +
                    " duration=" + log::quote(goDuration(std::chrono::steady_clock::now() - began)));
    }
  } finished{rsKey};
  std::string lagging;
  if (Status s = consistency_.ensureReady(rsKey, &lagging); !s.ok()) {
    // Upstream counts the skip by the lagging informer's group and resource, under the ReplicaSet controller's
    // subsystem for both kinds (the replication manager is the same controller).
    const bool owners = lagging == "owners";
    const bool rs = std::string(K::kKind) == "ReplicaSet";
    kcm::metrics::Registry::global()
        .counter("replicaset_controller_stale_sync_skips_total",
                 "Total number of ReplicaSet syncs skipped due to a stale watch cache.",
                 {{"group", owners && rs ? "apps" : ""},
                  {"resource", owners ? (rs ? "replicasets" : "replicationcontrollers") : lagging}})
        .inc();
    return runtime::SyncResult::error(s);
  }
  auto [ns, name] = informers::splitMetaNamespaceKey(rsKey);
  auto rs = owners_.store().get(ns, name);
  if (!rs) {
    KLOG_V(4, "\"deleted\" kind=\"" + std::string(K::kKind) + "\" key=\"" + rsKey + "\"");
    consistency_.clear(rsKey);
    expectations_.deleteExpectations(rsKey);
    return runtime::SyncResult::ok();
  }
  const bool needsSync = expectations_.satisfiedExpectations(rsKey);
  auto selector = K::selector(*rs);
  if (!selector.ok()) {
    KLOG_ERROR("\"error converting pod selector to selector\" key=\"" + rsKey + "\" err=\"" +
               selector.status().message() + "\"");
    return runtime::SyncResult::ok();
  }
  // Pods controlled by this owner plus orphans of its namespace (candidates for adoption).
  std::vector<PodPtr> all = pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, nullptr));
  OwnerReference self = newControllerRef(rs->metadata, K::kAPIVersion, K::kKind);
  for (auto& p : pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, &self))) all.push_back(p);
  std::vector<PodPtr> allActive;
  for (const auto& p : all)
    if (isPodActive(*p)) allActive.push_back(p);

  ControllerRefManager<Pod> cm(rs->metadata, K::kAPIVersion, K::kKind, *selector, [&]() -> Status {
    auto fresh = client::get<Object>(*client_, ns, name);
    if (!fresh.ok()) return fresh.status();
    if (fresh->metadata.uid != rs->metadata.uid)
      return Status(StatusCode::kConflict, "original " + std::string(K::kKind) + " " + rsKey + " is gone: got uid " +
                                               fresh->metadata.uid + ", wanted " + rs->metadata.uid);
    if (fresh->metadata.deletionTimestamp)
      return Status(StatusCode::kConflict,
                    rsKey + " has just been deleted at " + fresh->metadata.deletionTimestamp->rfc3339());
    return Status::Ok();
  }, [this](const std::string& pns, const std::string& pname, const std::string& patch) {
    return podControl_.patchPod(pns, pname, patch);
  });
  auto [active, claimErr] = cm.claim(allActive);
  if (!claimErr.ok()) return runtime::SyncResult::error(claimErr);

  std::vector<PodPtr> terminating;
  if (opts_.terminatingReplicas)
    for (const auto& p : all) {
      const OwnerReference* r = getControllerOf(p->metadata);
      if (isPodTerminating(*p) && r && r->uid == rs->metadata.uid && (*selector)(p->metadata.labels))
        terminating.push_back(p);
    }

  Status manageErr;
  if (needsSync && !rs->metadata.deletionTimestamp) manageErr = manageReplicas(active, *rs);
  const WallTime now = clock_.wallNow();
  auto newStatus = calculateStatus(*rs, active, terminating, manageErr, now);
  auto updated = updateStatus(*rs, newStatus);
  if (!updated.ok()) return runtime::SyncResult::error(updated.status());
  if ((*updated)->metadata.resourceVersion != rs->metadata.resourceVersion)
    consistency_.wroteAt(rsKey, rs->metadata.uid, "owners", (*updated)->metadata.resourceVersion);
  if (!manageErr.ok()) return runtime::SyncResult::error(manageErr);
  const auto& u = **updated;
  if (u.spec.minReadySeconds > 0 && u.status.readyReplicas != u.status.availableReplicas) {
    // minReadySeconds is only the fallback; the check itself may say "now" (zero): the pod's moment passed
    // while the status was written.
    auto next = findMinNextPodAvailabilityCheck(active, u.spec.minReadySeconds, now, clock_);
    return runtime::SyncResult::after(next.value_or(std::chrono::seconds(u.spec.minReadySeconds)));
  }
  return runtime::SyncResult::ok();
}

template class ReplicaSetControllerT<ReplicaSetKind>;
template class ReplicaSetControllerT<ReplicationControllerKind>;

}  // namespace kcm::controllers
