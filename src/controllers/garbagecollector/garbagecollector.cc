#include "controllers/garbagecollector/garbagecollector.h"

#include <nlohmann/json.hpp>

#include "api/gen/meta_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"

namespace kcm::controllers::gc {

using api::meta::v1::OwnerReference;
using api::meta::v1::PartialObjectMetadata;

namespace {
const Status kEnqueuedVirtualDelete(StatusCode::kCancelled, "enqueued virtual delete event");
const Status kNamespacedOwnerOfClusterScoped(StatusCode::kInvalidArgument,
                                             "cluster-scoped objects cannot refer to namespaced owners");
// cmd/kube-controller-manager/app/core.go: the discovery sync period, and how long Run waits for the monitors.
constexpr auto kResyncPeriod = std::chrono::seconds(30);
constexpr auto kInitialSyncTimeout = std::chrono::seconds(30);

std::string gvrKey(const client::APIResourceInfo& r) {
  return client::GroupVersionResource{r.group, r.version, r.resource}.toString();
}


std::pair<std::string, std::string> splitAPIVersion(const std::string& apiVersion) {
  auto slash = apiVersion.find('/');
  if (slash == std::string::npos) return {"", apiVersion};
  return {apiVersion.substr(0, slash), apiVersion.substr(slash + 1)};
}

bool sameOwnerRefs(const std::vector<OwnerReference>& a, const std::vector<OwnerReference>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].uid != b[i].uid || a[i].name != b[i].name || a[i].kind != b[i].kind || a[i].apiVersion != b[i].apiVersion ||
        a[i].controller != b[i].controller || a[i].blockOwnerDeletion != b[i].blockOwnerDeletion)
      return false;
  return true;
}

nlohmann::json ownerRefJson(const OwnerReference& o) {
  nlohmann::json j = {{"apiVersion", o.apiVersion}, {"kind", o.kind}, {"name", o.name}, {"uid", o.uid}};
  if (o.controller) j["controller"] = *o.controller;
  if (o.blockOwnerDeletion) j["blockOwnerDeletion"] = *o.blockOwnerDeletion;
  return j;
}
}  // namespace

std::vector<client::APIResourceInfo> deletableResources(const std::vector<client::APIResourceInfo>& all) {
  std::vector<client::APIResourceInfo> out;
  for (const auto& r : all) {
    if (!r.hasVerb("delete") || !r.hasVerb("list") || !r.hasVerb("watch")) continue;
    if (r.resource == "events" && (r.group.empty() || r.group == "events.k8s.io")) continue;
    out.push_back(r);
  }
  return out;
}

// The attemptToDelete queue's rate limiter (upstream DefaultTypedControllerRateLimiter), which the collector
// also uses to requeue a virtual node not observed yet (upstream: requeueItem -> AddRateLimited). Such a sync
// succeeds, and a successful sync makes the queue forget the key's backoff: the forget that follows a
// requeue() is skipped, so the backoff keeps growing (5 ms doubling to 1000 s) until the node is observed.
class GarbageCollector::AttemptToDeleteLimiter : public runtime::ItemRateLimiter {
 public:
  explicit AttemptToDeleteLimiter(Clock& clock) : inner_(runtime::defaultControllerRateLimiter(clock)) {}
  Clock::Duration when(const std::string& item) override { return inner_->when(item); }
  void forget(const std::string& item) override {
    {
      std::lock_guard l(mu_);
      if (keep_.erase(item)) return;
    }
    inner_->forget(item);
  }
  int numRequeues(const std::string& item) override { return inner_->numRequeues(item); }
  // The delay before `item` is looked at again, its backoff kept.
  Clock::Duration requeue(const std::string& item) {
    {
      std::lock_guard l(mu_);
      keep_.insert(item);
    }
    return inner_->when(item);
  }

 private:
  std::unique_ptr<runtime::ItemRateLimiter> inner_;
  std::mutex mu_;
  std::set<std::string> keep_;
};

namespace {
template <class L>
std::unique_ptr<runtime::ItemRateLimiter> makeLimiter(L*& handle, Clock& clock) {
  auto l = std::make_unique<L>(clock);
  handle = l.get();
  return l;
}
}  // namespace

