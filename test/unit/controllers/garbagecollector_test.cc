// garbage-collector-controller against the in-memory apiserver: attemptToDeleteItem (dangling, solid and waiting
// owners, the propagation policy, virtual delete events), orphaning, foreground deletion, the absent-owner cache,
// the dependency graph (upstream's TestProcessEvent, TestGetAlternateOwnerIdentity and TestConflictingData run
// step by step: graph changes and attemptToDelete items are processed one at a time by the test) and whole
// cascades with the collector running against informers.
#include "controllers/garbagecollector/garbagecollector.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>

#include "api/gen/core_v1.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/meta_v1_json.h"
#include "api/support/wall_time.h"
#include "fake/fake_apiserver.h"

namespace kcm::controllers::gc {

// Runs the collector's and the graph builder's steps one at a time (as upstream's tests call processGraphChanges
// and processAttemptToDeleteWorker): graph changes are held for the test instead of running on the strand.
class GarbageCollectorTestPeer {
 public:
  struct Change {
    std::string type;  // add, update, delete
    bool virtual_ = false;
    ObjectReference identity;
  };

  explicit GarbageCollectorTestPeer(GarbageCollector& gc) : gc_(gc) { gc_.graph_->manualChanges_ = true; }
  // Syncs in flight on either worker queue.
  static int inFlight(GarbageCollector& gc) { return gc.deleteBase_.inFlight() + gc.orphanBase_.inFlight(); }
  // Every monitor has synced (upstream GraphBuilder.IsSynced).
  static bool graphSynced(GarbageCollector& gc) { return gc.graph_->isSynced(); }
  // One attemptToDelete item through the queue's own handling (forget / rate-limited requeue); false when none
  // is ready.
  bool processNextAttemptToDelete() {
    if (gc_.deleteBase_.queue().len() == 0) return false;
    return gc_.deleteBase_.processNextWorkItem();
  }

  Status attemptToDeleteItem(const Node& n) { return gc_.attemptToDeleteItem(n); }
  runtime::SyncResult attemptToDeleteWorker(const std::string& key) { return gc_.attemptToDeleteWorker(key); }
  runtime::SyncResult attemptToOrphanWorker(const std::string& uid) { return gc_.attemptToOrphanWorker(uid); }
  // (solid, dangling, waiting) owner uids.
  Result<std::array<std::vector<std::string>, 3>> classify(const Node& item,
                                                           const std::vector<api::meta::v1::OwnerReference>& refs) {
    auto c = gc_.classifyReferences(item, refs);
    if (!c.ok()) return c.status();
    std::array<std::vector<std::string>, 3> out;
    for (const auto& r : c->solid) out[0].push_back(r.uid);
    for (const auto& r : c->dangling) out[1].push_back(r.uid);
    for (const auto& r : c->waiting) out[2].push_back(r.uid);
    return out;
  }
  runtime::WorkQueue& attemptToDelete() { return gc_.deleteBase_.queue(); }
  runtime::WorkQueue& attemptToOrphan() { return gc_.orphanBase_.queue(); }
  AbsentOwnerCache& absent() { return gc_.absent_; }
  static size_t size(AbsentOwnerCache& c) {
    std::lock_guard l(c.mu_);
    return c.items_.size();
  }

  // Processes one graph change now (upstream processEvent).
  void process(const std::string& type, const api::meta::v1::PartialObjectMetadata& obj,
               const std::string& apiVersion, const std::string& kind,
               std::shared_ptr<const api::meta::v1::PartialObjectMetadata> oldObj = nullptr) {
    gc_.graph_->processGraphChange(event(type, obj, apiVersion, kind, std::move(oldObj)));
  }
  // Puts a change in front of the held ones (upstream insertEvent).
  void insertFront(const std::string& type, const api::meta::v1::PartialObjectMetadata& obj,
                   const std::string& apiVersion, const std::string& kind) {
    std::lock_guard l(gc_.graph_->pendingMu_);
    gc_.graph_->pendingChanges_.push_front(event(type, obj, apiVersion, kind, nullptr));
  }
  std::vector<Change> pendingChanges() {
    std::lock_guard l(gc_.graph_->pendingMu_);
    std::vector<Change> out;
    for (const auto& e : gc_.graph_->pendingChanges_)
      out.push_back({e.type == GraphBuilder::EventType::kAdd      ? "add"
                     : e.type == GraphBuilder::EventType::kUpdate ? "update"
                                                                  : "delete",
                     e.virtual_,
                     {e.apiVersion, e.kind, e.obj->metadata.name, e.obj->metadata.uid, e.obj->metadata.namespace_}});
    return out;
  }
  // Processes the oldest held change; false when there is none.
  bool processPendingChange() {
    std::optional<GraphBuilder::Event> e;
    {
      std::lock_guard l(gc_.graph_->pendingMu_);
      if (gc_.graph_->pendingChanges_.empty()) return false;
      e = gc_.graph_->pendingChanges_.front();
      gc_.graph_->pendingChanges_.pop_front();
    }
    gc_.graph_->processGraphChange(*e);
    return true;
  }
  std::vector<Node> nodes() {
    std::shared_lock l(gc_.graph_->graphMu_);
    std::vector<Node> out;
    for (const auto& [uid, n] : gc_.graph_->uidToNode_) out.push_back(n);
    return out;
  }
  std::optional<Node> node(const std::string& uid) { return gc_.graph_->node(uid); }

 private:
  static GraphBuilder::Event event(const std::string& type, const api::meta::v1::PartialObjectMetadata& obj,
                                   const std::string& apiVersion, const std::string& kind,
                                   std::shared_ptr<const api::meta::v1::PartialObjectMetadata> oldObj) {
    GraphBuilder::Event e;
    e.type = type == "add"      ? GraphBuilder::EventType::kAdd
             : type == "update" ? GraphBuilder::EventType::kUpdate
                                : GraphBuilder::EventType::kDelete;
    e.obj = std::make_shared<const api::meta::v1::PartialObjectMetadata>(obj);
    e.oldObj = std::move(oldObj);
    e.apiVersion = apiVersion;
    e.kind = kind;
    return e;
  }
  GarbageCollector& gc_;
};

namespace {

using api::meta::v1::OwnerReference;
using api::meta::v1::PartialObjectMetadata;
using nlohmann::json;
using testing::Action;
using testing::FakeApiServer;
using namespace std::chrono_literals;
using Ref = ObjectReference;

template <class P>
bool eventually(P p) {
  for (int i = 0; i < 1000; ++i) {
    if (p()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return p();
}

// upstream makeID: (apiVersion, kind, namespace, name, uid).
Ref id(const std::string& apiVersion, const std::string& kind, const std::string& ns, const std::string& name,
       const std::string& uid) {
  return Ref{apiVersion, kind, name, uid, ns};
}

OwnerReference ownerRef(const Ref& r, std::optional<bool> block = std::nullopt) {
  OwnerReference o;
  o.apiVersion = r.apiVersion;
  o.kind = r.kind;
  o.name = r.name;
  o.uid = r.uid;
  o.blockOwnerDeletion = block;
  return o;
}

PartialObjectMetadata metadata(const Ref& r, const std::vector<Ref>& owners = {}) {
  PartialObjectMetadata o;
  o.apiVersion = r.apiVersion;
  o.kind = r.kind;
  o.metadata.name = r.name;
  o.metadata.namespace_ = r.namespace_;
  o.metadata.uid = r.uid;
  for (const auto& ow : owners) o.metadata.ownerReferences.push_back(ownerRef(ow));
  return o;
}

std::string plural(const std::string& kind) {
  static const std::map<std::string, std::string> m = {
      {"Pod", "pods"},         {"Node", "nodes"},   {"Secret", "secrets"},
      {"Deployment", "deployments"}, {"Role", "roles"}, {"ConfigMap", "configmaps"},
      {"ReplicationController", "replicationcontrollers"}};
  return m.at(kind);
}

std::string collectionPath(const Ref& r) {
  const std::string gv = r.apiVersion.find('/') == std::string::npos ? "/api/" + r.apiVersion : "/apis/" + r.apiVersion;
  return gv + (r.namespace_.empty() ? "" : "/namespaces/" + r.namespace_) + "/" + plural(r.kind);
}

// An object of any kind in the apiserver: metadata and owner references (with optional extra metadata fields).
json objectJson(const Ref& r, const std::vector<OwnerReference>& owners = {}, json extraMetadata = json::object()) {
  json md = {{"name", r.name}, {"uid", r.uid}};
  if (!r.namespace_.empty()) md["namespace"] = r.namespace_;
  if (!owners.empty()) {
    md["ownerReferences"] = json::array();
    for (const auto& o : owners) md["ownerReferences"].push_back(json::parse(api::meta::v1::toJson(o)));
  }
  md.update(extraMetadata);
  return {{"apiVersion", r.apiVersion}, {"kind", r.kind}, {"metadata", md}};
}

// "get v1 pods ns1/podname1", "delete apps/v1 deployments ns1/deployment1", "get v1 nodes nodename".
std::string describe(const Action& a) {
  return a.verb + " " + (a.group.empty() ? a.version : a.group + "/" + a.version) + " " + a.resource + " " +
         (a.ns.empty() ? "" : a.ns + "/") + a.name;
}

// A collector over a factory that is never started, with the test driving it through the peer.
class Harness {
 public:
  Harness() {
    server->addStandardResources();
    for (const char* v : {"v1", "v1beta1"}) {  // rbac roles, served at two versions
      FakeApiServer::Resource r;
      r.group = "rbac.authorization.k8s.io";
      r.version = v;
      r.resource = "roles";
      r.kind = "Role";
      server->addResource(r);
    }
    gc = std::make_unique<GarbageCollector>(server->client(), discovery, factory,
                                            broadcaster.newRecorder("garbage-collector-controller"), clock);
    peer = std::make_unique<GarbageCollectorTestPeer>(*gc);
  }

  json add(const Ref& r, const std::vector<OwnerReference>& owners = {}, json extra = json::object()) {
    return server->add(collectionPath(r), objectJson(r, owners, std::move(extra)));
  }
  std::optional<json> get(const Ref& r) { return server->getJson(collectionPath(r) + "/" + r.name); }
  Node node(const Ref& r, std::vector<Ref> owners = {}) {
    Node n;
    n.identity = r;
    for (const auto& o : owners) n.owners.push_back(ownerRef(o));
    return n;
  }
  std::vector<std::string> actions() {
    std::vector<std::string> out;
    for (const auto& a : server->actions()) out.push_back(describe(a));
    return out;
  }
  // The keys waiting in attemptToDelete, in order (the queue is left as it was).
  std::vector<std::string> pendingKeys() {
    auto& q = peer->attemptToDelete();
    clock.advance(1h);  // rate-limited adds become ready
    std::vector<std::string> keys;
    while (auto k = q.tryGet()) {
      keys.push_back(*k);
      q.done(*k);
    }
    for (const auto& k : keys) q.add(k);
    return keys;
  }
  // "Warning OwnerRefInvalidNamespace <message> involvedObject{kind=Pod,apiVersion=v1}" for each event written
  // since the last call.
  std::vector<std::string> events() {
    broadcaster.flush();
    std::vector<std::string> out;
    for (const auto& a : eventSink->actionsFor("create", "events")) {
      api::core::v1::Event e;
      if (!api::core::v1::fromJson(a.body, e).ok()) continue;
      out.push_back(e.type + " " + e.reason + " " + e.message + " involvedObject{kind=" + e.involvedObject.kind +
                    ",apiVersion=" + e.involvedObject.apiVersion + "}");
    }
    eventSink->clearActions();
    return out;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  std::shared_ptr<client::DiscoveryClient> discovery = std::make_shared<client::DiscoveryClient>(server->client());
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::unique_ptr<GarbageCollector> gc;
  std::unique_ptr<GarbageCollectorTestPeer> peer;
};

// Every dependent names its owner, and every owner in the graph lists its dependents (upstream
// verifyGraphInvariants).
void expectGraphInvariants(GarbageCollectorTestPeer& peer, const std::string& when) {
  auto nodes = peer.nodes();
  std::map<std::string, Node> byUID;
  for (const auto& n : nodes) byUID[n.identity.uid] = n;
  for (const auto& n : nodes) {
    for (const auto& d : n.dependents) {
      auto it = byUID.find(d);
      ASSERT_NE(it, byUID.end()) << when << ": " << n.identity.toString() << " has a dependent not in the graph: " << d;
      bool names = std::any_of(it->second.owners.begin(), it->second.owners.end(),
                               [&](const OwnerReference& o) { return o.uid == n.identity.uid; });
      EXPECT_TRUE(names) << when << ": " << n.identity.toString() << " lists " << it->second.identity.toString()
                         << " as a dependent, which does not name it as an owner";
    }
    for (const auto& o : n.owners) {
      auto it = byUID.find(o.uid);
      if (it == byUID.end()) continue;
      EXPECT_TRUE(it->second.dependents.count(n.identity.uid))
          << when << ": " << n.identity.toString() << " names " << it->second.identity.toString()
          << " as an owner, which does not list it as a dependent";
    }
  }
}

// ---- attemptToDeleteItem ----

const Ref kPod = id("v1", "Pod", "ns1", "ToBeDeletedPod", "456");
const Ref kRC = id("v1", "ReplicationController", "ns1", "owner1", "123");

TEST(GarbageCollectorAttemptToDelete, DeletesAnItemWhoseOwnerIsGone) {
  Harness h;
  h.add(kPod, {ownerRef(kRC)});
  Node item = h.node(kPod);
  item.virtual_ = true;  // the collector reads the item live either way
  ASSERT_TRUE(h.peer->attemptToDeleteItem(item).ok());
  auto got = h.actions();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"delete v1 pods ns1/ToBeDeletedPod", "get v1 pods ns1/ToBeDeletedPod",
                                           "get v1 replicationcontrollers ns1/owner1"}));
  EXPECT_FALSE(h.get(kPod));
  // Background propagation, guarded by the uid and the resourceVersion read.
  auto del = h.server->actionsFor("delete", "pods");
  ASSERT_EQ(del.size(), 1u);
  auto opts = json::parse(del[0].body);
  EXPECT_EQ(opts["propagationPolicy"], "Background");
  EXPECT_EQ(opts["preconditions"]["uid"], "456");
  EXPECT_TRUE(opts["preconditions"].contains("resourceVersion"));
}

TEST(GarbageCollectorAttemptToDelete, ItemGoneAtDeleteTimeEnqueuesAVirtualDelete) {
  Harness h;
  const Ref pod = id("v1", "Pod", "ns1", "ExternallyDeletedPod", "456");
  h.add(pod, {ownerRef(kRC)});
  h.server->prependReactor("delete", "pods", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(404, "NotFound", "pods \"ExternallyDeletedPod\" not found");
  });
  Status s = h.peer->attemptToDeleteItem(h.node(pod));
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.toString();  // "enqueued virtual delete event"
  auto changes = h.peer->pendingChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].type, "delete");
  EXPECT_TRUE(changes[0].virtual_);
  EXPECT_EQ(changes[0].identity, pod);
}

