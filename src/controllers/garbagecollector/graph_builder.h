#pragma once
// The garbage collector's dependency graph (upstream pkg/controller/garbagecollector/graph.go, graph_builder.go):
// one metadata informer ("monitor") per deletable resource found by discovery (events ignored), every object a
// node keyed by UID with its ownerReferences; owners not (yet) observed are virtual nodes, checked against the API
// server by the collector. Graph changes are applied by one thread, in event order; they feed the collector's
// attemptToDelete queue (dependents of deleted owners, virtual owners, foreground deletions) and attemptToOrphan
// queue (owners deleted with the orphan finalizer). Thread-safe: readers take snapshots under the graph lock.
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/gen/meta_v1.h"
#include "client/discovery.h"
#include "client/events.h"
#include "client/typed_client.h"
#include "base/executor.h"
#include "informers/factory.h"
#include "runtime/workqueue.h"

namespace kcm::controllers::gc {

inline constexpr const char* kFinalizerOrphanDependents = "orphan";
inline constexpr const char* kFinalizerDeleteDependents = "foregroundDeletion";

// An object's coordinates (upstream objectReference): ownerReference fields plus namespace.
struct ObjectReference {
  std::string apiVersion, kind, name, uid, namespace_;
  bool operator==(const ObjectReference&) const = default;
  bool operator<(const ObjectReference& o) const {
    return std::tie(uid, apiVersion, kind, name, namespace_) < std::tie(o.uid, o.apiVersion, o.kind, o.name, o.namespace_);
  }
  std::string toString() const {
    return "[" + apiVersion + "/" + kind + ", namespace: " + namespace_ + ", name: " + name + ", uid: " + uid + "]";
  }
};

struct Node {
  ObjectReference identity;
  std::set<std::string> dependents;  // UIDs
  std::vector<api::meta::v1::OwnerReference> owners;
  bool beingDeleted = false;
  bool deletingDependents = false;
  bool virtual_ = false;  // created from an ownerReference, not (yet) observed
};

// upstream partitionDependents: the dependents whose reference to owner.uid matches every coordinate of `owner`
// (apiVersion, kind, name, and namespace when the owner is namespaced), and those with a reference to that uid that
// does not. A dependent with several references to the uid can be in both.
std::pair<std::vector<Node>, std::vector<Node>> partitionDependents(const std::vector<Node>& dependents,
                                                                    const ObjectReference& owner);
// upstream getAlternateOwnerIdentity: another identity the dependents give the owner uid that `verifiedAbsent`
// (just verified not to exist) was known by: the first following verifiedAbsent in (kind, apiVersion, namespace,
// name, uid) order, else the first. A cluster-scoped absent identity keeps alternates of its own apiVersion/kind
// cluster-scoped. nullopt when there is none.
std::optional<ObjectReference> getAlternateOwnerIdentity(const std::vector<Node>& dependents,
                                                         const ObjectReference& verifiedAbsent);

// attemptToDelete queue keys. An observed node is queued by uid; a virtual node by uid and the coordinates it had
// when queued, so the worker can tell (as upstream does with the queued node) whether it has been observed since
// under other coordinates, in which case that entry is stale.
std::string attemptToDeleteKey(const Node& n);
struct AttemptToDeleteEntry {
  std::string uid;
  std::optional<ObjectReference> virtualIdentity;
};
AttemptToDeleteEntry parseAttemptToDeleteKey(const std::string& key);

// A bounded LRU set of owners known to be absent (upstream ReferenceCache).
class AbsentOwnerCache {
 public:
  explicit AbsentOwnerCache(size_t max) : max_(max) {}
  void add(const ObjectReference& r);
  bool has(const ObjectReference& r);

