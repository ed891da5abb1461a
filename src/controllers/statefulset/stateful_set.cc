#include "controllers/statefulset/stateful_set.h"

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/labels.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/recheck.h"

namespace kcm::controllers::statefulset {

using api::meta::v1::OwnerReference;

namespace {
constexpr const char* kKind = "StatefulSet";
constexpr const char* kAPIVersion = "apps/v1";

Result<LabelMatcher> selectorOf(const StatefulSet& s) {
  if (!s.spec.selector) return LabelMatcher([](const Labels&) { return false; });
  auto sel = std::make_shared<api::meta::v1::LabelSelector>(*s.spec.selector);
  if (auto probe = api::labelSelectorMatches(*sel, {}); !probe.ok()) return probe.status();
  return LabelMatcher([sel](const Labels& l) {
    auto r = api::labelSelectorMatches(*sel, l);
    return r.ok() && *r;
  });
}
}  // namespace

StatefulSetController::StatefulSetController(std::shared_ptr<client::RestClient> client,
                                             std::shared_ptr<client::EventRecorder> recorder,
                                             informers::SharedInformer<StatefulSet>& sets,
                                             informers::SharedInformer<Pod>& pods,
                                             informers::SharedInformer<PersistentVolumeClaim>& claims,
                                             informers::SharedInformer<ControllerRevision>& revisions,
                                             StatefulSetControllerOptions opts, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), clock_(clock), sets_(sets), pods_(pods),
      claims_(claims), revisions_(revisions), opts_(opts),
      base_("statefulset", [this](const std::string& k) { return sync(k); }, clock) {
  if (opts_.staleConsistency)
    consistency_.enable({{"pods", [this] { return pods_.lastSyncResourceVersion(); }},
                         {"persistentvolumeclaims", [this] { return claims_.lastSyncResourceVersion(); }},
                         {"statefulsets", [this] { return sets_.lastSyncResourceVersion(); }}});
  pods_.store().addIndexer(kPodControllerIndex, podControllerIndexKeys);
  revisions_.store().addIndexer(history::kControllerRevisionControllerIndex,
                                history::controllerRevisionControllerIndexKeys);
  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const PodPtr& p) { addPod(p); };
  ph.onUpdate = [this](const PodPtr& o, const PodPtr& c) { updatePod(o, c); };
  ph.onDelete = [this](const PodPtr& p, bool) { deletePod(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));
  informers::EventHandler<StatefulSet> sh;
  sh.onAdd = [this](const SetPtr& s) { enqueue(*s); };
  sh.onUpdate = [this](const SetPtr&, const SetPtr& c) { enqueue(*c); };
  sh.onDelete = [this](const SetPtr& s, bool) { enqueue(*s); };
  registrations_.push_back(sets_.addEventHandler(sh));
}

void StatefulSetController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting stateful set controller\"");
  base_.start(workers, stop,
              {[this] { return pods_.hasSynced(); }, [this] { return sets_.hasSynced(); },
               [this] { return claims_.hasSynced(); }, [this] { return revisions_.hasSynced(); }});
}

client::ObjectReference StatefulSetController::ref(const StatefulSet& s) const {
  return {kKind, kAPIVersion, s.metadata.namespace_, s.metadata.name, s.metadata.uid, s.metadata.resourceVersion, ""};
}

SetPtr StatefulSetController::resolveControllerRef(const std::string& ns, const OwnerReference& r) {
  if (r.kind != kKind) return nullptr;
  auto s = sets_.store().get(ns, r.name);
  if (!s || s->metadata.uid != r.uid) return nullptr;
  return s;
}

std::vector<SetPtr> StatefulSetController::getStatefulSetsForPod(const Pod& pod) {
  std::vector<SetPtr> out;
  for (const auto& s : sets_.store().byIndex(informers::kNamespaceIndex, pod.metadata.namespace_)) {
    if (!s->spec.selector || (s->spec.selector->matchLabels.empty() && s->spec.selector->matchExpressions.empty()))
      continue;
    auto m = api::labelSelectorMatches(*s->spec.selector, pod.metadata.labels);
    if (m.ok() && *m) out.push_back(s);
  }
  if (out.size() > 1) {
    std::string names;
    for (const auto& s : out) names += (names.empty() ? "" : ", ") + s->metadata.name;
    KLOG_ERROR("\"More than one StatefulSet is selecting pods with labels\" pod=\"" + podKey(pod) + "\" sets=\"[" +
               names + "]\"");
  }
  return out;
}

void StatefulSetController::addPod(const PodPtr& pod) {
  if (pod->metadata.deletionTimestamp) {
    deletePod(*pod);
    return;
  }
  if (const OwnerReference* r = getControllerOf(pod->metadata)) {
    if (auto s = resolveControllerRef(pod->metadata.namespace_, *r)) enqueue(*s);
    return;
  }
  for (const auto& s : getStatefulSetsForPod(*pod)) enqueue(*s);
}

void StatefulSetController::updatePod(const PodPtr& oldPod, const PodPtr& curPod) {
  if (curPod->metadata.resourceVersion == oldPod->metadata.resourceVersion) return;
  const bool labelChanged = curPod->metadata.labels != oldPod->metadata.labels;
  const OwnerReference* cur = getControllerOf(curPod->metadata);
  const OwnerReference* old = getControllerOf(oldPod->metadata);
  const bool refChanged = (cur == nullptr) != (old == nullptr) ||
                          (cur && (cur->uid != old->uid || cur->name != old->name || cur->kind != old->kind ||
                                   cur->apiVersion != old->apiVersion));
  if (refChanged && old)
    if (auto s = resolveControllerRef(oldPod->metadata.namespace_, *old)) enqueue(*s);
  if (cur) {
    auto s = resolveControllerRef(curPod->metadata.namespace_, *cur);
    if (!s) return;
    enqueue(*s);
    if (!isPodReady(*oldPod) && isPodReady(*curPod) && s->spec.minReadySeconds > 0)
      base_.enqueueAfter(key(s->metadata), std::chrono::seconds(s->spec.minReadySeconds));
    return;
  }
  if (labelChanged || refChanged)
    for (const auto& s : getStatefulSetsForPod(*curPod)) enqueue(*s);
}