// The owner waits for its dependents (foreground deletion); the item has no dependents of its own, so it is
// deleted like any other; gone by then, it becomes a virtual delete event.
TEST(GarbageCollectorAttemptToDelete, ItemGoneWhileItsOwnerWaitsForDependents) {
  Harness h;
  const Ref pod = id("v1", "Pod", "ns1", "ExternallyDeletedPodFG", "456");
  h.add(kRC, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"foregroundDeletion"}}});
  h.add(pod, {ownerRef(kRC, true)});
  h.server->prependReactor("delete", "pods", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(404, "NotFound", "pods \"ExternallyDeletedPodFG\" not found");
  });
  Status s = h.peer->attemptToDeleteItem(h.node(pod));
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.toString();
  auto changes = h.peer->pendingChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].virtual_);
  EXPECT_EQ(changes[0].identity, pod);
}

TEST(GarbageCollectorAttemptToDelete, ItemNotFoundEnqueuesAVirtualDeleteWithoutDeleting) {
  Harness h;
  Status s = h.peer->attemptToDeleteItem(h.node(kPod));
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(h.actions(), std::vector<std::string>{"get v1 pods ns1/ToBeDeletedPod"});
  ASSERT_EQ(h.peer->pendingChanges().size(), 1u);
}

// An object already being deleted (and not waiting for its dependents) is left to finish: nothing is read.
TEST(GarbageCollectorAttemptToDelete, ItemBeingDeletedIsLeftAlone) {
  Harness h;
  h.add(kPod, {ownerRef(kRC)});
  Node item = h.node(kPod);
  item.beingDeleted = true;
  EXPECT_TRUE(h.peer->attemptToDeleteItem(item).ok());
  EXPECT_TRUE(h.actions().empty());
  EXPECT_TRUE(h.get(kPod));
}

// Owners that exist keep the item; references to absent owners (and to owners deleting in the foreground) are
// removed from it.
TEST(GarbageCollectorAttemptToDelete, DanglingAndWaitingReferencesAreRemovedWhenAnOwnerExists) {
  Harness h;
  const Ref solid = id("v1", "ConfigMap", "ns1", "cm1", "1");
  const Ref gone1 = id("v1", "ConfigMap", "ns1", "cm2", "2");
  const Ref gone2 = id("v1", "ConfigMap", "ns1", "cm3", "3");
  const Ref waiting = id("v1", "ConfigMap", "ns1", "cm4", "4");
  h.add(solid);
  h.add(waiting, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"foregroundDeletion"}}});
  const Ref pod = id("v1", "Pod", "ns1", "pod", "100");
  h.add(pod, {ownerRef(solid), ownerRef(gone1), ownerRef(gone2), ownerRef(waiting, true)});
  ASSERT_TRUE(h.peer->attemptToDeleteItem(h.node(pod)).ok());
  auto stored = h.get(pod);
  ASSERT_TRUE(stored);
  ASSERT_EQ((*stored)["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ((*stored)["metadata"]["ownerReferences"][0]["uid"], "1");
  EXPECT_TRUE(h.server->actionsFor("delete", "pods").empty());
}

// The item's owners all wait for their dependents and one of the item's dependents waits for its own: to avoid
// a deadlock the item stops blocking its owners (blockOwnerDeletion true -> false, unset stays unset), then is
// deleted in the foreground. As upstream, the delete still carries the resourceVersion read before the patch, so
// the first attempt ends in a conflict and the retry deletes.
TEST(GarbageCollectorAttemptToDelete, OwnerReferencesAreUnblockedToBreakAForegroundCycle) {
  Harness h;
  const json deleting = {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"foregroundDeletion"}}};
  const Ref o1 = id("v1", "ConfigMap", "ns1", "o1", "1"), o2 = id("v1", "ConfigMap", "ns1", "o2", "2"),
            o3 = id("v1", "ConfigMap", "ns1", "o3", "3");
  for (const auto& o : {o1, o2, o3}) h.add(o, {}, deleting);
  const Ref item = id("v1", "Pod", "ns1", "item", "100");
  const Ref dep = id("v1", "Pod", "ns1", "dep", "200");
  h.add(item, {ownerRef(o1, true), ownerRef(o2, false), ownerRef(o3)});
  // The graph: the item, and a dependent of it that is itself deleting in the foreground.
  h.peer->process("add", metadata(item, {o1, o2, o3}), "v1", "Pod");
  PartialObjectMetadata depObj = metadata(dep, {item});
  depObj.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  depObj.metadata.finalizers = {"foregroundDeletion"};
  h.peer->process("add", depObj, "v1", "Pod");
  auto n = h.peer->node(item.uid);
  ASSERT_TRUE(n);
  ASSERT_TRUE(h.peer->node(dep.uid)->deletingDependents);
  Status st = h.peer->attemptToDeleteItem(*n);
  EXPECT_EQ(st.code(), StatusCode::kConflict) << st.toString();
  auto stored = h.get(item);
  ASSERT_TRUE(stored);
  const auto& refs = (*stored)["metadata"]["ownerReferences"];
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0]["blockOwnerDeletion"], false);
  EXPECT_EQ(refs[1]["blockOwnerDeletion"], false);
  EXPECT_FALSE(refs[2].contains("blockOwnerDeletion"));
  EXPECT_FALSE((*stored)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(h.server->actionsFor("patch", "pods").size(), 1u);

  h.server->clearActions();
  st = h.peer->attemptToDeleteItem(*n);
  ASSERT_TRUE(st.ok()) << st.toString();
  EXPECT_TRUE(h.server->actionsFor("patch", "pods").empty());  // nothing left to unblock
  auto del = h.server->actionsFor("delete", "pods");
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(json::parse(del[0].body)["propagationPolicy"], "Foreground");
  stored = h.get(item);
  ASSERT_TRUE(stored);  // held by the foregroundDeletion finalizer
  EXPECT_TRUE((*stored)["metadata"].contains("deletionTimestamp"));
}

// Without solid owners, the propagation policy comes from the item's own finalizers, or is Foreground when an
// owner waits for its dependents and the item has dependents itself.
struct PolicyCase {
  std::string name;
  std::vector<std::string> finalizers;
  bool ownerWaits;
  bool itemHasDependents;
  std::string want;
};

class GarbageCollectorDeletePolicy : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(GarbageCollectorDeletePolicy, FollowsFinalizersAndWaitingOwners) {
  const auto& tc = GetParam();
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  if (tc.ownerWaits)
    h.add(owner, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"foregroundDeletion"}}});
  const Ref item = id("v1", "ConfigMap", "ns1", "item", "100");
  h.add(item, {ownerRef(owner, true)}, tc.finalizers.empty() ? json::object() : json{{"finalizers", tc.finalizers}});
  Node n = h.node(item, {owner});
  if (tc.itemHasDependents) n.dependents.insert("some-dependent");
  ASSERT_TRUE(h.peer->attemptToDeleteItem(n).ok());
  auto del = h.server->actionsFor("delete", "configmaps");
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(json::parse(del[0].body)["propagationPolicy"], tc.want);
}

INSTANTIATE_TEST_SUITE_P(
    GarbageCollector, GarbageCollectorDeletePolicy,
    ::testing::Values(PolicyCase{"NoFinalizerBackground", {}, false, false, "Background"},
                      PolicyCase{"OrphanFinalizerOrphan", {"orphan"}, false, false, "Orphan"},
                      PolicyCase{"ForegroundFinalizerForeground", {"foregroundDeletion"}, false, false, "Foreground"},
                      PolicyCase{"WaitingOwnerAndDependentsForeground", {}, true, true, "Foreground"},
                      PolicyCase{"WaitingOwnerNoDependentsBackground", {}, true, false, "Background"}),
    [](const auto& info) { return info.param.name; });

