#include "controllers/daemon/daemon_controller.h"

#include <algorithm>
#include <set>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/labels.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/recheck.h"
#include "controllers/util/taints.h"

namespace kcm::controllers::daemon {

using api::core::v1::Toleration;
using api::meta::v1::OwnerReference;

namespace {
constexpr const char* kKind = "DaemonSet";
constexpr const char* kAPIVersion = "apps/v1";
constexpr int kStatusUpdateRetries = 1;
constexpr auto kBackoffGCInterval = std::chrono::minutes(1);

// A taint matching the filter that no toleration tolerates (upstream FindMatchingUntoleratedTaint).
bool hasUntoleratedTaint(const std::vector<api::core::v1::Taint>& taints, const std::vector<Toleration>& tols,
                         bool noExecuteOnly, bool comparisonOperators) {
  for (const auto& t : taints) {
    if (t.effect != kTaintEffectNoExecute && (noExecuteOnly || t.effect != kTaintEffectNoSchedule)) continue;
    bool tolerated = std::any_of(tols.begin(), tols.end(),
                                 [&](const Toleration& tol) { return toleratesTaint(tol, t, comparisonOperators); });
    if (!tolerated) return true;
  }
  return false;
}

bool emptySelector(const DaemonSet& ds) {
  return ds.spec.selector && ds.spec.selector->matchLabels.empty() && ds.spec.selector->matchExpressions.empty();
}

Result<LabelMatcher> selectorOf(const DaemonSet& ds) {
  if (!ds.spec.selector) return LabelMatcher([](const Labels&) { return false; });
  auto sel = std::make_shared<api::meta::v1::LabelSelector>(*ds.spec.selector);
  if (auto probe = api::labelSelectorMatches(*sel, {}); !probe.ok()) return probe.status();
  return LabelMatcher([sel](const Labels& l) {
    auto r = api::labelSelectorMatches(*sel, l);
    return r.ok() && *r;
  });
}
}  // namespace

void sortPodsByCreationTimestampAndPhase(std::vector<PodPtr>& pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
    const bool as = !a->spec.nodeName.empty(), bs = !b->spec.nodeName.empty();
    if (as != bs) return as;
    const auto ta = a->metadata.creationTimestamp.unixSeconds, tb = b->metadata.creationTimestamp.unixSeconds;
    if (ta == tb) return a->metadata.name < b->metadata.name;
    return ta < tb;
  });
}

DaemonSetsController::DaemonSetsController(std::shared_ptr<client::RestClient> client,
                                           std::shared_ptr<client::EventRecorder> recorder,
                                           informers::SharedInformer<DaemonSet>& daemonSets,
                                           informers::SharedInformer<ControllerRevision>& revisions,
                                           informers::SharedInformer<Pod>& pods,
                                           informers::SharedInformer<Node>& nodes, DaemonSetsControllerOptions opts,
                                           Clock& clock)
    : client_(client), recorder_(recorder), clock_(clock), daemonSets_(daemonSets), revisions_(revisions),
      pods_(pods), nodes_(nodes), opts_(opts), podControl_(client, recorder), expectations_(clock),
      failedPodsBackoff_(opts.failedPodsBackoffInitial, opts.failedPodsBackoffMax),
      base_("daemonset", [this](const std::string& k) { return syncDaemonSet(k); }, clock),
      nodeUpdates_("daemonset-node-updates", [this](const std::string& n) { return syncNodeUpdate(n); }, clock) {
  if (opts_.staleConsistency)
    consistency_.enable({{"pods", [this] { return pods_.lastSyncResourceVersion(); }},
                         {"daemonsets", [this] { return daemonSets_.lastSyncResourceVersion(); }}});
  pods_.store().addIndexer(kPodControllerIndex, podControllerIndexKeys);
  pods_.store().addIndexer("nodeName", [](const Pod& p) {
    return p.spec.nodeName.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.spec.nodeName};
  });
  revisions_.store().addIndexer(history::kControllerRevisionControllerIndex,
                                history::controllerRevisionControllerIndexKeys);

  informers::EventHandler<DaemonSet> dh;
  dh.onAdd = [this](const DaemonSetPtr& d) { addDaemonset(d); };
  dh.onUpdate = [this](const DaemonSetPtr& o, const DaemonSetPtr& c) { updateDaemonset(o, c); };
  dh.onDelete = [this](const DaemonSetPtr& d, bool) { deleteDaemonset(*d); };
  registrations_.push_back(daemonSets_.addEventHandler(dh));

  informers::EventHandler<ControllerRevision> hh;
  hh.onAdd = [this](const RevisionPtr& h) { addHistory(h); };
  hh.onUpdate = [this](const RevisionPtr& o, const RevisionPtr& c) { updateHistory(o, c); };
  hh.onDelete = [this](const RevisionPtr& h, bool) { deleteHistory(*h); };
  registrations_.push_back(revisions_.addEventHandler(hh));

  informers::EventHandler<Pod> ph;
  ph.onAdd = [this](const PodPtr& p) { addPod(p); };
  ph.onUpdate = [this](const PodPtr& o, const PodPtr& c) { updatePod(o, c); };
  ph.onDelete = [this](const PodPtr& p, bool) { deletePod(*p); };
  registrations_.push_back(pods_.addEventHandler(ph));

  informers::EventHandler<Node> nh;
  nh.onAdd = [this](const NodePtr& n) { addNode(n); };
  nh.onUpdate = [this](const NodePtr& o, const NodePtr& c) { updateNode(o, c); };
  registrations_.push_back(nodes_.addEventHandler(nh));
}