namespace {
// A plain counter: shown at 0 from the collector's construction, as upstream registers it in NewGarbageCollector.
metrics::Counter& resourcesSyncErrors() {
  static auto& c = metrics::Registry::global().counter("garbagecollector_controller_resources_sync_error_total",
                                                       "Number of garbage collector resources sync errors");
  return c;
}
}  // namespace

GarbageCollector::GarbageCollector(std::shared_ptr<client::RestClient> metadataClient,
                                   std::shared_ptr<client::DiscoveryClient> discovery,
                                   informers::SharedInformerFactory& factory,
                                   std::shared_ptr<client::EventRecorder> recorder, Clock& clock)
    : client_(std::move(metadataClient)), discovery_(std::move(discovery)), factory_(factory),
      recorder_(std::move(recorder)), clock_(clock),
      deleteBase_("garbage_collector_attempt_to_delete",
                  [this](const std::string& key) { return attemptToDeleteWorker(key); }, clock, -1,
                  makeLimiter(deleteLimiter_, clock)),
      orphanBase_("garbage_collector_attempt_to_orphan",
                  [this](const std::string& uid) { return attemptToOrphanWorker(uid); }, clock),
      graph_(std::make_unique<GraphBuilder>(factory_, recorder_, deleteBase_.queue(), orphanBase_.queue(), absent_)) {
  resourcesSyncErrors();
}

GarbageCollector::~GarbageCollector() { resync_.stop(); }

// upstream GarbageCollector.Sync, one pass, with GetDeletableResources.
Status GarbageCollector::resyncMonitors() {
  std::lock_guard l(syncMu_);
  if (awaitingSync_ && clock_.now() - resyncedAt_ >= kResyncPeriod) {
    // upstream blocks up to one period for the monitors after a resync; we look once, a period later.
    awaitingSync_ = false;
    if (graph_->isSynced()) KLOG_V(2, "\"synced garbage collector\"");
    else {
      KLOG_ERROR("\"timed out waiting for dependency graph builder sync during GC sync\"");
      resourcesSyncErrors().inc();
    }
  }
  discovery_->invalidate();  // upstream discovers afresh every period
  auto discovered = discovery_->serverPreferredResourcesWithFailures();
  Status err;
  std::vector<client::APIResourceInfo> resources;
  std::map<std::string, std::string> failedGroups;
  if (!discovered.ok()) {
    err = discovered.status();
    KLOG_INFO("\"failed to discover preferred resources\" error=\"" + err.message() + "\"");
  } else {
    err = discovered->groupDiscoveryError();
    if (!err.ok()) KLOG_INFO("\"failed to discover some groups\" groups=\"" + err.message() + "\"");
    failedGroups = discovered->failedGroupVersions;
    resources = deletableResources(discovered->resources);
  }
  if (resources.empty()) {
    KLOG_V(2, "\"no resources reported by discovery, skipping garbage collector sync\"");
    resourcesSyncErrors().inc();
    return err;
  }
  std::set<std::string> newResources;
  for (const auto& r : resources) newResources.insert(gvrKey(r));
  // A group that failed discovery keeps the monitors that had synced: its objects are still in the graph.
  for (const auto& r : graph_->syncedResources())
    if (failedGroups.count(r.groupVersion()) && oldResources_.count(gvrKey(r)) && newResources.insert(gvrKey(r)).second)
      resources.push_back(r);
  if (newResources == oldResources_) {
    KLOG_V(5, "\"no resource updates from discovery, skipping garbage collector sync\"");
    return err;
  }
  KLOG_V(2, "\"syncing garbage collector with updated resources from discovery\" diff=\"" +
                client::printResourceDiff(oldResources_, newResources) + "\"");
  resyncMonitors(resources);
  oldResources_ = std::move(newResources);
  awaitingSync_ = true;
  resyncedAt_ = clock_.now();
  return err;
}