 private:
  friend class GarbageCollectorTestPeer;
  std::mutex mu_;
  size_t max_;
  std::list<ObjectReference> order_;
  std::map<ObjectReference, std::list<ObjectReference>::iterator> items_;
};

struct Monitor {
  client::APIResourceInfo resource;  // group, version, resource and kind
  informers::SharedInformer<api::meta::v1::PartialObjectMetadata>* informer = nullptr;
  informers::Registration registration;  // the graph's handler on that informer
};

class GraphBuilder {
 public:
  GraphBuilder(informers::SharedInformerFactory& factory, std::shared_ptr<client::EventRecorder> recorder,
               runtime::WorkQueue& attemptToDelete, runtime::WorkQueue& attemptToOrphan, AbsentOwnerCache& absent);
  ~GraphBuilder();

  // upstream syncMonitors: monitors for exactly `deletable`. New ones register the graph's handler on the
  // factory's metadata informer (it starts with the factory's next start()); those of resources no longer listed
  // are stopped: their handler is removed and they no longer count for isSynced(). The shared informer itself
  // stays with the factory, as upstream's shared informers do.
  struct MonitorCounts {
    int added = 0, kept = 0, removed = 0;
  };
  MonitorCounts syncMonitors(const std::vector<client::APIResourceInfo>& deletable);
  // upstream IsSynced: there is a monitor and every monitor has synced.
  bool isSynced() const;
  // The monitored resources whose informer has synced (upstream IsResourceSynced, for all at once).
  std::vector<client::APIResourceInfo> syncedResources() const;
  // upstream GetMonitor (for the storage version migrator): the metadata informer monitoring gvr, whose store
  // and lastSyncResourceVersion() the caller reads; nullptr when there is no monitor for it.
  informers::SharedInformer<api::meta::v1::PartialObjectMetadata>* getMonitor(
      const client::GroupVersionResource& gvr) const;

  // For the collector: a copy of a node, if in the graph.
  std::optional<Node> node(const std::string& uid) const;
  std::vector<Node> nodes(const std::set<std::string>& uids) const;
  // The collector found the object gone (or replaced): process it like a delete event.
  void enqueueVirtualDeleteEvent(const ObjectReference& ref);
  std::string dumpDOT() const;

 private:
  friend class GarbageCollectorTestPeer;  // unit tests feed and inspect graph changes step by step
  enum class EventType { kAdd, kUpdate, kDelete };
  struct Event {
    EventType type;
    bool virtual_ = false;
    std::shared_ptr<const api::meta::v1::PartialObjectMetadata> obj, oldObj;
    std::string apiVersion, kind;
  };
  void enqueue(Event e);
  void processGraphChange(const Event& e);
  void insertNode(Node n);
  void addDependentToOwners(Node& n, const std::vector<api::meta::v1::OwnerReference>& owners);
  void removeDependentFromOwners(const Node& n, const std::vector<api::meta::v1::OwnerReference>& owners);
  void removeNode(const Node& n);
  void processTransitions(const api::meta::v1::PartialObjectMetadata* oldObj,
                          const api::meta::v1::PartialObjectMetadata& obj, const std::string& uid);
  void reportInvalidNamespaceOwnerRef(const Node& n, const std::string& invalidOwnerUID);
  std::vector<Node> dependentsOf(const Node& n) const;  // with graphMu_ held

  informers::SharedInformerFactory& factory_;
  std::shared_ptr<client::EventRecorder> recorder_;
  runtime::WorkQueue& attemptToDelete_;
  runtime::WorkQueue& attemptToOrphan_;
  AbsentOwnerCache& absent_;

  mutable std::mutex monitorsMu_;
  std::map<std::string, Monitor> monitors_;  // by gvr string

  mutable std::shared_mutex graphMu_;
  std::unordered_map<std::string, Node> uidToNode_;

  // Unit tests only: when set, graph changes wait in pendingChanges_ (processed by the test) instead of the strand.
  bool manualChanges_ = false;
  std::mutex pendingMu_;
  std::deque<Event> pendingChanges_;

  Strand graphChanges_;  // processGraphChanges: one change at a time, in order; last, drained first
};

bool hasFinalizer(const api::meta::v1::ObjectMeta& m, const char* f);

}  // namespace kcm::controllers::gc