TEST(GarbageCollectorClassifyReferences, SolidDanglingAndWaiting) {
  Harness h;
  const Ref solid = id("v1", "ConfigMap", "ns1", "solid", "1");
  const Ref absent = id("v1", "ConfigMap", "ns1", "absent", "2");
  const Ref replaced = id("v1", "ConfigMap", "ns1", "replaced", "3");  // same name, another uid now
  const Ref waiting = id("v1", "ConfigMap", "ns1", "waiting", "4");
  const Ref orphaning = id("v1", "ConfigMap", "ns1", "orphaning", "5");  // deleting, but not in the foreground
  h.add(solid);
  h.add(id("v1", "ConfigMap", "ns1", "replaced", "33"));
  h.add(waiting, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"foregroundDeletion"}}});
  h.add(orphaning, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"orphan"}}});
  const Ref item = id("v1", "Pod", "ns1", "item", "100");
  auto c = h.peer->classify(h.node(item), {ownerRef(solid), ownerRef(absent), ownerRef(replaced), ownerRef(waiting),
                                           ownerRef(orphaning)});
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ((*c)[0], (std::vector<std::string>{"1", "5"}));
  EXPECT_EQ((*c)[1], (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ((*c)[2], (std::vector<std::string>{"4"}));
  // Both absences are remembered, under the item's namespace.
  EXPECT_TRUE(h.peer->absent().has(absent));
  EXPECT_TRUE(h.peer->absent().has(replaced));
}

// ---- the absent-owner cache ----

TEST(GarbageCollectorAbsentOwnerCache, EvictsTheLeastRecentlyUsed) {
  AbsentOwnerCache c(2);
  const Ref rc1 = id("v1", "ReplicationController", "ns1", "rc1", "1");
  const Ref rc2 = id("v1", "ReplicationController", "ns1", "rc2", "2");
  const Ref rc3 = id("v1", "ReplicationController", "ns1", "rc3", "3");
  c.add(rc1);
  c.add(rc2);
  EXPECT_TRUE(c.has(rc1));  // rc1 is now the most recently used
  c.add(rc3);               // evicts rc2
  EXPECT_TRUE(c.has(rc1));
  EXPECT_FALSE(c.has(rc2));
  EXPECT_TRUE(c.has(rc3));
  EXPECT_EQ(GarbageCollectorTestPeer::size(c), 2u);
  Ref other = rc1;
  other.namespace_ = "ns2";  // coordinates include the namespace
  EXPECT_FALSE(c.has(other));
}

// Two dependents of the same absent owner: the owner is looked up once.
TEST(GarbageCollectorAbsentOwnerCache, AnAbsentOwnerIsLookedUpOnce) {
  Harness h;
  const Ref rc1 = id("v1", "ReplicationController", "ns1", "rc1", "1");
  const Ref rc2 = id("v1", "ReplicationController", "ns1", "rc2", "2");
  const Ref p1 = id("v1", "Pod", "ns1", "rc1Pod1", "p1"), p2 = id("v1", "Pod", "ns1", "rc1Pod2", "p2"),
            p3 = id("v1", "Pod", "ns1", "rc2Pod1", "p3");
  OwnerReference notController = ownerRef(rc1);
  notController.controller = false;
  h.add(p1, {ownerRef(rc1)});
  h.add(p2, {notController});
  h.add(p3, {ownerRef(rc2)});
  for (const auto& p : {p1, p3, p2}) EXPECT_TRUE(h.peer->attemptToDeleteItem(h.node(p)).ok());
  int rc1Gets = 0;
  for (const auto& a : h.actions()) rc1Gets += a == "get v1 replicationcontrollers ns1/rc1";
  EXPECT_EQ(rc1Gets, 1);
  EXPECT_TRUE(h.peer->absent().has(rc1));
  EXPECT_TRUE(h.peer->absent().has(rc2));
  EXPECT_EQ(h.server->actionsFor("delete", "pods").size(), 3u);
}

// ---- orphaning ----

TEST(GarbageCollectorOrphan, ConflictingPatchesFailTheOrphaning) {
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  const Ref pod = id("v1", "Pod", "ns1", "pod", "100");
  h.add(owner, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"orphan"}}});
  h.add(pod, {ownerRef(owner)});
  h.peer->process("add", metadata(owner), "v1", "ConfigMap");
  h.peer->process("add", metadata(pod, {owner}), "v1", "Pod");
  h.server->prependReactor("patch", "pods", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(409, "Conflict", "the server reported a conflict");
  });
  auto r = h.peer->attemptToOrphanWorker(owner.uid);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), StatusCode::kConflict) << r.status.toString();
  EXPECT_NE(r.status.message().find("failed to orphan dependents"), std::string::npos) << r.status.toString();
  auto stored = h.get(owner);
  ASSERT_TRUE(stored);  // the orphan finalizer stays until every dependent is orphaned
  EXPECT_EQ((*stored)["metadata"]["finalizers"], json({"orphan"}));
}

