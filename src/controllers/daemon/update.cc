// The rolling update and the revision history of the daemonset controller (upstream pkg/controller/daemon/update.go).
#include <algorithm>
#include <set>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/labels.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/daemon/daemon_controller.h"
#include "controllers/util/pod_template_hash.h"

namespace kcm::controllers::daemon {

using api::meta::v1::OwnerReference;

namespace {
constexpr const char* kKind = "DaemonSet";
constexpr const char* kAPIVersion = "apps/v1";
constexpr const char* kHashLabel = history::kDefaultDaemonSetUniqueLabelKey;

std::string hashLabelOf(const api::meta::v1::ObjectMeta& m) {
  auto it = m.labels.find(kHashLabel);
  return it == m.labels.end() ? "" : it->second;
}

// At most one current and one old non-deleted pod on a node; false when there are more (the manage loop prunes).
bool findUpdatedPodsOnNode(const DaemonSet& ds, const std::vector<PodPtr>& pods, const std::string& hash,
                           PodPtr& newPod, PodPtr& oldPod) {
  newPod.reset();
  oldPod.reset();
  const auto generation = templateGeneration(ds);
  for (const auto& pod : pods) {
    if (pod->metadata.deletionTimestamp) continue;
    PodPtr& slot = isPodUpdated(*pod, hash, generation) ? newPod : oldPod;
    if (slot) {
      newPod.reset();
      oldPod.reset();
      return false;
    }
    slot = pod;
  }
  return true;
}
}  // namespace

Result<std::string> getPatch(const DaemonSet& ds) { return history::templateReplacePatch(api::apps::v1::toJson(ds)); }

Result<bool> match(const DaemonSet& ds, const ControllerRevision& h) {
  auto patch = getPatch(ds);
  if (!patch.ok()) return patch.status();
  return *patch == h.data.json;
}

Status DaemonSetsController::updatedDesiredNodeCounts(const DaemonSet& ds, const std::vector<NodePtr>& nodes,
                                                      NodeToDaemonPods& nodeToDaemonPods, int& maxSurge,
                                                      int& maxUnavailable, int& desiredNumberScheduled) {
  desiredNumberScheduled = 0;
  const auto tols = daemonPodTolerations(ds);
  RequiredNodeAffinity affinity(ds.spec.template_.spec.nodeSelector, ds.spec.template_.spec.affinity);
  for (const auto& node : nodes) {
    bool cont = false;
    if (!nodeShouldRunDaemonPod(*node, ds, tols, affinity, &cont)) continue;
    ++desiredNumberScheduled;
    nodeToDaemonPods.try_emplace(node->metadata.name);
  }
  auto unavailable = unavailableCount(ds, desiredNumberScheduled);
  if (!unavailable.ok()) return Status(unavailable.status().code(), "invalid value for MaxUnavailable: " + unavailable.status().message());
  auto surge = surgeCount(ds, desiredNumberScheduled);
  if (!surge.ok()) return Status(surge.status().code(), "invalid value for MaxSurge: " + surge.status().message());
  maxUnavailable = *unavailable;
  maxSurge = *surge;
  if (desiredNumberScheduled > 0 && maxUnavailable == 0 && maxSurge == 0) {
    KLOG_INFO("\"DaemonSet is not configured for surge or unavailability, defaulting to accepting unavailability\" "
              "daemonset=\"" + key(ds.metadata) + "\"");
    maxUnavailable = 1;
  }
  return Status::Ok();
}

Status DaemonSetsController::rollingUpdate(const DaemonSet& ds, const std::vector<NodePtr>& nodes,
                                           const std::string& hash) {
  auto mapping = getNodesToDaemonPods(ds, false);
  if (!mapping.ok())
    return Status(mapping.status().code(), "couldn't get node to daemon pod mapping for daemon set \"" +
                                               ds.metadata.name + "\": " + mapping.status().message());
  NodeToDaemonPods& nodeToDaemonPods = *mapping;
  int maxSurge = 0, maxUnavailable = 0, desiredNumberScheduled = 0;
  if (Status s = updatedDesiredNodeCounts(ds, nodes, nodeToDaemonPods, maxSurge, maxUnavailable, desiredNumberScheduled);
      !s.ok())
    return Status(s.code(), "couldn't get unavailable numbers: " + s.message());
  const WallTime now = clock_.wallNow();
  const int32_t minReady = ds.spec.minReadySeconds;

  if (maxSurge == 0) {
    // Delete just enough old pods to stay within maxUnavailable; the manage loop creates their replacements.
    int numUnavailable = 0;
    std::vector<std::string> allowedReplacementPods, candidatePodsToDelete;
    for (const auto& [nodeName, pods] : nodeToDaemonPods) {
      PodPtr newPod, oldPod;
      if (!findUpdatedPodsOnNode(ds, pods, hash, newPod, oldPod)) {
        KLOG_V(3, "\"DaemonSet has excess pods on node, skipping to allow the core loop to process\" daemonset=\"" +
                      key(ds.metadata) + "\" node=\"" + nodeName + "\"");
        ++numUnavailable;
        continue;
      }
      if ((!oldPod && !newPod) || (oldPod && newPod)) {
        ++numUnavailable;  // the manage loop creates or deletes here
      } else if (newPod) {
        if (!isPodAvailable(*newPod, minReady, now)) ++numUnavailable;
      } else if (!isPodAvailable(*oldPod, minReady, now)) {
        KLOG_V(5, "\"DaemonSet pod on node is out of date and not available, allowing replacement\" pod=\"" +
                      podKey(*oldPod) + "\" node=\"" + nodeName + "\"");
        allowedReplacementPods.push_back(oldPod->metadata.name);
        ++numUnavailable;
      } else if (numUnavailable < maxUnavailable) {
        KLOG_V(5, "\"DaemonSet pod on node is out of date, this is a candidate to replace\" pod=\"" + podKey(*oldPod) +
                      "\" node=\"" + nodeName + "\"");
        candidatePodsToDelete.push_back(oldPod->metadata.name);
      }
    }
    KLOG_V(5, "\"DaemonSet allowing replacements\" daemonset=\"" + key(ds.metadata) + "\" replacements=" +
                  std::to_string(allowedReplacementPods.size()) + " maxUnavailable=" + std::to_string(maxUnavailable) +
                  " numUnavailable=" + std::to_string(numUnavailable) +
                  " candidates=" + std::to_string(candidatePodsToDelete.size()));
    const int remaining = std::clamp(maxUnavailable - numUnavailable, 0, static_cast<int>(candidatePodsToDelete.size()));
    std::vector<std::string> oldPodsToDelete = allowedReplacementPods;
    oldPodsToDelete.insert(oldPodsToDelete.end(), candidatePodsToDelete.begin(), candidatePodsToDelete.begin() + remaining);
    return syncNodes(ds, oldPodsToDelete, {}, hash);
  }

  // Surge: a new pod next to each unavailable old one, and up to maxSurge more next to available old ones; an old
  // pod goes once its node's new pod is available.
  std::vector<std::string> oldPodsToDelete, shouldNotRunPodsToDelete, candidateNewNodes, allowedNewNodes;
  int numSurge = 0, numAvailable = 0;
  const auto tols = daemonPodTolerations(ds);
  RequiredNodeAffinity affinity(ds.spec.template_.spec.nodeSelector, ds.spec.template_.spec.affinity);
  auto shouldRunOn = [&](const std::string& nodeName, bool& shouldRun) -> Status {
    auto node = nodes_.store().get(nodeName);
    if (!node) return Status(StatusCode::kNotFound, "couldn't get node for nodeName \"" + nodeName + "\": node \"" +
                                                        nodeName + "\" not found");
    bool cont = false;
    shouldRun = nodeShouldRunDaemonPod(*node, ds, tols, affinity, &cont);
    return Status::Ok();
  };
  for (const auto& [nodeName, pods] : nodeToDaemonPods) {
    PodPtr newPod, oldPod;
    if (!findUpdatedPodsOnNode(ds, pods, hash, newPod, oldPod)) {
      KLOG_V(3, "\"DaemonSet has excess pods on node, skipping to allow the core loop to process\" daemonset=\"" +
                    key(ds.metadata) + "\" node=\"" + nodeName + "\"");
      ++numSurge;
      continue;
    }
    if (oldPod) {
      if (isPodAvailable(*oldPod, minReady, now)) ++numAvailable;
    } else if (newPod) {
      if (isPodAvailable(*newPod, minReady, now)) ++numAvailable;
    }
    if (!oldPod) continue;  // the manage loop handles this node
    if (!newPod) {
      bool shouldRun = false;
      if (Status s = shouldRunOn(nodeName, shouldRun); !s.ok()) return s;
      if (!isPodAvailable(*oldPod, minReady, now)) {
        if (!shouldRun) {
          oldPodsToDelete.push_back(oldPod->metadata.name);
          continue;
        }
        allowedNewNodes.push_back(nodeName);
      } else {
        if (!shouldRun) {
          shouldNotRunPodsToDelete.push_back(oldPod->metadata.name);
          continue;
        }
        if (numSurge >= maxSurge) continue;
        candidateNewNodes.push_back(nodeName);
      }
      continue;
    }
    // Already surged here.
    if (!isPodAvailable(*newPod, minReady, now)) {
      ++numSurge;
      continue;
    }
    KLOG_V(5, "\"DaemonSet pod on node is available, remove old pod\" newPod=\"" + podKey(*newPod) + "\" oldPod=\"" +
                  podKey(*oldPod) + "\"");
    oldPodsToDelete.push_back(oldPod->metadata.name);
  }
  int remainingSurge = maxSurge - numSurge;
  // Moving to other nodes keeps full availability: an old pod on a node it no longer fits goes only once the
  // available pods exceed those desired.
  if (int deletable = numAvailable - desiredNumberScheduled; deletable > 0) {
    deletable = std::min<int>(deletable, shouldNotRunPodsToDelete.size());
    for (int i = 0; i < deletable; ++i) {
      const std::string& name = shouldNotRunPodsToDelete[i];
      if (!pods_.store().get(ds.metadata.namespace_, name)) continue;
      oldPodsToDelete.push_back(name);
    }
  }
  remainingSurge = std::clamp(remainingSurge, 0, static_cast<int>(candidateNewNodes.size()));
  std::vector<std::string> newNodesToCreate = allowedNewNodes;
  newNodesToCreate.insert(newNodesToCreate.end(), candidateNewNodes.begin(), candidateNewNodes.begin() + remainingSurge);
  return syncNodes(ds, oldPodsToDelete, newNodesToCreate, hash);
}

// --- history ---

Result<std::vector<RevisionPtr>> DaemonSetsController::controlledHistories(const DaemonSet& ds) {
  if (!ds.spec.selector) return std::vector<RevisionPtr>();
  if (auto probe = api::labelSelectorMatches(*ds.spec.selector, {}); !probe.ok()) return probe.status();
  auto sel = std::make_shared<api::meta::v1::LabelSelector>(*ds.spec.selector);
  LabelMatcher matcher = [sel](const Labels& l) {
    auto r = api::labelSelectorMatches(*sel, l);
    return r.ok() && *r;
  };
  // Every revision of the namespace: those that stopped matching but still name this DaemonSet are released.
  std::vector<RevisionPtr> all = revisions_.store().byIndex(informers::kNamespaceIndex, ds.metadata.namespace_);
  ControllerRefManager<ControllerRevision> cm(
      ds.metadata, kAPIVersion, kKind, matcher, canAdopt(ds),
      [this](const std::string& ns, const std::string& name, const std::string& patch) {
        return client::patch<ControllerRevision>(*client_, ns, name, client::PatchType::kStrategicMerge, patch).status();
      });
  auto [claimed, err] = cm.claim(all);
  if (!err.ok()) return err;
  return claimed;
}

Status DaemonSetsController::constructHistory(const DaemonSet& ds, RevisionPtr& cur, std::vector<RevisionPtr>& old) {
  auto histories = controlledHistories(ds);
  if (!histories.ok()) return histories.status();
  std::vector<RevisionPtr> currentHistories;
  old.clear();
  // The template's patch once per sync, not once per revision (upstream's Match re-encodes the set each time).
  auto patch = getPatch(ds);
  if (!patch.ok()) return patch.status();
  for (RevisionPtr h : *histories) {
    // Label by name rather than a fresh hash, so collisions need no care.
    if (!h->metadata.labels.count(kHashLabel)) {
      ControllerRevision toUpdate = *h;
      toUpdate.metadata.labels[kHashLabel] = toUpdate.metadata.name;
      auto r = client::update(*client_, toUpdate);
      if (!r.ok()) return r.status();
      h = std::make_shared<const ControllerRevision>(std::move(r).value());
    }
    (h->data.json == *patch ? currentHistories : old).push_back(h);
  }
  const int64_t currRevision = history::maxRevision(old) + 1;
  if (currentHistories.empty()) {
    auto s = snapshot(ds, currRevision);
    if (!s.ok()) return s.status();
    cur = *s;
    return Status::Ok();
  }
  auto kept = dedupCurHistories(ds, currentHistories);
  if (!kept.ok()) return kept.status();
  cur = *kept;
  if (cur->revision < currRevision) {
    ControllerRevision toUpdate = *cur;
    toUpdate.revision = currRevision;
    auto r = client::update(*client_, toUpdate);
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

Result<RevisionPtr> DaemonSetsController::dedupCurHistories(const DaemonSet& ds,
                                                            const std::vector<RevisionPtr>& curHistories) {
  if (curHistories.size() == 1) return curHistories.front();
  RevisionPtr keepCur;
  int64_t maxRev = 0;
  for (const auto& c : curHistories)
    if (c->revision >= maxRev) {
      keepCur = c;
      maxRev = c->revision;
    }
  // Relabel the pods to the revision kept, then delete the duplicates.
  auto pods = getDaemonPods(ds);
  if (!pods.ok()) return pods.status();
  const std::string keepHash = hashLabelOf(keepCur->metadata);
  for (const auto& pod : *pods) {
    if (hashLabelOf(pod->metadata) == keepHash) continue;
    nlohmann::json patch = {{"metadata", {{"labels", {{kHashLabel, keepHash}}}}}};
    auto r = client::patch<Pod>(*client_, ds.metadata.namespace_, pod->metadata.name, client::PatchType::kMerge,
                                patch.dump());
    if (!r.ok()) return r.status();
  }
  for (const auto& c : curHistories) {
    if (c->metadata.name == keepCur->metadata.name) continue;
    if (Status s = client::remove<ControllerRevision>(*client_, ds.metadata.namespace_, c->metadata.name); !s.ok())
      return s;
  }
  return keepCur;
}

Result<RevisionPtr> DaemonSetsController::snapshot(const DaemonSet& ds, int64_t revision) {
  auto patch = getPatch(ds);
  if (!patch.ok()) return patch.status();
  const std::string hash = computeHash(ds.spec.template_, ds.status.collisionCount);
  ControllerRevision h;
  h.metadata.name = ds.metadata.name + "-" + hash;
  h.metadata.namespace_ = ds.metadata.namespace_;
  h.metadata.labels = ds.spec.template_.metadata.labels;
  h.metadata.labels[kHashLabel] = hash;
  h.metadata.annotations = ds.metadata.annotations;
  h.metadata.ownerReferences.push_back(newControllerRef(ds.metadata, kAPIVersion, kKind));
  h.data.json = *patch;
  h.revision = revision;
  auto created = client::create(*client_, ds.metadata.namespace_, h);
  if (created.ok()) return std::make_shared<const ControllerRevision>(std::move(created).value());
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  auto existing = client::get<ControllerRevision>(*client_, ds.metadata.namespace_, h.metadata.name);
  if (!existing.ok()) return existing.status();
  auto done = match(ds, *existing);
  if (!done.ok()) return done.status();
  if (*done) return std::make_shared<const ControllerRevision>(std::move(existing).value());
  // A different template with the same name: bump collisionCount, unless ours was stale already.
  auto currDS = client::get<DaemonSet>(*client_, ds.metadata.namespace_, ds.metadata.name);
  if (!currDS.ok()) return currDS.status();
  if (currDS->status.collisionCount != ds.status.collisionCount) {
    auto show = [](const std::optional<int32_t>& c) { return c ? std::to_string(*c) : std::string("<nil>"); };
    return Status(StatusCode::kConflict, "found a stale collision count (" + show(ds.status.collisionCount) +
                                             ", expected " + show(currDS->status.collisionCount) + ") of DaemonSet \"" +
                                             ds.metadata.name + "\" while processing; will retry until it is updated");
  }
  DaemonSet bumped = std::move(currDS).value();
  bumped.status.collisionCount = bumped.status.collisionCount.value_or(0) + 1;
  if (auto u = client::updateStatus(*client_, bumped); !u.ok()) return u.status();
  KLOG_V(2, "\"Found a hash collision for DaemonSet - bumping collisionCount to resolve it\" daemonset=\"" +
                key(ds.metadata) + "\" collisionCount=" + std::to_string(*bumped.status.collisionCount));
  return created.status();
}

Status DaemonSetsController::cleanupHistory(const DaemonSet& ds, const std::vector<RevisionPtr>& old) {
  // Terminal pods being deleted count too: their revision stays while they exist.
  auto nodesToDaemonPods = getNodesToDaemonPods(ds, true);
  if (!nodesToDaemonPods.ok())
    return Status(nodesToDaemonPods.status().code(), "couldn't get node to daemon pod mapping for daemon set \"" +
                                                         ds.metadata.name + "\": " + nodesToDaemonPods.status().message());
  const int toKeep = ds.spec.revisionHistoryLimit.value_or(10);
  int toKill = static_cast<int>(old.size()) - toKeep;
  if (toKill <= 0) return Status::Ok();
  std::set<std::string> liveHashes;
  for (const auto& [node, pods] : *nodesToDaemonPods)
    for (const auto& pod : pods)
      if (auto h = hashLabelOf(pod->metadata); !h.empty()) liveHashes.insert(h);
  std::vector<RevisionPtr> sorted = old;
  std::stable_sort(sorted.begin(), sorted.end(), [](const RevisionPtr& a, const RevisionPtr& b) { return a->revision < b->revision; });
  for (const auto& h : sorted) {
    if (toKill <= 0) break;
    if (liveHashes.count(hashLabelOf(h->metadata))) continue;
    if (Status s = client::remove<ControllerRevision>(*client_, ds.metadata.namespace_, h->metadata.name); !s.ok())
      return s;
    --toKill;
  }
  return Status::Ok();
}

}  // namespace kcm::controllers::daemon
