// Faults between our kcm and the real apiserver (framework/fault_proxy.h), and under the apiserver (etcd restart):
// a Deployment, a ReplicaSet and a Job are scaled while the faults last; afterwards each must have exactly its pod
// count, and the proxy's log of what the apiserver accepted must show no pod created twice and none deleted that
// should not have been.
#include <cstdlib>
#include <fstream>
#include <memory>

#include "framework/fault_proxy.h"
#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {
namespace {

class FaultInjection : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");
    proxy_ = FaultProxy::startForCluster();
    ASSERT_NE(proxy_, nullptr);
  }
  void TearDown() override {
    if (proxy_) proxy_->clearFaults();
    if (kcm_) {  // pods gone before the namespace is (no garbage collector here): workloads to zero
      kubectl({"scale", "deployment,rs", "--all", "-n", ns(), "--replicas=0"});
      kubectl({"patch", "job", "batch", "-n", ns(), "--type=merge", "-p", R"({"spec":{"parallelism":0}})"});
      waitFor([&] { return livePods("").empty(); }, 90s, 1s);
    }
    kcm_.reset();
    proxy_.reset();
    E2ETest::TearDown();
  }

  // Our kcm, through the proxy, running the workload controllers only.
  void startKcm() {
    const std::string conf = proxy_->writeKubeconfig(Cluster::get().dir + "/fault-proxy-" + ns() + ".conf");
    kcm_ = std::make_unique<KcmProcess>(
        std::vector<std::string>{"--kubeconfig=" + conf, "--leader-elect=false", "--secure-port=0", "--v=1",
                                 "--controllers=deployment-controller,replicaset-controller,job-controller"},
        "kcm-fault-" + ns());
    ASSERT_TRUE(waitFor([&] { return controllerStarting(kcm_->log()); }, 30s))
        << kcm_->log();
  }

  // The Job's pods stay Running (test/cluster/kwok-stages/pod-behaviors.yaml): its active count is its parallelism.
  void workloads(int web, int cache, int batch) {
    const std::string tmpl = R"("spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]})";
    apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":)" +
          std::to_string(web) + R"(,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":)"
          R"({"app":"web"}},)" + tmpl + "}}}");
    apply(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"cache"},"spec":{"replicas":)" +
          std::to_string(cache) + R"(,"selector":{"matchLabels":{"app":"cache"}},"template":{"metadata":{"labels":)"
          R"({"app":"cache"}},)" + tmpl + "}}}");
    apply(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"batch"},"spec":{"parallelism":)" +
          std::to_string(batch) + R"(,"completions":1000,"template":{"metadata":{"labels":{"app":"batch"},)"
          R"("annotations":{"kwok.kcm.test/behavior":"run"}},)"
          R"("spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  }
  void scale(int web, int cache, int batch) {
    ASSERT_TRUE(kubectl({"scale", "deployment/web", "-n", ns(), "--replicas=" + std::to_string(web)}).ok());
    ASSERT_TRUE(kubectl({"scale", "rs/cache", "-n", ns(), "--replicas=" + std::to_string(cache)}).ok());
    ASSERT_TRUE(kubectl({"patch", "job", "batch", "-n", ns(), "--type=merge", "-p",
                         R"({"spec":{"parallelism":)" + std::to_string(batch) + "}}"})
                    .ok());
  }

  // Pods not being deleted, with label app=<app> ("" = all).
  std::vector<std::string> livePods(const std::string& app) {
    std::vector<std::string> args = {"get", "pods", "-n", ns(), "-o", "json"};
    if (!app.empty()) args.insert(args.end(), {"-l", "app=" + app});
    ExecResult r = kubectl(args);
    std::vector<std::string> out;
    if (!r.ok()) return {"<kubectl failed>"};
    const Json list = Json::parse(r.out, nullptr, false);
    if (!list.is_object()) return {"<no json>"};
    for (const Json& p : list.value("items", Json::array()))
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p["metadata"].value("name", ""));
    return out;
  }
  int statusField(const std::string& what, const std::string& field) {
    ExecResult r = kubectl({"get", what, "-n", ns(), "-o", "json"});
    if (!r.ok()) return -1;
    const Json o = Json::parse(r.out, nullptr, false);
    return o.is_object() ? o["status"].value(field, 0) : -1;
  }
  // Exactly these pod counts, and each controller's status says so.
  bool converged(int web, int cache, int batch) {
    return static_cast<int>(livePods("web").size()) == web && static_cast<int>(livePods("cache").size()) == cache &&
           static_cast<int>(livePods("batch").size()) == batch && statusField("deployment/web", "replicas") == web &&
           statusField("rs/cache", "replicas") == cache && statusField("job/batch", "active") == batch;
  }
  std::string counts() {
    return "web " + std::to_string(livePods("web").size()) + ", cache " + std::to_string(livePods("cache").size()) +
           ", batch " + std::to_string(livePods("batch").size());
  }

  // What the apiserver accepted from our kcm in this namespace.
  int podCreates() {
    const std::string path = "/api/v1/namespaces/" + ns() + "/pods";
    return proxy_->count([&](const auto& r) { return r.method == "POST" && r.path == path && r.code == 201; });
  }
  int podDeletes() {
    const std::string prefix = "/api/v1/namespaces/" + ns() + "/pods/";
    return proxy_->count([&](const auto& r) {
      return r.method == "DELETE" && r.path.rfind(prefix, 0) == 0 && r.code >= 200 && r.code < 300;
    });
  }
  int replicaSetCreates() {
    const std::string path = "/apis/apps/v1/namespaces/" + ns() + "/replicasets";
    return proxy_->count([&](const auto& r) { return r.method == "POST" && r.path == path && r.code == 201; });
  }
  int faulted() {
    return proxy_->count([](const auto& r) { return r.faulted; });
  }
  static double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::string clusterName() const { return Cluster::get().dir.substr(Cluster::get().dir.rfind('/') + 1); }

  std::unique_ptr<FaultProxy> proxy_;
  std::unique_ptr<KcmProcess> kcm_;
};

