// The namespace deleter against the in-memory apiserver: what it sends for a terminating namespace (content by
// deletecollection or item by item, pods first), the status conditions it reports, the graceful-termination
// estimate, conflict retries and the final /finalize call. Cases follow upstream's deletion package tests.
#include "controllers/namespace/namespaced_resources_deleter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "fake/fake_apiserver.h"

namespace kcm::controllers {
namespace {

using api::core::v1::ConfigMap;
using api::core::v1::Namespace;
using api::core::v1::NamespaceCondition;
using api::core::v1::Pod;
using client::APIResourceInfo;
using kcm::testing::Action;
using kcm::testing::FakeApiServer;
using namespace std::chrono_literals;

const std::vector<std::string> kAllVerbs = {"get", "list", "delete", "deletecollection", "create", "update"};

APIResourceInfo resourceInfo(const std::string& group, const std::string& version, const std::string& resource,
                             std::vector<std::string> verbs = kAllVerbs) {
  APIResourceInfo r;
  r.group = group;
  r.version = version;
  r.resource = resource;
  r.namespaced = true;
  r.verbs = std::move(verbs);
  return r;
}

// The resources upstream's tests discover: pods and services in the core group, deployments in apps.
std::vector<APIResourceInfo> standardResources() {
  return {resourceInfo("", "v1", "pods"), resourceInfo("", "v1", "services"),
          resourceInfo("apps", "v1", "deployments")};
}

// "verb resource[/sub]": how these tests compare request sets (namespace and name are the test's own).
std::string verbResource(const Action& a) {
  return a.verb + " " + a.resource + (a.subresource.empty() ? "" : "/" + a.subresource);
}

std::set<std::string> actionSet(const std::vector<Action>& actions) {
  std::set<std::string> out;
  for (const auto& a : actions) out.insert(verbResource(a));
  return out;
}

std::vector<std::string> actionList(const std::vector<Action>& actions, const std::string& resource = "*") {
  std::vector<std::string> out;
  for (const auto& a : actions)
    if (resource == "*" || a.resource == resource) out.push_back(verbResource(a));
  return out;
}

client::Transport::Reply successReply() {
  return client::Transport::Reply{200, R"({"kind":"Status","apiVersion":"v1","status":"Success"})"};
}

class NamespaceDeleterTest : public ::testing::Test {
 protected:
  // A namespace being deleted. The fake apiserver completes the delete of any object whose deletionTimestamp
  // is set once metadata.finalizers is empty (the real one waits for spec.finalizers on namespaces), so a
  // metadata finalizer keeps the namespace around for the test to inspect.
  Namespace addNamespace(const std::string& name, std::vector<std::string> specFinalizers = {"kubernetes"},
                         const std::string& phase = "Terminating", bool deleting = true,
                         std::vector<NamespaceCondition> conditions = {}) {
    Namespace ns;
    ns.metadata.name = name;
    if (deleting) ns.metadata.deletionTimestamp = api::timeNow(clock);
    ns.metadata.finalizers = {"test.kcm.io/keep"};
    ns.spec.finalizers.assign(specFinalizers.begin(), specFinalizers.end());
    ns.status.phase = phase;
    ns.status.conditions = std::move(conditions);
    return s->add(ns);
  }
  Pod addPod(const std::string& ns, const std::string& name, std::optional<int64_t> grace = std::nullopt,
             const std::string& phase = "Running") {
    Pod p;
    p.metadata.namespace_ = ns;
    p.metadata.name = name;
    p.spec.terminationGracePeriodSeconds = grace;
    p.status.phase = phase;
    return s->add(p);
  }
  void addObject(const std::string& collectionPath, const std::string& name,
                 std::vector<std::string> finalizers = {}) {
    nlohmann::json md = {{"name", name}};
    if (!finalizers.empty()) md["finalizers"] = finalizers;
    s->add(collectionPath, {{"metadata", md}});
  }
  std::unique_ptr<NamespacedResourcesDeleter> deleter(std::vector<APIResourceInfo> resources = standardResources(),
                                                       std::optional<Status> discoveryError = std::nullopt) {
    auto d = std::make_unique<NamespacedResourcesDeleter>(
        s->client(),
        [this, resources, discoveryError]() -> Result<client::DiscoveryResult> {
          ++discoveries;
          if (discoveryError && discoveries > 1) return *discoveryError;  // initOpCache saw the resources
          return client::DiscoveryResult{resources, {}};
        },
        "kubernetes", clock);
    Status st = d->initOpCache();
    if (!resources.empty()) {  // upstream exits when nothing is discovered
      EXPECT_TRUE(st.ok()) << st.toString();
    }
    s->clearActions();
    return d;
  }
  std::optional<NamespaceCondition> condition(const std::string& ns, const std::string& type) {
    auto got = s->get<Namespace>("", ns);
    if (!got) return std::nullopt;
    for (const auto& c : got->status.conditions)
      if (c.type == type) return c;
    return std::nullopt;
  }
  size_t count(const std::string& verb, const std::string& resource) { return s->actionsFor(verb, resource).size(); }
  // Our token left spec.finalizers through /finalize.
  bool finalized(const std::string& ns) {
    auto got = s->get<Namespace>("", ns);
    if (!got || count("update", "namespaces/finalize") == 0) return false;
    return std::find(got->spec.finalizers.begin(), got->spec.finalizers.end(), "kubernetes") ==
           got->spec.finalizers.end();
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> s = std::make_shared<FakeApiServer>(clock);
  int discoveries = 0;
};

// ---- upstream testSyncNamespaceThatIsTerminating: the requests made for a terminating namespace.

struct SyncCase {
  std::string name;
  bool pendingFinalize;  // spec.finalizers still holds "kubernetes"
  bool discoveryFails;
  std::set<std::string> expectedActions;  // empty: not compared (see the discovery-error case)
  std::string expectedError;
  std::optional<std::string> expectedCondition;
};
void PrintTo(const SyncCase& c, std::ostream* os) { *os << c.name; }

class NamespaceDeleterSync : public NamespaceDeleterTest, public ::testing::WithParamInterface<SyncCase> {};

TEST_P(NamespaceDeleterSync, RequestsAndOutcome) {
  const SyncCase& tc = GetParam();
  addNamespace("test", tc.pendingFinalize ? std::vector<std::string>{"kubernetes"} : std::vector<std::string>{});
  std::optional<Status> err;
  if (tc.discoveryFails) err = Status(StatusCode::kUnavailable, "test error");
  auto d = deleter(standardResources(), err);
  auto o = d->deleteNamespace("test");
  if (tc.expectedError.empty()) {
    EXPECT_TRUE(o.status.ok()) << o.status.toString();
  } else {
    EXPECT_EQ(o.status.message(), tc.expectedError);
  }
  EXPECT_EQ(o.remainingEstimateSeconds, 0);
  if (!tc.expectedActions.empty()) {
    EXPECT_EQ(actionSet(s->actions()), tc.expectedActions);
  }
  if (tc.expectedCondition) {
    auto ns = s->get<Namespace>("", "test");
    ASSERT_TRUE(ns);
    EXPECT_EQ(ns->status.phase, "Terminating");
    auto c = condition("test", *tc.expectedCondition);
    ASSERT_TRUE(c) << *tc.expectedCondition;
    EXPECT_EQ(c->status, "True");
    EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(, NamespaceDeleterSync,
    ::testing::Values(
        SyncCase{"PendingFinalize", true, false,
                 {"get namespaces", "list pods", "update namespaces/status", "update namespaces/finalize",
                  "deletecollection pods", "deletecollection services", "list services",
                  "deletecollection deployments", "list deployments"},
                 "", std::nullopt},
        SyncCase{"CompleteFinalize", false, false, {"get namespaces"}, "", std::nullopt},
        SyncCase{"DiscoveryErrorAlreadyFinalized", false, true, {"get namespaces"}, "", std::nullopt},
        // Upstream deletes what partial discovery still returned; our DiscoverFunc yields resources or an
        // error, so only the error, the condition and the missing finalize are compared here.
        SyncCase{"DiscoveryErrorPendingFinalize", true, true, {}, "test error",
                 "NamespaceDeletionDiscoveryFailure"}),
    [](const auto& info) { return info.param.name; });

// ---- single scenarios

TEST_F(NamespaceDeleterTest, ActiveNamespaceIsOnlyRead) {
  addNamespace("test", {"kubernetes"}, "Active", /*deleting=*/false);
  auto d = deleter();
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok());
  EXPECT_EQ(actionList(s->actions()), std::vector<std::string>{"get namespaces"});
}

TEST_F(NamespaceDeleterTest, MissingNamespaceIsNotAnError) {
  auto d = deleter();
  auto o = d->deleteNamespace("gone");
  EXPECT_TRUE(o.status.ok());
  EXPECT_EQ(actionList(s->actions()), std::vector<std::string>{"get namespaces"});
}

TEST_F(NamespaceDeleterTest, GetErrorIsReturned) {
  addNamespace("test");
  s->prependReactor("get", "namespaces", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(500, "InternalError", "etcd is down");
  });
  auto d = deleter();
  auto o = d->deleteNamespace("test");
  EXPECT_FALSE(o.status.ok());
  EXPECT_NE(o.status.message().find("etcd is down"), std::string::npos) << o.status.message();
  EXPECT_EQ(s->actions().size(), 1u);
}

TEST_F(NamespaceDeleterTest, ActivePhaseIsMovedToTerminating) {
  addNamespace("test", {"kubernetes"}, "Active");
  auto d = deleter({});
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  auto statusWrites = s->actionsFor("update", "namespaces/status");
  ASSERT_FALSE(statusWrites.empty());
  EXPECT_EQ(nlohmann::json::parse(statusWrites[0].body)["status"]["phase"], "Terminating");
  auto ns = s->get<Namespace>("", "test");
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->status.phase, "Terminating");
  EXPECT_TRUE(ns->spec.finalizers.empty());
}

TEST_F(NamespaceDeleterTest, StatusUpdateNotFoundMeansTheNamespaceIsGone) {
  addNamespace("test", {"kubernetes"}, "Active");
  s->prependReactor("update", "namespaces/status", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(404, "NotFound", "namespaces \"test\" not found");
  });
  auto d = deleter();
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions()), (std::vector<std::string>{"get namespaces", "update namespaces/status"}));
}