// With syncMu_ held.
void GarbageCollector::resyncMonitors(const std::vector<client::APIResourceInfo>& deletable) {
  auto counts = graph_->syncMonitors(deletable);
  KLOG_V(4, "\"synced monitors\" added=" + std::to_string(counts.added) + " kept=" + std::to_string(counts.kept) +
                " removed=" + std::to_string(counts.removed));
  // upstream startMonitors: nothing to start before Run; afterwards new informers start at once.
  if (running_ && counts.added > 0) factory_.start(*running_);
}

bool GarbageCollector::initialSyncEnded(Clock::TimePoint deadline) {
  if (initialSyncEnded_.load()) return true;
  const bool synced = graph_->isSynced();
  if (!synced && clock_.now() < deadline) return false;
  if (!initialSyncEnded_.exchange(true)) {
    if (synced) KLOG_INFO("\"Garbage collector: all resource monitors have synced\"");
    else KLOG_INFO("\"Garbage collector: not all resource monitors could be synced, proceeding anyways\"");
    KLOG_INFO("\"Proceeding to collect garbage\"");
  }
  return true;
}

void GarbageCollector::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting controller\" controller=\"garbagecollector\"");
  {
    std::lock_guard l(syncMu_);
    running_ = stop;
  }
  // Sync: at once, then every period after each pass.
  resync_.start(clock_, kResyncPeriod, stop, [this] { (void)resyncMonitors(); });
  // Run: the workers wait for the monitors, but no longer than the initial sync timeout.
  const Clock::TimePoint deadline = clock_.now() + kInitialSyncTimeout;
  auto ready = [this, deadline] { return initialSyncEnded(deadline); };
  deleteBase_.start(workers, stop, {ready});
  orphanBase_.start(workers, stop, {ready});
}

Result<std::pair<client::GroupVersionResource, bool>> GarbageCollector::apiResource(const std::string& apiVersion,
                                                                                      const std::string& kind) {
  auto [group, version] = splitAPIVersion(apiVersion);
  auto r = discovery_->resourceFor(group, version, kind);
  if (!r.ok()) {
    discovery_->invalidate();  // a kind created since the last look (upstream resets its REST mapper)
    r = discovery_->resourceFor(group, version, kind);
  }
  // No mapping is not the object being absent: an error to retry (upstream restMappingError), never a NotFound.
  if (!r.ok())
    return Status(r.status().code() == StatusCode::kNotFound ? StatusCode::kInvalidArgument : r.status().code(),
                  "unable to get REST mapping for " + apiVersion + "/" + kind + ": " + r.status().message());
  return std::pair{client::GroupVersionResource{group, version, r->resource}, r->namespaced};
}

Result<PartialObjectMetadata> GarbageCollector::getObject(const ObjectReference& r) {
  auto res = apiResource(r.apiVersion, r.kind);
  if (!res.ok()) return res.status();
  // A namespaced type without a namespace coordinate: only a cluster-scoped object's reference leads here.
  if (res->second && r.namespace_.empty()) return kNamespacedOwnerOfClusterScoped;
  client::Request req;
  req.path = client::resourcePath(res->first.group, res->first.version, res->first.resource,
                                  res->second ? r.namespace_ : "", r.name);
  req.accept = client::kAcceptPartialObjectMetadata;
  return client::decodeResponse<PartialObjectMetadata>(client_->send(req));
}

Status GarbageCollector::deleteObject(const ObjectReference& r, const std::string& resourceVersion,
                                      const std::vector<OwnerReference>& ownersAtRV, const std::string& policy) {
  auto res = apiResource(r.apiVersion, r.kind);
  if (!res.ok()) return res.status();
  const std::string ns = res->second ? r.namespace_ : "";
  client::DeleteOptions o;
  o.preconditionUID = r.uid;
  if (!resourceVersion.empty()) o.preconditionResourceVersion = resourceVersion;
  o.propagationPolicy = policy;
  Status s = client::removeDynamic(*client_, res->first, ns, r.name, o);
  if (s.code() == StatusCode::kConflict && !resourceVersion.empty()) {
    // Changed since read: still the same owners? Then delete regardless of the rest.
    auto live = getObject(r);
    if (!live.ok()) return live.status().code() == StatusCode::kNotFound ? Status::Ok() : live.status();
    if (live->metadata.uid != r.uid) return Status::Ok();
    if (!sameOwnerRefs(live->metadata.ownerReferences, ownersAtRV))
      return Status(StatusCode::kConflict, "ownerReferences of " + r.toString() + " changed since they were read");
    o.preconditionResourceVersion.reset();
    s = client::removeDynamic(*client_, res->first, ns, r.name, o);
  }
  return s;
}

