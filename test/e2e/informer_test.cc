// Our shared informer over pods on the real apiserver: 1,000 creates, updates and deletes by parallel kubectl
// processes, then an apiserver restart in the middle of churn; the cache must equal a fresh list each time.
#include <cstdlib>
#include <future>
#include <map>

#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "api/support/dynamic_object.h"
#include "framework/framework.h"
#include "informers/factory.h"

namespace kcm::e2e {
namespace {

using api::core::v1::Pod;

class Informer : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");
    auto cfg = client::loadKubeconfig(Cluster::get().kubeconfig);
    ASSERT_TRUE(cfg.ok());
    cfg->qps = -1;  // the informer itself makes few requests; no limiter in the way of relists
    auto c = client::RestClient::create(*cfg);
    ASSERT_TRUE(c.ok());
    client_ = *c;
  }

  static std::string pods(int from, int to, int batch) {
    std::string y;
    for (int i = from; i < to; ++i)
      y += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-" + std::to_string(i) + "\n  labels: {batch: \"" +
           std::to_string(batch) + "\"}\nspec:\n  containers: [{name: c, image: registry.k8s.io/pause:3.10}]\n";
    return y;
  }

  // kubectl with retries: during an apiserver restart a call may fail and is simply repeated.
  void kubectlRetry(const std::vector<std::string>& args, const std::string& input = "") {
    for (int attempt = 0; attempt < 30; ++attempt) {
      ExecResult r = kubectl(args, input, 180s);
      if (r.ok()) return;
      std::this_thread::sleep_for(1s);
    }
    ADD_FAILURE() << "kubectl kept failing: " << args[0];
  }

  // The server's pods in the namespace: name -> resourceVersion.
  std::map<std::string, std::string> serverPods() {
    std::map<std::string, std::string> out;
    auto l = client::list<Pod>(*client_, ns());
    if (!l.ok()) return {{"<error>", l.status().toString()}};
    for (const auto& p : l->items) out[p.metadata.name] = p.metadata.resourceVersion;
    return out;
  }
  static std::map<std::string, std::string> cachePods(informers::SharedInformer<Pod>& inf, const std::string& ns) {
    std::map<std::string, std::string> out;
    for (const auto& p : inf.store().byIndex(informers::kNamespaceIndex, ns))
      out[p->metadata.name] = p->metadata.resourceVersion;
    return out;
  }
  bool converges(informers::SharedInformer<Pod>& inf) {
    return waitFor([&] { return cachePods(inf, ns()) == serverPods(); }, 60s, 200ms);
  }

  std::shared_ptr<client::RestClient> client_;
};

TEST_F(Informer, SeesThousandCreatesUpdatesAndDeletesInParallel) {
  // The counters outlive the factory: an early return (a failed ASSERT) destroys the factory, and with it the
  // handlers that use them, first.
  std::atomic<int> adds{0}, updates{0}, deletes{0};
  const std::string myNs = ns();
  informers::SharedInformerFactory factory(client_, std::chrono::hours(12));
  auto& inf = factory.forType<Pod>();
  informers::EventHandler<Pod> h;
  h.onAdd = [&](const auto& p) { adds += p->metadata.namespace_ == myNs; };
  h.onUpdate = [&](const auto&, const auto& p) { updates += p->metadata.namespace_ == myNs; };
  h.onDelete = [&](const auto& p, bool) { deletes += p->metadata.namespace_ == myNs; };
  auto registration = inf.addEventHandler(h);
  std::stop_source stop;
  factory.start(stop.get_token());
  ASSERT_TRUE(factory.waitForCacheSync(stop.get_token()));

  auto parallel = [&](const std::function<void(int)>& f) {
    std::vector<std::future<void>> fs;
    for (int b = 0; b < 4; ++b) fs.push_back(std::async(std::launch::async, f, b));
    for (auto& f2 : fs) f2.get();
  };
  parallel([&](int b) { kubectlRetry({"create", "-n", ns(), "-f", "-"}, pods(b * 250, (b + 1) * 250, b)); });
  ASSERT_TRUE(waitFor([&] { return adds.load() == 1000; }, 60s)) << adds.load();
  EXPECT_TRUE(converges(inf));

  parallel([&](int b) {
    kubectlRetry({"label", "pods", "-n", ns(), "-l", "batch=" + std::to_string(b), "updated=yes"});
  });
  ASSERT_TRUE(waitFor([&] { return updates.load() >= 1000; }, 60s)) << updates.load();
  EXPECT_TRUE(converges(inf));
  for (const auto& p : inf.store().byIndex(informers::kNamespaceIndex, ns()))
    EXPECT_EQ(p->metadata.labels.count("updated"), 1u) << p->metadata.name;

  parallel([&](int b) {
    kubectlRetry({"delete", "pods", "-n", ns(), "-l", "batch=" + std::to_string(b), "--wait=false"});
  });
  ASSERT_TRUE(waitFor([&] { return deletes.load() == 1000; }, 60s)) << deletes.load();
  EXPECT_TRUE(converges(inf));
  EXPECT_TRUE(cachePods(inf, ns()).empty());
  // One streaming list (WatchListClient, on at the pin as in client-go), no LIST; everything else came from the
  // same watch.
  EXPECT_EQ(inf.watchListCount(), 1u);
  EXPECT_EQ(inf.listCount(), 0u);
  stop.request_stop();
}

// The initial state of existing objects comes from a watch with sendInitialEvents (the apiserver's watch cache
// streams them, then the k8s.io/initial-events-end bookmark); with WatchListClient off, from a LIST. Both caches
// must equal the server, and changes after the sync arrive on the same watch.
TEST_F(Informer, StreamingListAndPlainListSeeTheSameObjects) {
  kubectlRetry({"create", "-n", ns(), "-f", "-"}, pods(0, 120, 0));
  auto run = [&](bool watchList) {
    informers::InformerOptions o;
    o.watchList = watchList;
    informers::SharedInformer<Pod> inf(informers::typedListerWatcher<Pod>(client_), o);
    std::stop_source stop;
    inf.start(stop.get_token());
    EXPECT_TRUE(inf.waitForCacheSync(stop.get_token()));
    // The scheduler and KWOK are still binding and starting the pods: the cache catches up with the server.
    EXPECT_TRUE(converges(inf)) << "watchList=" << watchList;
    EXPECT_EQ(cachePods(inf, ns()).size(), 120u);
    EXPECT_EQ(inf.listCount(), watchList ? 0u : 1u);
    EXPECT_EQ(inf.watchListCount(), watchList ? 1u : 0u);
    kubectlRetry({"label", "pods", "-n", ns(), "p-7", "round=" + std::string(watchList ? "one" : "two"), "--overwrite"});
    EXPECT_TRUE(waitFor([&] {
      auto p = inf.store().get(ns(), "p-7");
      return p && p->metadata.labels.count("round") &&
             p->metadata.labels.at("round") == (watchList ? "one" : "two");
    }, 20s)) << "watchList=" << watchList;
    EXPECT_TRUE(inf.store().get(ns(), "p-7")->metadata.managedFields.empty());
    stop.request_stop();
  };
  run(true);
  run(false);
}

TEST_F(Informer, ConvergesAfterApiserverRestartMidChurn) {
  const char* repo = std::getenv("KCM_REPO_ROOT");
  ASSERT_NE(repo, nullptr) << "KCM_REPO_ROOT not set (run through test/e2e/run.sh)";
  informers::SharedInformerFactory factory(client_, std::chrono::hours(12));
  auto& inf = factory.forType<Pod>();
  std::stop_source stop;
  factory.start(stop.get_token());
  ASSERT_TRUE(factory.waitForCacheSync(stop.get_token()));
  kubectlRetry({"create", "-n", ns(), "-f", "-"}, pods(0, 300, 0));

  // Churn (creates, label updates, deletes) while the apiserver restarts; the commands are idempotent, so a
  // retry after a partial success during the restart is harmless.
  auto churn = std::async(std::launch::async, [&] {
    kubectlRetry({"apply", "-n", ns(), "-f", "-"}, pods(300, 600, 1));
    kubectlRetry({"label", "pods", "-n", ns(), "-l", "batch=0", "phase=two", "--overwrite"});
    kubectlRetry({"delete", "pods", "-n", ns(), "-l", "batch=1", "--wait=false", "--ignore-not-found"});
  });
  std::this_thread::sleep_for(1s);
  std::string clusterName = Cluster::get().dir.substr(Cluster::get().dir.rfind('/') + 1);
  ExecResult r = exec({"bash", std::string(repo) + "/hack/cluster.sh", "restart", clusterName, "kube-apiserver"}, "",
                      240s);
  ASSERT_TRUE(r.ok()) << r.err;
  churn.get();
  // kubectl's side of the churn is not ours to test: a delete that ran during the restart once left 5 of its pods on
  // the server (CI of fd78ced; the cache matched the server). The idempotent steps once more put the server in the
  // churn's end state; the informer must then show exactly that.
  kubectlRetry({"label", "pods", "-n", ns(), "-l", "batch=0", "phase=two", "--overwrite"});
  kubectlRetry({"delete", "pods", "-n", ns(), "-l", "batch=1", "--wait=false", "--ignore-not-found"});
  EXPECT_TRUE(converges(inf)) << "cache " << cachePods(inf, ns()).size() << " server " << serverPods().size();
  auto cache = cachePods(inf, ns());
  EXPECT_EQ(cache.size(), 300u);
  for (const auto& p : inf.store().byIndex(informers::kNamespaceIndex, ns()))
    EXPECT_EQ(p->metadata.labels.count("phase"), 1u) << p->metadata.name;
  stop.request_stop();
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(Informer, MetadataAndDynamicInformersOverAnyResource) {
  informers::SharedInformerFactory factory(client_, informers::resyncPeriod(std::chrono::hours(12)));
  auto& meta = factory.forMetadata({"apps", "v1", "deployments"});
  auto& dyn = factory.forDynamic({"", "v1", "configmaps"});
  std::stop_source stop;
  factory.start(stop.get_token());
  ASSERT_TRUE(factory.waitForCacheSync(stop.get_token()));
  apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"x":"y"}},
    "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
    "spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  apply(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}})");
  ASSERT_TRUE(waitFor([&] { return meta.store().get(ns(), "d") && dyn.store().get(ns(), "cm"); }, 20s));
  auto d = meta.store().get(ns(), "d");
  EXPECT_EQ(d->kind, "PartialObjectMetadata");
  EXPECT_EQ(d->metadata.labels.at("x"), "y");
  EXPECT_FALSE(api::dynamicField(*d, "spec").has_value());  // metadata only
  auto cm = dyn.store().get(ns(), "cm");
  EXPECT_EQ(cm->kind, "ConfigMap");
  ASSERT_TRUE(api::dynamicField(*cm, "data").has_value());
  EXPECT_EQ(Json::parse(*api::dynamicField(*cm, "data")), Json::parse(R"({"k":"v"})"));
  kubectl({"delete", "configmap", "cm", "-n", ns()});
  EXPECT_TRUE(waitFor([&] { return !dyn.store().get(ns(), "cm"); }, 20s));
  EXPECT_EQ(meta.watchListCount(), 1u);  // metadata-only and dynamic informers stream their lists too
  EXPECT_EQ(dyn.watchListCount(), 1u);
  EXPECT_EQ(meta.listCount() + dyn.listCount(), 0u);
  stop.request_stop();
}

}  // namespace
}  // namespace kcm::e2e