// upstream TestFinalizeNamespaceFunc: only our token leaves spec.finalizers. As upstream, /finalize is sent with
// the namespace read before the conditions were written: its stale resourceVersion draws a conflict, and the
// retry on conflict re-reads the namespace and finalizes again.
TEST_F(NamespaceDeleterTest, FinalizeRemovesOnlyOurToken) {
  addNamespace("test", {"kubernetes", "other"});
  auto d = deleter({});
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions()),
            (std::vector<std::string>{"get namespaces", "update namespaces/status", "update namespaces/finalize",
                                      "get namespaces", "update namespaces/finalize"}));
  auto fin = s->actionsFor("update", "namespaces/finalize");
  ASSERT_EQ(fin.size(), 2u);
  for (const auto& f : fin)
    EXPECT_EQ(nlohmann::json::parse(f.body)["spec"]["finalizers"], nlohmann::json::array({"other"}));
  auto ns = s->get<Namespace>("", "test");
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->spec.finalizers, std::vector<std::string>{"other"});
}

TEST_F(NamespaceDeleterTest, FinalizeNotFoundIsSuccess) {
  addNamespace("test");
  s->prependReactor("update", "namespaces/finalize", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(404, "NotFound", "namespaces \"test\" not found");
  });
  auto d = deleter({});
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(count("update", "namespaces/finalize"), 1u);
}