TEST(GarbageCollectorOrphan, DependentsLoseTheOwnerThenTheFinalizerGoes) {
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  const Ref other = id("v1", "ConfigMap", "ns1", "other", "2");
  const Ref pod1 = id("v1", "Pod", "ns1", "pod1", "101"), pod2 = id("v1", "Pod", "ns1", "pod2", "102");
  h.add(owner, {}, {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"orphan"}}});
  h.add(other);
  h.add(pod1, {ownerRef(owner)});
  h.add(pod2, {ownerRef(owner), ownerRef(other)});
  h.peer->process("add", metadata(owner), "v1", "ConfigMap");
  h.peer->process("add", metadata(pod1, {owner}), "v1", "Pod");
  h.peer->process("add", metadata(pod2, {owner, other}), "v1", "Pod");
  auto r = h.peer->attemptToOrphanWorker(owner.uid);
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  auto s1 = h.get(pod1), s2 = h.get(pod2);
  ASSERT_TRUE(s1 && s2);
  EXPECT_FALSE((*s1)["metadata"].contains("ownerReferences"));
  ASSERT_EQ((*s2)["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ((*s2)["metadata"]["ownerReferences"][0]["uid"], "2");
  EXPECT_FALSE(h.get(owner));  // its last finalizer removed: the apiserver finished the deletion
}

// An owner deleted with the orphan finalizer goes to attemptToOrphan when that deletion is observed.
TEST(GarbageCollectorGraph, OrphanFinalizerQueuesTheOwnerForOrphaning) {
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  auto live = metadata(owner);
  h.peer->process("add", live, "v1", "ConfigMap");
  EXPECT_EQ(h.peer->attemptToOrphan().len(), 0u);
  auto deleting = live;
  deleting.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  deleting.metadata.finalizers = {"orphan"};
  h.peer->process("update", deleting, "v1", "ConfigMap", std::make_shared<const PartialObjectMetadata>(live));
  auto k = h.peer->attemptToOrphan().tryGet();
  ASSERT_TRUE(k);
  EXPECT_EQ(*k, "1");
  EXPECT_TRUE(h.peer->node("1")->beingDeleted);
  // The same state again is no new transition.
  h.peer->attemptToOrphan().done(*k);
  h.peer->process("update", deleting, "v1", "ConfigMap", std::make_shared<const PartialObjectMetadata>(deleting));
  EXPECT_EQ(h.peer->attemptToOrphan().len(), 0u);
}

// ---- foreground deletion ----

// An owner observed deleting with foregroundDeletion waits for its dependents: it and they are queued.
TEST(GarbageCollectorForeground, DeletionStartQueuesTheOwnerAndItsDependents) {
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  const Ref dep = id("v1", "Pod", "ns1", "dep", "100");
  h.peer->process("add", metadata(owner), "v1", "ConfigMap");
  h.peer->process("add", metadata(dep, {owner}), "v1", "Pod");
  h.pendingKeys();
  while (auto k = h.peer->attemptToDelete().tryGet()) h.peer->attemptToDelete().done(*k);
  auto deleting = metadata(owner);
  deleting.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  deleting.metadata.finalizers = {"foregroundDeletion"};
  h.peer->process("update", deleting, "v1", "ConfigMap",
                  std::make_shared<const PartialObjectMetadata>(metadata(owner)));
  EXPECT_TRUE(h.peer->node("1")->deletingDependents);
  EXPECT_EQ(h.pendingKeys(), (std::vector<std::string>{"100", "1"}));
}

struct ForegroundCase {
  std::string name;
  std::optional<bool> block;  // the dependent's blockOwnerDeletion
  bool depDeletingDependents;
  bool wantFinalizerRemoved;
  std::vector<std::string> wantQueued;
};

class GarbageCollectorForegroundOwner : public ::testing::TestWithParam<ForegroundCase> {};

// processDeletingDependentsItem: blocking dependents are queued for deletion (unless they wait for their own);
// with none left the foregroundDeletion finalizer is removed.
TEST_P(GarbageCollectorForegroundOwner, WaitsForBlockingDependents) {
  const auto& tc = GetParam();
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  const Ref dep = id("v1", "Pod", "ns1", "dep", "100");
  const json deleting = {{"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", {"foregroundDeletion"}}};
  h.add(owner, {}, deleting);
  auto ownerObj = metadata(owner);
  ownerObj.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  ownerObj.metadata.finalizers = {"foregroundDeletion"};
  h.peer->process("add", ownerObj, "v1", "ConfigMap");
  auto depObj = metadata(dep);
  depObj.metadata.ownerReferences.push_back(ownerRef(owner, tc.block));
  if (tc.depDeletingDependents) {
    depObj.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    depObj.metadata.finalizers = {"foregroundDeletion"};
  }
  h.peer->process("add", depObj, "v1", "Pod");
  while (auto k = h.peer->attemptToDelete().tryGet()) h.peer->attemptToDelete().done(*k);
  auto n = h.peer->node(owner.uid);
  ASSERT_TRUE(n && n->deletingDependents);
  ASSERT_TRUE(h.peer->attemptToDeleteItem(*n).ok());
  EXPECT_EQ(!h.get(owner), tc.wantFinalizerRemoved);  // the last finalizer gone: deleted
  EXPECT_EQ(h.pendingKeys(), tc.wantQueued);
}

INSTANTIATE_TEST_SUITE_P(
    GarbageCollector, GarbageCollectorForegroundOwner,
    ::testing::Values(ForegroundCase{"BlockingDependentIsQueued", true, false, false, {"100"}},
                      ForegroundCase{"BlockingDependentWaitingForItsOwnIsNotQueued", true, true, false, {}},
                      ForegroundCase{"NonBlockingDependentDoesNotBlock", false, false, true, {}},
                      ForegroundCase{"UnsetBlockOwnerDeletionDoesNotBlock", std::nullopt, false, true, {}}),
    [](const auto& info) { return info.param.name; });

// A dependent that stops blocking (reference removed, or blockOwnerDeletion turned off) re-queues the owner that
// waits for it; so does its deletion.
TEST(GarbageCollectorForeground, UnblockedOwnersAreQueued) {
  Harness h;
  const Ref owner = id("v1", "ConfigMap", "ns1", "owner", "1");
  const Ref dep = id("v1", "Pod", "ns1", "dep", "100");
  auto ownerObj = metadata(owner);
  ownerObj.metadata.deletionTimestamp = api::Time::fromUnix(1000);
  ownerObj.metadata.finalizers = {"foregroundDeletion"};
  h.peer->process("add", ownerObj, "v1", "ConfigMap");
  auto blocking = metadata(dep);
  blocking.metadata.ownerReferences.push_back(ownerRef(owner, true));
  h.peer->process("add", blocking, "v1", "Pod");
  h.pendingKeys();
  while (auto k = h.peer->attemptToDelete().tryGet()) h.peer->attemptToDelete().done(*k);

  auto unblocked = metadata(dep);
  unblocked.metadata.ownerReferences.push_back(ownerRef(owner, false));
  h.peer->process("update", unblocked, "v1", "Pod", std::make_shared<const PartialObjectMetadata>(blocking));
  EXPECT_EQ(h.pendingKeys(), std::vector<std::string>{"1"});
  while (auto k = h.peer->attemptToDelete().tryGet()) h.peer->attemptToDelete().done(*k);

  // Non-blocking to unset: no change of blocking, nothing queued.
  h.peer->process("update", metadata(dep, {owner}), "v1", "Pod",
                  std::make_shared<const PartialObjectMetadata>(unblocked));
  EXPECT_TRUE(h.pendingKeys().empty());

  h.peer->process("delete", metadata(dep, {owner}), "v1", "Pod");
  EXPECT_EQ(h.pendingKeys(), std::vector<std::string>{"1"});
  EXPECT_TRUE(h.peer->node("1")->dependents.empty());
}

// ---- deletable resources ----

client::APIResourceInfo resource(const std::string& group, const std::string& resourceName,
                                 std::vector<std::string> verbs) {
  client::APIResourceInfo r;
  r.group = group;
  r.version = "v1";
  r.resource = resourceName;
  r.verbs = std::move(verbs);
  return r;
}

struct DeletableCase {
  std::string name;
  std::vector<client::APIResourceInfo> all;
  std::vector<std::string> want;  // group/resource
};

class GarbageCollectorDeletableResources : public ::testing::TestWithParam<DeletableCase> {};

TEST_P(GarbageCollectorDeletableResources, NeedListWatchAndDelete) {
  std::vector<std::string> got;
  for (const auto& r : deletableResources(GetParam().all)) got.push_back(r.group + "/" + r.resource);
  EXPECT_EQ(got, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    GarbageCollector, GarbageCollectorDeletableResources,
    ::testing::Values(
        DeletableCase{"OnlyResourcesWithAllVerbs",
                      {resource("apps", "pods", {"delete", "list", "watch"}), resource("apps", "services", {}),
                       resource("acme", "widgets", {"delete"})},
                      {"apps/pods"}},
        DeletableCase{"DeleteIsRequired",
                      {resource("", "configmaps", {"list", "watch", "get"}),
                       resource("", "secrets", {"create", "delete", "get", "list", "watch"})},
                      {"/secrets"}},
        DeletableCase{"EventsAreIgnored",
                      {resource("", "events", {"delete", "list", "watch"}),
                       resource("events.k8s.io", "events", {"delete", "list", "watch"}),
                       resource("example.com", "events", {"delete", "list", "watch"})},
                      {"example.com/events"}}),
    [](const auto& info) { return info.param.name; });

// ---- the dependency graph ----

struct ProcessEventStep {
  std::string type;
  std::string uid;
  std::vector<std::string> owners;
};

struct ProcessEventCase {
  std::string name;
  std::vector<ProcessEventStep> steps;
};

class GarbageCollectorProcessEvent : public ::testing::TestWithParam<ProcessEventCase> {};

TEST_P(GarbageCollectorProcessEvent, KeepsOwnersAndDependentsConsistent) {
  Harness h;
  int i = 0;
  for (const auto& st : GetParam().steps) {
    PartialObjectMetadata o;
    o.metadata.uid = st.uid;
    for (const auto& ow : st.owners) {
      OwnerReference r;
      r.uid = ow;
      o.metadata.ownerReferences.push_back(r);
    }
    h.peer->process(st.type, o, "v1", "Pod");
    expectGraphInvariants(*h.peer, "after step " + std::to_string(i++));
  }
  // Each object is as its last event says: gone after a delete, else observed with the owners it named last.
  std::map<std::string, ProcessEventStep> last;
  for (const auto& st : GetParam().steps) last[st.uid] = st;
  for (const auto& [uid, st] : last) {
    auto n = h.peer->node(uid);
    if (st.type == "delete") {
      EXPECT_FALSE(n) << uid;
      continue;
    }
    ASSERT_TRUE(n) << uid;
    EXPECT_FALSE(n->virtual_) << uid;
    std::vector<std::string> owners;
    for (const auto& o : n->owners) owners.push_back(o.uid);
    EXPECT_EQ(owners, st.owners) << uid;
  }
}

INSTANTIATE_TEST_SUITE_P(
    GarbageCollector, GarbageCollectorProcessEvent,
    ::testing::Values(
        ProcessEventCase{"Test1", {{"add", "1", {}}, {"add", "2", {"1"}}, {"add", "3", {"1", "2"}}}},
        ProcessEventCase{"Test2",
                         {{"add", "1", {}},
                          {"add", "2", {"1"}},
                          {"add", "3", {"1", "2"}},
                          {"add", "4", {"2"}},
                          {"delete", "2", {"doesn't matter"}}}},
        ProcessEventCase{
            "Test3",
            {{"add", "1", {}},
             {"add", "2", {"1"}},
             {"add", "3", {"1", "2"}},
             {"add", "4", {"3"}},
             {"update", "2", {"4"}}}},
        ProcessEventCase{"ReverseTest2",
                         {{"add", "4", {"2"}},
                          {"add", "3", {"1", "2"}},
                          {"add", "2", {"1"}},
                          {"add", "1", {}},
                          {"delete", "2", {"doesn't matter"}}}}),
    [](const auto& info) { return info.param.name; });

// upstream TestGetAlternateOwnerIdentity.
Node depNode(const Ref& self, const std::vector<Ref>& owners) {
  Node n;
  n.identity = self;
  for (const auto& o : owners) n.owners.push_back(ownerRef(o));
  return n;
}

struct AlternateCase {
  std::string name;
  std::vector<Node> deps;
  Ref verifiedAbsent;
  std::optional<Ref> want;
};

class GarbageCollectorAlternateOwnerIdentity : public ::testing::TestWithParam<AlternateCase> {};

TEST_P(GarbageCollectorAlternateOwnerIdentity, Picks) {
  const auto& tc = GetParam();
  auto got = getAlternateOwnerIdentity(tc.deps, tc.verifiedAbsent);
  ASSERT_EQ(got.has_value(), tc.want.has_value()) << (got ? got->toString() : "none");
  if (got) { EXPECT_EQ(*got, *tc.want) << got->toString() << " vs " << tc.want->toString(); }
}

std::vector<AlternateCase> alternateCases() {
  const Ref ns1child1 = id("v1", "Child", "ns1", "child1", "childuid11");
  const Ref ns1child2 = id("v1", "Child", "ns1", "child2", "childuid12");
  const Ref ns2child1 = id("v1", "Child", "ns2", "child1", "childuid21");
  const Ref clusterchild1 = id("v1", "Child", "", "child1", "childuidc1");
  const Ref nsParentNs1 = id("v1", "NSParent", "ns1", "parentname", "parentuid");
  const Ref nsParentNs2 = id("v1", "NSParent", "ns2", "parentname", "parentuid");
  const Ref nsParentVersion = id("xx", "NSParent", "ns1", "parentname", "parentuid");
  const Ref nsParentKind = id("v1", "xxxxxxxx", "ns1", "parentname", "parentuid");
  const Ref nsParentName = id("v1", "NSParent", "ns1", "xxxxxxxxxx", "parentuid");
  const Ref cParent = id("v1", "ClusterParent", "", "parentname", "parentuid");
  const Ref cParentVersion = id("xx", "ClusterParent", "", "parentname", "parentuid");
  const Ref cParentKind = id("v1", "xxxxxxxxxxxxx", "", "parentname", "parentuid");
  const Ref cParentName = id("v1", "ClusterParent", "", "xxxxxxxxxx", "parentuid");
  const Ref cParentNs1Version = id("xx", "ClusterParent", "ns1", "parentname", "parentuid");
  const Ref cParentNs1Kind = id("v1", "xxxxxxxxxxxxx", "ns1", "parentname", "parentuid");
  std::vector<Ref> orderedNs, orderedCluster;
  for (const char* v : {"v1", "v2", "v3", "v4", "v5"}) {
    orderedNs.push_back(id(v, "kind", "ns1", "name", "uid"));
    orderedCluster.push_back(id(v, "kind", "", "name", "uid"));
  }
  return {
      {"NamespacedAlternateVersion", {depNode(ns1child1, {nsParentNs1}), depNode(ns1child2, {nsParentVersion})},
       nsParentNs1, nsParentVersion},
      {"NamespacedAlternateKind", {depNode(ns1child1, {nsParentNs1}), depNode(ns1child2, {nsParentKind})},
       nsParentNs1, nsParentKind},
      {"NamespacedAlternateNamespace", {depNode(ns1child1, {nsParentNs1}), depNode(ns2child1, {nsParentNs2})},
       nsParentNs1, nsParentNs2},
      {"NamespacedAlternateName", {depNode(ns1child1, {nsParentNs1}), depNode(ns1child1, {nsParentName})},
       nsParentNs1, nsParentName},
      // Another apiVersion or kind may be namespaced: it takes the dependent's namespace.
      {"ClusterAlternateVersion", {depNode(ns1child1, {cParent}), depNode(ns1child2, {cParentVersion})}, cParent,
       cParentNs1Version},
      {"ClusterAlternateKind", {depNode(ns1child1, {cParent}), depNode(ns1child2, {cParentKind})}, cParent,
       cParentNs1Kind},
      // The same apiVersion/kind was verified cluster-scoped: another dependent namespace is no alternate.
      {"ClusterAlternateNamespace", {depNode(ns1child1, {cParent}), depNode(ns2child1, {cParent})}, cParent,
       std::nullopt},
      {"ClusterAlternateName", {depNode(ns1child1, {cParent}), depNode(ns1child1, {cParentName})}, cParent,
       cParentName},
      {"NamespacedFirstIfAbsentSortsLast", {depNode(ns1child1, orderedNs)}, orderedNs[4], orderedNs[0]},
      {"NamespacedNextAfterAbsent", {depNode(ns1child1, orderedNs)}, orderedNs[3], orderedNs[4]},
      {"ClusterFirstIfAbsentSortsLast", {depNode(clusterchild1, orderedCluster)}, orderedCluster[4],
       orderedCluster[0]},
      {"ClusterNextAfterAbsent", {depNode(clusterchild1, orderedCluster)}, orderedCluster[3], orderedCluster[4]},
      {"IgnoreUnrelated", {depNode(ns1child1, {cParent, id("v1", "Parent", "ns1", "name", "anotheruid")})}, cParent,
       std::nullopt},
      {"IgnoreMatches", {depNode(ns1child1, {cParent, cParent})}, cParent, std::nullopt},
      {"CollapseDuplicates", {depNode(clusterchild1, {cParent, cParentKind, cParentKind})}, cParent, cParentKind},
  };
}

INSTANTIATE_TEST_SUITE_P(GarbageCollector, GarbageCollectorAlternateOwnerIdentity,
                         ::testing::ValuesIn(alternateCases()), [](const auto& info) { return info.param.name; });

// ---- upstream TestConflictingData: owner references that disagree with their owners, step by step ----

struct ExpNode {
  Ref id;
  std::vector<Ref> owners;
  bool virtual_ = false;
};
ExpNode node(const Ref& r, std::vector<Ref> owners = {}) { return {r, std::move(owners), false}; }
ExpNode vnode(const Ref& r) { return {r, {}, true}; }

struct ExpChange {
  std::string type;
  bool virtual_;
  Ref id;
};
ExpChange virtualDelete(const Ref& r) { return {"delete", true, r}; }
ExpChange addChange(const Ref& r) { return {"add", false, r}; }

struct State {
  std::vector<std::string> events{};
  std::vector<std::string> actions{};
  std::vector<ExpNode> nodes{};
  std::vector<ExpChange> changes{};
  std::vector<ExpNode> pending{};  // attemptToDelete, in order
  std::vector<Ref> absent{};
};

using Step = std::function<void(Harness&)>;

struct Scenario {
  std::string name;
  std::vector<Step> steps;
};

Step createObject(const Ref& r, std::vector<Ref> owners = {}) {
  return [=](Harness& h) {
    std::vector<OwnerReference> refs;
    for (const auto& o : owners) refs.push_back(ownerRef(o));
    h.add(r, refs);
    h.server->clearActions();
  };
}

Step deleteObject(const Ref& r) {
  return [=](Harness& h) {
    const std::string gv = r.apiVersion;
    auto slash = gv.find('/');
    client::GroupVersionResource gvr{slash == std::string::npos ? "" : gv.substr(0, slash),
                                     slash == std::string::npos ? gv : gv.substr(slash + 1), plural(r.kind)};
    ASSERT_TRUE(client::removeDynamic(*h.server->client(), gvr, r.namespace_, r.name).ok());
    h.server->clearActions();
  };
}

Step processEvent(const std::string& type, const Ref& r, std::vector<Ref> owners = {}) {
  return [=](Harness& h) {
    ASSERT_TRUE(h.peer->pendingChanges().empty()) << "graph changes pending before processEvent";
    h.peer->process(type, metadata(r, owners), r.apiVersion, r.kind);
  };
}

Step insertEvent(const Ref& r) {
  return [=](Harness& h) { h.peer->insertFront("add", metadata(r), r.apiVersion, r.kind); };
}

Step processPendingGraphChanges(int n) {
  return [=](Harness& h) {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(h.peer->processPendingChange()) << "expected " << n << " pending changes";
  };
}

// Takes n items off attemptToDelete and runs the worker on them; items to retry go to the back of the queue at
// once (upstream's tracking queue does the same with rate-limited and delayed adds).
Step processAttemptToDelete(int n) {
  return [=](Harness& h) {
    h.clock.advance(1h);
    for (int i = 0; i < n; ++i) {
      auto& q = h.peer->attemptToDelete();
      auto key = q.tryGet();
      ASSERT_TRUE(key) << "expected " << n << " items in attemptToDelete";
      auto r = h.peer->attemptToDeleteWorker(*key);
      q.done(*key);
      if (!r.status.ok() || r.requeueAfter) q.add(*key);
    }
  };
}

// What upstream's queue would hold for a key: the node as queued (a virtual node keeps the coordinates it was
// queued with, and turns observed when observed under them).
ExpNode pendingEntry(Harness& h, const std::string& key) {
  auto e = parseAttemptToDeleteKey(key);
  auto n = h.peer->node(e.uid);
  if (!e.virtualIdentity) return {n ? n->identity : Ref{"", "", "", e.uid, ""}, {}, false};
  const bool observed = n && !n->virtual_ && n->identity == *e.virtualIdentity;
  return {*e.virtualIdentity, {}, !observed};
}

std::vector<std::string> ownerStrings(const std::vector<Ref>& owners) {
  std::vector<std::string> out;
  for (const auto& o : owners) out.push_back(o.apiVersion + "/" + o.kind + " " + o.name + " " + o.uid);
  return out;
}

Step assertState(State want) {
  return [=](Harness& h) {
    // Absent owners.
    for (const auto& a : want.absent)
      EXPECT_TRUE(h.peer->absent().has(a)) << "not in the absent cache: " << a.toString();
    EXPECT_EQ(GarbageCollectorTestPeer::size(h.peer->absent()), want.absent.size());
    // Events.
    EXPECT_EQ(h.events(), want.events);
    // Client actions (then forgotten).
    EXPECT_EQ(h.actions(), want.actions);
    h.server->clearActions();
    // Graph.
    auto nodes = h.peer->nodes();
    EXPECT_EQ(nodes.size(), want.nodes.size());
    for (const auto& w : want.nodes) {
      auto n = h.peer->node(w.id.uid);
      if (!n) {
        ADD_FAILURE() << "no node with uid " << w.id.uid;
        continue;
      }
      EXPECT_EQ(n->identity, w.id) << n->identity.toString() << " vs " << w.id.toString();
      EXPECT_EQ(n->virtual_, w.virtual_) << w.id.toString();
      std::vector<Ref> owners;
      for (const auto& o : n->owners) owners.push_back(Ref{o.apiVersion, o.kind, o.name, o.uid, ""});
      EXPECT_EQ(ownerStrings(owners), ownerStrings(w.owners)) << w.id.toString();
    }
    // Held graph changes.
    auto changes = h.peer->pendingChanges();
    ASSERT_EQ(changes.size(), want.changes.size());
    for (size_t i = 0; i < changes.size(); ++i) {
      EXPECT_EQ(changes[i].type, want.changes[i].type);
      EXPECT_EQ(changes[i].virtual_, want.changes[i].virtual_);
      EXPECT_EQ(changes[i].identity, want.changes[i].id) << changes[i].identity.toString();
    }
    // attemptToDelete.
    auto keys = h.pendingKeys();
    std::vector<std::string> got, expected;
    for (const auto& k : keys) {
      auto e = pendingEntry(h, k);
      got.push_back(e.id.toString() + (e.virtual_ ? " virtual" : ""));
    }
    for (const auto& w : want.pending) expected.push_back(w.id.toString() + (w.virtual_ ? " virtual" : ""));
    EXPECT_EQ(got, expected);
  };
}

// The objects of upstream's scenarios.
const Ref pod1ns1 = id("v1", "Pod", "ns1", "podname1", "poduid1");
const Ref pod2ns1 = id("v1", "Pod", "ns1", "podname2", "poduid2");
const Ref pod2ns2 = id("v1", "Pod", "ns2", "podname2", "poduid2");
const Ref node1 = id("v1", "Node", "", "nodename", "nodeuid1");
const Ref role1v1beta1 = id("rbac.authorization.k8s.io/v1beta1", "Role", "ns1", "role1", "roleuid1");
const Ref role1v1 = id("rbac.authorization.k8s.io/v1", "Role", "ns1", "role1", "roleuid1");
const Ref deployment1apps = id("apps/v1", "Deployment", "ns1", "deployment1", "deploymentuid1");
const Ref deployment1extensions = id("extensions/v1beta1", "Deployment", "ns1", "deployment1", "deploymentuid1");
const Ref node1WithNamespace = id("v1", "Node", "ns1", "nodename", "nodeuid1");
const Ref pod1nonamespace = id("v1", "Pod", "", "podname1", "poduid1");
const Ref badSecretReferenceWithDeploymentUID = id("v1", "Secret", "ns1", "secretname", "deploymentuid1");
const Ref badChildPod = id("v1", "Pod", "ns1", "badpod", "badpoduid");
const Ref goodChildPod = id("v1", "Pod", "ns1", "goodpod", "goodpoduid");

const std::string kBadNodeEvent =
    "Warning OwnerRefInvalidNamespace ownerRef [v1/Pod, namespace: , name: podname1, uid: poduid1] does not exist "
    "in namespace \"\" involvedObject{kind=Node,apiVersion=v1}";
const std::string kBadPodEvent =
    "Warning OwnerRefInvalidNamespace ownerRef [v1/Pod, namespace: ns1, name: podname2, uid: poduid2] does not "
    "exist in namespace \"ns1\" involvedObject{kind=Pod,apiVersion=v1}";

std::vector<Scenario> conflictingDataScenarios() {
  const auto& badSecret = badSecretReferenceWithDeploymentUID;
  std::vector<Scenario> s;
  s.push_back(
      {"GoodChildInNs1ClusterScopedOwner",
       {createObject(node1), createObject(pod1ns1, {node1}),
        // The child names a cluster-scoped owner not observed yet: a virtual owner in the child's namespace.
        processEvent("add", pod1ns1, {node1}),
        assertState({.nodes = {node(pod1ns1, {node1}), vnode(node1WithNamespace)},
                     .pending = {vnode(node1WithNamespace)}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 nodes nodename"},
                     .nodes = {node(pod1ns1, {node1}), vnode(node1WithNamespace)},
                     .pending = {vnode(node1WithNamespace)}}),  // exists, not observed yet: requeued
        processEvent("add", node1),
        assertState({.nodes = {node(pod1ns1, {node1}), node(node1)}, .pending = {vnode(node1WithNamespace)}}),
        processAttemptToDelete(1),  // the stale virtual entry is dropped without a lookup
        assertState({.nodes = {node(pod1ns1, {node1}), node(node1)}})}});
  s.push_back(
      {"BadChildInNs1OwnerInNs2ChildFirst",
       {createObject(pod1ns1, {pod2ns1}), createObject(pod2ns2), processEvent("add", pod1ns1, {pod2ns2}),
        assertState({.nodes = {node(pod1ns1, {pod2ns2}), vnode(pod2ns1)}, .pending = {vnode(pod2ns1)}}),
        processEvent("add", pod2ns2),
        assertState({.events = {kBadPodEvent},
                     .nodes = {node(pod1ns1, {pod2ns2}), node(pod2ns2)},
                     .pending = {vnode(pod2ns1), node(pod1ns1)}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(pod1ns1, {pod2ns2}), node(pod2ns2)}, .pending = {node(pod1ns1)}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1", "get v1 pods ns1/podname2", "delete v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {pod2ns2}), node(pod2ns2)},
                     .absent = {pod2ns1}}),
        processEvent("delete", pod1ns1), assertState({.nodes = {node(pod2ns2)}, .absent = {pod2ns1}})}});
  s.push_back(
      {"BadChildInNs1OwnerInNs2OwnerFirst",
       {createObject(pod1ns1, {pod2ns1}), createObject(pod2ns2), processEvent("add", pod2ns2),
        assertState({.nodes = {node(pod2ns2)}}), processEvent("add", pod1ns1, {pod2ns1}),
        assertState({.events = {kBadPodEvent},
                     .nodes = {node(pod1ns1, {pod2ns1}), node(pod2ns2)},
                     .pending = {node(pod1ns1)}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1", "get v1 pods ns1/podname2", "delete v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {pod2ns1}), node(pod2ns2)},
                     .absent = {pod2ns1}}),
        processEvent("delete", pod1ns1), assertState({.nodes = {node(pod2ns2)}, .absent = {pod2ns1}})}});
  s.push_back(
      {"BadClusterScopedChildOwnerInNs1ChildFirst",
       {createObject(node1, {pod1ns1}), createObject(pod1ns1), processEvent("add", node1, {pod1ns1}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace)}}),
        // A namespaced kind without a namespace coordinate: not looked up, not retried.
        processAttemptToDelete(1),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)}}),
        processEvent("add", pod1ns1),
        assertState({.events = {kBadNodeEvent},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod1ns1)},
                     .pending = {node(node1, {pod1ns1})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 nodes nodename"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod1ns1)}})}});
  s.push_back(
      {"BadClusterScopedChildOwnerInNs1OwnerFirst",
       {createObject(node1, {pod1ns1}), createObject(pod1ns1), processEvent("add", pod1ns1),
        assertState({.nodes = {node(pod1ns1)}}), processEvent("add", node1, {pod1ns1}),
        assertState({.events = {kBadNodeEvent},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod1ns1)},
                     .pending = {node(node1, {pod1ns1})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 nodes nodename"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod1ns1)}})}});
  s.push_back(
      {"GoodChildOwnerWithNonPreferredServedVersion",
       {createObject(role1v1), createObject(role1v1beta1), createObject(pod1ns1, {role1v1beta1}),
        processEvent("add", pod1ns1, {role1v1beta1}),
        assertState({.nodes = {node(pod1ns1, {role1v1beta1}), vnode(role1v1beta1)}, .pending = {vnode(role1v1beta1)}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get rbac.authorization.k8s.io/v1beta1 roles ns1/role1"},
                     .nodes = {node(pod1ns1, {role1v1beta1}), vnode(role1v1beta1)},
                     .pending = {vnode(role1v1beta1)}}),
        processEvent("add", role1v1),
        assertState({.nodes = {node(pod1ns1, {role1v1beta1}), node(role1v1)},
                     .pending = {vnode(role1v1beta1), node(pod1ns1, {role1v1beta1})}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(pod1ns1, {role1v1beta1}), node(role1v1)},
                     .pending = {node(pod1ns1, {role1v1beta1})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1", "get rbac.authorization.k8s.io/v1beta1 roles ns1/role1"},
                     .nodes = {node(pod1ns1, {role1v1beta1}), node(role1v1)}}),
        deleteObject(role1v1), deleteObject(role1v1beta1), processEvent("delete", role1v1),
        assertState({.nodes = {node(pod1ns1, {role1v1beta1})},
                     .pending = {node(pod1ns1, {role1v1beta1})},
                     .absent = {role1v1}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1", "get rbac.authorization.k8s.io/v1beta1 roles ns1/role1",
                                 "delete v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {role1v1beta1})},
                     .absent = {role1v1, role1v1beta1}}),
        processEvent("delete", pod1ns1), assertState({.absent = {role1v1, role1v1beta1}})}});
  s.push_back(
      {"ChildOwnerWithUnservedVersionChildFirst",
       {createObject(deployment1apps), createObject(pod1ns1, {deployment1extensions}),
        processEvent("add", pod1ns1, {deployment1extensions}),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .pending = {vnode(deployment1extensions)}}),
        processAttemptToDelete(1),  // no REST mapping: requeued
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .pending = {vnode(deployment1extensions)}}),
        processEvent("add", deployment1apps),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), node(deployment1apps)},
                     .pending = {vnode(deployment1extensions), node(pod1ns1, {deployment1extensions})}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), node(deployment1apps)},
                     .pending = {node(pod1ns1, {deployment1extensions})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {deployment1extensions}), node(deployment1apps)},
                     .pending = {node(pod1ns1, {deployment1extensions})}}),
        deleteObject(deployment1apps), processEvent("delete", deployment1apps),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions})},
                     .absent = {deployment1apps}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions})},
                     .absent = {deployment1apps}})}});
  s.push_back(
      {"ChildOwnerWithUnservedVersionOwnerFirst",
       {createObject(deployment1apps), createObject(pod1ns1, {deployment1extensions}),
        processEvent("add", deployment1apps), assertState({.nodes = {node(deployment1apps)}}),
        processEvent("add", pod1ns1, {deployment1extensions}),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), node(deployment1apps)},
                     .pending = {node(pod1ns1, {deployment1extensions})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {deployment1extensions}), node(deployment1apps)},
                     .pending = {node(pod1ns1, {deployment1extensions})}}),
        deleteObject(deployment1apps), processEvent("delete", deployment1apps),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions})},
                     .absent = {deployment1apps}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions})},
                     .absent = {deployment1apps}})}});
  s.push_back(
      {"MissingOwnerUnservedVersionFirst",
       {createObject(pod1ns1, {deployment1extensions}), createObject(pod2ns1, {deployment1apps}),
        processEvent("add", pod1ns1, {deployment1extensions}),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .pending = {vnode(deployment1extensions)}}),
        processEvent("add", pod2ns1, {deployment1apps}),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions),
                               node(pod2ns1, {deployment1apps})},
                     .pending = {vnode(deployment1extensions), node(pod2ns1, {deployment1apps})}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions),
                               node(pod2ns1, {deployment1apps})},
                     .pending = {node(pod2ns1, {deployment1apps}), vnode(deployment1extensions)}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "get apps/v1 deployments ns1/deployment1",
                                 "delete v1 pods ns1/podname2"},
                     .nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions),
                               node(pod2ns1, {deployment1apps})},
                     .pending = {vnode(deployment1extensions)},
                     .absent = {deployment1apps}}),
        processEvent("delete", pod2ns1),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .pending = {vnode(deployment1extensions)},
                     .absent = {deployment1apps}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .pending = {vnode(deployment1extensions)},
                     .absent = {deployment1apps}})}});
  s.push_back(
      {"MissingOwnerServedVersionFirst",
       {createObject(pod1ns1, {deployment1extensions}), createObject(pod2ns1, {deployment1apps}),
        processEvent("add", pod2ns1, {deployment1apps}),
        assertState({.nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1apps)},
                     .pending = {vnode(deployment1apps)}}),
        processEvent("add", pod1ns1, {deployment1extensions}),
        assertState({.nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1apps),
                               node(pod1ns1, {deployment1extensions})},
                     .pending = {vnode(deployment1apps), node(pod1ns1, {deployment1extensions})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1apps),
                               node(pod1ns1, {deployment1extensions})},
                     .changes = {virtualDelete(deployment1apps)},
                     .pending = {node(pod1ns1, {deployment1extensions})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1apps),
                               node(pod1ns1, {deployment1extensions})},
                     .changes = {virtualDelete(deployment1apps)},
                     .pending = {node(pod1ns1, {deployment1extensions})}}),
        processPendingGraphChanges(1),
        // The virtual owner takes the identity the other dependent gives it.
        assertState({.nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1extensions),
                               node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions}), node(pod2ns1, {deployment1apps}),
                                 vnode(deployment1extensions)},
                     .absent = {deployment1apps}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1extensions),
                               node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod2ns1, {deployment1apps}), vnode(deployment1extensions),
                                 node(pod1ns1, {deployment1extensions})},
                     .absent = {deployment1apps}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "delete v1 pods ns1/podname2"},
                     .nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1extensions),
                               node(pod1ns1, {deployment1extensions})},
                     .pending = {vnode(deployment1extensions), node(pod1ns1, {deployment1extensions})},
                     .absent = {deployment1apps}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(pod2ns1, {deployment1apps}), vnode(deployment1extensions),
                               node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .absent = {deployment1apps}}),
        processEvent("delete", pod2ns1),
        assertState({.nodes = {vnode(deployment1extensions), node(pod1ns1, {deployment1extensions})},
                     .pending = {node(pod1ns1, {deployment1extensions}), vnode(deployment1extensions)},
                     .absent = {deployment1apps}})}});
  s.push_back(
      {"BadChildGoodChildBadParentDeleteGoodParent",
       {createObject(deployment1apps), createObject(badChildPod, {badSecret}),
        createObject(goodChildPod, {deployment1apps}),
        processEvent("add", badChildPod, {badSecret}),
        assertState({.nodes = {node(badChildPod, {badSecret}), vnode(badSecret)}, .pending = {vnode(badSecret)}}),
        processEvent("add", goodChildPod, {deployment1apps}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .pending = {vnode(badSecret), node(goodChildPod, {deployment1apps})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 secrets ns1/secretname"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .changes = {virtualDelete(badSecret)},
                     .pending = {node(goodChildPod, {deployment1apps})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/goodpod", "get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .changes = {virtualDelete(badSecret)}}),
        processPendingGraphChanges(1),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               vnode(deployment1apps)},
                     .pending = {node(badChildPod, {badSecret}), vnode(deployment1apps)},
                     .absent = {badSecret}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/badpod", "delete v1 pods ns1/badpod"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               vnode(deployment1apps)},
                     .pending = {vnode(deployment1apps)},
                     .absent = {badSecret}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               vnode(deployment1apps)},
                     .pending = {vnode(deployment1apps)},
                     .absent = {badSecret}}),
        processEvent("add", deployment1apps),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               node(deployment1apps)},
                     .pending = {node(deployment1apps)},
                     .absent = {badSecret}}),
        processEvent("delete", badChildPod, {badSecret}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(deployment1apps)},
                     .pending = {node(deployment1apps)},
                     .absent = {badSecret}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(deployment1apps)},
                     .absent = {badSecret}})}});
  s.push_back(
      {"BadChildGoodChildGoodParentBadParentDelete",
       {createObject(deployment1apps), createObject(badChildPod, {badSecret}),
        createObject(goodChildPod, {deployment1apps}),
        processEvent("add", badChildPod, {badSecret}),
        assertState({.nodes = {node(badChildPod, {badSecret}), vnode(badSecret)}, .pending = {vnode(badSecret)}}),
        processEvent("add", goodChildPod, {deployment1apps}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .pending = {vnode(badSecret), node(goodChildPod, {deployment1apps})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 secrets ns1/secretname"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .changes = {virtualDelete(badSecret)},
                     .pending = {node(goodChildPod, {deployment1apps})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/goodpod", "get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .changes = {virtualDelete(badSecret)}}),
        insertEvent(deployment1apps),  // the good parent's observation sneaks in first
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}), vnode(badSecret)},
                     .changes = {addChange(deployment1apps), virtualDelete(badSecret)}}),
        processPendingGraphChanges(1),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               node(deployment1apps)},
                     .changes = {virtualDelete(badSecret)},
                     .pending = {node(badChildPod, {badSecret})}}),
        processPendingGraphChanges(1),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               node(deployment1apps)},
                     .pending = {node(badChildPod, {badSecret})},
                     .absent = {badSecret}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/badpod", "delete v1 pods ns1/badpod"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(badChildPod, {badSecret}),
                               node(deployment1apps)},
                     .absent = {badSecret}}),
        processEvent("delete", badChildPod, {badSecret}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(deployment1apps)},
                     .absent = {badSecret}})}});
  s.push_back(
      {"GoodChildBadChildGoodParent",
       {createObject(deployment1apps), createObject(badChildPod, {badSecret}),
        createObject(goodChildPod, {deployment1apps}),
        processEvent("add", goodChildPod, {deployment1apps}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), vnode(deployment1apps)},
                     .pending = {vnode(deployment1apps)}}),
        processEvent("add", badChildPod, {badSecret}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), vnode(deployment1apps),
                               node(badChildPod, {badSecret})},
                     .pending = {vnode(deployment1apps), node(badChildPod, {badSecret})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(goodChildPod, {deployment1apps}), vnode(deployment1apps),
                               node(badChildPod, {badSecret})},
                     .pending = {node(badChildPod, {badSecret}), vnode(deployment1apps)}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/badpod", "get v1 secrets ns1/secretname",
                                 "delete v1 pods ns1/badpod"},
                     .nodes = {node(goodChildPod, {deployment1apps}), vnode(deployment1apps),
                               node(badChildPod, {badSecret})},
                     .pending = {vnode(deployment1apps)},
                     .absent = {badSecret}}),
        processEvent("add", deployment1apps),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(deployment1apps),
                               node(badChildPod, {badSecret})},
                     .pending = {node(deployment1apps)},
                     .absent = {badSecret}}),
        processEvent("delete", badChildPod, {badSecret}),
        assertState({.nodes = {node(goodChildPod, {deployment1apps}), node(deployment1apps)},
                     .pending = {node(deployment1apps)},
                     .absent = {badSecret}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get apps/v1 deployments ns1/deployment1"},
                     .nodes = {node(goodChildPod, {deployment1apps}), node(deployment1apps)},
                     .absent = {badSecret}})}});
  s.push_back(
      {"ClusterScopedBadChildNamespacedGoodChildMissingParent",
       {createObject(pod2ns1, {pod1ns1}), createObject(node1, {pod1nonamespace}),
        processEvent("add", node1, {pod1nonamespace}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace)}}),
        processEvent("add", pod2ns1, {pod1ns1}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace), node(pod2ns1, {pod1ns1})}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .pending = {node(pod2ns1, {pod1ns1})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "get v1 pods ns1/podname1", "delete v1 pods ns1/podname2"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .absent = {pod1ns1}}),
        processEvent("delete", pod2ns1, {pod1ns1}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)}, .absent = {pod1ns1}})}});
  s.push_back(
      {"ClusterScopedBadChildNamespacedGoodChildLateObservedParent",
       {createObject(pod1ns1), createObject(pod2ns1, {pod1ns1}), createObject(node1, {pod1nonamespace}),
        processEvent("add", node1, {pod1nonamespace}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace)}}),
        processEvent("add", pod2ns1, {pod1ns1}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace), node(pod2ns1, {pod1ns1})}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .pending = {node(pod2ns1, {pod1ns1})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "get v1 pods ns1/podname1"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)}}),
        processEvent("add", pod1ns1),
        assertState({.events = {kBadNodeEvent},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), node(pod1ns1)},
                     .pending = {node(node1, {pod1nonamespace})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 nodes nodename"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), node(pod1ns1)}})}});
  s.push_back(
      {"NamespacedGoodChildClusterScopedBadChildMissingParent",
       {createObject(pod2ns1, {pod1ns1}), createObject(node1, {pod1nonamespace}),
        processEvent("add", pod2ns1, {pod1ns1}),
        assertState({.nodes = {node(pod2ns1, {pod1ns1}), vnode(pod1ns1)}, .pending = {vnode(pod1ns1)}}),
        processEvent("add", node1, {pod1nonamespace}),
        assertState({.nodes = {node(pod2ns1, {pod1ns1}), node(node1, {pod1nonamespace}), vnode(pod1ns1)},
                     .pending = {vnode(pod1ns1), node(node1, {pod1nonamespace})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname1"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1ns1)},
                     .changes = {virtualDelete(pod1ns1)},
                     .pending = {node(node1, {pod1nonamespace})}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 nodes nodename"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1ns1)},
                     .changes = {virtualDelete(pod1ns1)}}),
        processPendingGraphChanges(1),
        // The missing owner's other coordinates (no namespace) replace it, still virtual.
        assertState({.nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .pending = {node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .absent = {pod1ns1}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "delete v1 pods ns1/podname2"},
                     .nodes = {node(node1, {pod1nonamespace}), node(pod2ns1, {pod1ns1}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace)},
                     .absent = {pod1ns1}}),
        processEvent("delete", pod2ns1, {pod1ns1}),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)},
                     .pending = {vnode(pod1nonamespace)},
                     .absent = {pod1ns1}}),
        processAttemptToDelete(1),
        assertState({.nodes = {node(node1, {pod1nonamespace}), vnode(pod1nonamespace)}, .absent = {pod1ns1}})}});
  // The item changes between the read and the delete: with other owners the delete is abandoned (and retried);
  // with the same owners it is sent again without the resourceVersion precondition.
  auto deleteCalls = std::make_shared<std::atomic<int>>(0);
  s.push_back(
      {"ResourceVersionConflictBetweenGetAndDelete",
       {createObject(pod1ns1), createObject(pod2ns1, {pod1ns1}), processEvent("add", pod1ns1),
        processEvent("add", pod2ns1, {pod1ns1}), deleteObject(pod1ns1), processEvent("delete", pod1ns1),
        assertState({.nodes = {node(pod2ns1, {pod1ns1})}, .pending = {node(pod2ns1, {pod1ns1})}, .absent = {pod1ns1}}),
        [deleteCalls](Harness& h) {
          *deleteCalls = 0;
          h.server->prependReactor("delete", "pods", [&h, deleteCalls](const Action& a)
                                                         -> std::optional<client::Transport::Reply> {
            const int call = ++*deleteCalls;
            auto opts = json::parse(a.body.empty() ? "{}" : a.body);
            const bool rvPrecondition = opts.contains("preconditions") &&
                                        opts["preconditions"].contains("resourceVersion");
            auto live = h.get(pod2ns1);
            EXPECT_TRUE(live);
            if (call == 1 || call == 2) {
              EXPECT_TRUE(rvPrecondition) << "call " << call;
              if (rvPrecondition) {
                EXPECT_EQ(opts["preconditions"]["resourceVersion"], (*live)["metadata"]["resourceVersion"]);
              }
              // A concurrent write: first the owners change, then only the resourceVersion.
              h.server->add(collectionPath(pod2ns1), objectJson(pod2ns1, {ownerRef(role1v1)}));
              return FakeApiServer::errorReply(409, "Conflict", "the object has been modified");
            }
            EXPECT_FALSE(rvPrecondition) << "call " << call;
            return std::nullopt;
          });
        },
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "delete v1 pods ns1/podname2", "get v1 pods ns1/podname2"},
                     .nodes = {node(pod2ns1, {pod1ns1})},
                     .pending = {node(pod2ns1, {pod1ns1})},
                     .absent = {pod1ns1}}),
        processAttemptToDelete(1),
        assertState({.actions = {"get v1 pods ns1/podname2", "get rbac.authorization.k8s.io/v1 roles ns1/role1",
                                 "delete v1 pods ns1/podname2", "get v1 pods ns1/podname2",
                                 "delete v1 pods ns1/podname2"},
                     .nodes = {node(pod2ns1, {pod1ns1})},
                     .absent = {pod1ns1, role1v1}}),
        [deleteCalls](Harness& h) {
          EXPECT_EQ(deleteCalls->load(), 3);
          EXPECT_FALSE(h.get(pod2ns1));
        }}});
  return s;
}