void DaemonSetsController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting daemon sets controller\"");
  std::vector<std::function<bool()>> synced = {
      [this] { return pods_.hasSynced(); }, [this] { return nodes_.hasSynced(); },
      [this] { return revisions_.hasSynced(); }, [this] { return daemonSets_.hasSynced(); }};
  base_.start(workers, stop, synced);
  nodeUpdates_.start(workers, stop, synced);
  backoffGC_.start(clock_, kBackoffGCInterval, stop, [this] { failedPodsBackoff_.gc(clock_.now()); });
}

client::ObjectReference DaemonSetsController::ref(const DaemonSet& ds) const {
  return {kKind, kAPIVersion, ds.metadata.namespace_, ds.metadata.name, ds.metadata.uid, ds.metadata.resourceVersion, ""};
}

void DaemonSetsController::enqueue(const DaemonSet& ds) { base_.enqueue(key(ds.metadata)); }
void DaemonSetsController::enqueueAfter(const DaemonSet& ds, Clock::Duration d) {
  base_.enqueueAfter(key(ds.metadata), d);
}

// --- handlers ---

void DaemonSetsController::addDaemonset(const DaemonSetPtr& ds) {
  KLOG_V(4, "\"Adding daemon set\" daemonset=\"" + key(ds->metadata) + "\"");
  enqueue(*ds);
}

void DaemonSetsController::updateDaemonset(const DaemonSetPtr& oldDS, const DaemonSetPtr& curDS) {
  if (curDS->metadata.uid != oldDS->metadata.uid) deleteDaemonset(*oldDS);
  KLOG_V(4, "\"Updating daemon set\" daemonset=\"" + key(oldDS->metadata) + "\"");
  enqueue(*curDS);
}

void DaemonSetsController::deleteDaemonset(const DaemonSet& ds) {
  KLOG_V(4, "\"Deleting daemon set\" daemonset=\"" + key(ds.metadata) + "\"");
  consistency_.clear(key(ds.metadata), ds.metadata.uid);
  expectations_.deleteExpectations(key(ds.metadata));
  base_.enqueue(key(ds.metadata));
}

DaemonSetPtr DaemonSetsController::resolveControllerRef(const std::string& ns, const OwnerReference& r) {
  if (r.kind != kKind) return nullptr;
  auto ds = daemonSets_.store().get(ns, r.name);
  if (!ds || ds->metadata.uid != r.uid) return nullptr;
  return ds;
}

// upstream GetPodDaemonSets / GetHistoryDaemonSets: the DaemonSets of the namespace whose non-empty selector
// matches.
std::vector<DaemonSetPtr> DaemonSetsController::getDaemonSetsForLabels(const std::string& ns, const Labels& labels) {
  std::vector<DaemonSetPtr> out;
  for (const auto& ds : daemonSets_.store().byIndex(informers::kNamespaceIndex, ns)) {
    if (!ds->spec.selector || emptySelector(*ds)) continue;
    auto m = api::labelSelectorMatches(*ds->spec.selector, labels);
    if (m.ok() && *m) out.push_back(ds);
  }
  return out;
}

void DaemonSetsController::addHistory(const RevisionPtr& h) {
  if (h->metadata.deletionTimestamp) {
    deleteHistory(*h);
    return;
  }
  if (const OwnerReference* r = getControllerOf(h->metadata)) {
    if (resolveControllerRef(h->metadata.namespace_, *r))
      KLOG_V(4, "\"Observed a ControllerRevision\" controllerRevision=\"" + key(h->metadata) + "\"");
    return;
  }
  for (const auto& ds : getDaemonSetsForLabels(h->metadata.namespace_, h->metadata.labels)) enqueue(*ds);
}