Status GarbageCollector::mergePatch(const client::GroupVersionResource& gvr, const std::string& ns,
                                    const std::string& name, const std::string& body) {
  client::Request req;
  req.method = "PATCH";
  req.path = client::resourcePath(gvr.group, gvr.version, gvr.resource, ns, name);
  req.contentType = client::patchContentType(client::PatchType::kMerge);
  req.accept = client::kAcceptPartialObjectMetadata;
  req.body = body;
  return client_->send(req).status();
}

Status GarbageCollector::patchOwnerRefs(const ObjectReference& r,
                                        const std::function<bool(std::vector<OwnerReference>&)>& edit) {
  auto res = apiResource(r.apiVersion, r.kind);
  if (!res.ok()) return res.status();
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto live = getObject(r);
    if (!live.ok()) return live.status();
    if (live->metadata.uid != r.uid) return Status(StatusCode::kNotFound, r.toString() + " was replaced");
    auto refs = live->metadata.ownerReferences;
    if (!edit(refs)) return Status::Ok();
    nlohmann::json list = nlohmann::json::array();
    for (const auto& o : refs) list.push_back(ownerRefJson(o));
    nlohmann::json patch = {{"metadata",
                             {{"ownerReferences", refs.empty() ? nlohmann::json(nullptr) : list},
                              {"resourceVersion", live->metadata.resourceVersion},
                              {"uid", r.uid}}}};
    Status s = mergePatch(res->first, res->second ? r.namespace_ : "", r.name, patch.dump());
    if (s.code() != StatusCode::kConflict) return s;
  }
  return Status(StatusCode::kConflict, "ownerReferences of " + r.toString() + " kept changing");
}

Status GarbageCollector::removeFinalizer(const ObjectReference& r, const char* finalizer) {
  auto res = apiResource(r.apiVersion, r.kind);
  if (!res.ok()) return res.status();
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto live = getObject(r);
    if (live.status().code() == StatusCode::kNotFound) return Status::Ok();
    if (!live.ok())
      return Status(live.status().code(), "cannot finalize owner " + r.toString() + ", because cannot get it: " +
                                              live.status().message() + ". The garbage collector will retry later");
    auto fs = live->metadata.finalizers;
    auto it = std::find(fs.begin(), fs.end(), finalizer);
    if (it == fs.end()) return Status::Ok();
    fs.erase(it);
    nlohmann::json patch = {{"metadata", {{"resourceVersion", live->metadata.resourceVersion}, {"finalizers", fs}}}};
    Status s = mergePatch(res->first, res->second ? r.namespace_ : "", r.name, patch.dump());
    if (s.code() != StatusCode::kConflict) return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
  }
  return Status(StatusCode::kConflict, "finalizers of " + r.toString() + " kept changing");
}

Result<std::pair<bool, std::optional<PartialObjectMetadata>>> GarbageCollector::isDangling(const OwnerReference& ref,
                                                                                           const Node& item) {
  ObjectReference key{ref.apiVersion, ref.kind, ref.name, ref.uid, ""};
  if (absent_.has(key)) return std::pair{true, std::optional<PartialObjectMetadata>()};
  key.namespace_ = item.identity.namespace_;
  if (absent_.has(key)) return std::pair{true, std::optional<PartialObjectMetadata>()};
  auto res = apiResource(ref.apiVersion, ref.kind);
  if (!res.ok()) return res.status();
  const bool namespaced = res->second;
  if (!namespaced) key.namespace_ = "";
  if (item.identity.namespace_.empty() && namespaced) return kNamespacedOwnerOfClusterScoped;
  auto owner = getObject(ObjectReference{ref.apiVersion, ref.kind, ref.name, ref.uid, namespaced ? item.identity.namespace_ : ""});
  if (owner.status().code() == StatusCode::kNotFound) {
    absent_.add(key);
    KLOG_V(5, "\"item's owner is not found\" item=\"" + item.identity.toString() + "\" owner=\"" + ref.name + "\"");
    return std::pair{true, std::optional<PartialObjectMetadata>()};
  }
  if (!owner.ok()) return owner.status();
  if (owner->metadata.uid != ref.uid) {
    absent_.add(key);
    return std::pair{true, std::optional<PartialObjectMetadata>()};
  }
  return std::pair{false, std::optional<PartialObjectMetadata>(std::move(owner).value())};
}

