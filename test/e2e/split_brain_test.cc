// Split brain (issue 22): a leader frozen past its lease (SIGSTOP) is replaced by the standby; when it resumes
// (SIGCONT) it must write nothing and exit. Checked with the apiserver's audit log (hack/cluster.sh records every
// write of user kcm-audited, of audited.conf, the frozen leader's identity; the standby runs as kubernetes-admin):
// no write of the old leader other than to its Lease is received after the standby acquired,
// and every ReplicaSet ends with exactly its replicas. Also the graceful hand-over of a SIGTERMed leader with
// ControllerManagerReleaseLeaderElectionLockOnExit. Figures go to docs/reliability.md.
#include <signal.h>

#include <fstream>
#include <memory>
#include <random>

#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {
namespace {

class SplitBrain : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    std::mt19937 rng(std::random_device{}());
    lease_ = "kcm-split-" + std::to_string(rng() % 1000000);
    apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");
  }
  void TearDown() override {
    kubectl({"scale", "rs", "--all", "-n", ns(), "--replicas=0"});
    kubectl({"delete", "pods", "--all", "-n", ns(), "--wait=false"});
    kubectl({"delete", "lease", "-n", "kube-system", lease_, "--ignore-not-found"});
    E2ETest::TearDown();
  }
  // Only the ReplicaSet controller, short lease timings (lease 6 s, renew deadline 4 s, retry 1 s).
  std::unique_ptr<KcmProcess> start(const std::string& kubeconfig, const std::string& logName,
                                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--kubeconfig=" + Cluster::get().dir + "/" + kubeconfig, "--leader-elect=true",
                                     "--leader-elect-resource-name=" + lease_, "--leader-elect-lease-duration=6s",
                                     "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
                                     "--secure-port=0", "--controllers=replicaset-controller", "--v=2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<KcmProcess>(args, logName);
  }
  Json lease() { return kubectlJson({"get", "lease", "-n", "kube-system", lease_}); }
  std::string holder() {
    ExecResult r = kubectl({"get", "lease", "-n", "kube-system", lease_, "-o", "jsonpath={.spec.holderIdentity}"});
    return r.ok() ? r.out : "";
  }
  // The identity a process logged as its own ("Leader election identity").
  static std::string identityOf(const KcmProcess& p) {
    const std::string log = p.log(), key = "\"Leader election identity\" identity=\"";
    const size_t at = log.find(key);
    if (at == std::string::npos) return "";
    const size_t from = at + key.size();
    return log.substr(from, log.find('"', from) - from);
  }
  void replicaSet(const std::string& name, int replicas) {
    apply(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":")" + name + R"("},"spec":{"replicas":)" +
          std::to_string(replicas) + R"(,"selector":{"matchLabels":{"app":")" + name +
          R"("}},"template":{"metadata":{"labels":{"app":")" + name +
          R"("}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  }
  int pods(const std::string& app) {
    Json p = kubectlJson({"get", "pods", "-n", ns(), "-l", "app=" + app});
    return p.is_object() ? static_cast<int>(p["items"].size()) : -1;
  }
  std::string lease_;
};

// Audit events (one JSON object per line) of user kcm-audited in this test's namespace,
// received after `after` (RFC 3339 with microseconds, as the audit log and MicroTime print them).
std::vector<Json> auditedWritesAfter(const std::string& ns, const std::string& after) {
  std::vector<Json> out;
  std::ifstream in(Cluster::get().dir + "/audit.log");
  for (std::string line; std::getline(in, line);) {
    Json e = Json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("stage", "") != "ResponseComplete") continue;
    if (e["user"].value("username", "") != "kcm-audited") continue;
    const Json& ref = e["objectRef"];
    if (!ref.is_object() || ref.value("namespace", "") != ns || ref.value("resource", "") == "leases") continue;
    if (e.value("requestReceivedTimestamp", "") > after) out.push_back(e);
  }
  return out;
}

