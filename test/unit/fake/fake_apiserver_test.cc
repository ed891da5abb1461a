// The fake apiserver answers as the real one does for what controllers send (checked here so controller tests
// can trust it), and a real SharedInformer lists and watches through it.
#include "fake/fake_apiserver.h"

#include <gtest/gtest.h>

#include <thread>

#include "api/gen/apps_v1.h"
#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/discovery.h"
#include "fake/eventually.h"
#include "informers/factory.h"

namespace kcm::testing {
namespace {

using api::apps::v1::Deployment;
using api::core::v1::ConfigMap;
using api::core::v1::Pod;
using namespace std::chrono_literals;


Pod pod(const std::string& ns, const std::string& name, std::map<std::string, std::string> labels = {}) {
  Pod p;
  p.metadata.namespace_ = ns;
  p.metadata.name = name;
  for (auto& [k, v] : labels) p.metadata.labels[k] = v;
  return p;
}

TEST(FakeApiServer, CreateStampsMetadataAndRejectsDuplicates) {
  FakeClock clock;
  auto s = std::make_shared<FakeApiServer>(clock);
  auto c = s->client();
  Pod p = pod("ns", "");
  p.metadata.generateName = "web-";
  auto created = client::create(*c, "ns", p);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  EXPECT_EQ(created->metadata.name.rfind("web-", 0), 0u);
  EXPECT_EQ(created->metadata.name.size(), 9u);
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_FALSE(created->metadata.resourceVersion.empty());
  EXPECT_EQ(created->metadata.creationTimestamp, api::timeNow(clock));
  auto again = client::create(*c, "ns", *created);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("pods \"" + created->metadata.name + "\" already exists"),
            std::string::npos);
  auto missing = client::get<Pod>(*c, "ns", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  ASSERT_EQ(s->writes().size(), 2u);
  EXPECT_EQ(s->writes()[0].toString(), "create pods ns/");
}

TEST(FakeApiServer, ListFiltersByNamespaceAndLabelSelector) {
  auto s = std::make_shared<FakeApiServer>();
  s->add(pod("a", "p1", {{"app", "x"}}));
  s->add(pod("a", "p2", {{"app", "y"}}));
  s->add(pod("b", "p3", {{"app", "x"}}));
  auto c = s->client();
  client::ListOptions o;
  o.labelSelector = "app=x";
  auto l = client::list<Pod>(*c, "", o);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->items.size(), 2u);
  o.labelSelector = "app in (x, y),app!=y";
  l = client::list<Pod>(*c, "a", o);
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->items.size(), 1u);
  EXPECT_EQ(l->items[0].metadata.name, "p1");
  o.labelSelector = "";
  o.fieldSelector = "metadata.name=p2";
  l = client::list<Pod>(*c, "a", o);
  ASSERT_EQ(l->items.size(), 1u);
}

TEST(FakeApiServer, UpdateChecksResourceVersionAndSplitsStatus) {
  auto s = std::make_shared<FakeApiServer>();
  Deployment d;
  d.metadata.namespace_ = "ns";
  d.metadata.name = "d";
  d.spec.replicas = 1;
  d.status.replicas = 7;
  Deployment stored = s->add(d);
  EXPECT_EQ(stored.metadata.generation, 1);
  auto c = s->client();
  Deployment next = stored;
  next.spec.replicas = 3;
  next.status.replicas = 99;  // ignored: the main resource does not write status
  auto u = client::update(*c, next);
  ASSERT_TRUE(u.ok()) << u.status().toString();
  EXPECT_EQ(u->metadata.generation, 2);
  EXPECT_EQ(u->status.replicas, 7);
  auto stale = client::update(*c, next);  // old resourceVersion
  ASSERT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_NE(stale.status().message().find("the object has been modified"), std::string::npos);
  Deployment st = *u;
  st.status.replicas = 3;
  st.spec.replicas = 50;  // ignored by the status subresource
  auto us = client::updateStatus(*c, st);
  ASSERT_TRUE(us.ok());
  EXPECT_EQ(us->status.replicas, 3);
  EXPECT_EQ(us->spec.replicas, 3);
  EXPECT_EQ(us->metadata.generation, 2);  // status writes do not move generation
}