// upstream TestRetryOnConflictError: a conflict re-reads the namespace and tries again.
TEST_F(NamespaceDeleterTest, RetriesStatusUpdateOnConflict) {
  addNamespace("test", {"kubernetes"}, "Active");
  int calls = 0;
  s->prependReactor("update", "namespaces/status", [&](const Action&) -> std::optional<client::Transport::Reply> {
    if (++calls > 1) return std::nullopt;
    return FakeApiServer::errorReply(409, "Conflict", "the object has been modified");
  });
  auto d = deleter({});
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  auto got = actionList(s->actions());
  ASSERT_GE(got.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + 4),
            (std::vector<std::string>{"get namespaces", "update namespaces/status", "get namespaces",
                                      "update namespaces/status"}));
  EXPECT_EQ(s->get<Namespace>("", "test")->status.phase, "Terminating");
}

TEST_F(NamespaceDeleterTest, ConflictRetryStopsWhenTheUidChanges) {
  Namespace original = addNamespace("test", {"kubernetes"}, "Active");
  s->prependReactor("update", "namespaces/status", [&](const Action&) -> std::optional<client::Transport::Reply> {
    Namespace replacement = original;
    replacement.metadata.uid.clear();  // recreated under the same name
    s->add(replacement);
    return FakeApiServer::errorReply(409, "Conflict", "the object has been modified");
  });
  auto d = deleter({});
  auto o = d->deleteNamespace("test");
  EXPECT_FALSE(o.status.ok());
  EXPECT_EQ(o.status.message(), "namespace uid has changed across retries");
  EXPECT_EQ(count("update", "namespaces/status"), 1u);
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
}