// 500s, then 429s with Retry-After, for 10 s each, to every request (lists and watches too) while all three scale up.
TEST_F(FaultInjection, ServerErrorsThenThrottlingWhileScalingUp) {
  ASSERT_NO_FATAL_FAILURE(startKcm());
  workloads(3, 2, 2);
  ASSERT_TRUE(waitFor([&] { return converged(3, 2, 2); }, 60s)) << counts();
  proxy_->failRequests(500);
  scale(6, 4, 4);
  std::this_thread::sleep_for(10s);
  proxy_->failRequests(429);
  std::this_thread::sleep_for(10s);
  proxy_->clearFaults();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return converged(6, 4, 4); }, 120s)) << counts();
  std::printf("fault: 500 then 429 for 10 s each: %d request(s) refused; converged %.1f s after the faults ended\n",
              faulted(), since(t0));
  EXPECT_GT(faulted(), 0);
  EXPECT_EQ(podCreates(), 14);
  EXPECT_EQ(podDeletes(), 0);
  EXPECT_EQ(replicaSetCreates(), 1);
  EXPECT_EQ(kcm_->waitExit(0ms), -1) << "kcm exited:\n" << kcm_->log();
}

// Every watch stream cut 3 s after it started, for the whole test, while the workloads scale up and down.
TEST_F(FaultInjection, WatchesCutEveryThreeSeconds) {
  proxy_->cutWatchesAfter(3s);
  ASSERT_NO_FATAL_FAILURE(startKcm());
  workloads(4, 0, 3);
  ASSERT_TRUE(waitFor([&] { return converged(4, 0, 3); }, 60s)) << counts();
  std::this_thread::sleep_for(4s);  // the controllers' watches cut and re-established at least once
  scale(7, 0, 5);
  ASSERT_TRUE(waitFor([&] { return converged(7, 0, 5); }, 60s)) << counts();
  std::this_thread::sleep_for(4s);
  scale(2, 0, 5);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return converged(2, 0, 5); }, 60s)) << counts();
  const int cut = proxy_->count([](const auto& r) { return r.watch && r.faulted; });
  std::printf("fault: %d watch stream(s) cut after 3 s; scale-down converged in %.1f s\n", cut, since(t0));
  EXPECT_GE(cut, 6);
  EXPECT_EQ(podCreates(), 12);  // web 7, batch 5
  EXPECT_EQ(podDeletes(), 5);   // web 7 -> 2
  EXPECT_EQ(replicaSetCreates(), 1);
}