namespace {
bool sameControllerRef(const OwnerReference* a, const OwnerReference* b) {
  if (!a || !b) return a == b;
  return a->uid == b->uid && a->name == b->name && a->kind == b->kind && a->apiVersion == b->apiVersion &&
         a->controller == b->controller && a->blockOwnerDeletion == b->blockOwnerDeletion;
}
}  // namespace

void DaemonSetsController::updateHistory(const RevisionPtr& oldH, const RevisionPtr& curH) {
  if (curH->metadata.resourceVersion == oldH->metadata.resourceVersion) return;
  const OwnerReference* cur = getControllerOf(curH->metadata);
  const OwnerReference* old = getControllerOf(oldH->metadata);
  const bool refChanged = !sameControllerRef(cur, old);
  if (refChanged && old)
    if (auto ds = resolveControllerRef(oldH->metadata.namespace_, *old)) enqueue(*ds);
  if (cur) {
    if (auto ds = resolveControllerRef(curH->metadata.namespace_, *cur)) enqueue(*ds);
    return;
  }
  if (curH->metadata.labels != oldH->metadata.labels || refChanged)
    for (const auto& ds : getDaemonSetsForLabels(curH->metadata.namespace_, curH->metadata.labels)) enqueue(*ds);
}

void DaemonSetsController::deleteHistory(const ControllerRevision& h) {
  const OwnerReference* r = getControllerOf(h.metadata);
  if (!r) return;
  if (auto ds = resolveControllerRef(h.metadata.namespace_, *r)) enqueue(*ds);
}

void DaemonSetsController::addPod(const PodPtr& pod) {
  if (pod->metadata.deletionTimestamp) {
    deletePod(*pod);
    return;
  }
  if (const OwnerReference* r = getControllerOf(pod->metadata)) {
    auto ds = resolveControllerRef(pod->metadata.namespace_, *r);
    if (!ds) return;
    expectations_.creationObserved(key(ds->metadata));
    enqueue(*ds);
    return;
  }
  for (const auto& ds : getDaemonSetsForLabels(pod->metadata.namespace_, pod->metadata.labels)) enqueue(*ds);
}

void DaemonSetsController::updatePod(const PodPtr& oldPod, const PodPtr& curPod) {
  if (curPod->metadata.resourceVersion == oldPod->metadata.resourceVersion) return;
  if (curPod->metadata.deletionTimestamp) {
    deletePod(*curPod);
    return;
  }
  const OwnerReference* cur = getControllerOf(curPod->metadata);
  const OwnerReference* old = getControllerOf(oldPod->metadata);
  const bool refChanged = !sameControllerRef(cur, old);
  if (refChanged && old)
    if (auto ds = resolveControllerRef(oldPod->metadata.namespace_, *old)) enqueue(*ds);
  if (cur) {
    auto ds = resolveControllerRef(curPod->metadata.namespace_, *cur);
    if (!ds) return;
    enqueue(*ds);
    if (!isPodReady(*oldPod) && isPodReady(*curPod) && ds->spec.minReadySeconds > 0)
      enqueueAfter(*ds, std::chrono::seconds(ds->spec.minReadySeconds) + std::chrono::seconds(1));
    return;
  }
  if (curPod->metadata.labels != oldPod->metadata.labels || refChanged)
    for (const auto& ds : getDaemonSetsForLabels(curPod->metadata.namespace_, curPod->metadata.labels)) enqueue(*ds);
}

void DaemonSetsController::deletePod(const Pod& pod) {
  const OwnerReference* r = getControllerOf(pod.metadata);
  if (!r) return;
  auto ds = resolveControllerRef(pod.metadata.namespace_, *r);
  if (!ds) return;
  expectations_.deletionObserved(key(ds->metadata));
  enqueue(*ds);
}

void DaemonSetsController::addNode(const NodePtr& node) { nodeUpdates_.enqueue(node->metadata.name); }

void DaemonSetsController::updateNode(const NodePtr& oldNode, const NodePtr& curNode) {
  if (oldNode->metadata.labels == curNode->metadata.labels && sameTaints(oldNode->spec.taints, curNode->spec.taints))
    return;
  nodeUpdates_.enqueue(curNode->metadata.name);
}