// upstream TestDeleteEncounters404: NotFound from deletecollection and list means "not supported" for this
// namespace only; the next namespace tries deletecollection again.
TEST_F(NamespaceDeleterTest, NotFoundFromDeleteCollectionFallsBackPerNamespace) {
  addNamespace("ns1", {"kubernetes"}, "Active");
  addNamespace("ns2", {"kubernetes"}, "Active");
  auto ns1NotFound = [](const Action& a) -> std::optional<client::Transport::Reply> {
    if (a.ns != "ns1") return std::nullopt;
    return FakeApiServer::errorReply(404, "NotFound", "the server could not find the requested resource");
  };
  s->prependReactor("deletecollection", "flakes", ns1NotFound);
  s->prependReactor("list", "flakes", ns1NotFound);
  auto d = deleter({resourceInfo("example.com", "v1", "flakes")});
  auto o = d->deleteNamespace("ns1");
  ASSERT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions(), "flakes"),
            (std::vector<std::string>{"deletecollection flakes", "list flakes", "list flakes"}));
  s->clearActions();
  o = d->deleteNamespace("ns2");
  ASSERT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions(), "flakes"), (std::vector<std::string>{"deletecollection flakes", "list flakes"}));
}

TEST_F(NamespaceDeleterTest, MethodNotAllowedDeletesItemByItemInTheBackground) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1");
  addObject("/api/v1/namespaces/test/configmaps", "cm2");
  s->prependReactor("deletecollection", "configmaps", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(405, "MethodNotAllowed", "the server does not allow this method");
  });
  auto d = deleter({resourceInfo("", "v1", "configmaps")});
  auto o = d->deleteNamespace("test");
  ASSERT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions(), "configmaps"),
            (std::vector<std::string>{"deletecollection configmaps", "list configmaps", "delete configmaps",
                                      "delete configmaps", "list configmaps"}));
  for (const auto& a : s->actionsFor("delete", "configmaps"))
    EXPECT_EQ(nlohmann::json::parse(a.body).value("propagationPolicy", ""), "Background");
  EXPECT_TRUE(s->list<ConfigMap>("test").empty());
  EXPECT_TRUE(finalized("test"));
}

TEST_F(NamespaceDeleterTest, DeleteCollectionUsesBackgroundPropagation) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1");
  auto d = deleter({resourceInfo("", "v1", "configmaps")});
  ASSERT_TRUE(d->deleteNamespace("test").status.ok());
  auto dc = s->actionsFor("deletecollection", "configmaps");
  ASSERT_EQ(dc.size(), 1u);
  EXPECT_EQ(dc[0].ns, "test");
  EXPECT_EQ(nlohmann::json::parse(dc[0].body).value("propagationPolicy", ""), "Background");
  EXPECT_TRUE(s->list<ConfigMap>("test").empty());
}

// initOpCache: verbs missing from discovery are never tried.
TEST_F(NamespaceDeleterTest, DiscoveryWithoutDeleteCollectionListsAndDeletesEachItem) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1");
  auto d = deleter({resourceInfo("", "v1", "configmaps", {"get", "list", "delete"})});
  ASSERT_TRUE(d->deleteNamespace("test").status.ok());
  EXPECT_EQ(actionList(s->actions(), "configmaps"),
            (std::vector<std::string>{"list configmaps", "delete configmaps", "list configmaps"}));
}

TEST_F(NamespaceDeleterTest, DiscoveryWithoutListOnlyDeletesTheCollection) {
  addNamespace("test");
  auto d = deleter({resourceInfo("", "v1", "configmaps", {"delete", "deletecollection"})});
  auto o = d->deleteNamespace("test");
  ASSERT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions(), "configmaps"), std::vector<std::string>{"deletecollection configmaps"});
  EXPECT_TRUE(finalized("test"));
}

TEST_F(NamespaceDeleterTest, ResourcesThatCannotBeDeletedAreSkipped) {
  addNamespace("test");
  auto d = deleter({resourceInfo("", "v1", "configmaps", {"get", "list", "deletecollection"})});
  ASSERT_TRUE(d->deleteNamespace("test").status.ok());
  EXPECT_TRUE(actionList(s->actions(), "configmaps").empty());
  EXPECT_TRUE(finalized("test"));
}