// Responses held 65 s (past the client's 60 s read timeout) for 15 s while all three scale up: the requests land in
// the apiserver but the controllers see them time out.
TEST_F(FaultInjection, ResponsesDelayedPastTheClientTimeout) {
  ASSERT_NO_FATAL_FAILURE(startKcm());
  workloads(1, 1, 1);
  ASSERT_TRUE(waitFor([&] { return converged(1, 1, 1); }, 60s)) << counts();
  const auto delayed = std::chrono::steady_clock::now();
  proxy_->delayResponses(65s);
  scale(3, 4, 3);
  std::this_thread::sleep_for(15s);
  proxy_->clearFaults();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return converged(3, 4, 3); }, 150s)) << counts();
  const double convergedAfter = since(t0);
  // The held responses delivered (a request is logged once its response went) and anything they caused played out.
  std::this_thread::sleep_until(delayed + 15s + 65s + 10s);
  const int held = faulted();
  std::printf("fault: %d response(s) held 65 s; converged %.1f s after the delays ended\n", held, convergedAfter);
  EXPECT_GT(held, 0);
  EXPECT_TRUE(converged(3, 4, 3)) << counts();
  EXPECT_EQ(podCreates() - podDeletes(), 10);
  EXPECT_EQ(podCreates(), 10);
  EXPECT_EQ(replicaSetCreates(), 1);
}

// etcd stopped for 8 s right after the scale-up was written; the apiserver fails requests meanwhile.
TEST_F(FaultInjection, EtcdRestartWhileScalingUp) {
  ASSERT_NO_FATAL_FAILURE(startKcm());
  workloads(3, 2, 2);
  ASSERT_TRUE(waitFor([&] { return converged(3, 2, 2); }, 60s)) << counts();
  scale(6, 4, 4);
  const std::string script = repoRoot() + "/hack/cluster.sh";
  ExecResult stop = exec({"bash", script, "stop", clusterName(), "etcd"}, "", 60s);
  ASSERT_TRUE(stop.ok()) << stop.err;
  std::this_thread::sleep_for(8s);
  ExecResult start = exec({"bash", script, "start", clusterName(), "etcd"}, "", 120s);
  ASSERT_TRUE(start.ok()) << start.err;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "--raw", "/readyz"}).ok(); }, 120s, 1s));
  ASSERT_TRUE(waitFor([&] { return converged(6, 4, 4); }, 120s)) << counts();
  std::printf("fault: etcd down 8 s; converged %.1f s after it was started again\n", since(t0));
  EXPECT_EQ(podCreates(), 14);
  EXPECT_EQ(podDeletes(), 0);
  EXPECT_EQ(replicaSetCreates(), 1);
  EXPECT_EQ(kcm_->waitExit(0ms), -1) << "kcm exited:\n" << kcm_->log();
}

// Malformed JSON for every GET (lists and watches) for 15 s, the open watches cut so the informers ask again.
TEST_F(FaultInjection, GarbageJsonFromTheApiserverForAWhile) {
  ASSERT_NO_FATAL_FAILURE(startKcm());
  workloads(2, 2, 1);
  ASSERT_TRUE(waitFor([&] { return converged(2, 2, 1); }, 60s)) << counts();
  proxy_->serveGarbage(true);
  proxy_->cutWatchesNow();
  scale(4, 3, 2);
  std::this_thread::sleep_for(15s);
  proxy_->clearFaults();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return converged(4, 3, 2); }, 120s)) << counts();
  const int garbage = proxy_->count([](const auto& r) { return r.faulted && r.method == "GET"; });
  std::printf("fault: %d GET(s) answered with malformed JSON; converged %.1f s after\n", garbage, since(t0));
  EXPECT_GT(garbage, 0);
  EXPECT_EQ(kcm_->waitExit(0ms), -1) << "kcm exited:\n" << kcm_->log();
  EXPECT_EQ(podCreates(), 9);
  EXPECT_EQ(podDeletes(), 0);
}

long long peakRssMiB(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) / 1024;
  return -1;
}