runtime::SyncResult DaemonSetsController::syncNodeUpdate(const std::string& nodeName) {
  auto node = nodes_.store().get(nodeName);
  if (!node) {
    KLOG_V(3, "\"Node not found, skipping update\" node=\"" + nodeName + "\"");
    return runtime::SyncResult::ok();
  }
  std::map<std::string, int> podsByDS;
  for (const auto& p : pods_.store().byIndex("nodeName", nodeName)) {
    const OwnerReference* r = getControllerOf(p->metadata);
    if (!r || r->kind != kKind) continue;
    ++podsByDS[p->metadata.namespace_ + "/" + r->name];
  }
  for (const auto& ds : daemonSets_.store().list()) {
    bool shouldContinueRunning = false;
    const auto tols = daemonPodTolerations(*ds);
    RequiredNodeAffinity affinity(ds->spec.template_.spec.nodeSelector, ds->spec.template_.spec.affinity);
    const bool shouldRun = nodeShouldRunDaemonPod(*node, *ds, tols, affinity, &shouldContinueRunning);
    const bool scheduled = podsByDS.count(key(ds->metadata)) > 0;
    if ((shouldRun && !scheduled) || (!shouldContinueRunning && scheduled) ||
        (scheduled && ds->status.numberMisscheduled > 0))
      enqueue(*ds);
  }
  return runtime::SyncResult::ok();
}

// --- pods of a DaemonSet ---

std::function<Status()> DaemonSetsController::canAdopt(const DaemonSet& ds) {
  return recheckDeletionTimestamp<DaemonSet>(client_, kKind, ds.metadata.namespace_, ds.metadata.name, ds.metadata.uid);
}

Result<std::vector<PodPtr>> DaemonSetsController::getDaemonPods(const DaemonSet& ds) {
  auto selector = selectorOf(ds);
  if (!selector.ok()) return selector.status();
  const std::string& ns = ds.metadata.namespace_;
  // Pods of this DaemonSet and orphans of the namespace (upstream FilterPodsByOwner with orphans).
  std::vector<PodPtr> pods = pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, nullptr));
  OwnerReference self = newControllerRef(ds.metadata, kAPIVersion, kKind);
  for (auto& p : pods_.store().byIndex(kPodControllerIndex, podControllerIndexKey(ns, &self))) pods.push_back(p);
  ControllerRefManager<Pod> cm(ds.metadata, kAPIVersion, kKind, *selector, canAdopt(ds),
                               [this](const std::string& pns, const std::string& pname, const std::string& patch) {
                                 return podControl_.patchPod(pns, pname, patch);
                               });
  auto [claimed, err] = cm.claim(pods);
  if (!err.ok()) return err;
  return claimed;
}

Result<NodeToDaemonPods> DaemonSetsController::getNodesToDaemonPods(const DaemonSet& ds, bool includeDeletedTerminal) {
  auto claimed = getDaemonPods(ds);
  if (!claimed.ok()) return claimed.status();
  NodeToDaemonPods out;
  for (const auto& pod : *claimed) {
    const auto phase = pod->status.phase;
    if (!includeDeletedTerminal && (phase == "Succeeded" || phase == "Failed") && pod->metadata.deletionTimestamp)
      continue;
    auto node = getTargetNodeName(*pod);
    if (!node.ok()) {
      KLOG_V(4, "\"Failed to get target node name of Pod in DaemonSet\" pod=\"" + podKey(*pod) + "\" daemonset=\"" +
                    key(ds.metadata) + "\"");
      continue;
    }
    out[*node].push_back(pod);
  }
  return out;
}

bool DaemonSetsController::nodeShouldRunDaemonPod(const Node& node, const DaemonSet& ds,
                                                  const std::vector<Toleration>& tols,
                                                  const RequiredNodeAffinity& affinity,
                                                  bool* shouldContinueRunning) const {
  *shouldContinueRunning = false;
  const std::string& want = ds.spec.template_.spec.nodeName;
  if (!want.empty() && want != node.metadata.name) return false;
  if (!affinity.match(node)) return false;
  if (hasUntoleratedTaint(node.spec.taints, tols, false, opts_.comparisonOperators)) {
    // A scheduled daemon pod keeps running while it tolerates the NoExecute taints.
    *shouldContinueRunning = !hasUntoleratedTaint(node.spec.taints, tols, true, opts_.comparisonOperators);
    return false;
  }
  *shouldContinueRunning = true;
  return true;
}