TEST_F(NamespaceDeleterTest, InitOpCacheNeedsSomeResources) {
  NamespacedResourcesDeleter empty(
      s->client(), [] { return Result<client::DiscoveryResult>(client::DiscoveryResult{}); }, "kubernetes", clock);
  EXPECT_FALSE(empty.initOpCache().ok());
  NamespacedResourcesDeleter failing(
      s->client(), [] { return Result<client::DiscoveryResult>(Status(StatusCode::kUnavailable, "down")); },
      "kubernetes", clock);
  EXPECT_FALSE(failing.initOpCache().ok());
  NamespacedResourcesDeleter fine(
      s->client(), [] { return Result<client::DiscoveryResult>(client::DiscoveryResult{standardResources(), {}}); },
      "kubernetes", clock);
  EXPECT_TRUE(fine.initOpCache().ok());
  // Some groups failing is no reason to stop: the others are known.
  NamespacedResourcesDeleter partial(
      s->client(),
      [] {
        return Result<client::DiscoveryResult>(
            client::DiscoveryResult{standardResources(), {{"metrics.k8s.io/v1beta1", "stale GroupVersion discovery"}}});
      },
      "kubernetes", clock);
  EXPECT_TRUE(partial.initOpCache().ok());
}

// Pods go first: while any remain, nothing else is deleted and the namespace is not finalized.
TEST_F(NamespaceDeleterTest, RemainingPodsHoldBackOtherResources) {
  addNamespace("test");
  addPod("test", "web", 30);
  addObject("/api/v1/namespaces/test/services", "svc");
  s->prependReactor("deletecollection", "pods",
                    [](const Action&) -> std::optional<client::Transport::Reply> { return successReply(); });
  auto d = deleter();
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(o.remainingEstimateSeconds, 30);
  EXPECT_TRUE(actionList(s->actions(), "services").empty());
  EXPECT_TRUE(actionList(s->actions(), "deployments").empty());
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
  EXPECT_TRUE(s->getJson("/api/v1/namespaces/test/services/svc").has_value());
  auto got = actionList(s->actions());
  auto firstDc = std::find(got.begin(), got.end(), "deletecollection pods");
  EXPECT_NE(firstDc, got.end());
}

// Items held by finalizers: 15 s estimate and both "remaining" conditions.
TEST_F(NamespaceDeleterTest, ContentHeldByFinalizersIsReported) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1", {"example.com/hold"});
  addObject("/api/v1/namespaces/test/configmaps", "cm2", {"example.com/hold", "other.io/wait"});
  addObject("/api/v1/namespaces/test/secrets", "s1", {"other.io/wait"});
  auto d = deleter({resourceInfo("", "v1", "configmaps"), resourceInfo("", "v1", "secrets")});
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(o.remainingEstimateSeconds, 15);
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
  auto remaining = condition("test", "NamespaceContentRemaining");
  ASSERT_TRUE(remaining);
  EXPECT_EQ(remaining->status, "True");
  EXPECT_EQ(remaining->reason, "SomeResourcesRemain");
  EXPECT_EQ(remaining->message,
            "Some resources are remaining: configmaps. has 2 resource instances, secrets. has 1 resource instances");
  auto finalizers = condition("test", "NamespaceFinalizersRemaining");
  ASSERT_TRUE(finalizers);
  EXPECT_EQ(finalizers->status, "True");
  EXPECT_EQ(finalizers->reason, "SomeFinalizersRemain");
  EXPECT_EQ(finalizers->message,
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances, "
            "other.io/wait in 2 resource instances");
  auto failure = condition("test", "NamespaceDeletionContentFailure");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->status, "False");
  EXPECT_EQ(failure->reason, "ContentDeleted");
}

TEST_F(NamespaceDeleterTest, DeleteCollectionFailureIsReportedAndOtherResourcesContinue) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/services", "svc");
  addObject("/apis/apps/v1/namespaces/test/deployments", "web");
  s->prependReactor("deletecollection", "services", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(500, "InternalError", "services storage unavailable");
  });
  auto d = deleter();
  auto o = d->deleteNamespace("test");
  EXPECT_FALSE(o.status.ok());
  EXPECT_NE(o.status.message().find("services storage unavailable"), std::string::npos) << o.status.message();
  EXPECT_FALSE(s->getJson("/apis/apps/v1/namespaces/test/deployments/web").has_value());
  EXPECT_TRUE(s->getJson("/api/v1/namespaces/test/services/svc").has_value());
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
  auto failure = condition("test", "NamespaceDeletionContentFailure");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->status, "True");
  EXPECT_EQ(failure->reason, "ContentDeletionFailed");
  EXPECT_EQ(failure->message.rfind("Failed to delete all resource types, 1 remaining: ", 0), 0u) << failure->message;
  EXPECT_NE(failure->message.find("services storage unavailable"), std::string::npos);
}

