// Our REST client against the real apiserver: CRUD, status, every patch type, delete preconditions, watch
// (ADDED/MODIFIED/DELETED/BOOKMARK), metadata-only lists, and typed API errors.
#include <thread>

#include "api/gen/apps_v1_codec.h"
#include "api/gen/apps_v1_json.h"
#include "api/gen/coordination_v1_codec.h"
#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "api/support/dynamic_object.h"
#include "client/discovery.h"
#include "client/events.h"
#include "client/typed_client.h"
#include "framework/framework.h"

namespace kcm::e2e {
namespace {

using api::apps::v1::Deployment;
using api::core::v1::ConfigMap;
using namespace kcm::client;

class Client : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    auto cfg = loadKubeconfig(Cluster::get().kubeconfig);
    ASSERT_TRUE(cfg.ok()) << cfg.status().toString();
    auto c = RestClient::create(*cfg);
    ASSERT_TRUE(c.ok()) << c.status().toString();
    client_ = *c;
  }
  ConfigMap configMap(const std::string& name) {
    ConfigMap cm;
    cm.metadata.name = name;
    cm.metadata.labels["e2e"] = "client";
    cm.data["k"] = "v";
    return cm;
  }
  std::shared_ptr<RestClient> client_;
};

TEST_F(Client, CreateGetUpdateDeleteAndTypedErrors) {
  auto created = create(*client_, ns(), configMap("cm1"));
  ASSERT_TRUE(created.ok()) << created.status().toString();
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_EQ(created->data.at("k"), "v");

  auto dup = create(*client_, ns(), configMap("cm1"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status().toString();

  auto got = get<ConfigMap>(*client_, ns(), "cm1");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ConfigMap changed = *got;
  changed.data["k"] = "v2";
  auto updated = update(*client_, changed);
  ASSERT_TRUE(updated.ok()) << updated.status().toString();
  EXPECT_EQ(updated->data.at("k"), "v2");
  EXPECT_NE(updated->metadata.resourceVersion, got->metadata.resourceVersion);

  auto stale = update(*client_, changed);  // resourceVersion of the old read
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict) << stale.status().toString();

  ASSERT_TRUE(remove<ConfigMap>(*client_, ns(), "cm1").ok());
  auto gone = get<ConfigMap>(*client_, ns(), "cm1");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_NE(gone.status().message().find("\"cm1\" not found"), std::string::npos) << gone.status().message();

  ConfigMap invalid = configMap("Invalid_Name");
  auto inv = create(*client_, ns(), invalid);
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), StatusCode::kInvalid) << inv.status().toString();
}

TEST_F(Client, UpdateStatusWritesOnlyStatus) {
  Deployment d;
  d.metadata.name = "web";
  d.spec.replicas = 2;
  d.spec.selector.emplace().matchLabels["app"] = "web";  // *LabelSelector in Go
  d.spec.template_.metadata.labels["app"] = "web";
  auto& c = d.spec.template_.spec.containers.emplace_back();
  c.name = "c";
  c.image = "registry.k8s.io/pause:3.10";
  auto created = create(*client_, ns(), d);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  Deployment withStatus = *created;
  withStatus.status.observedGeneration = 42;
  withStatus.status.replicas = 7;
  withStatus.spec.replicas = 9;  // ignored by the status subresource
  auto st = updateStatus(*client_, withStatus);
  ASSERT_TRUE(st.ok()) << st.status().toString();
  auto got = get<Deployment>(*client_, ns(), "web");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status.observedGeneration, 42);
  EXPECT_EQ(got->status.replicas, 7);
  EXPECT_EQ(got->spec.replicas, 2);
}

TEST_F(Client, EveryPatchType) {
  ASSERT_TRUE(create(*client_, ns(), configMap("p")).ok());
  auto merge = patch<ConfigMap>(*client_, ns(), "p", PatchType::kMerge, R"({"data":{"m":"1"}})");
  ASSERT_TRUE(merge.ok()) << merge.status().toString();
  EXPECT_EQ(merge->data.at("m"), "1");
  auto smp = patch<ConfigMap>(*client_, ns(), "p", PatchType::kStrategicMerge, R"({"metadata":{"labels":{"s":"2"}}})");
  ASSERT_TRUE(smp.ok()) << smp.status().toString();
  EXPECT_EQ(smp->metadata.labels.at("s"), "2");
  EXPECT_EQ(smp->metadata.labels.at("e2e"), "client");
  auto jp = patch<ConfigMap>(*client_, ns(), "p", PatchType::kJsonPatch,
                             R"([{"op":"test","path":"/data/k","value":"v"},{"op":"remove","path":"/data/k"}])");
  ASSERT_TRUE(jp.ok()) << jp.status().toString();
  EXPECT_EQ(jp->data.count("k"), 0u);
  auto failedTest = patch<ConfigMap>(*client_, ns(), "p", PatchType::kJsonPatch,
                                     R"([{"op":"test","path":"/data/m","value":"nope"}])");
  EXPECT_FALSE(failedTest.ok());
  WriteOptions w;
  w.fieldManager = "kcm-e2e";
  auto applied = patch<ConfigMap>(*client_, ns(), "p", PatchType::kApply,
                                  R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"a":"3"}})",
                                  "", w);
  ASSERT_TRUE(applied.ok()) << applied.status().toString();
  EXPECT_EQ(applied->data.at("a"), "3");
  bool managed = false;
  for (const auto& mf : applied->metadata.managedFields) managed |= mf.manager == "kcm-e2e" && mf.operation == "Apply";
  EXPECT_TRUE(managed);
}