class GarbageCollectorConflictingData : public ::testing::TestWithParam<Scenario> {};

TEST_P(GarbageCollectorConflictingData, Steps) {
  Harness h;
  int i = 0;
  for (const auto& step : GetParam().steps) {
    SCOPED_TRACE("step " + std::to_string(i++));
    step(h);
    if (HasFatalFailure() || HasFailure()) return;
    expectGraphInvariants(*h.peer, "step " + std::to_string(i - 1));
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(GarbageCollector, GarbageCollectorConflictingData,
                         ::testing::ValuesIn(conflictingDataScenarios()),
                         [](const auto& info) { return info.param.name; });

// ---- whole cascades: the collector running against informers over the fake apiserver ----

class GarbageCollectorCascade : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    gc = std::make_unique<GarbageCollector>(server->client(),
                                            std::make_shared<client::DiscoveryClient>(server->client()), factory,
                                            broadcaster.newRecorder("garbage-collector-controller"));
    ASSERT_TRUE(gc->resyncMonitors().ok());
    factory.start(stop.get_token());
    gc->run(2, stop.get_token());
  }
  void TearDown() override {
    stop.request_stop();
    factory.shutdown();
    EXPECT_TRUE(eventually([&] { return GarbageCollectorTestPeer::inFlight(*gc) == 0; }));
    gc.reset();
  }
  Ref configMap(const std::string& name, const std::string& uid) { return id("v1", "ConfigMap", "ns1", name, uid); }
  void add(const Ref& r, const std::vector<OwnerReference>& owners = {}) {
    server->add(collectionPath(r), objectJson(r, owners));
  }
  bool exists(const Ref& r) { return server->getJson(collectionPath(r) + "/" + r.name).has_value(); }
  Status remove(const Ref& r, const std::string& policy) {
    client::DeleteOptions o;
    o.propagationPolicy = policy;
    return client::removeDynamic(*server->client(), {"", "v1", "configmaps"}, r.namespace_, r.name, o);
  }

  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::stop_source stop;
  std::unique_ptr<GarbageCollector> gc;
};