// Every failing resource is reported: one error reads as itself, several as "[a, b]" (utilerrors.NewAggregate).
TEST_F(NamespaceDeleterTest, DeleteErrorsAreAggregated) {
  addNamespace("test");
  auto fail = [](const std::string& msg) {
    return [msg](const Action&) -> std::optional<client::Transport::Reply> {
      return FakeApiServer::errorReply(500, "InternalError", msg);
    };
  };
  s->prependReactor("deletecollection", "services", fail("services failed"));
  s->prependReactor("deletecollection", "deployments", fail("deployments failed"));
  auto d = deleter();
  auto o = d->deleteNamespace("test");
  EXPECT_EQ(o.status.message(), "[deployments failed, services failed]");
  auto failure = condition("test", "NamespaceDeletionContentFailure");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->message, "Failed to delete all resource types, 2 remaining: deployments failed, services failed");
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
}

// upstream deleteCollection / listCollection skip only MethodNotAllowed (405) and NotFound (404) as "not
// supported"; any other error, such as 400 BadRequest, is a content-deletion failure.
TEST_F(NamespaceDeleterTest, BadRequestFromDeleteCollectionIsAnError) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1");
  s->prependReactor("deletecollection", "configmaps", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(400, "BadRequest", "bad request");
  });
  auto d = deleter({resourceInfo("", "v1", "configmaps")});
  auto o = d->deleteNamespace("test");
  EXPECT_EQ(o.status.message(), "bad request");
  EXPECT_EQ(actionList(s->actions(), "configmaps"), std::vector<std::string>{"deletecollection configmaps"});
  auto failure = condition("test", "NamespaceDeletionContentFailure");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->status, "True");
}

TEST_F(NamespaceDeleterTest, BadRequestFromListIsAnError) {
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1");
  s->prependReactor("list", "configmaps", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(400, "BadRequest", "bad list");
  });
  auto d = deleter({resourceInfo("", "v1", "configmaps", {"get", "list", "delete"})});
  auto o = d->deleteNamespace("test");
  EXPECT_EQ(o.status.message(), "bad list");
  EXPECT_EQ(actionList(s->actions(), "configmaps"), std::vector<std::string>{"list configmaps"});
  EXPECT_FALSE(finalized("test"));
}

TEST_F(NamespaceDeleterTest, MethodNotAllowedFromListIsNotSupported) {
  addNamespace("test");
  s->prependReactor("list", "configmaps", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(405, "MethodNotAllowed", "the server does not allow this method");
  });
  auto d = deleter({resourceInfo("", "v1", "configmaps", {"get", "list", "delete"})});
  auto o = d->deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_EQ(actionList(s->actions(), "configmaps"), (std::vector<std::string>{"list configmaps", "list configmaps"}));
  EXPECT_TRUE(finalized("test"));
}

// Items left without finalizers once no grace period applies are an error naming the resource.
TEST_F(NamespaceDeleterTest, UnexpectedRemainingItemsAreAnError) {
  addNamespace("test");
  addObject("/apis/apps/v1/namespaces/test/deployments", "web");
  s->prependReactor("deletecollection", "deployments",
                    [](const Action&) -> std::optional<client::Transport::Reply> { return successReply(); });
  auto d = deleter({resourceInfo("apps", "v1", "deployments")});
  auto o = d->deleteNamespace("test");
  EXPECT_EQ(o.status.message(),
            "unexpected items still remain in namespace: test for gvr: apps/v1, Resource=deployments");
  EXPECT_EQ(o.remainingEstimateSeconds, 0);
  auto failure = condition("test", "NamespaceDeletionContentFailure");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->message, "Failed to delete all resource types, 1 remaining: unexpected items still remain in "
                              "namespace: test for gvr: apps/v1, Resource=deployments");
  auto remaining = condition("test", "NamespaceContentRemaining");
  ASSERT_TRUE(remaining);
  EXPECT_EQ(remaining->message, "Some resources are remaining: deployments.apps has 1 resource instances");
}

// A condition that was failing reads "ok" again after a clean pass, with a new transition time.
TEST_F(NamespaceDeleterTest, FailedConditionReturnsToSuccessWithNewTransitionTime) {
  NamespaceCondition old;
  old.type = "NamespaceDeletionDiscoveryFailure";
  old.status = "True";
  old.reason = "DiscoveryFailed";
  old.message = "earlier failure";
  old.lastTransitionTime = api::timeNow(clock);
  addNamespace("test", {"kubernetes"}, "Terminating", true, {old});
  clock.advance(10min);
  auto d = deleter({});
  ASSERT_TRUE(d->deleteNamespace("test").status.ok());
  auto c = condition("test", "NamespaceDeletionDiscoveryFailure");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "ResourcesDiscovered");
  EXPECT_EQ(c->message, "All resources successfully discovered");
  EXPECT_EQ(c->lastTransitionTime, api::timeNow(clock));
}