TEST(FakeApiServer, StrategicMergeUsesMergeKeysAndDirectives) {
  auto s = std::make_shared<FakeApiServer>();
  Pod p = pod("ns", "p");
  api::meta::v1::OwnerReference a, b;
  a.uid = "u1";
  a.name = "one";
  b.uid = "u2";
  b.name = "two";
  p.metadata.ownerReferences = {a, b};
  p.metadata.finalizers = {"f1"};
  s->add(p);
  auto c = s->client();
  auto r = client::patch<Pod>(
      *c, "ns", "p", client::PatchType::kStrategicMerge,
      R"({"metadata":{"ownerReferences":[{"$patch":"delete","uid":"u1"},{"uid":"u2","name":"renamed"}],)"
      R"("finalizers":["f2"],"$deleteFromPrimitiveList/finalizers":["f1"]}})");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_EQ(r->metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(r->metadata.ownerReferences[0].name, "renamed");
  EXPECT_EQ(r->metadata.finalizers, std::vector<std::string>{"f2"});
  auto m = client::patch<Pod>(*c, "ns", "p", client::PatchType::kMerge, R"({"metadata":{"labels":{"k":"v"}}})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->metadata.labels.at("k"), "v");
  auto j = client::patch<Pod>(*c, "ns", "p", client::PatchType::kJsonPatch,
                              R"([{"op":"test","path":"/metadata/labels/k","value":"other"}])");
  EXPECT_FALSE(j.ok());  // a failed test op is an error, as upstream's json-patch
}

TEST(FakeApiServer, DeleteHonoursPreconditionsFinalizersAndPropagation) {
  FakeClock clock;
  auto s = std::make_shared<FakeApiServer>(clock);
  auto c = s->client();
  Pod p = s->add(pod("ns", "p"));
  client::DeleteOptions wrong;
  wrong.preconditionUID = "other";
  Status st = client::remove<Pod>(*c, "ns", "p", wrong);
  EXPECT_EQ(st.code(), StatusCode::kConflict);
  client::DeleteOptions orphan;
  orphan.propagationPolicy = "Orphan";
  ASSERT_TRUE(client::remove<Pod>(*c, "ns", "p", orphan).ok());
  auto got = s->get<Pod>("ns", "p");
  ASSERT_TRUE(got);  // held by the orphan finalizer
  EXPECT_TRUE(got->metadata.deletionTimestamp.has_value());
  EXPECT_EQ(got->metadata.finalizers, std::vector<std::string>{"orphan"});
  // Removing the last finalizer completes the delete.
  auto r = client::patch<Pod>(*c, "ns", "p", client::PatchType::kMerge, R"({"metadata":{"finalizers":null}})");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_FALSE(s->get<Pod>("ns", "p"));
  EXPECT_EQ(client::remove<Pod>(*c, "ns", "p").code(), StatusCode::kNotFound);
}

TEST(FakeApiServer, NamespaceDeletionWaitsForItsSpecFinalizers) {
  auto s = std::make_shared<FakeApiServer>();
  api::core::v1::Namespace ns;
  ns.metadata.name = "doomed";
  ns.spec.finalizers = {"kubernetes"};
  s->add(ns);
  auto c = s->client();
  ASSERT_TRUE(client::remove<api::core::v1::Namespace>(*c, "", "doomed").ok());
  auto got = s->get<api::core::v1::Namespace>("", "doomed");
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->metadata.deletionTimestamp.has_value());
  EXPECT_EQ(got->status.phase, "Terminating");
  got->spec.finalizers.clear();
  auto fin = client::sendObject(*c, "PUT", client::pathFor<api::core::v1::Namespace>("", "doomed", "finalize"), *got,
                                {});
  ASSERT_TRUE(fin.ok()) << fin.status().toString();
  EXPECT_FALSE(s->get<api::core::v1::Namespace>("", "doomed"));
}

TEST(FakeApiServer, ReactorsAnswerFirstAndActionsAreRecorded) {
  auto s = std::make_shared<FakeApiServer>();
  int calls = 0;
  s->prependReactor("create", "pods", [&](const Action& a) -> std::optional<client::Transport::Reply> {
    ++calls;
    EXPECT_EQ(a.ns, "ns");
    return FakeApiServer::errorReply(403, "Forbidden", "pods is forbidden: exceeded quota");
  });
  auto c = s->client();
  auto r = client::create(*c, "ns", pod("ns", "p"));
  EXPECT_EQ(r.status().code(), StatusCode::kForbidden);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(s->list<Pod>().size(), 0u);
  ASSERT_EQ(s->actionsFor("create", "pods").size(), 1u);
  s->clearActions();
  EXPECT_TRUE(s->actions().empty());
}

TEST(FakeApiServer, InformerListsAndWatchesThroughIt) {
  auto s = std::make_shared<FakeApiServer>();
  s->add(pod("ns", "before"));
  informers::SharedInformerFactory f(s->client(), 0s);
  auto& inf = f.forType<Pod>();
  std::atomic<int> adds{0}, updates{0}, deletes{0};
  informers::EventHandler<Pod> h;
  h.onAdd = [&](const auto&) { ++adds; };
  h.onUpdate = [&](const auto&, const auto&) { ++updates; };
  h.onDelete = [&](const auto&, bool) { ++deletes; };
  auto registration = inf.addEventHandler(h);
  std::stop_source stop;
  f.start(stop.get_token());
  ASSERT_TRUE(eventually([&] { return inf.hasSynced() && adds == 1; }));
  auto c = s->client();
  ASSERT_TRUE(client::create(*c, "ns", pod("ns", "after")).ok());
  ASSERT_TRUE(client::patch<Pod>(*c, "ns", "after", client::PatchType::kMerge, R"({"metadata":{"labels":{"a":"b"}}})")
                  .ok());
  ASSERT_TRUE(client::remove<Pod>(*c, "ns", "before").ok());
  ASSERT_TRUE(eventually([&] { return adds == 2 && updates == 1 && deletes == 1; }))
      << adds << " " << updates << " " << deletes;
  EXPECT_EQ(inf.store().size(), 1u);
  // A closed watch is re-established from the last resourceVersion: nothing is missed or repeated.
  s->closeWatches();
  ASSERT_TRUE(client::create(*c, "ns", pod("ns", "third")).ok());
  ASSERT_TRUE(eventually([&] { return adds == 3 && inf.store().size() == 2; }));
  stop.request_stop();
  f.shutdown();
}

// A handler's Registration: once reset, a call running now has finished and no later event reaches it.
TEST(FakeApiServer, InformerRegistrationRemovesItsHandlerAndWaitsForARunningCall) {
  auto s = std::make_shared<FakeApiServer>();
  informers::SharedInformerFactory f(s->client(), 0s);
  auto& inf = f.forType<Pod>();
  std::atomic<int> calls{0};
  std::atomic<bool> inHandler{false};
  informers::EventHandler<Pod> h;
  h.onAdd = [&](const auto&) {
    if (++calls == 2) {
      inHandler = true;
      std::this_thread::sleep_for(200ms);
      inHandler = false;
    }
  };
  auto registration = inf.addEventHandler(h);
  std::stop_source stop;
  f.start(stop.get_token());
  auto c = s->client();
  ASSERT_TRUE(client::create(*c, "ns", pod("ns", "one")).ok());
  ASSERT_TRUE(eventually([&] { return calls == 1; }));
  ASSERT_TRUE(client::create(*c, "ns", pod("ns", "two")).ok());
  ASSERT_TRUE(eventually([&] { return inHandler.load(); }));
  registration.reset();
  EXPECT_FALSE(inHandler.load());  // reset waited for the running call
  ASSERT_TRUE(client::create(*c, "ns", pod("ns", "three")).ok());
  ASSERT_TRUE(eventually([&] { return inf.store().size() == 3; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 2);
  stop.request_stop();
  f.shutdown();
}

TEST(FakeApiServer, ServesAggregatedDiscoveryForRegisteredResources) {
  auto s = std::make_shared<FakeApiServer>();
  s->addStandardResources();
  client::DiscoveryClient d(s->client());
  auto all = d.serverPreferredResources();
  ASSERT_TRUE(all.ok()) << all.status().toString();
  bool pods = false, deployments = false, nodes = false;
  for (const auto& r : *all) {
    if (r.resource == "pods" && r.group.empty()) pods = r.namespaced && r.kind == "Pod";
    if (r.resource == "deployments" && r.group == "apps") deployments = r.hasVerb("watch");
    if (r.resource == "nodes") nodes = !r.namespaced;
  }
  EXPECT_TRUE(pods && deployments && nodes);
}

}  // namespace
}  // namespace kcm::testing