TEST_F(GarbageCollectorCascade, BackgroundDeletionCollectsDependents) {
  const Ref owner = configMap("owner", "o"), d1 = configMap("d1", "1"), d2 = configMap("d2", "2");
  const Ref keeper = configMap("keeper", "k"), shared = configMap("shared", "s");
  add(owner);
  add(keeper);
  add(d1, {ownerRef(owner)});
  add(d2, {ownerRef(owner)});
  add(shared, {ownerRef(owner), ownerRef(keeper)});  // another owner still exists
  ASSERT_TRUE(remove(owner, "Background").ok());
  EXPECT_TRUE(eventually([&] { return !exists(d1) && !exists(d2); }));
  ASSERT_TRUE(eventually([&] {
    auto j = server->getJson(collectionPath(shared) + "/shared");
    return j && (*j)["metadata"]["ownerReferences"].size() == 1;
  }));
  EXPECT_EQ((*server->getJson(collectionPath(shared) + "/shared"))["metadata"]["ownerReferences"][0]["uid"], "k");
  EXPECT_TRUE(exists(keeper));
}

TEST_F(GarbageCollectorCascade, ForegroundDeletionRemovesDependentsFirst) {
  const Ref owner = configMap("owner", "o"), d1 = configMap("d1", "1"), d2 = configMap("d2", "2");
  add(owner);
  add(d1, {ownerRef(owner, true)});
  add(d2, {ownerRef(owner, true)});
  ASSERT_TRUE(remove(owner, "Foreground").ok());
  EXPECT_TRUE(eventually([&] { return !exists(owner); }));
  EXPECT_FALSE(exists(d1));
  EXPECT_FALSE(exists(d2));
  // The owner was deleted only after its dependents: the last write to it removed the finalizer.
  bool ownerPatchedAfterDependentsDeleted = false;
  int dependentDeletes = 0;
  for (const auto& a : server->writes()) {
    if (a.verb == "delete" && (a.name == "d1" || a.name == "d2")) ++dependentDeletes;
    if (a.verb == "patch" && a.name == "owner") ownerPatchedAfterDependentsDeleted = dependentDeletes >= 2;
  }
  EXPECT_TRUE(ownerPatchedAfterDependentsDeleted);
}