void DaemonSetsController::podsShouldBeOnNode(const Node& node, const NodeToDaemonPods& nodeToDaemonPods,
                                              const DaemonSet& ds, const std::string& hash,
                                              const std::vector<Toleration>& tols,
                                              const RequiredNodeAffinity& affinity,
                                              std::vector<std::string>& nodesNeedingDaemonPods,
                                              std::vector<std::string>& podsToDelete) {
  bool shouldContinueRunning = false;
  const bool shouldRun = nodeShouldRunDaemonPod(node, ds, tols, affinity, &shouldContinueRunning);
  auto it = nodeToDaemonPods.find(node.metadata.name);
  const bool exists = it != nodeToDaemonPods.end();
  const std::string& nodeName = node.metadata.name;
  if (shouldRun && !exists) {
    nodesNeedingDaemonPods.push_back(nodeName);
    return;
  }
  if (shouldContinueRunning) {
    static const std::vector<PodPtr> kNone;
    std::vector<PodPtr> running;
    for (const auto& pod : exists ? it->second : kNone) {
      if (pod->metadata.deletionTimestamp) continue;
      if (pod->status.phase == "Failed") {
        // The kubelet may keep rejecting the pod: back off instead of a hot create/delete loop.
        const std::string backoffKey = ds.metadata.uid + "/" + std::to_string(ds.status.observedGeneration) + "/" + nodeName;
        const auto now = clock_.now();
        if (failedPodsBackoff_.isInBackOffSinceUpdate(backoffKey, now)) {
          const auto delay = failedPodsBackoff_.get(backoffKey);
          KLOG_V(4, "\"Deleting failed pod on node has been limited by backoff\" pod=\"" + podKey(*pod) + "\" node=\"" +
                        nodeName + "\"");
          enqueueAfter(ds, delay);
          continue;
        }
        failedPodsBackoff_.next(backoffKey, now);
        KLOG_V(2, "\"Found failed daemon pod on node, will try to kill it\" pod=\"" + podKey(*pod) + "\" node=\"" +
                      nodeName + "\"");
        recorder_->event(ref(ds), client::kEventTypeWarning, "FailedDaemonPod",
                         "Found failed daemon pod " + podKey(*pod) + " on node " + nodeName + ", will try to kill it");
        podsToDelete.push_back(pod->metadata.name);
      } else if (pod->status.phase == "Succeeded") {
        KLOG_V(2, "\"Found succeeded daemon pod on node, will try to delete it\" pod=\"" + podKey(*pod) + "\" node=\"" +
                      nodeName + "\"");
        recorder_->event(ref(ds), client::kEventTypeNormal, "SucceededDaemonPod",
                         "Found succeeded daemon pod " + podKey(*pod) + " on node " + nodeName +
                             ", will try to delete it");
        podsToDelete.push_back(pod->metadata.name);
      } else {
        running.push_back(pod);
      }
    }
    if (!allowsSurge(ds)) {
      // Without surge, keep only the oldest running pod.
      if (running.size() <= 1) return;
      sortPodsByCreationTimestampAndPhase(running);
      for (size_t i = 1; i < running.size(); ++i) podsToDelete.push_back(running[i]->metadata.name);
      return;
    }
    if (running.size() <= 1) {
      if (running.empty() && shouldRun) nodesNeedingDaemonPods.push_back(nodeName);  // surging needs one pod
      return;
    }
    // Surge keeps two pods only while the oldest current-revision pod is not ready and the oldest old one is;
    // every other pod goes.
    PodPtr oldestNew, oldestOld;
    sortPodsByCreationTimestampAndPhase(running);
    for (const auto& pod : running) {
      auto h = pod->metadata.labels.find(history::kDefaultDaemonSetUniqueLabelKey);
      const bool isNew = h != pod->metadata.labels.end() && h->second == hash;
      if (isNew && !oldestNew) {
        oldestNew = pod;
        continue;
      }
      if (!isNew && !oldestOld) {
        oldestOld = pod;
        continue;
      }
      podsToDelete.push_back(pod->metadata.name);
    }
    if (oldestNew && oldestOld) {
      if (!isPodReady(*oldestOld)) {
        KLOG_V(5, "\"Pod from daemonset is no longer ready and will be replaced with newer pod\" oldPod=\"" +
                      podKey(*oldestOld) + "\"");
        podsToDelete.push_back(oldestOld->metadata.name);
      } else if (isPodAvailable(*oldestNew, ds.spec.minReadySeconds, clock_.wallNow())) {
        KLOG_V(5, "\"Pod from daemonset is now ready and will replace older pod\" newPod=\"" + podKey(*oldestNew) + "\"");
        podsToDelete.push_back(oldestOld->metadata.name);
      }
    }
    return;
  }
  if (exists) {
    // Should not run here: every pod on the node goes.
    for (const auto& pod : it->second)
      if (!pod->metadata.deletionTimestamp) podsToDelete.push_back(pod->metadata.name);
  }
}