TEST_F(Client, DeleteHonoursPreconditions) {
  auto created = create(*client_, ns(), configMap("d"));
  ASSERT_TRUE(created.ok());
  DeleteOptions wrong;
  wrong.preconditionUID = "00000000-0000-0000-0000-000000000000";
  Status s = remove<ConfigMap>(*client_, ns(), "d", wrong);
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s.toString();
  DeleteOptions staleRv;
  staleRv.preconditionResourceVersion = "1";
  EXPECT_EQ(remove<ConfigMap>(*client_, ns(), "d", staleRv).code(), StatusCode::kConflict);
  DeleteOptions right;
  right.preconditionUID = created->metadata.uid;
  right.propagationPolicy = "Background";
  right.gracePeriodSeconds = 0;
  EXPECT_TRUE(remove<ConfigMap>(*client_, ns(), "d", right).ok());
  EXPECT_EQ(get<ConfigMap>(*client_, ns(), "d").status().code(), StatusCode::kNotFound);
}

TEST_F(Client, ListPagesAndMetadataOnlyList) {
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(create(*client_, ns(), configMap("l" + std::to_string(i))).ok());
  ListOptions o;
  o.limit = 3;
  o.labelSelector = "e2e=client";
  auto page = listPage<ConfigMap>(*client_, ns(), o);
  ASSERT_TRUE(page.ok()) << page.status().toString();
  EXPECT_EQ(page->items.size(), 3u);
  EXPECT_FALSE(page->metadata.continue_.empty());
  auto all = list<ConfigMap>(*client_, ns(), o);
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(all->items.size(), 7u);
  EXPECT_FALSE(all->metadata.resourceVersion.empty());

  ListOptions byLabel;
  byLabel.labelSelector = "e2e=client";
  auto meta = listMetadataPage(*client_, {"", "v1", "configmaps"}, ns(), byLabel);
  ASSERT_TRUE(meta.ok()) << meta.status().toString();
  EXPECT_EQ(meta->kind, "PartialObjectMetadataList");
  ASSERT_EQ(meta->items.size(), 7u);
  // Asked for protobuf first as client-go's metadata client asks: the items' TypeMeta is not on that wire (the
  // PartialObjectMetadata message has only metadata), so they carry none, as in client-go; JSON would name them.
  EXPECT_TRUE(meta->items[0].kind.empty()) << meta->items[0].kind;
  EXPECT_FALSE(meta->items[0].metadata.uid.empty());
}

