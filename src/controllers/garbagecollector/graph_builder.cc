#include "controllers/garbagecollector/graph_builder.h"

#include <algorithm>

#include "base/log.h"

namespace kcm::controllers::gc {

using api::meta::v1::OwnerReference;
using api::meta::v1::PartialObjectMetadata;

bool hasFinalizer(const api::meta::v1::ObjectMeta& m, const char* f) {
  return std::find(m.finalizers.begin(), m.finalizers.end(), f) != m.finalizers.end();
}

namespace {
ObjectReference ownerCoordinates(const OwnerReference& r, const std::string& ns) {
  return {r.apiVersion, r.kind, r.name, r.uid, ns};
}
bool beingDeleted(const PartialObjectMetadata& o) { return o.metadata.deletionTimestamp.has_value(); }
bool matchesCoordinates(const OwnerReference& r, const ObjectReference& o) {
  return r.uid == o.uid && r.name == o.name && r.kind == o.kind && r.apiVersion == o.apiVersion;
}
// upstream referenceLessThan: kind and apiVersion weigh more than namespace, then name, then uid.
bool referenceLess(const ObjectReference& a, const ObjectReference& b) {
  return std::tie(a.kind, a.apiVersion, a.namespace_, a.name, a.uid) <
         std::tie(b.kind, b.apiVersion, b.namespace_, b.name, b.uid);
}
constexpr const char* kVirtualKeyPrefix = "virtual|";
}  // namespace

std::pair<std::vector<Node>, std::vector<Node>> partitionDependents(const std::vector<Node>& dependents,
                                                                    const ObjectReference& owner) {
  std::vector<Node> matching, nonmatching;
  const bool ownerNamespaced = !owner.namespace_.empty();
  for (const auto& dep : dependents) {
    bool match = false, mismatch = false;
    if (ownerNamespaced && owner.namespace_ != dep.identity.namespace_) {
      mismatch = true;  // a namespaced owner is never in another namespace
    } else {
      for (const auto& r : dep.owners) {
        if (r.uid != owner.uid) continue;
        if (matchesCoordinates(r, owner)) match = true;
        else mismatch = true;
      }
    }
    if (match) matching.push_back(dep);
    if (mismatch) nonmatching.push_back(dep);
  }
  return {std::move(matching), std::move(nonmatching)};
}

std::optional<ObjectReference> getAlternateOwnerIdentity(const std::vector<Node>& dependents,
                                                         const ObjectReference& verifiedAbsent) {
  const bool absentClusterScoped = verifiedAbsent.namespace_.empty();
  std::set<ObjectReference> seen = {verifiedAbsent};
  std::optional<ObjectReference> first, firstFollowing;
  for (const auto& dep : dependents) {
    for (const auto& r : dep.owners) {
      if (r.uid != verifiedAbsent.uid) continue;
      // The very identity just verified absent is no alternate.
      if (matchesCoordinates(r, verifiedAbsent) &&
          (absentClusterScoped || verifiedAbsent.namespace_ == dep.identity.namespace_))
        continue;
      ObjectReference ref = ownerCoordinates(r, dep.identity.namespace_);
      // The absent identity showed this apiVersion/kind is cluster-scoped: no namespace for it.
      if (absentClusterScoped && ref.apiVersion == verifiedAbsent.apiVersion && ref.kind == verifiedAbsent.kind)
        ref.namespace_.clear();
      if (!seen.insert(ref).second) continue;
      if (!first || referenceLess(ref, *first)) first = ref;
      if (referenceLess(verifiedAbsent, ref) && (!firstFollowing || referenceLess(ref, *firstFollowing)))
        firstFollowing = ref;
    }
  }
  return firstFollowing ? firstFollowing : first;
}

std::string attemptToDeleteKey(const Node& n) {
  if (!n.virtual_) return n.identity.uid;
  // Names, namespaces, kinds, apiVersions and uids cannot contain '|'.
  const auto& i = n.identity;
  return kVirtualKeyPrefix + i.apiVersion + "|" + i.kind + "|" + i.namespace_ + "|" + i.name + "|" + i.uid;
}

AttemptToDeleteEntry parseAttemptToDeleteKey(const std::string& key) {
  if (key.rfind(kVirtualKeyPrefix, 0) != 0) return {key, std::nullopt};
  std::vector<std::string> parts;
  size_t start = std::string(kVirtualKeyPrefix).size();
  for (size_t bar; (bar = key.find('|', start)) != std::string::npos; start = bar + 1)
    parts.push_back(key.substr(start, bar - start));
  parts.push_back(key.substr(start));
  if (parts.size() != 5) return {key, std::nullopt};
  return {parts[4], ObjectReference{parts[0], parts[1], parts[3], parts[4], parts[2]}};
}

void AbsentOwnerCache::add(const ObjectReference& r) {
  std::lock_guard l(mu_);
  if (auto it = items_.find(r); it != items_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.push_front(r);
  items_[r] = order_.begin();
  if (items_.size() > max_) {
    items_.erase(order_.back());
    order_.pop_back();
  }
}

bool AbsentOwnerCache::has(const ObjectReference& r) {
  std::lock_guard l(mu_);
  auto it = items_.find(r);
  if (it == items_.end()) return false;
  order_.splice(order_.begin(), order_, it->second);
  return true;
}

GraphBuilder::GraphBuilder(informers::SharedInformerFactory& factory, std::shared_ptr<client::EventRecorder> recorder,
                           runtime::WorkQueue& attemptToDelete, runtime::WorkQueue& attemptToOrphan,
                           AbsentOwnerCache& absent)
    : factory_(factory), recorder_(std::move(recorder)), attemptToDelete_(attemptToDelete),
      attemptToOrphan_(attemptToOrphan), absent_(absent) {}

GraphBuilder::~GraphBuilder() = default;

// Called by one caller at a time (the collector's discovery sync).
GraphBuilder::MonitorCounts GraphBuilder::syncMonitors(const std::vector<client::APIResourceInfo>& deletable) {
  std::set<std::string> existing, wanted;
  {
    std::lock_guard l(monitorsMu_);
    for (const auto& [key, _] : monitors_) existing.insert(key);
  }
  std::map<std::string, Monitor> added;
  for (const auto& r : deletable) {
    client::GroupVersionResource gvr{r.group, r.version, r.resource};
    const std::string key = gvr.toString();
    if (!wanted.insert(key).second || existing.count(key)) continue;
    auto& inf = factory_.forMetadata(gvr);
    const std::string apiVersion = r.groupVersion(), kind = r.kind;
    informers::EventHandler<PartialObjectMetadata> h;
    h.onAdd = [this, apiVersion, kind](const auto& o) { enqueue({EventType::kAdd, false, o, nullptr, apiVersion, kind}); };
    h.onUpdate = [this, apiVersion, kind](const auto& old, const auto& o) {
      enqueue({EventType::kUpdate, false, o, old, apiVersion, kind});
    };
    h.onDelete = [this, apiVersion, kind](const auto& o, bool) {
      enqueue({EventType::kDelete, false, o, nullptr, apiVersion, kind});
    };
    added.emplace(key, Monitor{r, &inf, inf.addEventHandler(h)});
  }
  MonitorCounts counts;
  counts.added = static_cast<int>(added.size());
  std::map<std::string, Monitor> removed;
  {
    std::lock_guard l(monitorsMu_);
    for (auto it = monitors_.begin(); it != monitors_.end();) {
      if (wanted.count(it->first)) {
        ++counts.kept;
        ++it;
      } else {
        removed.insert(monitors_.extract(it++));
      }
    }
    monitors_.merge(added);
  }
  counts.removed = static_cast<int>(removed.size());
  removed.clear();  // their handlers are removed here, outside the lock
  return counts;
}

informers::SharedInformer<PartialObjectMetadata>* GraphBuilder::getMonitor(
    const client::GroupVersionResource& gvr) const {
  std::lock_guard l(monitorsMu_);
  auto it = monitors_.find(gvr.toString());
  return it == monitors_.end() ? nullptr : it->second.informer;
}

bool GraphBuilder::isSynced() const {
  std::lock_guard l(monitorsMu_);
  if (monitors_.empty()) return false;
  for (const auto& [_, m] : monitors_)
    if (!m.informer->hasSynced()) return false;
  return true;
}

std::vector<client::APIResourceInfo> GraphBuilder::syncedResources() const {
  std::lock_guard l(monitorsMu_);
  std::vector<client::APIResourceInfo> out;
  for (const auto& [_, m] : monitors_)
    if (m.informer->hasSynced()) out.push_back(m.resource);
  return out;
}

void GraphBuilder::enqueue(Event e) {
  if (manualChanges_) {
    std::lock_guard l(pendingMu_);
    pendingChanges_.push_back(std::move(e));
    return;
  }
  graphChanges_.post([this, e = std::move(e)] { processGraphChange(e); });
}

void GraphBuilder::enqueueVirtualDeleteEvent(const ObjectReference& ref) {
  auto obj = std::make_shared<PartialObjectMetadata>();
  obj->metadata.name = ref.name;
  obj->metadata.namespace_ = ref.namespace_;
  obj->metadata.uid = ref.uid;
  enqueue({EventType::kDelete, true, obj, nullptr, ref.apiVersion, ref.kind});
}

std::optional<Node> GraphBuilder::node(const std::string& uid) const {
  std::shared_lock l(graphMu_);
  auto it = uidToNode_.find(uid);
  if (it == uidToNode_.end()) return std::nullopt;
  return it->second;
}

std::vector<Node> GraphBuilder::nodes(const std::set<std::string>& uids) const {
  std::shared_lock l(graphMu_);
  std::vector<Node> out;
  for (const auto& u : uids)
    if (auto it = uidToNode_.find(u); it != uidToNode_.end()) out.push_back(it->second);
  return out;
}

// Called with graphMu_ held.
void GraphBuilder::addDependentToOwners(Node& n, const std::vector<OwnerReference>& owners) {
  bool potentiallyInvalid = false;
  for (const auto& o : owners) {
    auto it = uidToNode_.find(o.uid);
    if (it == uidToNode_.end()) {
      // An owner not observed yet: a virtual node the collector will verify.
      Node v;
      v.identity = ownerCoordinates(o, n.identity.namespace_);
      v.virtual_ = true;
      v.dependents.insert(n.identity.uid);
      KLOG_V(5, "\"add virtual item\" identity=\"" + v.identity.toString() + "\"");
      const std::string key = attemptToDeleteKey(v);
      uidToNode_.emplace(o.uid, std::move(v));
      attemptToDelete_.add(key);
      continue;
    }
    Node& owner = it->second;
    owner.dependents.insert(n.identity.uid);
    if (potentiallyInvalid) continue;
    // A reference that cannot be right (another namespace, other coordinates): let the collector verify it.
    const bool ownerNamespaced = !owner.identity.namespace_.empty();
    if (ownerNamespaced && owner.identity.namespace_ != n.identity.namespace_) {
      if (!owner.virtual_) {
        KLOG_V(2, "\"item references an owner but does not match namespaces\" item=\"" + n.identity.toString() +
                      "\" owner=\"" + owner.identity.toString() + "\"");
        reportInvalidNamespaceOwnerRef(n, o.uid);
      }
      potentiallyInvalid = true;
    } else if (o.apiVersion != owner.identity.apiVersion || o.kind != owner.identity.kind ||
               o.name != owner.identity.name) {
      potentiallyInvalid = true;
    } else if (!ownerNamespaced && owner.identity.namespace_ != n.identity.namespace_ && owner.virtual_) {
      potentiallyInvalid = true;
    }
  }
  if (potentiallyInvalid) attemptToDelete_.add(n.identity.uid);
}

void GraphBuilder::removeDependentFromOwners(const Node& n, const std::vector<OwnerReference>& owners) {
  for (const auto& o : owners)
    if (auto it = uidToNode_.find(o.uid); it != uidToNode_.end()) it->second.dependents.erase(n.identity.uid);
}

void GraphBuilder::insertNode(Node n) {
  const std::string uid = n.identity.uid;
  auto owners = n.owners;
  auto [it, _] = uidToNode_.insert_or_assign(uid, std::move(n));
  addDependentToOwners(it->second, owners);
}

void GraphBuilder::removeNode(const Node& n) {
  removeDependentFromOwners(n, n.owners);
  uidToNode_.erase(n.identity.uid);
}

std::vector<Node> GraphBuilder::dependentsOf(const Node& n) const {
  std::vector<Node> out;
  for (const auto& d : n.dependents)
    if (auto it = uidToNode_.find(d); it != uidToNode_.end()) out.push_back(it->second);
  return out;
}

void GraphBuilder::reportInvalidNamespaceOwnerRef(const Node& n, const std::string& invalidOwnerUID) {
  for (const auto& o : n.owners) {
    if (o.uid != invalidOwnerUID) continue;
    ObjectReference invalid{o.apiVersion, o.kind, o.name, o.uid, n.identity.namespace_};
    recorder_->event({n.identity.kind, n.identity.apiVersion, n.identity.namespace_, n.identity.name, n.identity.uid,
                      "", ""},
                     client::kEventTypeWarning, "OwnerRefInvalidNamespace",
                     "ownerRef " + invalid.toString() + " does not exist in namespace \"" + n.identity.namespace_ + "\"");
    return;
  }
}

void GraphBuilder::processTransitions(const PartialObjectMetadata* oldObj, const PartialObjectMetadata& obj,
                                      const std::string& uid) {
  auto starts = [&](const char* finalizer) {
    if (!beingDeleted(obj) || !hasFinalizer(obj.metadata, finalizer)) return false;
    return !oldObj || !beingDeleted(*oldObj) || !hasFinalizer(oldObj->metadata, finalizer);
  };
  if (starts(kFinalizerOrphanDependents)) {
    KLOG_V(5, "\"add item to attemptToOrphan\" uid=\"" + uid + "\"");
    attemptToOrphan_.add(uid);
    return;
  }
  if (starts(kFinalizerDeleteDependents)) {
    auto it = uidToNode_.find(uid);
    if (it == uidToNode_.end()) return;
    it->second.deletingDependents = true;
    for (const auto& d : it->second.dependents) attemptToDelete_.add(d);
    attemptToDelete_.add(uid);
  }
}

void GraphBuilder::processGraphChange(const Event& e) {
  const auto& obj = *e.obj;
  const std::string& uid = obj.metadata.uid;
  const ObjectReference observed{e.apiVersion, e.kind, obj.metadata.name, uid, obj.metadata.namespace_};
  std::unique_lock l(graphMu_);
  auto it = uidToNode_.find(uid);
  bool found = it != uidToNode_.end();
  if (found && !e.virtual_ && it->second.virtual_) {
    // A virtual node observed for real: dependents that named it wrongly (e.g. another namespace) are re-checked.
    Node& n = it->second;
    if (observed != n.identity) {
      // Dependents that disagree with the observed coordinates are re-checked (bad child -> good parent order; the
      // other order is caught in addDependentToOwners). Still-solid owners make that a no-op.
      for (const auto& dep : partitionDependents(dependentsOf(n), observed).second) {
        if (!observed.namespace_.empty() && dep.identity.namespace_ != observed.namespace_) {
          KLOG_V(2, "\"item references an owner but does not match namespaces\" item=\"" + dep.identity.toString() +
                        "\" owner=\"" + observed.toString() + "\"");
          reportInvalidNamespaceOwnerRef(dep, uid);
        }
        attemptToDelete_.add(attemptToDeleteKey(dep));
      }
      KLOG_V(2, "\"replacing virtual item with observed item\" virtual=\"" + n.identity.toString() + "\" observed=\"" +
                    observed.toString() + "\"");
      n.identity = observed;
    }
    n.virtual_ = false;
  }
  switch (e.type) {
    case EventType::kAdd:
    case EventType::kUpdate:
      if (!found) {
        Node n;
        n.identity = observed;
        n.owners = obj.metadata.ownerReferences;
        n.beingDeleted = beingDeleted(obj);
        n.deletingDependents = n.beingDeleted && hasFinalizer(obj.metadata, kFinalizerDeleteDependents);
        insertNode(std::move(n));
      } else {
        Node& n = it->second;
        // Owners added, removed or changed (e.g. blockOwnerDeletion) since the last event.
        std::vector<OwnerReference> added, removed;
        std::vector<OwnerReference> changed;
        for (const auto& o : obj.metadata.ownerReferences) {
          auto old = std::find_if(n.owners.begin(), n.owners.end(), [&](const auto& x) { return x.uid == o.uid; });
          if (old == n.owners.end()) added.push_back(o);
          else if (old->blockOwnerDeletion != o.blockOwnerDeletion || old->controller != o.controller ||
                   old->name != o.name || old->kind != o.kind || old->apiVersion != o.apiVersion)
            changed.push_back(o);
        }
        for (const auto& o : n.owners)
          if (std::none_of(obj.metadata.ownerReferences.begin(), obj.metadata.ownerReferences.end(),
                           [&](const auto& x) { return x.uid == o.uid; }))
            removed.push_back(o);
        if (!added.empty() || !removed.empty() || !changed.empty()) {
          // An owner waiting in foreground deletion may be unblocked by a removed or unblocked reference.
          auto unblock = [&](const OwnerReference& ref, bool wasBlocking) {
            auto on = uidToNode_.find(ref.uid);
            if (wasBlocking && on != uidToNode_.end() && on->second.deletingDependents) attemptToDelete_.add(ref.uid);
          };
          for (const auto& r : removed) unblock(r, r.blockOwnerDeletion.value_or(false));
          for (const auto& c : changed) {
            auto old = std::find_if(n.owners.begin(), n.owners.end(), [&](const auto& x) { return x.uid == c.uid; });
            unblock(c, old->blockOwnerDeletion.value_or(false) && !c.blockOwnerDeletion.value_or(false));
          }
          n.owners = obj.metadata.ownerReferences;
          Node copy = n;
          addDependentToOwners(copy, added);
          removeDependentFromOwners(copy, removed);
        }
        if (beingDeleted(obj)) uidToNode_.at(uid).beingDeleted = true;
      }
      processTransitions(e.oldObj.get(), obj, uid);
      return;
    case EventType::kDelete: {
      if (!found) return;
      Node n = it->second;
      if (e.virtual_) {
        // The collector verified that `observed` does not exist; the node may be known by other coordinates too.
        auto verifiedAbsent = [&](const std::vector<Node>& matching) {
          if (matching.empty()) return;
          absent_.add(observed);
          for (const auto& d : matching) attemptToDelete_.add(attemptToDeleteKey(d));
        };
        if (n.virtual_) {
          auto [matching, nonmatching] = partitionDependents(dependentsOf(n), observed);
          if (!nonmatching.empty()) {
            // Some dependents name this uid differently: keep the virtual node, collect those that named it as
            // verified, and (when the node's own coordinates were the ones verified) try another identity.
            verifiedAbsent(matching);
            if (n.identity == observed) {
              if (auto alt = getAlternateOwnerIdentity(nonmatching, observed)) {
                it->second.identity = *alt;
                attemptToDelete_.addRateLimited(attemptToDeleteKey(it->second));
              }
            }
            return;
          }
        } else if (n.identity != observed) {
          // An observed node is not removed on coordinates other than its own: only dependents using them are.
          verifiedAbsent(partitionDependents(dependentsOf(n), observed).first);
          return;
        }
      }
      removeNode(n);
      if (!n.dependents.empty()) absent_.add(observed);
      for (const auto& d : n.dependents) attemptToDelete_.add(d);  // dependents are observed nodes: keyed by uid
      for (const auto& o : n.owners) {
        auto on = uidToNode_.find(o.uid);
        // An owner in foreground deletion may be waiting for exactly this dependent.
        if (on != uidToNode_.end() && on->second.deletingDependents) attemptToDelete_.add(o.uid);
      }
      return;
    }
  }
}

std::string GraphBuilder::dumpDOT() const {
  std::shared_lock l(graphMu_);
  std::string out = "strict digraph full {\n  // Node definitions.\n";
  for (const auto& [uid, n] : uidToNode_)
    out += "  \"" + uid + "\" [label=\"uid=" + uid + "\\nnamespace=" + n.identity.namespace_ + "\\n" + n.identity.kind +
           "." + n.identity.apiVersion + "." + n.identity.name + "\"" + (n.virtual_ ? " fillcolor=\"#ff0000\" style=filled" : "") +
           "];\n";
  out += "\n  // Edge definitions.\n";
  for (const auto& [uid, n] : uidToNode_)
    for (const auto& d : n.dependents) out += "  \"" + d + "\" -> \"" + uid + "\";\n";
  return out + "}\n";
}

}  // namespace kcm::controllers::gc