Status DaemonSetsController::manage(const DaemonSet& ds, const std::vector<NodePtr>& nodes, const std::string& hash) {
  auto nodeToDaemonPods = getNodesToDaemonPods(ds, false);
  if (!nodeToDaemonPods.ok())
    return Status(nodeToDaemonPods.status().code(), "couldn't get node to daemon pod mapping for daemon set \"" +
                                                        ds.metadata.name + "\": " + nodeToDaemonPods.status().message());
  std::vector<std::string> nodesNeedingDaemonPods, podsToDelete;
  const auto tols = daemonPodTolerations(ds);
  RequiredNodeAffinity affinity(ds.spec.template_.spec.nodeSelector, ds.spec.template_.spec.affinity);
  std::set<std::string> running;
  for (const auto& node : nodes) {
    podsShouldBeOnNode(*node, *nodeToDaemonPods, ds, hash, tols, affinity, nodesNeedingDaemonPods, podsToDelete);
    running.insert(node->metadata.name);
  }
  // Pods bound (by affinity) to nodes that are gone never get scheduled, and the pod GC does not see them.
  for (const auto& [nodeName, pods] : *nodeToDaemonPods) {
    if (running.count(nodeName)) continue;
    for (const auto& pod : pods)
      if (pod->spec.nodeName.empty()) podsToDelete.push_back(pod->metadata.name);
  }
  return syncNodes(ds, podsToDelete, nodesNeedingDaemonPods, hash);
}

Status DaemonSetsController::syncNodes(const DaemonSet& ds, const std::vector<std::string>& podsToDelete,
                                       const std::vector<std::string>& nodesNeedingDaemonPods,
                                       const std::string& hash) {
  const std::string dsKey = key(ds.metadata);
  const int createDiff = std::min<int>(nodesNeedingDaemonPods.size(), opts_.burstReplicas);
  const int deleteDiff = std::min<int>(podsToDelete.size(), opts_.burstReplicas);
  expectations_.setExpectations(dsKey, createDiff, deleteDiff);
  KLOG_V(4, "\"Nodes needing daemon pods for daemon set, creating\" daemonset=\"" + dsKey + "\" createCount=" +
                std::to_string(createDiff));
  const auto tmpl = createPodTemplate(ds.spec.template_, templateGeneration(ds), hash);
  const auto controllerRef = newControllerRef(ds.metadata, kAPIVersion, kKind);
  const auto owner = ref(ds);
  std::vector<Status> errors;
  std::mutex errMu;
  auto note = [&](Status s) {
    std::lock_guard l(errMu);
    errors.push_back(std::move(s));
  };
  std::atomic<int> next{0};
  auto [created, createErr] = slowStartBatch(createDiff, kSlowStartInitialBatchSize, [&]() -> Status {
    const int ix = next.fetch_add(1);
    auto podTemplate = tmpl;
    // Bound to the node through node affinity: the scheduler places the pod there.
    replaceDaemonSetPodNodeNameNodeAffinity(podTemplate.spec.affinity, nodesNeedingDaemonPods[ix]);
    auto pod = podControl_.createPods(ds.metadata.namespace_, podTemplate, owner, controllerRef);
    if (!pod.ok()) {
      if (isNamespaceTerminating(pod.status())) return Status::Ok();
      KLOG_V(2, "\"Failed creation, decrementing expectations for daemon set\" daemonset=\"" + dsKey + "\"");
      expectations_.creationObserved(dsKey);
      note(pod.status());
      return pod.status();
    }
    consistency_.wroteAt(dsKey, ds.metadata.uid, "pods", pod->metadata.resourceVersion);
    return Status::Ok();
  });
  (void)createErr;  // every error is in `errors`
  const int attempted = next.load();
  if (int skipped = createDiff - attempted; skipped > 0) {
    KLOG_V(2, "\"Slow-start failure. Skipping creation pods, decrementing expectations for daemon set\" skippedPods=" +
                  std::to_string(skipped) + " daemonset=\"" + dsKey + "\"");
    expectations_.lowerExpectations(dsKey, skipped, 0);
  }
  (void)created;
  KLOG_V(4, "\"Pods to delete for daemon set, deleting\" daemonset=\"" + dsKey + "\" deleteCount=" +
                std::to_string(deleteDiff));
  parallelFor(deleteDiff, 16, [&](size_t i) {
    Status s = podControl_.deletePod(ds.metadata.namespace_, podsToDelete[i], owner);
    if (s.ok()) return;
    expectations_.deletionObserved(dsKey);
    if (s.code() == StatusCode::kNotFound) return;
    KLOG_V(2, "\"Failed deletion, decremented expectations for daemon set\" daemonset=\"" + dsKey + "\"");
    note(s);
  });
  if (errors.empty()) return Status::Ok();
  std::string msg;
  for (const auto& e : errors) msg += (msg.empty() ? "" : ", ") + e.message();
  return Status(errors.front().code(), errors.size() == 1 ? msg : "[" + msg + "]");
}

