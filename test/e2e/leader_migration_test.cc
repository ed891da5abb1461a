// Leader migration (--enable-leader-migration, --leader-migration-config) on the real apiserver: two of our
// processes share a main lock and a migration lock; the configuration's controllers for kube-controller-manager
// run under the migration lock, those of another component nowhere, the rest under the main lock; killing the
// leader hands both locks to the standby. Each test uses its own lock names so it does not meet the Daemon tests'
// kube-controller-manager Lease.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <random>

#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {
namespace {

std::string holder(const std::string& lease) {
  ExecResult r = kubectl({"get", "lease", "-n", "kube-system", lease, "-o", "jsonpath={.spec.holderIdentity}"});
  return r.ok() ? r.out : "";
}

std::string uniqueSuffix() {
  std::mt19937 rng(std::random_device{}());
  return std::to_string(rng() % 1000000);
}

class LeaderMigration : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    const std::string s = uniqueSuffix();
    mainLease_ = "kcm-lm-main-" + s;
    migrationLease_ = "kcm-lm-migration-" + s;
    config_ = Cluster::get().dir + "/leader-migration-" + s + ".yaml";
  }
  void TearDown() override {
    kubectl({"delete", "lease", "-n", "kube-system", mainLease_, migrationLease_, "--ignore-not-found"});
    std::remove(config_.c_str());
    E2ETest::TearDown();
  }
  void writeConfig(const std::string& body) {
    std::ofstream(config_) << "apiVersion: controllermanager.config.k8s.io/v1alpha1\n"
                              "kind: LeaderMigrationConfiguration\n"
                           << body;
  }
  // deployment-controller and replicaset-controller enabled; the configuration decides where each runs.
  std::unique_ptr<KcmProcess> start(const std::string& logName, int port) {
    const std::string d = Cluster::get().dir;
    return std::make_unique<KcmProcess>(
        std::vector<std::string>{"--kubeconfig=" + d + "/admin.conf", "--leader-elect=true",
                                 "--leader-elect-resource-name=" + mainLease_, "--leader-elect-lease-duration=6s",
                                 "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
                                 "--secure-port=" + std::to_string(port),
                                 "--service-account-private-key-file=" + d + "/pki/sa.key",
                                 "--controllers=deployment-controller,replicaset-controller",
                                 "--enable-leader-migration", "--leader-migration-config=" + config_, "--v=1"},
        logName);
  }
  std::string deployment(const std::string& name) {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
           R"("},"spec":{"replicas":1,"selector":{"matchLabels":{"app":")" + name +
           R"("}},"template":{"metadata":{"labels":{"app":")" + name +
           R"("}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})";
  }
  // The ReplicaSets owned by Deployment `name`.
  int replicaSetsOf(const std::string& name) {
    Json rs = kubectlJson({"get", "rs", "-n", ns(), "-l", "app=" + name});
    return rs.is_object() ? static_cast<int>(rs["items"].size()) : -1;
  }
  std::string mainLease_, migrationLease_, config_;
};

TEST_F(LeaderMigration, ControllersSplitBetweenTheLocksAndAStandbyTakesBothOver) {
  // The Deployment controller migrates to (and runs in) kube-controller-manager; the ReplicaSet controller is
  // cloud-controller-manager's, so no kube-controller-manager starts it.
  writeConfig("leaderName: " + migrationLease_ + "\nresourceLock: leases\ncontrollerLeaders:\n"
              "- name: deployment-controller\n  component: kube-controller-manager\n"
              "- name: replicaset-controller\n  component: cloud-controller-manager\n");
  const int portA = freePort();
  auto a = start("kcm-lm-a", portA);
  std::string first;
  ASSERT_TRUE(waitFor([&] { return !(first = holder(mainLease_)).empty(); }, 30s)) << a->log();
  ASSERT_TRUE(waitFor([&] { return holder(migrationLease_) == first; }, 30s)) << a->log();
  ASSERT_TRUE(waitFor([&] { return controllerStarting(a->log(), "deployment-controller"); }, 30s)) << a->log();
  std::string log = a->log();
  const auto at = [&](const std::string& s) { return log.find(s); };
  EXPECT_NE(at("\"starting leader migration\""), std::string::npos) << log;
  ASSERT_NE(at("\"leader migration: starting main controllers.\""), std::string::npos) << log;
  ASSERT_NE(at("\"leader migration: starting migrated controllers.\""), std::string::npos) << log;
  // The serviceaccount-token controller starts under the main lock, before the migration lock is tried.
  EXPECT_LT(at("\"Controller starting...\" controller=\"serviceaccount-token-controller\""),
            at("\"leader migration: starting migrated controllers.\""));
  EXPECT_GT(at("\"Starting controller\" controller=\"deployment-controller\""),
            at("\"leader migration: starting migrated controllers.\""));
  EXPECT_EQ(at("controller=\"replicaset-controller\""), std::string::npos) << "unowned: never mentioned\n" << log;

  // Deployment controller at work (migration lock), ReplicaSet controller nowhere: a ReplicaSet, no pods.
  apply(deployment("web"));
  ASSERT_TRUE(waitFor([&] { return replicaSetsOf("web") == 1; }, 30s)) << a->log();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(kubectl({"get", "pods", "-n", ns(), "-o", "name"}).out, "");

  ExecResult health = exec({"curl", "-sk", "--max-time", "5", "https://127.0.0.1:" + std::to_string(portA) + "/healthz?verbose"});
  EXPECT_NE(health.out.find("[+]leaderElection ok"), std::string::npos) << health.out;
  EXPECT_NE(health.out.find("[+]deployment-controller ok"), std::string::npos) << health.out;

  // A standby waits on the main lock and never tries the migration lock while it does not hold the main one.
  auto b = start("kcm-lm-b", freePort());
  std::this_thread::sleep_for(4s);
  EXPECT_EQ(holder(mainLease_), first);
  EXPECT_EQ(holder(migrationLease_), first);
  EXPECT_EQ(b->log().find("leader migration: starting"), std::string::npos) << b->log();

  a->kill9();
  std::string second;
  ASSERT_TRUE(waitFor([&] { second = holder(mainLease_); return !second.empty() && second != first; }, 30s))
      << b->log();
  ASSERT_TRUE(waitFor([&] { return holder(migrationLease_) == second; }, 30s)) << b->log();
  ASSERT_TRUE(waitFor([&] { return controllerStarting(b->log(), "deployment-controller"); }, 30s)) << b->log();
  apply(deployment("api"));
  EXPECT_TRUE(waitFor([&] { return replicaSetsOf("api") == 1; }, 30s)) << b->log();
  EXPECT_EQ(b->log().find("controller=\"replicaset-controller\""), std::string::npos);
  kubectl({"delete", "deployment,rs", "--all", "-n", ns(), "--wait=false"});
}