Result<GarbageCollector::Classified> GarbageCollector::classifyReferences(const Node& item,
                                                                          const std::vector<OwnerReference>& refs) {
  Classified c;
  for (const auto& ref : refs) {
    auto d = isDangling(ref, item);
    if (!d.ok()) return d.status();
    if (d->first) {
      c.dangling.push_back(ref);
      continue;
    }
    const auto& owner = *d->second;
    if (owner.metadata.deletionTimestamp && hasFinalizer(owner.metadata, kFinalizerDeleteDependents))
      c.waiting.push_back(ref);
    else
      c.solid.push_back(ref);
  }
  return c;
}

Status GarbageCollector::processDeletingDependentsItem(const Node& item) {
  std::vector<Node> blocking;
  for (const auto& dep : graph_->nodes(item.dependents))
    for (const auto& o : dep.owners)
      if (o.uid == item.identity.uid && o.blockOwnerDeletion.value_or(false)) blocking.push_back(dep);
  if (blocking.empty()) return removeFinalizer(item.identity, kFinalizerDeleteDependents);
  for (const auto& dep : blocking)
    if (!dep.deletingDependents) deleteBase_.enqueue(dep.identity.uid);
  return Status::Ok();
}

Status GarbageCollector::attemptToDeleteItem(const Node& item) {
  KLOG_V(2, "\"Processing item\" item=\"" + item.identity.toString() + "\" virtual=" + (item.virtual_ ? "true" : "false"));
  if (item.beingDeleted && !item.deletingDependents) return Status::Ok();
  auto latest = getObject(item.identity);
  if (latest.status().code() == StatusCode::kNotFound ||
      (latest.ok() && latest->metadata.uid != item.identity.uid)) {
    graph_->enqueueVirtualDeleteEvent(item.identity);
    return kEnqueuedVirtualDelete;
  }
  if (!latest.ok()) return latest.status();
  if (item.deletingDependents) return processDeletingDependentsItem(item);
  const auto& refs = latest->metadata.ownerReferences;
  if (refs.empty()) return Status::Ok();
  auto c = classifyReferences(item, refs);
  if (!c.ok()) return c.status();
  if (!c->solid.empty()) {
    if (c->dangling.empty() && c->waiting.empty()) return Status::Ok();
    std::set<std::string> remove;
    for (const auto& r : c->dangling) remove.insert(r.uid);
    for (const auto& r : c->waiting) remove.insert(r.uid);
    KLOG_V(2, "\"item has at least one existing owner, will not garbage collect\" item=\"" + item.identity.toString() + "\"");
    return patchOwnerRefs(item.identity, [&](std::vector<OwnerReference>& rs) {
      size_t before = rs.size();
      std::erase_if(rs, [&](const OwnerReference& o) { return remove.count(o.uid) > 0; });
      return rs.size() != before;
    });
  }
  std::string policy;
  if (!c->waiting.empty() && !item.dependents.empty()) {
    // A dependent that itself waits for its dependents would deadlock on us: stop blocking our owners first.
    for (const auto& dep : graph_->nodes(item.dependents)) {
      if (!dep.deletingDependents) continue;
      KLOG_V(2, "\"processing object, some of its owners and its dependent have FinalizerDeletingDependents, to "
                "prevent potential cycle, its ownerReferences are going to be modified to be non-blocking\" item=\"" +
                    item.identity.toString() + "\"");
      Status s = patchOwnerRefs(item.identity, [](std::vector<OwnerReference>& rs) {
        bool changed = false;
        for (auto& o : rs)
          if (o.blockOwnerDeletion.value_or(false)) {
            o.blockOwnerDeletion = false;
            changed = true;
          }
        return changed;
      });
      if (!s.ok()) return s;
      break;
    }
    policy = "Foreground";
  } else if (hasFinalizer(latest->metadata, kFinalizerOrphanDependents)) {
    policy = "Orphan";
  } else if (hasFinalizer(latest->metadata, kFinalizerDeleteDependents)) {
    policy = "Foreground";
  } else {
    policy = "Background";
  }
  KLOG_V(2, "\"Deleting item\" item=\"" + item.identity.toString() + "\" propagationPolicy=\"" + policy + "\"");
  Status s = deleteObject(item.identity, latest->metadata.resourceVersion, refs, policy);
  if (s.code() == StatusCode::kNotFound) {
    graph_->enqueueVirtualDeleteEvent(item.identity);
    return kEnqueuedVirtualDelete;
  }
  return s;
}