TEST_F(SplitBrain, AFrozenLeaderThatResumesWritesNothingAndExits) {
  auto a = start("audited.conf", "kcm-split-a");
  ASSERT_TRUE(waitFor([&] { return !identityOf(*a).empty() && holder() == identityOf(*a); }, 30s)) << a->log();
  auto b = start("admin.conf", "kcm-split-b");
  ASSERT_TRUE(waitFor([&] { return !identityOf(*b).empty(); }, 30s)) << b->log();
  replicaSet("before", 2);
  ASSERT_TRUE(waitFor([&] { return pods("before") == 2; }, 30s)) << a->log();

  // Freeze the leader; the standby takes over one lease duration after it last saw the Lease change.
  a->signal(SIGSTOP);
  const auto frozen = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return holder() == identityOf(*b); }, 30s)) << b->log();
  const double failoverSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - frozen).count();
  const std::string acquired = lease()["spec"].value("acquireTime", "");
  ASSERT_FALSE(acquired.empty());
  // Work for the new leader while the old one is frozen: its informers see it all when it resumes.
  replicaSet("during", 3);
  kubectl({"scale", "rs", "before", "-n", ns(), "--replicas=4"});
  ASSERT_TRUE(waitFor([&] { return pods("during") == 3 && pods("before") == 4; }, 30s)) << b->log();
  kubectl({"delete", "pods", "-n", ns(), "-l", "app=before", "--wait=false"});

  a->signal(SIGCONT);
  const auto resumed = std::chrono::steady_clock::now();
  const int code = a->waitExit(10s);
  const double exitSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - resumed).count();
  EXPECT_EQ(code, 1) << a->log();
  EXPECT_LT(exitSeconds, 4.0 + 1.0) << "the old leader ran on past its renew deadline (4 s)";
  // The standby replaces the deleted pods; in the end each ReplicaSet has exactly its replicas.
  EXPECT_TRUE(waitFor([&] { return pods("during") == 3 && pods("before") == 4; }, 30s));
  std::this_thread::sleep_for(3s);  // anything still on its way arrives
  EXPECT_EQ(pods("during"), 3);
  EXPECT_EQ(pods("before"), 4);
  const auto late = auditedWritesAfter(ns(), acquired);
  std::string listed;
  for (const auto& e : late) listed += e.dump() + "\n";
  EXPECT_TRUE(late.empty()) << late.size() << " write(s) of the old leader after the new one acquired at " << acquired
                            << ":\n" << listed << a->log().substr(0, 4000);
  // The audit log does record the old leader's writes (else the check above proves nothing): its pods of "before".
  EXPECT_GE(auditedWritesAfter(ns(), "").size(), 2u);
  std::printf("split brain: standby acquired %.1f s after the leader froze (lease 6 s); the resumed leader exited "
              "%d after %.2f s; %zu write(s) of it after the takeover\n",
              failoverSeconds, code, exitSeconds, late.size());
}

// With ControllerManagerReleaseLeaderElectionLockOnExit (client-go's ReleaseOnCancel): on SIGTERM the leader
// stops its controllers, hands the Lease back and exits 0; the standby leads about a retry period later instead
// of a lease duration.
TEST_F(SplitBrain, ASIGTERMedLeaderHandsTheLeaseOverAtOnceWithReleaseOnExit) {
  const std::vector<std::string> gate = {"--feature-gates=ControllerManagerReleaseLeaderElectionLockOnExit=true"};
  auto a = start("audited.conf", "kcm-release-a", gate);
  ASSERT_TRUE(waitFor([&] { return !identityOf(*a).empty() && holder() == identityOf(*a); }, 30s)) << a->log();
  auto b = start("admin.conf", "kcm-release-b", gate);
  ASSERT_TRUE(waitFor([&] { return !identityOf(*b).empty(); }, 30s)) << b->log();
  std::this_thread::sleep_for(2s);  // the standby has read the Lease at least once
  a->signal(SIGTERM);
  const auto termed = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return holder() == identityOf(*b); }, 30s, 50ms)) << b->log();
  const double handover = std::chrono::duration<double>(std::chrono::steady_clock::now() - termed).count();
  EXPECT_EQ(a->waitExit(10s), 0) << a->log();
  EXPECT_LT(handover, 6.0) << "no faster than waiting out the 6 s lease";
  std::printf("graceful release: standby acquired %.2f s after SIGTERM to the leader (lease 6 s, retry 1 s)\n",
              handover);
}

}  // namespace
}  // namespace kcm::e2e