TEST_F(LeaderMigration, UnlistedControllersStayUnderTheMainLock) {
  // Only the ReplicaSet controller migrates; the Deployment controller is not listed and runs under the main lock.
  writeConfig("leaderName: " + migrationLease_ + "\nresourceLock: leases\ncontrollerLeaders:\n"
              "- name: replicaset-controller\n  component: \"*\"\n");
  auto a = start("kcm-lm-main-only", freePort());
  ASSERT_TRUE(waitFor([&] { return !holder(migrationLease_).empty(); }, 30s)) << a->log();
  ASSERT_TRUE(waitFor([&] { return controllerStarting(a->log(), "replicaset-controller"); }, 30s)) << a->log();
  const std::string log = a->log();
  const auto migrated = log.find("\"leader migration: starting migrated controllers.\"");
  ASSERT_NE(migrated, std::string::npos);
  EXPECT_LT(log.find("\"Starting controller\" controller=\"deployment-controller\""), migrated) << log;
  EXPECT_GT(log.find("\"Starting controller\" controller=\"replicaset-controller\""), migrated) << log;
  apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");  // pods are admitted
  apply(deployment("web"));
  // Both run: the ReplicaSet's pod is created.
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "pods", "-n", ns(), "-o", "name"}).out.empty(); }, 30s)) << log;
  kubectl({"scale", "deployment", "web", "-n", ns(), "--replicas=0"});
  waitFor([&] { return kubectl({"get", "pods", "-n", ns(), "-o", "name"}).out.empty(); }, 30s);
}

TEST_F(LeaderMigration, EndpointsLockIsRefusedOnceLeading) {
  writeConfig("leaderName: " + migrationLease_ + "\nresourceLock: endpoints\n");
  auto a = start("kcm-lm-endpoints", freePort());
  EXPECT_EQ(a->waitExit(40s), 1) << a->log();
  const std::string log = a->log();
  EXPECT_NE(log.find("\"Successfully acquired lease\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"Error creating lock\" err=\"endpoints lock is removed, migrate to leases\""),
            std::string::npos) << log;
}

TEST_F(LeaderMigration, BadConfigurationFailsAtStartWithUpstreamsText) {
  const std::string d = Cluster::get().dir;
  writeConfig("leaderName: \"\"\nresourceLock: foo\n");
  struct Case {
    std::string path, message;
  } cases[] = {
      {"/nonexistent/lm.yaml",
       "unable to read leader migration configuration from \\\"/nonexistent/lm.yaml\\\": open /nonexistent/lm.yaml: no such file or directory"},
      {config_,
       "failed to parse leader migration configuration: [leaderName: Required value: leaderName must be set for "
       "LeaderMigrationConfiguration resourceLock: Invalid value: \\\"foo\\\": resource Lock must be one of 'leases' or "
       "'endpoints']"},
  };
  for (const auto& c : cases) {
    // Read whenever the flag is on, with or without leader election.
    ExecResult r = exec({kcmBinary(), "--kubeconfig=" + d + "/admin.conf", "--secure-port=0", "--leader-elect=false",
                         "--enable-leader-migration", "--leader-migration-config=" + c.path},
                        "", 30s);
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.message << "\nin:\n" << r.err;
  }
}

}  // namespace
}  // namespace kcm::e2e