runtime::SyncResult GarbageCollector::attemptToDeleteWorker(const std::string& key) {
  const auto entry = parseAttemptToDeleteKey(key);
  auto n = graph_->node(entry.uid);
  if (!n) return runtime::SyncResult::ok();
  if (entry.virtualIdentity) {
    // Queued as a virtual node. Observed since under other coordinates: this entry is stale (upstream skips a
    // queued virtual node whose uid the graph now knows as observed). Still virtual: check the queued coordinates.
    if (!n->virtual_ && n->identity != *entry.virtualIdentity) return runtime::SyncResult::ok();
    if (n->virtual_) n->identity = *entry.virtualIdentity;
  }
  Status s = attemptToDeleteItem(*n);
  // A virtual delete event was enqueued, or a cluster-scoped object names a namespaced owner (no retry fixes that).
  if (s.code() == StatusCode::kCancelled) return runtime::SyncResult::ok();
  if (s.code() == kNamespacedOwnerOfClusterScoped.code() && s.message() == kNamespacedOwnerOfClusterScoped.message())
    return runtime::SyncResult::ok();
  if (!s.ok())
    return runtime::SyncResult::error(
        Status(s.code(), "error syncing item " + n->identity.toString() + ": " + s.message()));
  if (n->virtual_) {
    // Exists in the API but not observed by a monitor (under these coordinates) yet: look again later, backing
    // off as upstream's rate-limited requeue does.
    auto again = graph_->node(entry.uid);
    if (!again || again->virtual_ || again->identity != n->identity) {
      KLOG_V(5, "\"item hasn't been observed via informer yet\" item=\"" + n->identity.toString() + "\"");
      return runtime::SyncResult::after(deleteLimiter_->requeue(key));
    }
  }
  return runtime::SyncResult::ok();
}

runtime::SyncResult GarbageCollector::attemptToOrphanWorker(const std::string& uid) {
  auto owner = graph_->node(uid);
  if (!owner) return runtime::SyncResult::ok();
  Status first;
  for (const auto& dep : graph_->nodes(owner->dependents)) {
    Status s = patchOwnerRefs(dep.identity, [&](std::vector<OwnerReference>& rs) {
      size_t before = rs.size();
      std::erase_if(rs, [&](const OwnerReference& o) { return o.uid == uid; });
      return rs.size() != before;
    });
    if (!s.ok() && s.code() != StatusCode::kNotFound && first.ok())
      first = Status(s.code(), "orphaning " + dep.identity.toString() + " failed, " + s.message());
  }
  if (!first.ok())
    return runtime::SyncResult::error(Status(first.code(), "failed to orphan dependents of owner " +
                                                               owner->identity.toString() + ", got errors: " +
                                                               first.message()));
  KLOG_V(5, "\"successfully updated all dependents\" owner=\"" + owner->identity.toString() + "\"");
  if (Status s = removeFinalizer(owner->identity, kFinalizerOrphanDependents); !s.ok())
    return runtime::SyncResult::error(s);
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::gc