// Watches answered with a line that never ends, for 20 s: each stream must be given up at client-go's 16 MiB frame
// limit (not read into memory without end), and the controllers carry on afterwards.
TEST_F(FaultInjection, WatchStreamThatNeverEndsALine) {
  ASSERT_NO_FATAL_FAILURE(startKcm());
  workloads(1, 1, 1);
  ASSERT_TRUE(waitFor([&] { return converged(1, 1, 1); }, 60s)) << counts();
  proxy_->endlessWatchLines(true);
  proxy_->cutWatchesNow();
  std::this_thread::sleep_for(20s);
  proxy_->clearFaults();
  proxy_->cutWatchesNow();  // any endless stream still open
  scale(3, 2, 2);
  ASSERT_TRUE(waitFor([&] { return converged(3, 2, 2); }, 120s)) << counts();
  long long most = 0;
  int streams = 0;
  for (const auto& r : proxy_->requests())
    if (r.faulted && r.watch) ++streams, most = std::max(most, r.bytes);
  const long long peak = peakRssMiB(kcm_->pid());
  std::printf("fault: %d endless watch stream(s), at most %.1f MiB taken from one; kcm peak RSS %lld MiB\n", streams,
              static_cast<double>(most) / (1 << 20), peak);
  EXPECT_GT(streams, 0);
  EXPECT_LT(most, 48LL << 20);  // 16 MiB read, plus what the sockets buffer
  // Under ASan (hack/test-asan.sh sets ASAN_OPTIONS) freed memory waits in a 256 MiB quarantine and every block has
  // redzones: 767 MiB was seen there. The bytes taken from each stream, above, are the check that holds everywhere.
  const bool sanitized = std::getenv("ASAN_OPTIONS") != nullptr || std::getenv("TSAN_OPTIONS") != nullptr;
  EXPECT_LT(peak, sanitized ? 2048 : 512);
  EXPECT_EQ(kcm_->waitExit(0ms), -1) << "kcm exited:\n" << kcm_->log();
  EXPECT_EQ(podCreates(), 7);
}

// A pod carrying 1 MiB of labels (11,000 of them) that the ReplicaSet's selector matches: adopted and counted as
// one of its replicas, like any other.
TEST_F(FaultInjection, PodWithAMegabyteOfLabelsIsAdopted) {
  ASSERT_NO_FATAL_FAILURE(startKcm());
  Json labels = {{"app", "cache"}};
  for (int i = 0; i < 11000; ++i) {
    char key[40];
    std::snprintf(key, sizeof key, "bulk.example.com/label-%05d", i);
    labels[key] = std::string(63, static_cast<char>('a' + i % 26));
  }
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "heavy"}, {"labels", labels}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}}}}}};
  const std::string manifest = pod.dump();
  ASSERT_GT(manifest.size(), 1u << 20);
  ExecResult created = kubectl({"create", "-n", ns(), "-f", "-"}, manifest);
  ASSERT_TRUE(created.ok()) << created.err;
  workloads(0, 3, 0);
  ASSERT_TRUE(waitFor([&] { return converged(0, 3, 0); }, 60s)) << counts();
  Json heavy = kubectlJson({"get", "pod", "heavy", "-n", ns()});
  ASSERT_TRUE(heavy.is_object());
  std::string owner;
  for (const Json& r : heavy["metadata"].value("ownerReferences", Json::array()))
    if (r.value("controller", false)) owner = r.value("kind", "") + "/" + r.value("name", "");
  EXPECT_EQ(owner, "ReplicaSet/cache");
  // Nothing of the 1 MB lost or changed (a label another component adds is reported, not counted against us).
  const Json& got = heavy["metadata"]["labels"];
  int kept = 0;
  for (const auto& [k, v] : labels.items()) kept += got.contains(k) && got[k] == v;
  EXPECT_EQ(kept, 11001);
  std::string others;
  for (const auto& [k, v] : got.items())
    if (!labels.contains(k)) others += " " + k + "=" + v.dump();
  if (!others.empty()) std::printf("labels added by others:%s\n", others.c_str());
  EXPECT_EQ(podCreates(), 2);  // the third replica is the adopted pod
  EXPECT_EQ(kcm_->waitExit(0ms), -1) << "kcm exited:\n" << kcm_->log();
}

}  // namespace
}  // namespace kcm::e2e