TEST_F(GarbageCollectorCascade, OrphanDeletionKeepsDependents) {
  const Ref owner = configMap("owner", "o"), d1 = configMap("d1", "1");
  add(owner);
  add(d1, {ownerRef(owner)});
  ASSERT_TRUE(remove(owner, "Orphan").ok());
  EXPECT_TRUE(eventually([&] { return !exists(owner); }));
  ASSERT_TRUE(exists(d1));
  EXPECT_FALSE((*server->getJson(collectionPath(d1) + "/d1"))["metadata"].contains("ownerReferences"));
}

// ---- starting up: monitors that cannot sync, discovery re-syncs, monitors of resources that come and go ----

// A collector on a fake clock over a started factory; "widgets" (example.com/v1) is served by discovery.
class GarbageCollectorMonitors : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource(widgetsResource());
    gc = std::make_unique<GarbageCollector>(server->client(),
                                            std::make_shared<client::DiscoveryClient>(server->client()), factory,
                                            broadcaster.newRecorder("garbage-collector-controller"), clock);
  }
  void TearDown() override {
    stop.request_stop();
    factory.shutdown();
    EXPECT_TRUE(eventually([&] { return GarbageCollectorTestPeer::inFlight(*gc) == 0; }));
    gc.reset();
  }
  static FakeApiServer::Resource widgetsResource() {
    FakeApiServer::Resource r;
    r.group = "example.com";
    r.version = "v1";
    r.resource = "widgets";
    r.kind = "Widget";
    return r;
  }
  // The widgets' list always fails (an aggregated apiserver that answers discovery but not lists).
  void failWidgetLists() {
    server->prependReactor("list", "widgets", [](const Action&) -> std::optional<client::Transport::Reply> {
      return FakeApiServer::errorReply(503, "ServiceUnavailable", "the server is currently unable to handle the request");
    });
  }
  Ref configMap(const std::string& name, const std::string& uid) { return id("v1", "ConfigMap", "ns1", name, uid); }
  void add(const Ref& r, const std::vector<OwnerReference>& owners = {}) {
    server->add(collectionPath(r), objectJson(r, owners));
  }
  bool exists(const Ref& r) { return server->getJson(collectionPath(r) + "/" + r.name).has_value(); }
  bool listed(const std::string& resource) { return !server->actionsFor("list", resource).empty(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::stop_source stop;
  std::unique_ptr<GarbageCollector> gc;
};

// upstream GarbageCollector.Run waits at most 30 s (core.go: syncPeriod) for the monitors, then collects
// anyway: one resource that cannot be listed does not stop garbage collection.
TEST_F(GarbageCollectorMonitors, CollectionProceedsAfter30sWhenAResourceCannotBeListed) {
  failWidgetLists();
  const Ref owner = configMap("owner", "o"), dependent = configMap("dependent", "d");
  add(owner);
  add(dependent, {ownerRef(owner)});
  (void)gc->resyncMonitors();
  factory.start(stop.get_token());
  gc->run(2, stop.get_token());
  ASSERT_TRUE(eventually([&] { return listed("widgets") && listed("configmaps"); }));
  ASSERT_TRUE(client::removeDynamic(*server->client(), {"", "v1", "configmaps"}, "ns1", "owner", {}).ok());
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(exists(dependent)) << "collected before the 30 s wait for the monitors ended";
  clock.advance(30s);
  EXPECT_TRUE(eventually([&] { return !exists(dependent); })) << "the collector never proceeded";
  EXPECT_FALSE(GarbageCollectorTestPeer::graphSynced(*gc));
}

// upstream runs GarbageCollector.Sync (discovery every 30 s) concurrently with Run: a resource that appears
// later gets a monitor even while another monitor has never synced.
TEST_F(GarbageCollectorMonitors, DiscoveryResyncRunsWhileAMonitorHasNotSynced) {
  failWidgetLists();
  (void)gc->resyncMonitors();
  factory.start(stop.get_token());
  gc->run(2, stop.get_token());
  ASSERT_TRUE(eventually([&] { return listed("widgets") && listed("configmaps"); }));
  FakeApiServer::Resource gizmos = widgetsResource();
  gizmos.resource = "gizmos";
  gizmos.kind = "Gizmo";
  server->addResource(gizmos);
  std::this_thread::sleep_for(200ms);
  clock.advance(30s);
  EXPECT_TRUE(eventually([&] { return listed("gizmos"); }));
}

// A group-version that aggregated discovery marks stale is a failed group (client-go): no monitor for it.
TEST_F(GarbageCollectorMonitors, NoMonitorForAStaleGroupVersion) {
  server->setStale("example.com", "v1");
  (void)gc->resyncMonitors();
  factory.start(stop.get_token());
  ASSERT_TRUE(eventually([&] { return GarbageCollectorTestPeer::graphSynced(*gc); }));
  EXPECT_TRUE(listed("configmaps"));
  EXPECT_FALSE(listed("widgets"));
}

// upstream syncMonitors stops the monitors of resources discovery no longer serves: the collector stops waiting
// for them.
TEST_F(GarbageCollectorMonitors, MonitorOfAResourceGoneFromDiscoveryIsStopped) {
  failWidgetLists();
  (void)gc->resyncMonitors();
  factory.start(stop.get_token());
  ASSERT_TRUE(eventually([&] { return listed("widgets") && listed("configmaps"); }));
  EXPECT_FALSE(GarbageCollectorTestPeer::graphSynced(*gc));
  server->removeResource("example.com", "v1", "widgets");
  (void)gc->resyncMonitors();
  EXPECT_TRUE(eventually([&] { return GarbageCollectorTestPeer::graphSynced(*gc); }));
}

// upstream attemptToDeleteWorker requeues a virtual node that exists but has not been observed through the
// queue's rate limiter (5 ms doubling to 1000 s), not at a fixed period.
TEST(GarbageCollectorAttemptToDeleteBackoff, AnOwnerNotYetObservedIsRecheckedWithExponentialBackoff) {
  Harness h;
  h.add(kRC);  // the owner exists, but no monitor reports it
  h.peer->process("add", metadata(kPod, {kRC}), "v1", "Pod");
  h.server->clearActions();
  for (int step = 0; step < 600; ++step) {  // 60 s of fake time
    while (h.peer->processNextAttemptToDelete()) {
    }
    h.clock.advance(100ms);
  }
  size_t gets = 0;
  for (const auto& a : h.actions())
    if (a == "get v1 replicationcontrollers ns1/owner1") ++gets;
  // 0, 5 ms, 15 ms, 35 ms ... 41 s: about 14 looks in a minute (one a second would be 60).
  EXPECT_GE(gets, 10u);
  EXPECT_LE(gets, 18u);
}

// OwnerRefInvalidNamespace is for a namespaced owner named from another namespace (or by a cluster-scoped
// dependent), as upstream addDependentToOwners / processGraphChanges warn. A cluster-scoped owner is valid from
// anywhere, whichever of owner and dependents is observed first.
TEST(GarbageCollectorOwnerRefInvalidNamespace, NoWarningForClusterScopedOwners) {
  const Ref owner = id("v1", "Node", "", "node1", "nodeuid1");
  const Ref clusterDependent = id("v1", "Node", "", "node2", "nodeuid2");
  const Ref podDependent = id("v1", "Pod", "ns1", "pod1", "poduid1");
  for (int order = 0; order < 4; ++order) {
    SCOPED_TRACE("order " + std::to_string(order));
    Harness h;
    if (order == 0) h.peer->process("add", metadata(owner), "v1", "Node");
    h.peer->process("add", metadata(podDependent, {owner}), "v1", "Pod");
    if (order == 1) h.peer->process("add", metadata(owner), "v1", "Node");
    h.peer->process("add", metadata(clusterDependent, {owner}), "v1", "Node");
    if (order >= 2) h.peer->process("add", metadata(owner), "v1", "Node");
    if (order == 3) h.peer->process("update", metadata(clusterDependent, {owner}), "v1", "Node");
    EXPECT_EQ(h.events(), std::vector<std::string>{});
    expectGraphInvariants(*h.peer, "order " + std::to_string(order));
  }
}

// upstream Sync keeps the monitors of a group that failed discovery as long as they had synced: the collector
// keeps seeing those objects.
TEST_F(GarbageCollectorMonitors, SyncedMonitorOfAGroupThatTurnsStaleIsKept) {
  GarbageCollectorTestPeer peer(*gc);  // graph changes are held for the test to see
  (void)gc->resyncMonitors();
  factory.start(stop.get_token());
  ASSERT_TRUE(eventually([&] { return GarbageCollectorTestPeer::graphSynced(*gc); }));
  server->setStale("example.com", "v1");
  Status s = gc->resyncMonitors();
  EXPECT_EQ(s.message(), "unable to retrieve the complete list of server APIs: example.com/v1: stale GroupVersion "
                         "discovery: example.com/v1");
  server->add("/apis/example.com/v1/namespaces/ns1/widgets",
              {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w1"}, {"uid", "w1"}}}});
  EXPECT_TRUE(eventually([&] {
    for (const auto& c : peer.pendingChanges())
      if (c.identity.uid == "w1" && c.identity.kind == "Widget") return true;
    return false;
  }));
}

// A stopped monitor no longer feeds the graph; the resource coming back gets a monitor again.
TEST_F(GarbageCollectorMonitors, ResourceLeavingAndReturningToDiscovery) {
  GarbageCollectorTestPeer peer(*gc);
  (void)gc->resyncMonitors();
  factory.start(stop.get_token());
  ASSERT_TRUE(eventually([&] { return GarbageCollectorTestPeer::graphSynced(*gc); }));
  server->removeResource("example.com", "v1", "widgets");
  ASSERT_TRUE(gc->resyncMonitors().ok());
  auto seen = [&](const std::string& uid) {
    for (const auto& c : peer.pendingChanges())
      if (c.identity.uid == uid) return true;
    return false;
  };
  server->add("/apis/example.com/v1/namespaces/ns1/widgets",
              {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w1"}, {"uid", "w1"}}}});
  add(configMap("after", "c1"));
  ASSERT_TRUE(eventually([&] { return seen("c1"); }));
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(seen("w1")) << "a stopped monitor still feeds the graph";
  // Back in discovery: a monitor again, which reports what its informer holds.
  server->addResource(widgetsResource());
  ASSERT_TRUE(gc->resyncMonitors().ok());
  EXPECT_TRUE(eventually([&] { return seen("w1"); }));
}

// No discovery at construction, and a discovery failure is never fatal: the collector runs, proceeds after the
// initial wait, and picks the resources up once discovery answers (upstream never fails construction on it).
TEST_F(GarbageCollectorMonitors, DiscoveryFailingAtStartIsRetried) {
  std::atomic<bool> down{true};
  server->prependDiscoveryReactor([&down](const std::string&) -> std::optional<client::Transport::Reply> {
    if (!down) return std::nullopt;
    return FakeApiServer::errorReply(503, "ServiceUnavailable", "discovery is down");
  });
  const Ref owner = configMap("owner", "o"), dependent = configMap("dependent", "d");
  add(dependent, {ownerRef(owner)});  // its owner does not exist
  EXPECT_FALSE(gc->resyncMonitors().ok());
  factory.start(stop.get_token());
  gc->run(2, stop.get_token());
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(listed("configmaps"));
  down = false;
  clock.advance(30s);  // the next discovery sync, and the end of the initial wait
  EXPECT_TRUE(eventually([&] { return listed("configmaps"); }));
  EXPECT_TRUE(eventually([&] { return !exists(dependent); }));
}

}  // namespace
}  // namespace kcm::controllers::gc