TEST_F(Client, WatchSeesAddedModifiedDeletedAndBookmark) {
  std::vector<std::string> seen;
  std::mutex mu;
  std::atomic<bool> gotInitialBookmark{false};
  std::stop_source stop;
  Status watchStatus;
  std::thread watcher([&] {
    ListOptions o;
    o.allowWatchBookmarks = true;
    o.sendInitialEvents = true;  // streaming list: ends the initial events with a BOOKMARK
    o.resourceVersionMatch = "NotOlderThan";
    o.timeoutSeconds = 60;
    watchStatus = watch<ConfigMap>(
        *client_, ns(), o,
        [&](WatchEvent<ConfigMap>& ev) {
          std::lock_guard l(mu);
          if (ev.type == "BOOKMARK") {
            gotInitialBookmark = true;
            seen.push_back("BOOKMARK");
          } else if (ev.object.metadata.name == "w") {
            seen.push_back(ev.type);
          }
          return true;
        },
        stop.get_token());
  });
  ASSERT_TRUE(waitFor([&] { return gotInitialBookmark.load(); }, 20s)) << "no BOOKMARK event";
  ASSERT_TRUE(create(*client_, ns(), configMap("w")).ok());
  ASSERT_TRUE(patch<ConfigMap>(*client_, ns(), "w", PatchType::kMerge, R"({"data":{"x":"y"}})").ok());
  ASSERT_TRUE(remove<ConfigMap>(*client_, ns(), "w").ok());
  bool all = waitFor(
      [&] {
        std::lock_guard l(mu);
        return std::count(seen.begin(), seen.end(), "DELETED") == 1;
      },
      20s);
  stop.request_stop();
  watcher.join();
  EXPECT_TRUE(all);
  std::lock_guard l(mu);
  std::vector<std::string> want = {"BOOKMARK", "ADDED", "MODIFIED", "DELETED"};
  std::vector<std::string> got(seen.begin(), seen.end());
  got.erase(std::remove(got.begin() + 1, got.end(), "BOOKMARK"), got.end());  // periodic bookmarks may follow
  EXPECT_EQ(got, want);
  EXPECT_EQ(watchStatus.code(), StatusCode::kCancelled) << watchStatus.toString();
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(Client, RepeatedEventIsOneEventWithCount) {
  auto cm = create(*client_, ns(), configMap("evented"));
  ASSERT_TRUE(cm.ok());
  {
    EventBroadcaster b(client_, "e2e-host");
    auto rec = b.newRecorder("e2e-controller");
    ObjectReference ref{"ConfigMap", "v1", ns(), "evented", cm->metadata.uid, cm->metadata.resourceVersion, ""};
    for (int i = 0; i < 5; ++i) rec->event(ref, kEventTypeNormal, "Tested", "the same message");
    rec->event(ref, kEventTypeWarning, "Other", "a different event");
    b.flush();
  }
  Json events = kubectlJson({"get", "events", "-n", ns(), "--field-selector", "involvedObject.name=evented"});
  ASSERT_TRUE(events.is_object());
  ASSERT_EQ(events["items"].size(), 2u) << events.dump();
  for (const Json& e : events["items"]) {
    if (e["reason"] == "Tested") {
      EXPECT_EQ(e["count"], 5);
      EXPECT_EQ(e["type"], "Normal");
      EXPECT_EQ(e["source"]["component"], "e2e-controller");
      EXPECT_EQ(e["reportingComponent"], "e2e-controller");
      EXPECT_EQ(e["involvedObject"]["uid"], cm->metadata.uid.str());
    } else {
      EXPECT_EQ(e["reason"], "Other");
      EXPECT_EQ(e["count"], 1);
      EXPECT_EQ(e["type"], "Warning");
    }
  }
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(Client, DiscoveryFindsServedResourcesAndMapsKinds) {
  DiscoveryClient d(client_);
  auto all = d.serverPreferredResources();
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_TRUE(d.usedAggregatedDiscovery());
  auto find = [&](const std::string& g, const std::string& r) -> const APIResourceInfo* {
    for (const auto& x : all.value())
      if (x.group == g && x.resource == r) return &x;
    return nullptr;
  };
  const auto* pods = find("", "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_TRUE(pods->namespaced);
  EXPECT_EQ(pods->kind, "Pod");
  EXPECT_TRUE(pods->hasVerb("watch"));
  EXPECT_NE(std::find(pods->subresources.begin(), pods->subresources.end(), "status"), pods->subresources.end());
  const auto* nodes = find("", "nodes");
  ASSERT_NE(nodes, nullptr);
  EXPECT_FALSE(nodes->namespaced);
  EXPECT_NE(find("apps", "deployments"), nullptr);
  EXPECT_NE(find("coordination.k8s.io", "leases"), nullptr);
  auto mapped = d.resourceFor("apps", "", "Deployment");
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(mapped->resource, "deployments");
  EXPECT_EQ(mapped->version, "v1");
  EXPECT_EQ(d.resourceFor("apps", "", "Nope").status().code(), StatusCode::kNotFound);
}

TEST_F(Client, DynamicObjectsKeepEverythingButMetadataVerbatim) {
  apply(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dyn","labels":{"a":"b"}},"data":{"x":"1"}})");
  auto obj = getDynamic(*client_, {"", "v1", "configmaps"}, ns(), "dyn");
  ASSERT_TRUE(obj.ok()) << obj.status().toString();
  EXPECT_EQ(obj->kind, "ConfigMap");
  EXPECT_EQ(obj->metadata.labels.at("a"), "b");
  auto data = api::dynamicField(*obj, "data");
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(Json::parse(*data), Json::parse(R"({"x":"1"})"));
  auto list = listDynamicPage(*client_, {"", "v1", "configmaps"}, ns(), {});
  ASSERT_TRUE(list.ok());
  bool found = false;
  for (const auto& o : list->items) found |= o.metadata.name == "dyn" && api::dynamicField(o, "data").has_value();
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(Client, LeaseCrudWithMicroTimeAndPreconditions) {
  api::coordination::v1::Lease lease;
  lease.metadata.name = "lock";
  lease.spec.holderIdentity = "me";
  lease.spec.leaseDurationSeconds = 15;
  lease.spec.acquireTime = api::MicroTime::now();
  lease.spec.renewTime = lease.spec.acquireTime;
  auto created = create(*client_, ns(), lease);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  EXPECT_EQ(created->spec.renewTime->rfc3339Micro(), lease.spec.renewTime->rfc3339Micro());
  auto renewed = *created;
  renewed.spec.renewTime = api::MicroTime::fromUnixMicros(lease.spec.renewTime->unixMicros + 2000000);
  renewed.spec.leaseTransitions = 1;
  auto updated = update(*client_, renewed);
  ASSERT_TRUE(updated.ok()) << updated.status().toString();
  EXPECT_EQ(*updated->spec.leaseTransitions, 1);
  EXPECT_EQ(update(*client_, renewed).status().code(), StatusCode::kConflict);  // stale resourceVersion
  DeleteOptions d;
  d.preconditionResourceVersion = updated->metadata.resourceVersion;
  EXPECT_TRUE(remove<api::coordination::v1::Lease>(*client_, ns(), "lock", d).ok());
}

}  // namespace
}  // namespace kcm::e2e