// ---- discovery through the DiscoveryClient: failed (stale) groups

// upstream deleteAllContent: a failed group is a discovery error (NamespaceDeletionDiscoveryFailure, "Discovery
// failed for some groups"); the groups that were discovered are still emptied, and the namespace is not
// finalized while the error lasts (its content in the failing group may still exist).
TEST_F(NamespaceDeleterTest, StaleGroupIsADiscoveryFailureAndBlocksFinalization) {
  s->addStandardResources();
  FakeApiServer::Resource widgets;
  widgets.group = "example.com";
  widgets.version = "v1";
  widgets.resource = "widgets";
  widgets.kind = "Widget";
  s->addResource(widgets);
  s->setStale("example.com", "v1");
  addNamespace("test");
  addObject("/api/v1/namespaces/test/configmaps", "cm1");
  NamespacedResourcesDeleter d(s->client(),
                               discoverPreferredNamespacedResources(std::make_shared<client::DiscoveryClient>(s->client())),
                               "kubernetes", clock);
  ASSERT_TRUE(d.initOpCache().ok());
  auto o = d.deleteNamespace("test");
  const std::string err =
      "unable to retrieve the complete list of server APIs: example.com/v1: stale GroupVersion discovery: "
      "example.com/v1";
  EXPECT_EQ(o.status.message(), err);
  auto c = condition("test", "NamespaceDeletionDiscoveryFailure");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "DiscoveryFailed");
  EXPECT_EQ(c->message, "Discovery failed for some groups, 1 failing: " + err);
  EXPECT_TRUE(s->list<ConfigMap>("test").empty());
  EXPECT_TRUE(actionList(s->actions(), "widgets").empty());
  EXPECT_TRUE(actionList(s->actions(), "nodes").empty());  // cluster-scoped: not discovered for namespaces
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);

  // The group answers again: the next pass finalizes and the condition clears.
  s->setStale("example.com", "v1", false);
  o = d.deleteNamespace("test");
  EXPECT_TRUE(o.status.ok()) << o.status.toString();
  EXPECT_TRUE(finalized("test"));
  c = condition("test", "NamespaceDeletionDiscoveryFailure");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, "False");
}

// ---- upstream TestUpdateConditions, through a deletion pass (discovery failing stands for the new failure).

struct CondExpect {
  std::string type, status, reason;
};

struct ConditionsCase {
  std::string name;
  std::vector<CondExpect> starting;
  bool discoveryFails;
  std::vector<CondExpect> expected;
};
void PrintTo(const ConditionsCase& c, std::ostream* os) { *os << c.name; }

class NamespaceDeleterConditions : public NamespaceDeleterTest,
                                   public ::testing::WithParamInterface<ConditionsCase> {};

TEST_P(NamespaceDeleterConditions, UpdatesConditionsInPlace) {
  const ConditionsCase& tc = GetParam();
  std::vector<NamespaceCondition> starting;
  for (const auto& e : tc.starting) {
    NamespaceCondition c;
    c.type = e.type;
    c.status = e.status;
    c.reason = e.reason;
    starting.push_back(c);
  }
  addNamespace("test", {"kubernetes"}, "Terminating", true, starting);
  std::optional<Status> err;
  if (tc.discoveryFails) err = Status(StatusCode::kUnavailable, "discovery is down");
  auto d = deleter({}, err);
  (void)d->deleteNamespace("test");
  auto ns = s->get<Namespace>("", "test");
  ASSERT_TRUE(ns);
  ASSERT_EQ(ns->status.conditions.size(), tc.expected.size());
  for (size_t i = 0; i < tc.expected.size(); ++i) {
    EXPECT_EQ(ns->status.conditions[i].type, tc.expected[i].type) << i;
    EXPECT_EQ(ns->status.conditions[i].status, tc.expected[i].status) << i;
    EXPECT_EQ(ns->status.conditions[i].reason, tc.expected[i].reason) << i;
  }
}

const CondExpect kDiscoveryOk{"NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered"};
const CondExpect kParsingOk{"NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions"};
const CondExpect kContentOk{"NamespaceDeletionContentFailure", "False", "ContentDeleted"};
const CondExpect kRemainingOk{"NamespaceContentRemaining", "False", "ContentRemoved"};
const CondExpect kFinalizersOk{"NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers"};
const CondExpect kDiscoveryFailed{"NamespaceDeletionDiscoveryFailure", "True", "DiscoveryFailed"};