Status DaemonSetsController::updateDaemonSet(const DaemonSet& ds, const std::vector<NodePtr>& nodes,
                                             const std::string& hash, const std::string& dsKey,
                                             const std::vector<RevisionPtr>& old) {
  if (Status s = manage(ds, nodes, hash); !s.ok()) return s;
  if (expectations_.satisfiedExpectations(dsKey) && ds.spec.updateStrategy.type == "RollingUpdate")
    if (Status s = rollingUpdate(ds, nodes, hash); !s.ok()) return s;
  if (Status s = cleanupHistory(ds, old); !s.ok())
    return Status(s.code(), "failed to clean up revisions of DaemonSet: " + s.message());
  return Status::Ok();
}

// --- status ---

Result<std::shared_ptr<const DaemonSet>> DaemonSetsController::storeDaemonSetStatus(
    const DaemonSet& ds, const api::apps::v1::DaemonSetStatus& want, bool updateObservedGen) {
  const auto& s = ds.status;
  if (s.desiredNumberScheduled == want.desiredNumberScheduled &&
      s.currentNumberScheduled == want.currentNumberScheduled && s.numberMisscheduled == want.numberMisscheduled &&
      s.numberReady == want.numberReady && s.updatedNumberScheduled == want.updatedNumberScheduled &&
      s.numberAvailable == want.numberAvailable && s.numberUnavailable == want.numberUnavailable &&
      s.observedGeneration >= ds.metadata.generation)
    return std::shared_ptr<const DaemonSet>();
  DaemonSet toUpdate = ds;
  Status last;
  for (int i = 0;; ++i) {
    if (updateObservedGen) toUpdate.status.observedGeneration = ds.metadata.generation;
    toUpdate.status.desiredNumberScheduled = want.desiredNumberScheduled;
    toUpdate.status.currentNumberScheduled = want.currentNumberScheduled;
    toUpdate.status.numberMisscheduled = want.numberMisscheduled;
    toUpdate.status.numberReady = want.numberReady;
    toUpdate.status.updatedNumberScheduled = want.updatedNumberScheduled;
    toUpdate.status.numberAvailable = want.numberAvailable;
    toUpdate.status.numberUnavailable = want.numberUnavailable;
    auto r = client::updateStatus(*client_, toUpdate);
    if (r.ok()) return std::make_shared<const DaemonSet>(std::move(r).value());
    last = r.status();
    if (i >= kStatusUpdateRetries) break;
    auto fresh = client::get<DaemonSet>(*client_, ds.metadata.namespace_, ds.metadata.name);
    if (!fresh.ok()) return fresh.status();
    toUpdate = std::move(fresh).value();
  }
  return last;
}