void StatefulSetController::deletePod(const Pod& pod) {
  const OwnerReference* r = getControllerOf(pod.metadata);
  if (!r) return;
  if (auto s = resolveControllerRef(pod.metadata.namespace_, *r)) enqueue(*s);
}

Result<std::vector<PodPtr>> StatefulSetController::getPodsForStatefulSet(const StatefulSet& set) {
  auto selector = selectorOf(set);
  if (!selector.ok()) return selector.status();
  const std::string& ns = set.metadata.namespace_;
  std::vector<PodPtr> pods = pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, nullptr));
  OwnerReference self = newControllerRef(set.metadata, kAPIVersion, kKind);
  for (auto& p : pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, &self))) pods.push_back(p);
  ControllerRefManager<Pod> cm(
      set.metadata, kAPIVersion, kKind, *selector,
      recheckDeletionTimestamp<StatefulSet>(client_, kKind, ns, set.metadata.name, set.metadata.uid),
      [this](const std::string& pns, const std::string& pname, const std::string& patch) {
        return client::patch<Pod>(*client_, pns, pname, client::PatchType::kStrategicMerge, patch).status();
      });
  cm.setFilter([&set](const Pod& p) { return isMemberOf(set, p); });
  auto [claimed, err] = cm.claim(pods);
  if (!err.ok()) return err;
  return claimed;
}

// upstream realHistory.ListControllerRevisions: the set's revisions and the namespace's orphans that match.
std::vector<RevisionPtr> StatefulSetController::listRevisions(const StatefulSet& set) {
  std::vector<RevisionPtr> out;
  auto selector = selectorOf(set);
  if (!selector.ok()) return out;
  const std::string& ns = set.metadata.namespace_;
  OwnerReference self = newControllerRef(set.metadata, kAPIVersion, kKind);
  for (const auto& k : {history::controllerRevisionControllerIndexKey(ns, &self),
                        history::controllerRevisionControllerIndexKey(ns, nullptr)})
    for (auto& r : revisions_.store().byIndex(history::kControllerRevisionControllerIndex, k))
      if ((*selector)(r->metadata.labels)) out.push_back(r);
  return out;
}

Status StatefulSetController::adoptOrphanRevisions(const StatefulSet& set) {
  std::vector<RevisionPtr> orphans;
  for (const auto& r : listRevisions(set))
    if (!getControllerOf(r->metadata)) orphans.push_back(r);
  if (orphans.empty()) return Status::Ok();
  auto canAdopt = recheckDeletionTimestamp<StatefulSet>(client_, kKind, set.metadata.namespace_, set.metadata.name,
                                                        set.metadata.uid);
  if (Status s = canAdopt(); !s.ok())
    return Status(s.code(), "can't adopt ControllerRevisions: " + s.message());
  for (const auto& r : orphans) {
    auto adopted = client::patch<ControllerRevision>(*client_, r->metadata.namespace_, r->metadata.name,
                                                     client::PatchType::kStrategicMerge,
                                                     adoptPatch(kAPIVersion, kKind, set.metadata, r->metadata.uid));
    if (!adopted.ok()) return adopted.status();
  }
  return Status::Ok();
}

runtime::SyncResult StatefulSetController::sync(const std::string& setKey) {
  std::string lagging;
  if (Status s = consistency_.ensureReady(setKey, &lagging); !s.ok()) {
    kcm::metrics::Registry::global()
        .counter("statefulset_controller_stale_sync_skips_total",
                 "Total number of StatefulSet syncs skipped due to a stale watch cache.",
                 {{"group", lagging == "statefulsets" ? "apps" : ""}, {"resource", lagging}})
        .inc();
    return runtime::SyncResult::error(s);
  }
  auto [ns, name] = informers::splitMetaNamespaceKey(setKey);
  auto set = sets_.store().get(ns, name);
  if (!set) {
    consistency_.clear(setKey);
    KLOG_INFO("\"StatefulSet has been deleted\" key=\"" + setKey + "\"");
    return runtime::SyncResult::ok();
  }
  if (auto sel = selectorOf(*set); !sel.ok()) {
    KLOG_ERROR("\"error converting StatefulSet selector\" key=\"" + setKey + "\" err=\"" + sel.status().message() + "\"");
    return runtime::SyncResult::ok();  // a user error: do not retry until the set changes
  }
  if (Status s = adoptOrphanRevisions(*set); !s.ok()) return runtime::SyncResult::error(s);
  auto pods = getPodsForStatefulSet(*set);
  if (!pods.ok()) return runtime::SyncResult::error(pods.status());
  const WallTime now = clock_.wallNow();
  auto status = updateStatefulSet(*set, *pods, now);
  if (!status.ok()) return runtime::SyncResult::error(status.status());
  if (set->spec.minReadySeconds > 0 && status->readyReplicas != status->availableReplicas) {
    auto next = findMinNextPodAvailabilityCheck(*pods, set->spec.minReadySeconds, now, clock_);
    return runtime::SyncResult::after(next.value_or(std::chrono::seconds(set->spec.minReadySeconds)));
  }
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::statefulset