INSTANTIATE_TEST_SUITE_P(, NamespaceDeleterConditions,
    ::testing::Values(
        ConditionsCase{"LeaveUnknown",
                       {{"unknown", "True", ""}},
                       false,
                       {{"unknown", "True", ""}, kDiscoveryOk, kParsingOk, kContentOk, kRemainingOk, kFinalizersOk}},
        ConditionsCase{"ReplaceWithSuccess",
                       {{"NamespaceDeletionDiscoveryFailure", "True", ""}},
                       false,
                       {kDiscoveryOk, kParsingOk, kContentOk, kRemainingOk, kFinalizersOk}},
        ConditionsCase{"LeaveDifferentOrder",
                       {{"NamespaceDeletionGroupVersionParsingFailure", "True", ""},
                        {"NamespaceDeletionDiscoveryFailure", "True", ""}},
                       false,
                       {kParsingOk, kDiscoveryOk, kContentOk, kRemainingOk, kFinalizersOk}},
        ConditionsCase{"OverwriteWithFailure",
                       {{"NamespaceDeletionDiscoveryFailure", "False", ""},
                        {"NamespaceDeletionGroupVersionParsingFailure", "True", ""}},
                       true,
                       {kDiscoveryFailed, kParsingOk, kContentOk, kRemainingOk, kFinalizersOk}},
        ConditionsCase{"WriteNewFailure",
                       {{"NamespaceDeletionGroupVersionParsingFailure", "True", ""}},
                       true,
                       {kParsingOk, kDiscoveryFailed, kContentOk, kRemainingOk, kFinalizersOk}}),
    [](const auto& info) { return info.param.name; });

// ---- graceful termination estimate for pods (estimateGracefulTermination), driven by the fake clock.

struct PodSpec {
  std::optional<int64_t> grace;
  std::string phase;
};

struct EstimateCase {
  std::string name;
  std::vector<PodSpec> pods;
  Clock::Duration sinceDeletion;
  int64_t expectedEstimate;
  bool expectError;  // the pods are still there with nothing left to wait for
};
void PrintTo(const EstimateCase& c, std::ostream* os) { *os << c.name; }

class NamespaceDeleterEstimate : public NamespaceDeleterTest, public ::testing::WithParamInterface<EstimateCase> {};

TEST_P(NamespaceDeleterEstimate, WaitsForTheLongestGracePeriod) {
  const EstimateCase& tc = GetParam();
  addNamespace("test");
  for (size_t i = 0; i < tc.pods.size(); ++i)
    addPod("test", "pod" + std::to_string(i), tc.pods[i].grace, tc.pods[i].phase);
  // Graceful deletion: the apiserver accepts the delete and the pods linger while their containers stop.
  s->prependReactor("deletecollection", "pods",
                    [](const Action&) -> std::optional<client::Transport::Reply> { return successReply(); });
  auto d = deleter({resourceInfo("", "v1", "pods")});
  clock.advance(tc.sinceDeletion);
  auto o = d->deleteNamespace("test");
  EXPECT_EQ(o.remainingEstimateSeconds, tc.expectedEstimate);
  if (tc.expectError) {
    EXPECT_EQ(o.status.message(),
              "failed to delete pods for namespace: test, err: unexpected items still remain in namespace: test for "
              "gvr: /v1, Resource=pods");
    auto failure = condition("test", "NamespaceDeletionContentFailure");
    ASSERT_TRUE(failure);
    EXPECT_EQ(failure->status, "True");
  } else {
    EXPECT_TRUE(o.status.ok()) << o.status.toString();
  }
  EXPECT_EQ(count("update", "namespaces/finalize"), 0u);
  EXPECT_EQ(count("list", "pods"), 2u);  // the estimate's pod list, then the check for what is left
}

INSTANTIATE_TEST_SUITE_P(, NamespaceDeleterEstimate,
    ::testing::Values(EstimateCase{"RunningPodWithinGracePeriod", {{30, "Running"}}, 0s, 30, false},
                      EstimateCase{"GracePeriodElapsed", {{30, "Running"}}, 31s, 0, true},
                      EstimateCase{"GracePeriodJustElapsed", {{30, "Running"}}, 30s, 0, true},
                      EstimateCase{"SucceededPodsAreNotWaitedFor", {{30, "Succeeded"}}, 0s, 0, true},
                      EstimateCase{"FailedPodsAreNotWaitedFor", {{30, "Failed"}}, 0s, 0, true},
                      EstimateCase{"PodWithoutGracePeriod", {{std::nullopt, "Running"}}, 0s, 0, true},
                      EstimateCase{"LongestGracePeriodWins", {{10, "Running"}, {60, "Pending"}}, 20s, 60, false}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kcm::controllers