Status DaemonSetsController::updateDaemonSetStatus(const DaemonSet& ds, const std::vector<NodePtr>& nodes,
                                                   const std::string& hash, bool updateObservedGen) {
  KLOG_V(4, "\"Updating daemon set status\" daemonset=\"" + key(ds.metadata) + "\"");
  auto nodeToDaemonPods = getNodesToDaemonPods(ds, false);
  if (!nodeToDaemonPods.ok())
    return Status(nodeToDaemonPods.status().code(), "couldn't get node to daemon pod mapping for daemon set \"" +
                                                        ds.metadata.name + "\": " + nodeToDaemonPods.status().message());
  api::apps::v1::DaemonSetStatus want;
  const WallTime now = clock_.wallNow();
  const auto tols = daemonPodTolerations(ds);
  RequiredNodeAffinity affinity(ds.spec.template_.spec.nodeSelector, ds.spec.template_.spec.affinity);
  const auto generation = templateGeneration(ds);
  for (const auto& node : nodes) {
    bool cont = false;
    const bool shouldRun = nodeShouldRunDaemonPod(*node, ds, tols, affinity, &cont);
    auto it = nodeToDaemonPods->find(node->metadata.name);
    const bool scheduled = it != nodeToDaemonPods->end() && !it->second.empty();
    if (!shouldRun) {
      if (scheduled) ++want.numberMisscheduled;
      continue;
    }
    ++want.desiredNumberScheduled;
    if (!scheduled) continue;
    ++want.currentNumberScheduled;
    auto daemonPods = it->second;
    sortPodsByCreationTimestampAndPhase(daemonPods);
    const Pod& pod = *daemonPods.front();
    if (isPodReady(pod)) {
      ++want.numberReady;
      if (isPodAvailable(pod, ds.spec.minReadySeconds, now)) ++want.numberAvailable;
    }
    if (isPodUpdated(pod, hash, generation)) ++want.updatedNumberScheduled;
  }
  want.numberUnavailable = want.desiredNumberScheduled - want.numberAvailable;
  auto updated = storeDaemonSetStatus(ds, want, updateObservedGen);
  if (!updated.ok())
    return Status(updated.status().code(), "error storing status for daemon set " + key(ds.metadata) + ": " +
                                               updated.status().message());
  if (*updated) consistency_.wroteAt(key(ds.metadata), (*updated)->metadata.uid, "daemonsets",
                                     (*updated)->metadata.resourceVersion);
  // Re-check after minReadySeconds, the fallback against clock skew.
  if (ds.spec.minReadySeconds > 0 && want.numberReady != want.numberAvailable)
    enqueueAfter(ds, std::chrono::seconds(ds.spec.minReadySeconds));
  return Status::Ok();
}

runtime::SyncResult DaemonSetsController::syncDaemonSet(const std::string& dsKey) {
  std::string lagging;
  if (Status s = consistency_.ensureReady(dsKey, &lagging); !s.ok()) {
    kcm::metrics::Registry::global()
        .counter("daemonset_controller_stale_sync_skips_total",
                 "Total number of DaemonSet syncs skipped due to a stale watch cache.",
                 {{"group", lagging == "daemonsets" ? "apps" : ""}, {"resource", lagging}})
        .inc();
    return runtime::SyncResult::error(s);
  }
  auto [ns, name] = informers::splitMetaNamespaceKey(dsKey);
  auto ds = daemonSets_.store().get(ns, name);
  if (!ds) {
    KLOG_V(3, "\"Daemon set has been deleted\" daemonset=\"" + dsKey + "\"");
    expectations_.deleteExpectations(dsKey);
    consistency_.clear(dsKey);
    return runtime::SyncResult::ok();
  }
  std::vector<NodePtr> nodes = nodes_.store().list();
  std::sort(nodes.begin(), nodes.end(),
            [](const NodePtr& a, const NodePtr& b) { return a->metadata.name < b->metadata.name; });
  if (emptySelector(*ds)) {
    recorder_->event(ref(*ds), client::kEventTypeWarning, "SelectingAll",
                     "This daemon set is selecting all pods. A non-empty selector is required.");
    return runtime::SyncResult::ok();
  }
  // Being deleted: its revisions may be gone or orphaned already, so no status can be computed reliably.
  if (ds->metadata.deletionTimestamp) return runtime::SyncResult::ok();
  RevisionPtr cur;
  std::vector<RevisionPtr> old;
  if (Status s = constructHistory(*ds, cur, old); !s.ok())
    return runtime::SyncResult::error(Status(s.code(), "failed to construct revisions of DaemonSet: " + s.message()));
  std::string hash;
  if (auto it = cur->metadata.labels.find(history::kDefaultDaemonSetUniqueLabelKey); it != cur->metadata.labels.end())
    hash = it->second;
  if (!expectations_.satisfiedExpectations(dsKey)) {
    // Status only; the generation was not acted on.
    Status s = updateDaemonSetStatus(*ds, nodes, hash, false);
    return s.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(s);
  }
  Status err = updateDaemonSet(*ds, nodes, hash, dsKey, old);
  Status statusErr = updateDaemonSetStatus(*ds, nodes, hash, true);
  if (!err.ok()) {
    if (!statusErr.ok())
      KLOG_ERROR("\"Failed to update status\" daemonSet=\"" + dsKey + "\" err=\"" + statusErr.message() + "\"");
    return runtime::SyncResult::error(err);
  }
  if (!statusErr.ok()) return runtime::SyncResult::error(statusErr);
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::daemon
